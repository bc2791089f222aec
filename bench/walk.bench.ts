// The bounded structured walk: an oversized payload is rejected for about what
// a small one costs, because the serializer stops at the budget and never
// copies a string longer than a reference can be.
//   baseline: walkStructured on a 1 KB search-result payload
//   oversized: one 100 MB string under "data"; 100 MB as 10^5 strings of 1 KB;
//              100 MB as 10^4 strings of 10 KB; 10^7 nodes (flat, and rows of
//              1000-key objects)                     target ≤ 1 ms, ratio ≈ 1×
//   per call: typical small payloads, next to JSON.stringify of the same payload
//   info: walkJsonBytes over 100 MB of JSON bytes (bytes must all be validated)
// Every result is checked before anything is timed.
// Run: npm run bench -- walk
import { Bench } from "tinybench";
import { isReference, walkJsonBytes, walkStructured, type StructuredWalk } from "../src/engine/walk.js";

const MB100 = 100 * 1024 * 1024;

const searchResult = {
  query: "quarterly revenue by region",
  results: Array.from({ length: 4 }, (_, i) => ({
    title: `Regional revenue report, quarter ${i + 1}`,
    url: `https://reports.example.com/finance/2024/q${i + 1}/revenue.pdf`,
    snippet: "Revenue grew in every region except the north-east, where a supplier change delayed shipments.",
    score: Math.round((0.95 - i * 0.07) * 100) / 100,
  })),
  file_path: "/mnt/user-data/outputs/revenue-summary.md",
  task_id: "job-7f3e9c1a",
};
const small: Record<string, unknown> = {
  "file result": { path: "/mnt/user-data/outputs/chart.png", bytes: 48213, mime: "image/png" },
  "task result": { task_id: "run_01HZX3V8Q2", status: "queued" },
  "data result": { temperature: 21.5, unit: "C", station: "Lyon-Bron", observed: "2024-06-01T12:00:00Z" },
  "url list": { urls: ["https://example.com/a.html", "https://example.com/b.html", "data:text/plain,no"] },
};

// Oversized payloads, built once (building them dwarfs any walk).
const hugeString = "x".repeat(MB100);
const oneHugeString = { data: hugeString, note: "one 100 MB string" };
const kbStrings = Array.from({ length: MB100 / 1024 }, (_, i) => hugeString.slice(i, i + 1024));
const tenKbStrings = Array.from({ length: MB100 / 10240 }, (_, i) => hugeString.slice(i, i + 10240));
const flatNodes = new Array<number>(1e7).fill(7);
const row = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`col${i}`, i]));
const rowNodes = new Array(1e4).fill(row); // one shared row: 10^7 nodes without 10^7 objects in memory

const encoder = new TextEncoder();
const searchBytes = encoder.encode(JSON.stringify(searchResult));
const hugeBytes = encoder.encode(JSON.stringify({ data: hugeString.slice(0, MB100 - 64) }));

