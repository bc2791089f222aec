/**
 * What an install of the package brings: the runtime dependencies are
 * exactly the packages the shipped code imports, and the LangChain.js
 * packages an agent already has are peers, so the middlewares, messages and
 * state channels are the agent's own copies and not a second set.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildSync } from "esbuild";
import { describe, expect, it } from "vitest";
import { PERMISSION_FLAG } from "./support/permission.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as Record<string, Record<string, string> | undefined>;

/** Packages `src/` loads at run time: static and dynamic imports, not `import type` (erased by tsc). */
function runtimeImports(): Set<string> {
  const found = new Set<string>();
  for (const file of readdirSync(join(ROOT, "src"), { recursive: true, encoding: "utf8" })) {
    if (!file.endsWith(".ts")) continue;
    const text = readFileSync(join(ROOT, "src", file), "utf8");
    const specifiers = [...text.matchAll(/^\s*(?:import|export)\s+(?!type\s)[^;]*?\sfrom\s+"([^"]+)"/gms), ...text.matchAll(/\bimport\("([^"]+)"\)/g)];
    for (const [, spec] of specifiers) {
      if (spec!.startsWith(".") || spec!.startsWith("node:")) continue;
      const parts = spec!.split("/");
      found.add(spec!.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]!);
    }
  }
  return found;
}

