import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

/** Node's permission-model flag: `--permission` where Node knows it (22.13 and later), else the experimental one (Node 24 refuses that). */
export const PERMISSION_FLAG = process.allowedNodeEnvironmentFlags.has("--permission") ? "--permission" : "--experimental-permission";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/**
 * Run node with `args` under the permission model, reading allowed and
 * nothing else (so no worker threads), from the project's root. On Node 20
 * the TypeScript loader itself needs a worker there: run the built package.
 */
export function underPermission(args: string[]) {
  return spawnSync(process.execPath, [PERMISSION_FLAG, "--allow-fs-read=*", ...args], { cwd: ROOT, encoding: "utf8", timeout: 60_000, maxBuffer: 64 << 20 });
}
