/**
 * `tool-artifacts scan` end to end: a generated archive of tool results
 * (bench/batch-corpus.ts, tens of MB) through the built CLI (dist JavaScript,
 * as installed), with the pool (default threads: the calling thread scans
 * beside threads - 1 workers) vs `--threads 1` (calling thread only). Output is checked first: both runs give the same entries,
 * and those are extractArtifacts' entries for each line.
 *
 * Prints the median wall time of whole runs (process start to exit) and the
 * scan-phase rate the CLI reports with --stats, both as MB/s, and the ratio;
 * the same for archives one and a half and three times as large. Then the
 * same scan several times in one process, pool vs calling thread: the first
 * pass is what a CLI run gets, the later ones the warm rate; and what a
 * worker starting beside the calling thread costs its first pass, though it
 * is given no chunk. Then the per-line work alone, in
 * this process: the engine's line path (assembly/lines.ts, what the CLI runs)
 * vs the TypeScript path it falls back to (JSON.parse, extractArtifacts,
 * formatting), on the same 1 MiB chunks.
 * With BENCH_RSS=1 it also scans a 1 GB archive and prints the peak RSS.
 */
import { deepStrictEqual } from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { closeSync, copyFileSync, createWriteStream, mkdtempSync, openSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { once } from "node:events";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { unpackLineResult } from "../src/batch/packing.js";
import { POOL_MIN_ARCHIVE_BYTES } from "../src/batch/threads.js";
import { scanLinesPacked, scanLinesPackedJs, type LinePathStats } from "../src/batch/scan.js";
import { extractArtifacts, type ToolMessageLike } from "../src/extract.js";
import { toolResults } from "./batch-corpus.js";
import { alternatingRounds, median } from "./rounds.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "tool-artifacts-cli-bench-"));
process.on("exit", () => rmSync(dir, { recursive: true, force: true }));

// The CLI as the package ships it: tsc output next to the engine and dependencies.
// (tsc's exit status is ignored: it emits even when a file elsewhere in the tree does not typecheck.)
spawnSync(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", join(ROOT, "tsconfig.build.json"), "--outDir", join(dir, "dist")], { stdio: "ignore" });
copyFileSync(join(ROOT, "package.json"), join(dir, "package.json"));
symlinkSync(join(ROOT, "build"), join(dir, "build"));
symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
const CLI = join(dir, "dist/cli.js");
statSync(CLI); // the build must have produced it

const corpus = toolResults(96 * 1024 * 1024);
const archive = join(dir, "archive.jsonl");
writeFileSync(archive, corpus.lines.join(""));
const MB = corpus.bytes / 1e6;
const emptyArchive = join(dir, "empty.jsonl");
writeFileSync(emptyArchive, "");

/** One whole CLI run; output is captured for checking, else sent to /dev/null so reading it costs nothing. */
function scan(threads: number, capture = false, file = archive, env: NodeJS.ProcessEnv = process.env) {
  const args = [CLI, "scan", file, "--threads", String(threads), "--stats"];
  const stdout = capture ? "pipe" : openSync("/dev/null", "w");
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { encoding: "utf8", maxBuffer: 1 << 30, stdio: ["ignore", stdout, "pipe"], env });
  const ms = performance.now() - t0;
  if (typeof stdout === "number") closeSync(stdout);
  if (r.status !== 0) throw new Error(`scan --threads ${threads} exited ${r.status}: ${r.stderr}`);
  const rate = /([\d.]+) MB\/s/.exec(r.stderr)?.[1];
  return { ms, stdout: r.stdout ?? "", scanRate: rate === undefined ? NaN : Number(rate) };
}

/** A bare Node process start to exit, in ms. */
function bareNode(env: NodeJS.ProcessEnv = process.env): number {
  const t0 = performance.now();
  spawnSync(process.execPath, ["-e", "0"], { stdio: "ignore", env });
  return performance.now() - t0;
}

// Correctness before timing.
const entries = (stdout: string) =>
  stdout
    .split("\n")
    .filter(Boolean)
    .map((l) => {
      const { created_at, ...rest } = JSON.parse(l) as Record<string, unknown>;
      return rest;
    });
const threads = availableParallelism();
const single = entries(scan(1, true).stdout);
const pooled = entries(scan(threads, true).stdout);
deepStrictEqual(pooled, single);
const direct = corpus.items.flatMap((it) =>
  extractArtifacts(it.message as ToolMessageLike, { threadId: it.threadId }).map(({ created_at, ...e }) => ({ thread_id: it.threadId, ...e })),
);
deepStrictEqual(single, direct);
console.log(`archive: ${corpus.items.length} tool results, ${MB.toFixed(1)} MB, ${single.length} entries; --threads 1 == --threads ${threads} == extractArtifacts per line`);

const rate = (ms: number, mb = MB) => (mb / (ms / 1000)).toFixed(1);

/** An environment the CLI runs in, and how the report names it. */
interface Setting {
  label: string;
  env: NodeJS.ProcessEnv;
}
const asIs: Setting = { label: "", env: process.env };

/**
 * Whole CLI runs on `file` (`mb` MB), pool vs --threads 1, alternating so
 * drift on the shared machine hits both alike; with several settings, each
 * round runs every one of them, so they are compared side by side too.
 */
function compare(file: string, mb: number, rounds: number, settings: Setting[] = [asIs]): void {
  const runs = settings.map(() => ({ one: [] as number[], pool: [] as number[], oneScan: [] as number[], poolScan: [] as number[], ratio: [] as number[], scanRatio: [] as number[], ceiling: [] as number[], nodeCeiling: [] as number[] }));
  for (let round = 0; round < rounds; round++) {
    settings.forEach(({ env }, i) => {
      const a = scan(1, false, file, env);
      const b = scan(threads, false, file, env);
      // Amdahl: a run that split all but a serial part perfectly across its
      // threads, and started its workers at no cost, would take serial +
      // (rest / threads). Two serial parts, each timed this round: the pool's
      // command on an empty archive (Node's start, loading the CLI, making and
      // closing the pool object, exiting; as there is no chunk, neither
      // Piscina nor the engine loads and no worker starts), all of which a run
      // does before it scans anything or after it is done; and a bare
      // `node -e 0` (what no CLI design can split).
      const ceiling = (serial: number) => a.ms / (serial + Math.max(0, a.ms - serial) / threads);
      const r = runs[i]!;
      r.ceiling.push(ceiling(scan(threads, false, emptyArchive, env).ms));
      r.nodeCeiling.push(ceiling(bareNode(env)));
      r.one.push(a.ms);
      r.pool.push(b.ms);
      r.oneScan.push(a.scanRate);
      r.poolScan.push(b.scanRate);
      r.ratio.push(a.ms / b.ms);
      r.scanRatio.push(b.scanRate / a.scanRate);
    });
  }
  settings.forEach(({ label }, i) => {
    const r = runs[i]!;
    console.log(`\n${mb.toFixed(1)} MB archive${label}, median of ${rounds} alternating runs (wall = process start to exit; scan = the CLI's --stats rate)`);
    console.log(`  ${"".padEnd(14)} ${"wall ms".padStart(9)} ${"wall MB/s".padStart(10)} ${"scan MB/s".padStart(10)}`);
    console.log(`  ${"--threads 1".padEnd(14)} ${median(r.one).toFixed(0).padStart(9)} ${rate(median(r.one), mb).padStart(10)} ${median(r.oneScan).toFixed(1).padStart(10)}`);
    console.log(`  ${`pool (${threads - 1}) + this`.padEnd(14)} ${median(r.pool).toFixed(0).padStart(9)} ${rate(median(r.pool), mb).padStart(10)} ${median(r.poolScan).toFixed(1).padStart(10)}`);
    console.log(`  --threads ${threads} / --threads 1 (median of per-round ratios): ${median(r.ratio).toFixed(2)}× wall, ${median(r.scanRatio).toFixed(2)}× scan`);
    console.log(`  ceiling of the wall ratio on ${threads} cores (Amdahl): ${median(r.ceiling).toFixed(2)}× (the pool's run on an empty archive serial), ${median(r.nodeCeiling).toFixed(2)}× (only \`node -e 0\` serial)`);
  });
}

// Node reads the file NODE_EXTRA_CA_CERTS names at every process start,
// before any of the CLI's code runs (the CLI makes no TLS connection). Where
// the environment sets it, that is serial time in both runs which a user
// without it does not pay: the archive is also compared without it, in the
// same rounds.
const settings = [asIs];
if (process.env.NODE_EXTRA_CA_CERTS !== undefined) {
  const { NODE_EXTRA_CA_CERTS: _, ...withoutCa } = process.env;
  const bare = { set: [] as number[], unset: [] as number[] };
  for (let round = 0; round < 7; round++) {
    bare.set.push(bareNode());
    bare.unset.push(bareNode(withoutCa));
  }
  console.log(`\nthe environment sets NODE_EXTRA_CA_CERTS: \`node -e 0\` takes ${median(bare.set).toFixed(0)} ms with it, ${median(bare.unset).toFixed(0)} ms without (median of 7 alternating runs)`);
  settings.push({ label: " without NODE_EXTRA_CA_CERTS", env: withoutCa });
}
compare(archive, MB, 7, settings);
console.log(`  targets: ≥ 1.6× on 2 cores, ≥ 150 MB/s with the pool`);
// Larger archives (the same lines again): the pool's start-up cost is
// fixed, its gain grows with the input. One and a half times the archive is
// near POOL_MIN_ARCHIVE_BYTES, the size from which the CLI scans with two
// threads by default on fewer than 3 cores.
const half = corpus.lines.slice(0, corpus.lines.length >> 1).join("");
const oneAndHalf = join(dir, "archive-1.5x.jsonl");
writeFileSync(oneAndHalf, corpus.lines.join("") + half);
compare(oneAndHalf, statSync(oneAndHalf).size / 1e6, 5);
console.log(`  POOL_MIN_ARCHIVE_BYTES: ${(POOL_MIN_ARCHIVE_BYTES / 1e6).toFixed(1)} MB`);
const triple = join(dir, "archive-3x.jsonl");
writeFileSync(triple, corpus.lines.join("").repeat(3));
compare(triple, 3 * MB, 3);

// Where the pool's time goes on this archive: the same scan (scanArchive,
// what the CLI runs) four times over in one fresh process, output discarded.
// The first pass pays each worker's start and warm-up; the later ones show
// the warm rate.
const PASSES = 4;
const passesScript = join(dir, "passes.mjs");
writeFileSync(
  passesScript,
  `import { open } from "node:fs/promises";
import { ScanPool } from "./dist/batch/pool.js";
import { scanArchive } from "./dist/batch/stream.js";
import { archivePool } from "./dist/batch/threads.js";
const threads = Number(process.argv[2]);
// A probe, one pass on this thread alone: Piscina loaded in the pass ("import"),
// or a pool's worker starting beside it and given no chunk ("boot").
const probe = process.argv[4];
// As the CLI scans: the calling thread and threads - 1 workers.
const pool = archivePool(threads);
const passes = [];
for (let pass = 0; pass < (probe ? 1 : ${PASSES}); pass++) {
  const file = await open(process.argv[3]);
  const source = { read: async (into) => (await file.read(into, 0, into.byteLength)).bytesRead };
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  const beside = probe === "boot" ? new ScanPool({ threads: 1 }) : undefined;
  const booted = beside?.workerStarted();
  if (probe === "import") await import("piscina");
  await scanArchive(source, (bytes, done) => done(), { pool, alsoScanHere: true, format: "jsonl", onFailure() {} });
  const used = process.cpuUsage(cpu);
  passes.push({ ms: performance.now() - t0, cpuMs: (used.user + used.system) / 1000 });
  await booted;
  await beside?.close();
  await file.close();
}
await pool?.close();
console.log(JSON.stringify(passes));
`,
);
interface Pass {
  ms: number;
  /** CPU time of the whole process (every thread) during the pass. */
  cpuMs: number;
}
const runPasses = (threads: number, probe = ""): Pass[] => {
  const r = spawnSync(process.execPath, [passesScript, String(threads), archive, probe], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`passes with ${threads} threads exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout) as Pass[];
};
const PASS_ROUNDS = 5;
const onePasses: Pass[][] = [];
const poolPasses: Pass[][] = [];
for (let round = 0; round < PASS_ROUNDS; round++) {
  onePasses.push(runPasses(1));
  poolPasses.push(runPasses(threads));
}
const at = (runs: Pass[][], pass: number, field: keyof Pass = "ms") => median(runs.map((r) => r[pass][field]));
const row = (label: string, runs: Pass[][]) =>
  `  ${label.padEnd(14)} ${Array.from({ length: PASSES }, (_, p) => `${rate(at(runs, p))} (${(at(runs, p, "cpuMs") / 1000).toFixed(2)} s)`.padStart(16)).join("")}`;
console.log(`\nscanArchive, ${PASSES} passes over the archive in one process (median of ${PASS_ROUNDS} alternating processes; MB/s and process CPU time)`);
console.log(`  ${"pass".padEnd(14)} ${Array.from({ length: PASSES }, (_, p) => String(p + 1).padStart(16)).join("")}`);
console.log(row("calling thread", onePasses));
console.log(row(`pool (${threads - 1}) + this`, poolPasses));
console.log(
  `  pool + calling thread / calling thread: ${(at(onePasses, 0) / at(poolPasses, 0)).toFixed(2)}× cold (pass 1), ${(at(onePasses, PASSES - 1) / at(poolPasses, PASSES - 1)).toFixed(2)}× warm (pass ${PASSES})`,
);

// Why the first pass with a worker is slow on a small machine: a worker that
// starts beside the calling thread slows it even before it scans a chunk.
// One pass on the calling thread alone, as is, with Piscina loaded during
// the pass, and with a worker starting beside it that gets no chunk.
{
  const BOOT_ROUNDS = 7;
  const probes = { alone: [] as number[], import: [] as number[], boot: [] as number[] };
  for (let round = 0; round < BOOT_ROUNDS; round++) {
    for (const probe of ["alone", "import", "boot"] as const) probes[probe].push(runPasses(1, probe === "alone" ? "" : probe)[0]!.ms);
  }
  const ms = (probe: keyof typeof probes) => median(probes[probe]);
  console.log(`\nfirst pass on the calling thread alone, what a starting worker costs it (median ms of ${BOOT_ROUNDS} alternating processes)`);
  console.log(`  alone ${ms("alone").toFixed(0)} ms; loading Piscina in the pass ${ms("import").toFixed(0)} ms (+${(ms("import") - ms("alone")).toFixed(0)}); a worker starting beside it, given no chunk, ${ms("boot").toFixed(0)} ms (+${(ms("boot") - ms("alone")).toFixed(0)}, ${(ms("boot") / ms("alone")).toFixed(2)}×)`);
}

// A worker's start, on an idle calling thread: from making the pool to its
// worker having run an empty task (Piscina loaded, a thread started, the
// worker's modules and engine loaded, its warm-up scan), beside a bare
// worker thread that only says it is up, and beside Piscina's own part: the
// same steps for a worker module that loads nothing. Until then the calling
// thread scans alone.
{
  const startScript = join(dir, "start.mjs");
  writeFileSync(join(dir, "empty-worker.mjs"), "export default () => null;\n");
  writeFileSync(
    startScript,
    `import { Worker } from "node:worker_threads";
import { ScanPool } from "./dist/batch/pool.js";
const t0 = performance.now();
if (process.argv[2] === "bare") {
  const w = new Worker("require('node:worker_threads').parentPort.postMessage(0)", { eval: true });
  w.once("message", () => { console.log(performance.now() - t0); w.terminate(); });
} else if (process.argv[2] === "piscina") {
  const { Piscina } = await import("piscina");
  const piscina = new Piscina({ filename: new URL("./empty-worker.mjs", import.meta.url).href, minThreads: 0, maxThreads: 1 });
  await piscina.run(null);
  console.log(performance.now() - t0);
  await piscina.close();
} else {
  const pool = new ScanPool({ threads: 1 });
  await pool.workerStarted();
  console.log(performance.now() - t0);
  await pool.close();
}
`,
  );
  const starts = { pool: [] as number[], bare: [] as number[], piscina: [] as number[] };
  for (let round = 0; round < 7; round++) {
    for (const kind of ["pool", "bare", "piscina"] as const) {
      const r = spawnSync(process.execPath, [startScript, kind], { encoding: "utf8" });
      if (r.status !== 0) throw new Error(`worker start (${kind}) exited ${r.status}: ${r.stderr}`);
      starts[kind].push(Number(r.stdout));
    }
  }
  console.log(`\na worker's start on an idle calling thread (median of 7 alternating processes): the pool's first worker ready ${median(starts.pool).toFixed(0)} ms after the pool is made; a bare worker thread up in ${median(starts.bare).toFixed(0)} ms; Piscina loaded, made and its worker ready, for a worker module that loads nothing, in ${median(starts.piscina).toFixed(0)} ms`);
}

// The per-line work alone: the engine's line path vs the TypeScript path, on
// the archive's 1 MiB chunks (cut at line ends, as the CLI cuts them).
{
  const bytes = Buffer.from(corpus.lines.join(""));
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; ) {
    const nl = bytes.indexOf(0x0a, Math.min(at + (1 << 20), bytes.length - 1));
    const end = nl === -1 ? bytes.length : nl + 1;
    chunks.push(bytes.subarray(at, end));
    at = end;
  }
  const options = { format: "jsonl" as const, createdAt: "2025-01-02T03:04:05.000Z" };
  const stats: LinePathStats = { engineLines: 0, jsLines: 0 };
  for (const chunk of chunks) {
    const engine = unpackLineResult(scanLinesPacked(chunk, options, { stats }));
    const ts = unpackLineResult(scanLinesPackedJs(chunk, options));
    deepStrictEqual({ ...engine, output: Buffer.from(engine.output) }, { ...ts, output: Buffer.from(ts.output) });
  }
  console.log(`\nline path, ${chunks.length} chunks in this process: engine output == TypeScript output; the engine took ${stats.engineLines} of ${stats.engineLines + stats.jsLines} lines`);
  // One reused result buffer for both, as the CLI's buffer pool gives them.
  let spare = new ArrayBuffer(8 << 20);
  const alloc = (bytes: number) => (bytes <= spare.byteLength ? spare : (spare = new ArrayBuffer(bytes)));
  const p50 = await alternatingRounds(
    {
      engine: () => {
        for (const c of chunks) scanLinesPacked(c, options, { alloc });
      },
      typescript: () => {
        for (const c of chunks) scanLinesPackedJs(c, options, { alloc });
      },
    },
    5,
    { time: 1500, iterations: 3, warmupIterations: 1 },
  );
  const engineMs = median(p50.engine);
  const tsMs = median(p50.typescript);
  console.log(`  engine line path ${rate(engineMs)} MB/s, TypeScript path ${rate(tsMs)} MB/s: ${(tsMs / engineMs).toFixed(2)}× (median p50 of 5 alternating rounds, one thread, warm)`);
}

if (process.env.BENCH_RSS === "1") {
  // The archive's lines again and again, to past 1 GB: flat memory means the
  // same peak RSS as on the archive itself, whatever the size.
  const big = join(dir, "archive-1gb.jsonl");
  const out = createWriteStream(big);
  const chunk = corpus.lines.join("");
  let copies = 0;
  for (let written = 0; written < 1e9; copies++) {
    if (!out.write(chunk)) await once(out, "drain");
    written += Buffer.byteLength(chunk);
  }
  out.end();
  await once(out, "finish");
  /** One CLI run under /usr/bin/time, checked: the exit status (0 unless said) and the entries expected. */
  const measured = (file: string, t: number, expectedEntries: number, expectedStatus = 0) => {
    const r = spawnSync("/usr/bin/time", ["-f", "%M", process.execPath, CLI, "scan", file, "--threads", String(t), "--stats"], { encoding: "utf8", stdio: ["ignore", "ignore", "pipe"] });
    const found = Number(/entries (\d+)/.exec(r.stderr)?.[1]);
    if (r.status !== expectedStatus || found !== expectedEntries) throw new Error(`scan ${file} --threads ${t}: exit ${r.status}, ${found} entries (expected ${expectedStatus}, ${expectedEntries}): ${r.stderr}`);
    const lines = r.stderr.trim().split("\n");
    return { rssMb: Number(lines[lines.length - 1]) / 1024, scanRate: Number(/([\d.]+) MB\/s/.exec(r.stderr)?.[1]) };
  };
  console.log(`\npeak RSS, archive vs ${copies} copies of it (${(statSync(big).size / 1e9).toFixed(2)} GB); each run checked: exit 0, ${single.length} entries per copy`);
  const scanRates: number[] = [];
  for (const t of [1, threads]) {
    const small = measured(archive, t, single.length);
    const large = measured(big, t, single.length * copies);
    scanRates.push(large.scanRate);
    console.log(`  --threads ${t}: ${small.rssMb.toFixed(0)} MB on ${MB.toFixed(1)} MB, ${large.rssMb.toFixed(0)} MB on ${(statSync(big).size / 1e9).toFixed(2)} GB (${(large.rssMb / small.rssMb).toFixed(2)}×); 1 GB scan rate ${large.scanRate.toFixed(1)} MB/s`);
  }
  console.log(`  1 GB scan rate, --threads ${threads} / --threads 1 (one run each): ${(scanRates[1]! / scanRates[0]!).toFixed(2)}×`);

  // One long line between two short ones: past the 256 MiB line limit it is
  // skipped, under it scanned whole; the buffer it is held in grows by copies,
  // and a scanned line is copied into the engine too (the README's figures).
  const short = (call: string) => `${JSON.stringify({ thread_id: "t", message: { type: "tool", tool_call_id: call, name: "w", content: "wrote /mnt/user-data/a.txt" } })}\n`;
  const withLongLine = async (bytes: number) => {
    const file = join(dir, `long-line-${bytes}.jsonl`);
    const stream = createWriteStream(file);
    stream.write(short("c1") + '{"thread_id":"t","message":{"type":"tool","tool_call_id":"c2","name":"w","content":"wrote /mnt/user-data/b.txt ');
    const filler = "a".repeat(1 << 20);
    for (let left = bytes; left > 0; left -= filler.length) if (!stream.write(left >= filler.length ? filler : filler.slice(0, left))) await once(stream, "drain");
    stream.end('"}}\n' + short("c3"));
    await once(stream, "finish");
    return file;
  };
  console.log("\npeak RSS with one long line (MB, per run); each run checked: its exit status and entries");
  for (const [bytes, status, entries] of [[300e6, 1, 2], [250e6, 0, 3]] as const) {
    const file = await withLongLine(bytes);
    for (const t of [1, threads]) {
      const peaks = [0, 1, 2].map(() => measured(file, t, entries, status).rssMb.toFixed(0));
      console.log(`  a ${(bytes / 1e6).toFixed(0)} MB line ${status === 1 ? "skipped" : "scanned"}, --threads ${t}: ${peaks.join(", ")}`);
    }
    rmSync(file);
  }
}