describe("package.json", () => {
  const peers = Object.keys(pkg.peerDependencies ?? {});
  const deps = Object.keys(pkg.dependencies ?? {});

  it("declares every package the shipped code imports, and nothing else, as a dependency or a peer", () => {
    expect([...runtimeImports()].sort()).toEqual([...deps, ...peers].sort());
  });

  it("takes langchain, @langchain/core and @langchain/langgraph as peers, pinned for development", () => {
    expect(peers.sort()).toEqual(["@langchain/core", "@langchain/langgraph", "langchain"]);
    for (const name of peers) {
      expect(deps).not.toContain(name);
      expect(pkg.devDependencies?.[name]).toMatch(/^\d/);
    }
  });

  it("is an ES module that CommonJS code can require too (Node's require of ES modules), with declarations for each resolution", () => {
    type Condition = { types: string; default: string };
    const { "./package.json": packageJson, ...exports } = pkg.exports as unknown as Record<string, { import: Condition; require: Condition; default: string }>;
    expect(packageJson).toBe("./package.json");
    for (const entry of Object.values(exports)) {
      const code = entry.import.default;
      expect([entry.require.default, entry.default]).toEqual([code, code]);
      expect(entry.import.types).toBe(code.replace(/\.js$/, ".d.ts"));
      // CommonJS TypeScript reads declarations that import langchain's CommonJS ones (commonjs-usage.cts).
      expect(entry.require.types).toBe(code.replace(/\.js$/, ".d.cts"));
    }
    // Every declaration has its CommonJS twin, whose relative imports name the twins.
    const declarations = readdirSync(join(ROOT, "dist"), { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".d.ts"));
    expect(declarations.length).toBeGreaterThan(10);
    for (const file of declarations) {
      const twin = readFileSync(join(ROOT, "dist", file.replace(/\.d\.ts$/, ".d.cts")), "utf8");
      expect(twin).not.toMatch(/(?:from|import\()\s*["']\.[^"']*\.js["']/);
    }
    expect(pkg.main).toBe(exports["."]!.import.default);
    expect(pkg.types).toBe(exports["."]!.import.types);
    const required = spawnSync(process.execPath, ["-e", 'const t = require("tool-artifacts"); const { ScriptedChatModel } = require("tool-artifacts/testing"); console.log(t.generateHandle("t", "c", 0), typeof ScriptedChatModel)'], { cwd: ROOT, encoding: "utf8" });
    expect(required.stdout).toBe("art_2a1562a2 function\n");
  });

  it("builds an executable CLI: in a checkout (no install to set the bit) `npx tool-artifacts` runs dist/cli.js itself", () => {
    expect(pkg.bin).toEqual({ "tool-artifacts": "./dist/cli.js" });
    expect(statSync(join(ROOT, "dist/cli.js")).mode & 0o111).toBe(0o111);
  });

  it("needs the AssemblyScript compiler only to build: the engine ships built", () => {
    expect(deps).not.toContain("assemblyscript");
    expect(pkg.devDependencies?.assemblyscript).toBeDefined();
    expect(pkg.files).toContain("build/engine.wasm");
  });

  it("exports every name DESIGN §12 lists from the package entry", async () => {
    const api = (await import("../src/index.js")) as Record<string, unknown>;
    const functions = [
      "generateHandle",
      "occurrenceKey",
      "scanText",
      "extractArtifacts",
      "scanBatch",
      "mergeToolArtifacts",
      "mergeProcessed",
      "toolArtifactsMiddleware",
      "orderMiddleware",
      "policyFingerprint",
      "buildChildInitialState",
      "createTaskTool",
    ];
    for (const name of functions) expect(typeof api[name], name).toBe("function");
    expect(api.toolArtifactsStateSchema, "toolArtifactsStateSchema").toBeTypeOf("object");
    expect((api.toolArtifactsConfigSchema as { parse?: unknown } | undefined)?.parse, "toolArtifactsConfigSchema").toBeTypeOf("function");
    // The three middlewares, as the entry's factory returns them.
    const middlewares = (api.toolArtifactsMiddleware as () => Array<{ name: string }>)();
    expect(middlewares.map((m) => m.name)).toEqual(["tool-artifacts-capture", "tool-artifacts-resolution", "tool-artifacts-projection"]);
  });

  it("exports its package.json, as tools that read a dependency's version expect", () => {
    expect(createRequire(import.meta.url).resolve("tool-artifacts/package.json")).toBe(join(ROOT, "package.json"));
  });

  it("declares public types that never reach Piscina's (which fail to type-check under moduleResolution node16)", () => {
    // Every declaration file the public entries import, and the packages they name.
    const packages = new Set<string>();
    const seen = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const [, spec] of readFileSync(file, "utf8").matchAll(/(?:from|import\()\s*"([^"]+)"/g)) {
        if (spec!.startsWith(".")) visit(join(dirname(file), spec!.replace(/\.js$/, ".d.ts")));
        else packages.add(spec!);
      }
    };
    visit(join(ROOT, "dist/index.d.ts"));
    visit(join(ROOT, "dist/testing/scripted-model.d.ts"));
    expect(seen.size).toBeGreaterThan(10);
    expect([...packages].filter((name) => name.startsWith("piscina"))).toEqual([]);
  });

  it("without its engine file, says which file it read and what to do, in a path with spaces", () => {
    // The engine loader alone (and the shapes module it reads its error code from), where no build/engine.wasm sits beside it.
    const dir = mkdtempSync(join(tmpdir(), "tool artifacts "));
    try {
      mkdirSync(join(dir, "src", "engine"), { recursive: true });
      copyFileSync(join(ROOT, "src/engine/wasm.ts"), join(dir, "src/engine/wasm.ts"));
      copyFileSync(join(ROOT, "src/types.ts"), join(dir, "src/types.ts"));
      const r = spawnSync(process.execPath, ["--import", "tsx", join(dir, "src/engine/wasm.ts")], { cwd: ROOT, encoding: "utf8" });
      expect(r.status).not.toBe(0);
      expect(r.stderr).toContain(`cannot read its engine, ${join(dir, "build", "engine.wasm")} (ENOENT)`);
      expect(r.stderr).toMatch(/reinstall it; in a bundle, keep tool-artifacts external/);
      expect(r.stderr).toContain("code: 'TOOL_ARTIFACTS_ENGINE_UNAVAILABLE'");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("bundled into CommonJS by esbuild against the README's advice, says to keep it external rather than failing on a URL", () => {
    // esbuild gives a CommonJS bundle an empty import.meta, and warns of it only at verbose log levels.
    const dir = mkdtempSync(join(tmpdir(), "tool-artifacts-bundle-"));
    try {
      const outfile = join(dir, "host.cjs");
      buildSync({ entryPoints: [join(ROOT, "dist/index.js")], bundle: true, platform: "node", format: "cjs", packages: "external", outfile, logLevel: "silent" });
      const r = spawnSync(process.execPath, [outfile], { encoding: "utf8", env: { ...process.env, NODE_PATH: join(ROOT, "node_modules") } });
      expect(r.status).not.toBe(0);
      expect(r.stderr).toContain("tool-artifacts: cannot find its engine: its module has no URL (import.meta.url is undefined); in a bundle, keep tool-artifacts external");
      expect(r.stderr).toContain("code: 'TOOL_ARTIFACTS_ENGINE_UNAVAILABLE'");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // (Node 20 and 22 also take --no-expose-wasm, with the same effect; Node 24 refuses the flag.)
  it("in a Node started with --jitless, which has no WebAssembly, importing says so, and the CLI says it in one line and exits 2", () => {
    const message = "tool-artifacts: this Node.js has no WebAssembly, which its engine needs (was node started with --jitless?)";
    const r = spawnSync(process.execPath, ["--jitless", "--import", "tsx", join(ROOT, "src/engine/wasm.ts")], { cwd: ROOT, encoding: "utf8" });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(message);
    expect(r.stderr).toContain("code: 'TOOL_ARTIFACTS_ENGINE_UNAVAILABLE'");
    expect(r.stderr).not.toContain("[cause]");
    // The built CLI (npm test builds it first): before, an "internal error" with a stack trace, status 3.
    const cli = spawnSync(process.execPath, ["--jitless", join(ROOT, "dist/cli.js"), "scan", join(ROOT, "examples/archive.jsonl")], { cwd: ROOT, encoding: "utf8" });
    expect(cli.status).toBe(2);
    expect(cli.stdout).toBe("");
    expect(cli.stderr.split("\n").filter((line) => line.startsWith("tool-artifacts:"))).toEqual([message]);
    expect(cli.stderr).not.toMatch(/internal error|\n\s+at /);
  });

  it("under Node's permission model without a read grant on its engine, says to allow reading it, not to rebuild", () => {
    const grants = ["node_modules", "dist", "examples", "package.json"].map((p) => `--allow-fs-read=${join(ROOT, p)}`);
    const r = spawnSync(process.execPath, [PERMISSION_FLAG, ...grants, join(ROOT, "dist/cli.js"), "scan", join(ROOT, "examples/archive.jsonl")], { cwd: ROOT, encoding: "utf8" });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`tool-artifacts: cannot read its engine, ${join(ROOT, "build", "engine.wasm")} (ERR_ACCESS_DENIED): allow reading the package's files (node --allow-fs-read).`);
    expect(r.stderr).not.toMatch(/npm run build:wasm|internal error/);
  });
});
