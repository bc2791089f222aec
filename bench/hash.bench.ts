// Handles and ledger keys: the engine's SHA-256 against node:crypto (OpenSSL), side by side.
//   per call: generateHandle vs createHash(...).update(s).digest("hex").slice(0, 8)   target ≥ 1×
//   batch:    generateHandles(1000 unrelated seeds) vs the node:crypto loop       target ≥ 3×
//             generateResultHandles per tool result (100 calls of 10 handles
//             sharing their ids, the batch extraction makes) vs node:crypto    target ≥ 3×
//             and the batch kernel alone on the laid-out texts               (info)
//   keys:     occurrenceKeys(10k seeds, one capture round of a 10k-message history)
//             vs json.dumps-style text + node:crypto per key                      (info)
// Every result is checked against node:crypto before anything is timed.
// Each figure is a median over samples of a whole pass: wall time, and the
// process CPU time (process.cpuUsage) of the same samples. The machine is
// shared, so wall time includes waiting for a core; CPU time does not, but it
// counts every thread of the process, including V8's background GC.
// Run: npm run bench -- hash
import { createHash, randomUUID } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { Bench } from "tinybench";
import {
  generateHandle,
  generateHandles,
  generateResultHandles,
  hashLaidOutHandles,
  layOutHandleTexts,
  occurrenceKeys,
  readLaidOutHandles,
  sha256Hex,
  type HandleSeed,
  type OccurrenceSeed,
} from "../src/engine/hash.js";

const SEEDS = 1000;
const KEYS = 10_000;

// Shaped like capture's seeds: LangGraph thread ids, provider tool-call ids,
// and the ToolMessage id as occurrence id for most (messages without an id
// fall back to the occurrence index). Round-tripped through JSON because real
// ids arrive parsed from JSON (flat strings); randomUUID's own strings are
// concatenation trees that every consumer would re-flatten on each use.
const seeds: HandleSeed[] = JSON.parse(JSON.stringify(Array.from({ length: SEEDS }, (_, i) => ({
  threadId: randomUUID(),
  toolCallId: toolCallId(),
  callIndex: i % 5 === 0 ? i % 7 : 0,
  ordinal: i % 3,
  occurrenceId: i % 5 === 0 ? null : `run-${randomUUID()}`,
}))));

// The batches extraction makes: one call per tool result, whose artifacts
// share the thread, tool-call and occurrence ids and differ in ordinal. With
// provider ids the shared `threadId:toolCallId:callIndex:` fills the first
// 64-byte block, which the engine then compresses once per batch.
const RESULTS = 100;
const PER_RESULT = 10;
const resultBatches: HandleSeed[][] = JSON.parse(JSON.stringify(Array.from({ length: RESULTS }, (_, r) => {
  const threadId = randomUUID();
  const toolCallId = toolCallIdFor(r);
  const occurrenceId = r % 5 === 0 ? null : `run-${randomUUID()}`;
  return Array.from({ length: PER_RESULT }, (_, ordinal) => ({ threadId, toolCallId, callIndex: 0, ordinal, occurrenceId }));
})));
const resultSeeds = resultBatches.flat();

// One thread's history as capture hashes it after a reload: a result key per
// ToolMessage (by its id) and a call key per AIMessage tool call.
const THREAD = randomUUID();
const keySeeds: OccurrenceSeed[] = JSON.parse(JSON.stringify(Array.from({ length: KEYS }, (_, i): OccurrenceSeed => {
  const call = i % 2 === 1;
  return { kind: call ? "call" : "result", threadId: THREAD, messageId: call ? `run-${randomUUID()}` : randomUUID(), toolCallId: toolCallId(), index: 0 };
})));

function toolCallId(): string {
  return toolCallIdFor(Math.random() < 0.5 ? 0 : 1);
}

// Anthropic-style ids for even k, OpenAI-style for odd.
function toolCallIdFor(k: number): string {
  return k % 2 === 0 ? `toolu_01${randomUUID().replace(/-/g, "").slice(0, 22)}` : `call_${randomUUID().slice(0, 24)}`;
}

function seedText(s: HandleSeed): string {
  const text = `${s.threadId}:${s.toolCallId}:${s.callIndex}:${s.ordinal ?? 0}`;
  return s.occurrenceId == null ? text : `${text}:${s.occurrenceId}`;
}

function nodeHandle(s: HandleSeed): string {
  return `art_${createHash("sha256").update(seedText(s)).digest("hex").slice(0, 8)}`;
}

