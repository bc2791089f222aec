// Handles: the engine's SHA-256 against node:crypto (OpenSSL), side by side.
//   per call: generateHandle vs createHash(...).update(s).digest("hex").slice(0, 8)   target ≥ 1×
//   batch:    generateHandles(1000 seeds) vs the node:crypto loop over them        target ≥ 3×
// Every result is checked against node:crypto before anything is timed.
// Run: npm run bench -- hash
import { createHash, randomUUID } from "node:crypto";
import { Bench } from "tinybench";
import { generateHandle, generateHandles, sha256Hex, type HandleSeed } from "../src/engine/hash.js";

const SEEDS = 1000;

// Shaped like capture's seeds: LangGraph thread ids, provider tool-call ids,
// and the ToolMessage id as occurrence id for most (messages without an id
// fall back to the occurrence index). Round-tripped through JSON because real
// ids arrive parsed from JSON (flat strings); randomUUID's own strings are
// concatenation trees that every consumer would re-flatten on each use.
const seeds: HandleSeed[] = JSON.parse(JSON.stringify(Array.from({ length: SEEDS }, (_, i) => ({
  threadId: randomUUID(),
  toolCallId: i % 2 ? `toolu_01${randomUUID().replace(/-/g, "").slice(0, 22)}` : `call_${randomUUID().slice(0, 24)}`,
  callIndex: i % 5 === 0 ? i % 7 : 0,
  ordinal: i % 3,
  occurrenceId: i % 5 === 0 ? null : `run-${randomUUID()}`,
}))));

function nodeHandle(s: HandleSeed): string {
  const text = `${s.threadId}:${s.toolCallId}:${s.callIndex}:${s.ordinal ?? 0}`;
  const full = s.occurrenceId == null ? text : `${text}:${s.occurrenceId}`;
  return `art_${createHash("sha256").update(full).digest("hex").slice(0, 8)}`;
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

const big = "tool output line with a path /mnt/user-data/out/report-ü.csv and more\n".repeat(16_000); // ~1.1 MB

// --- verify ------------------------------------------------------------------
const expected = nodeLoop();
const checks: Array<[string, boolean]> = [
  ["generateHandle == node:crypto", engineSingles().every((h, i) => h === expected[i])],
  ["generateHandles == node:crypto", generateHandles(seeds).every((h, i) => h === expected[i])],
  ["sha256Hex(1 MB) == node:crypto", sha256Hex(big) === createHash("sha256").update(big).digest("hex")],
];
for (const [name, ok] of checks) {
  console.log(`${ok ? "ok  " : "FAIL"} ${name}`);
  if (!ok) process.exit(1);
}

// --- time --------------------------------------------------------------------
// Each sample runs the whole 1000-seed pass: per-call timings of ~1 µs would
// otherwise be dominated by the timer itself.
const bench = new Bench({ time: 2000, warmupTime: 300 });
let sink = 0;
bench
  .add("generateHandle ×1000 (one call each)", () => {
    sink += engineSingles().length;
  })
  .add("node:crypto ×1000 (one call each)", () => {
    sink += nodeLoop().length;
  })
  .add("generateHandles(1000 seeds)", () => {
    sink += generateHandles(seeds).length;
  })
  .add("sha256Hex 1 MB", () => {
    sink += sha256Hex(big).length;
  })
  .add("node:crypto 1 MB", () => {
    sink += createHash("sha256").update(big).digest("hex").length;
  });

await bench.run();

const median = (name: string): number => {
  const task = bench.tasks.find((t) => t.name === name);
  const r = task?.result;
  if (!r || !("latency" in r)) throw new Error(`bench task ${name} did not complete (${r?.state})`);
  return r.latency.p50; // ms
};

const single = median("generateHandle ×1000 (one call each)");
const node = median("node:crypto ×1000 (one call each)");
const batch = median("generateHandles(1000 seeds)");
const bigEngine = median("sha256Hex 1 MB");
const bigNode = median("node:crypto 1 MB");
const ns = (ms: number) => `${((ms * 1e6) / SEEDS).toFixed(0)} ns/handle`;
const mbps = (ms: number) => `${(big.length / 1e6 / (ms / 1e3)).toFixed(0)} MB/s`;

console.log(`\nmedians (${SEEDS} seeds, ${sink > 0 ? "results consumed" : ""})`);
console.log(`  node:crypto per call        ${ns(node)}`);
console.log(`  generateHandle per call     ${ns(single)}   ${(node / single).toFixed(2)}× node:crypto (target ≥ 1×)`);
console.log(`  generateHandles batch       ${ns(batch)}   ${(node / batch).toFixed(2)}× node:crypto (target ≥ 3×)`);
console.log(`  sha256Hex 1 MB              ${mbps(bigEngine)}   node:crypto ${mbps(bigNode)} (${(bigNode / bigEngine).toFixed(2)}×; OpenSSL uses SHA-NI, info only)`);