// --- verify ------------------------------------------------------------------
const same = (a: StructuredWalk, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
const nodesRejected = { status: "rejected", reason: "nodes", refs: [] };
const checks: Array<[string, boolean]> = [
  [
    "1 KB payload: its 4 URLs, the file path and the task id, in order",
    same(walkStructured(searchResult), {
      status: "ok",
      refs: [
        ...searchResult.results.map((r) => ({ type: "file", ref: r.url })),
        { type: "file", ref: searchResult.file_path },
        { type: "task", ref: searchResult.task_id },
      ],
    }),
  ],
  ["1 KB payload is about 1 KB", searchBytes.length > 900 && searchBytes.length < 1200],
  ["walkJsonBytes(1 KB) == walkStructured(1 KB)", same(walkJsonBytes(searchBytes), walkStructured(searchResult))],
  ["one 100 MB string: no entries (too long for data)", same(walkStructured(oneHugeString), { status: "ok", refs: [] })],
  ["10^5 strings of 1 KB: rejected on nodes", same(walkStructured(kbStrings), nodesRejected)],
  ["10^4 strings of 10 KB: rejected on nodes", same(walkStructured(tenKbStrings), nodesRejected)],
  ["10^7 flat nodes: rejected on nodes", same(walkStructured(flatNodes), nodesRejected)],
  ["10^7 nodes in 1000-key rows: rejected on nodes", same(walkStructured(rowNodes), nodesRejected)],
  ["file result", same(walkStructured(small["file result"]), { status: "ok", refs: [{ type: "file", ref: "/mnt/user-data/outputs/chart.png" }] })],
  ["task result", same(walkStructured(small["task result"]), { status: "ok", refs: [{ type: "task", ref: "run_01HZX3V8Q2" }] })],
  ["data result", same(walkStructured(small["data result"]), { status: "ok", refs: [], data: JSON.stringify(small["data result"]) })],
  ["url list (data: rejected)", walkStructured(small["url list"]).refs.length === 2],
  ["walkJsonBytes(100 MB) finds nothing", same(walkJsonBytes(hugeBytes), { status: "ok", refs: [] })],
  ["isReference", isReference("https://example.com/a.pdf") && !isReference("data:text/plain,x")],
];
for (const [name, ok] of checks) {
  console.log(`${ok ? "ok  " : "FAIL"} ${name}`);
  if (!ok) process.exit(1);
}

// --- time --------------------------------------------------------------------
// Small calls run REPS times per sample, so that the timer's resolution does not dominate.
const REPS = 100;
const bench = new Bench({ time: 1500, warmupTime: 300 });
let sink = 0;
const once = (name: string, fn: () => StructuredWalk) => bench.add(name, () => void (sink += fn().refs.length));
const reps = (name: string, fn: () => unknown) =>
  bench.add(name, () => {
    for (let i = 0; i < REPS; i++) sink += fn() ? 1 : 0;
  });

once("walk 1 KB payload", () => walkStructured(searchResult));
once("one 100 MB string under data", () => walkStructured(oneHugeString));
once("100 MB as 10^5 strings of 1 KB", () => walkStructured(kbStrings));
once("100 MB as 10^4 strings of 10 KB", () => walkStructured(tenKbStrings));
once("10^7 nodes, flat", () => walkStructured(flatNodes));
once("10^7 nodes, 1000-key rows", () => walkStructured(rowNodes));
once("walkJsonBytes 100 MB", () => walkJsonBytes(hugeBytes));
for (const [name, payload] of Object.entries(small)) {
  reps(`walkStructured ${name}`, () => walkStructured(payload));
  reps(`JSON.stringify ${name}`, () => JSON.stringify(payload));
}
reps("walkStructured 1 KB payload", () => walkStructured(searchResult));
reps("JSON.stringify 1 KB payload", () => JSON.stringify(searchResult));
reps("walkJsonBytes 1 KB payload", () => walkJsonBytes(searchBytes));
reps("isReference", () => isReference("https://reports.example.com/finance/2024/q1/revenue.pdf"));

await bench.run();

const median = (name: string): number => {
  const r = bench.tasks.find((t) => t.name === name)?.result;
  if (!r || !("latency" in r)) throw new Error(`bench task ${name} did not complete (${r?.state})`);
  return r.latency.p50; // ms
};
const us = (ms: number) => `${(ms * 1000).toFixed(1).padStart(8)} µs`;
const perCall = (name: string) => `${((median(name) * 1e6) / REPS).toFixed(0).padStart(6)} ns`;

const base = median("walk 1 KB payload");
console.log(`\nmedians (sink ${sink > 0 ? "consumed" : "empty"})`);
console.log(`  walk 1 KB payload (baseline)            ${us(base)}`);
for (const name of [
  "one 100 MB string under data",
  "100 MB as 10^5 strings of 1 KB",
  "100 MB as 10^4 strings of 10 KB",
  "10^7 nodes, flat",
  "10^7 nodes, 1000-key rows",
]) {
  const m = median(name);
  console.log(`  ${name.padEnd(39)} ${us(m)}   ${(m / base).toFixed(2)}× the 1 KB walk (target ≤ 1 ms)`);
}
const bytesMs = median("walkJsonBytes 100 MB");
console.log(`  walkJsonBytes 100 MB of JSON bytes      ${us(bytesMs)}   ${(hugeBytes.length / 1e9 / (bytesMs / 1e3)).toFixed(2)} GB/s incl. the copy into the arena (info: bytes must be validated)`);
console.log(`\nper call (median of ${REPS}-call samples)`);
for (const name of [...Object.keys(small), "1 KB payload"]) {
  console.log(`  ${name.padEnd(14)} walkStructured ${perCall(`walkStructured ${name}`)}   JSON.stringify alone ${perCall(`JSON.stringify ${name}`)}`);
}
console.log(`  walkJsonBytes 1 KB ${perCall("walkJsonBytes 1 KB payload")}`);
console.log(`  isReference (URL)  ${perCall("isReference")}`);