// The straightforward node:crypto version of a ledger key: JSON.stringify
// already writes printable ASCII as Python does; anything else gets Python's
// \uXXXX escapes (never taken for these ids, kept for correctness).
const PRINTABLE = /^[\x20-\x7e]*$/;
function pyString(s: string): string {
  const json = JSON.stringify(s);
  return PRINTABLE.test(s) ? json : json.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
function nodeKey(s: OccurrenceSeed): string {
  const i = s.messageId == null || s.kind === "call" ? s.index : 0;
  const m = s.messageId == null ? "null" : pyString(s.messageId);
  return `${s.kind}:${createHash("sha256").update(`[${pyString(s.threadId)}, ${m}, ${pyString(s.toolCallId)}, ${i}]`).digest("hex")}`;
}

function engineSingles(): string[] {
  const out = new Array<string>(SEEDS);
  for (let i = 0; i < SEEDS; i++) {
    const s = seeds[i];
    out[i] = generateHandle(s.threadId, s.toolCallId, s.callIndex, s.ordinal, s.occurrenceId);
  }
  return out;
}

function nodeLoop(): string[] {
  const out = new Array<string>(SEEDS);
  for (let i = 0; i < SEEDS; i++) out[i] = nodeHandle(seeds[i]);
  return out;
}

function engineResults(): string[] {
  const out = new Array<string>(resultSeeds.length);
  let at = 0;
  for (const batch of resultBatches) {
    const { threadId, toolCallId, callIndex, occurrenceId } = batch[0];
    for (const h of generateResultHandles(threadId, toolCallId, callIndex, batch.length, occurrenceId)) out[at++] = h;
  }
  return out;
}

function nodeResults(): string[] {
  const out = new Array<string>(resultSeeds.length);
  for (let i = 0; i < resultSeeds.length; i++) out[i] = nodeHandle(resultSeeds[i]);
  return out;
}

function nodeKeys(): string[] {
  const out = new Array<string>(KEYS);
  for (let i = 0; i < KEYS; i++) out[i] = nodeKey(keySeeds[i]);
  return out;
}

// The kernels alone: the 1000 seeds' texts already laid out in engine memory,
// as generateHandles leaves them, hashed on each tier (JS overhead excluded).
const seedTexts = seeds.map(seedText);
const kernelOnly = (tier: "simd" | "scalar") => () => {
  hashLaidOutHandles(SEEDS, tier);
  return seedTexts;
};

const big = "tool output line with a path /mnt/user-data/out/report-ü.csv and more\n".repeat(16_000); // ~1.1 MB

// --- verify ------------------------------------------------------------------
const expected = nodeLoop();
const expectedKeys = nodeKeys();
const expectedResults = nodeResults();
const checks: Array<[string, boolean]> = [
  ["generateHandle == node:crypto", isDeepStrictEqual(engineSingles(), expected)],
  ["generateHandles == node:crypto", isDeepStrictEqual(generateHandles(seeds), expected)],
  ["generateResultHandles per tool result == node:crypto", isDeepStrictEqual(engineResults(), expectedResults)],
  ["batch kernels (SIMD, scalar) == node:crypto", (["simd", "scalar"] as const).every((tier) => {
    layOutHandleTexts(seedTexts);
    hashLaidOutHandles(SEEDS, tier);
    return isDeepStrictEqual(readLaidOutHandles(SEEDS), expected);
  })],
  ["occurrenceKeys == node:crypto", isDeepStrictEqual(occurrenceKeys(keySeeds), expectedKeys)],
  ["sha256Hex(1 MB) == node:crypto", sha256Hex(big) === createHash("sha256").update(big).digest("hex")],
];
for (const [name, ok] of checks) {
  console.log(`${ok ? "ok  " : "FAIL"} ${name}`);
  if (!ok) process.exit(1);
}

// --- time --------------------------------------------------------------------
// Each sample runs a whole pass: per-call timings of ~1 µs would otherwise be
// dominated by the timer itself.
const bench = new Bench({ time: 2000, warmupTime: 300 });
const cpuSamples = new Map<string, number[]>();
let sink = 0;

/** Add a task whose samples also record process CPU time (ms), outside warmup. */
function task(name: string, fn: () => { length: number }, setup?: () => void): void {
  const samples: number[] = [];
  let measuring = false;
  cpuSamples.set(name, samples);
  bench.add(
    name,
    () => {
      const before = process.cpuUsage();
      sink += fn().length;
      const used = process.cpuUsage(before);
      if (measuring) samples.push((used.user + used.system) / 1000);
    },
    {
      beforeAll: (mode) => {
        setup?.();
        measuring = mode === "run";
      },
    },
  );
}

task("generateHandle ×1000 (one call each)", engineSingles);
task("node:crypto ×1000 (one call each)", nodeLoop);
task("generateHandles(1000 seeds)", () => generateHandles(seeds));
// Tasks run one after another, so the layout stays put while one is timed.
task("batch kernel, SIMD (1000 laid-out texts)", kernelOnly("simd"), () => layOutHandleTexts(seedTexts));
task("batch kernel, scalar (1000 laid-out texts)", kernelOnly("scalar"), () => layOutHandleTexts(seedTexts));
task(`generateResultHandles ×${RESULTS} results of ${PER_RESULT}`, engineResults);
task(`node:crypto ×${RESULTS * PER_RESULT} (results' seeds)`, nodeResults);
task("occurrenceKeys(10k seeds)", () => occurrenceKeys(keySeeds));
task("node:crypto ×10k keys (one call each)", nodeKeys);
task("sha256Hex 1 MB", () => sha256Hex(big));
task("node:crypto 1 MB", () => createHash("sha256").update(big).digest("hex"));

await bench.run();

interface Figures {
  wall: number; // ms
  cpu: number; // ms
}

const middle = (xs: number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[sorted.length >> 1];
};

const figures = (name: string): Figures => {
  const r = bench.tasks.find((t) => t.name === name)?.result;
  if (!r || !("latency" in r)) throw new Error(`bench task ${name} did not complete (${r?.state})`);
  return { wall: r.latency.p50, cpu: middle(cpuSamples.get(name)!) };
};

const single = figures("generateHandle ×1000 (one call each)");
const node = figures("node:crypto ×1000 (one call each)");
const batch = figures("generateHandles(1000 seeds)");
const simdKernel = figures("batch kernel, SIMD (1000 laid-out texts)");
const scalarKernel = figures("batch kernel, scalar (1000 laid-out texts)");
const perResult = figures(`generateResultHandles ×${RESULTS} results of ${PER_RESULT}`);
const nodePerResult = figures(`node:crypto ×${RESULTS * PER_RESULT} (results' seeds)`);
const keys = figures("occurrenceKeys(10k seeds)");
const nodeKeyLoop = figures("node:crypto ×10k keys (one call each)");
const bigEngine = figures("sha256Hex 1 MB");
const bigNode = figures("node:crypto 1 MB");

const ns = (ms: number, per: number) => `${((ms * 1e6) / per).toFixed(0).padStart(5)} ns`;
const pair = (f: Figures, per: number) => `wall ${ns(f.wall, per)}  cpu ${ns(f.cpu, per)}`;
const ratio = (base: Figures, f: Figures) =>
  `${(base.wall / f.wall).toFixed(2)}× wall, ${(base.cpu / f.cpu).toFixed(2)}× cpu`;
const mbps = (ms: number) => `${(big.length / 1e6 / (ms / 1e3)).toFixed(0)} MB/s`;

console.log(`\nmedians per handle/key (${SEEDS} handle seeds, ${KEYS} key seeds${sink > 0 ? ", results consumed" : ""})`);
console.log(`  node:crypto per call        ${pair(node, SEEDS)}`);
console.log(`  generateHandle per call     ${pair(single, SEEDS)}   ${ratio(node, single)} node:crypto (target ≥ 1×)`);
console.log(`  generateHandles batch       ${pair(batch, SEEDS)}   ${ratio(node, batch)} node:crypto (target ≥ 3×)`);
console.log(`    of which the kernel (SIMD)  ${pair(simdKernel, SEEDS)}   (scalar tier ${pair(scalarKernel, SEEDS)}; two 64-byte blocks per seed)`);
console.log(`  node:crypto, results' seeds  ${pair(nodePerResult, RESULTS * PER_RESULT)}`);
console.log(`  generateResultHandles       ${pair(perResult, RESULTS * PER_RESULT)}   ${ratio(nodePerResult, perResult)} node:crypto (target ≥ 3×)`);
console.log(`  node:crypto per key         ${pair(nodeKeyLoop, KEYS)}`);
console.log(`  occurrenceKeys batch        ${pair(keys, KEYS)}   ${ratio(nodeKeyLoop, keys)} node:crypto`);
console.log(
  `  sha256Hex 1 MB              ${mbps(bigEngine.wall)}   node:crypto ${mbps(bigNode.wall)} (${(bigNode.wall / bigEngine.wall).toFixed(2)}× wall; OpenSSL uses SHA-NI, info only)`,
);
