// Runs every bench/*.bench.ts (or those whose name contains an argument) one
// after another, each in its own process so one suite's heap cannot skew the next.
// The capture suite holds several 50k-message histories at once: a large heap.
import { readdirSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const dir = fileURLToPath(new URL(".", import.meta.url));
const filters = process.argv.slice(2);
const suites = readdirSync(dir)
  .filter((f) => f.endsWith(".bench.ts"))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();
let failed = 0;
for (const suite of suites) {
  console.log(`\n=== ${suite} ===`);
  const r = spawnSync(process.execPath, ["--import", "tsx", "--expose-gc", "--max-old-space-size=12288", `${dir}${suite}`], { stdio: "inherit" });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
