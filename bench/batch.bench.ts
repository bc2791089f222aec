/**
 * scanBatch on the pool vs extractArtifacts in a loop on the calling thread,
 * over batch sizes, to find the size below which the pool does not pay (the
 * POOL_THRESHOLD of src/batch/index.ts). Both sides get the same items; the
 * pool is warm (its workers started) as it is for any but the first batch.
 *
 * Two corpora: typical tool results (1–24 KB, bench/batch-corpus.ts) and
 * small ones (a few hundred bytes), since the crossover depends on item size.
 */
import { deepStrictEqual } from "node:assert/strict";
import { availableParallelism } from "node:os";
import { alternatingRounds, median } from "./rounds.js";
import { BufferPool } from "../src/batch/buffers.js";
import { MIN_CORES_FOR_SHARED_POOL, POOL_THRESHOLD, ScanPool, scanBatch, sliceSize, type BatchItem } from "../src/batch/index.js";
import { normalizeItem, writeItem } from "../src/batch/items.js";
import { decodeEntries, packRecords, unpackRecords } from "../src/batch/packing.js";
import { scanRecords } from "../src/batch/scan.js";
import { extractArtifacts, type ToolMessageLike } from "../src/extract.js";
import { toolResults } from "./batch-corpus.js";

const CREATED_AT = "2025-01-01T00:00:00.000Z";
const now = () => CREATED_AT;
const threads = availableParallelism();
const pool = new ScanPool({ threads });

const loop = (items: readonly BatchItem[]) => items.map((it) => extractArtifacts(it.message as ToolMessageLike, { threadId: it.threadId, callIndex: it.callIndex, now }));
const onPool = (items: readonly BatchItem[], callingThreadScans = true) => scanBatch(items, { pool, poolThreshold: 0, createdAt: CREATED_AT, callingThreadScans });

const typical = toolResults(12 * 1024 * 1024).items;
const small: BatchItem[] = Array.from({ length: 4096 }, (_, i) => ({
  threadId: `t${i % 9}`,
  message: { type: "tool", id: `m${i}`, tool_call_id: `c${i}`, name: "shell", content: `$ python export.py\nSaved table to /mnt/user-data/outputs/run-${i}/table_${i}.csv (${i} rows)\nsee https://docs.example.com/guide/${i}.html` },
}));
const sizeOf = (items: readonly BatchItem[]) => items.reduce((n, it) => n + JSON.stringify(it.message).length, 0);

// Correctness before timing: the pool gives exactly the loop's entries, item by item.
for (const items of [typical, small]) {
  for (const share of [true, false]) {
    const got = await onPool(items, share);
    deepStrictEqual(got.errors, []);
    deepStrictEqual(got.entries, loop(items));
  }
}
console.log(`typical: ${typical.length} items, ${(sizeOf(typical) / 1e6).toFixed(1)} MB, ${loop(typical).flat().length} entries; small: ${small.length} items, ${(sizeOf(small) / small.length).toFixed(0)} B each`);
console.log(`scanBatch on a pool of ${threads} threads == extractArtifacts loop on all items (entries and order)\n`);

const ROUNDS = 3;

/** Median ms per batch of each side. */
async function compare(items: readonly BatchItem[]) {
  const sides = await alternatingRounds(
    { loop: () => void loop(items), shared: async () => void (await onPool(items, true)), workers: async () => void (await onPool(items, false)) },
    ROUNDS,
    { time: 250, warmupTime: 50 },
  );
  return { loop: median(sides.loop), shared: median(sides.shared), workers: median(sides.workers) };
}

for (const [label, corpus, sizes] of [
  ["typical tool results (1–24 KB)", typical, [1, 4, 16, 32, 64, 128, 256, 512, 986]],
  ["small tool results (~200 B)", small, [16, 64, 256, 1024, 4096]],
] as const) {
  console.log(`${label}: median ms per batch (median of ${ROUNDS} alternating rounds)`);
  console.log(`  loop = extractArtifacts in a loop; shared = scanBatch on the pool, calling thread scanning too (default); workers = callingThreadScans: false`);
  console.log(`  ${"items".padStart(6)} ${"loop".padStart(9)} ${"shared".padStart(9)} ${"workers".padStart(9)} ${"loop/shared".padStart(12)} ${"loop/workers".padStart(13)}`);
  let crossover: number | undefined;
  for (const n of sizes) {
    const r = await compare(corpus.slice(0, n));
    const ratio = r.loop / r.shared;
    if (ratio > 1) crossover ??= n;
    else crossover = undefined;
    console.log(
      `  ${String(n).padStart(6)} ${r.loop.toFixed(3).padStart(9)} ${r.shared.toFixed(3).padStart(9)} ${r.workers.toFixed(3).padStart(9)} ${`${ratio.toFixed(2)}×`.padStart(12)} ${`${(r.loop / r.workers).toFixed(2)}×`.padStart(13)}`,
    );
  }
  console.log(`  the pool (shared) pays from ${crossover ?? "no measured size"} items on\n`);
}
// What the pool costs, one thread at a time. On a machine whose second core is
// busy (this shared VM: two threads of pure spinning take twice as long as
// one) the wall-clock comparison above cannot show a parallel gain, so the
// crossover is also computed from these per-item costs, for workers that do
// get a core: the calling thread packs slices (m per item) and scans slices
// itself (e per item) while the workers scan theirs (w per item); a batch also
// pays one round trip (L).
const buffers = new BufferPool();
const perItem = (n: number, fn: () => void) => {
  const times: number[] = [];
  for (let r = 0; r < 31; r++) {
    const t0 = performance.now();
    fn();
    times.push(performance.now() - t0);
  }
  return median(times) / n;
};
const slice = typical.slice(0, 64);
const packSlice = () => {
  const records: string[] = [];
  for (const it of slice) writeItem(normalizeItem(it), records);
  return packRecords(records, (b) => buffers.take(b));
};
const e = perItem(slice.length, () => void loop(slice));
const packed = packSlice();
const results = scanRecords(packed, { createdAt: CREATED_AT });
const m =
  perItem(slice.length, () => buffers.give(packSlice())) +
  perItem(slice.length, () => void unpackRecords(results).map((r) => decodeEntries(r)));
// What a worker runs (unpack, extract, pack entries), timed here on the calling
// thread: it excludes the per-worker JIT warm-up that decides whether a pool pays.
const w = perItem(slice.length, () => buffers.give(scanRecords(packed, { createdAt: CREATED_AT }, undefined, (b) => buffers.take(b))));
const trips: number[] = [];
for (let r = 0; r < 31; r++) {
  const t0 = performance.now();
  const { output, free } = await pool.run({ kind: "records", input: packRecords([]), options: {} });
  trips.push(performance.now() - t0);
  for (const b of [output, ...free]) buffers.give(b);
}
const L = median(trips);
const us = (ms: number) => `${(ms * 1000).toFixed(1)} µs`;
console.log(`per item, typical results, one thread (median of 31): extract e = ${us(e)}, pack + decode on the calling thread m = ${us(m)}, records scan (the worker's code, on this thread) w = ${us(w)}; round trip L = ${L.toFixed(3)} ms`);

/** scanBatch's schedule replayed with those costs: ms for n items when the workers share `cores` free cores. */
function predicted(n: number, cores: number): number {
  const size = sliceSize(n, threads);
  const workers = new Array<number>(threads).fill(0);
  const speed = Math.min(1, cores / threads); // workers beyond the free cores share them
  let main = 0;
  let end = 0;
  for (let first = 0; first < n; ) {
    for (let j = 0; j < threads && first < n; j++) {
      if (workers[j] > main) continue;
      const s = Math.min(size, n - first);
      first += s;
      main += m * s;
      workers[j] = main + L + (w * s) / speed;
      end = Math.max(end, workers[j]);
    }
    if (first < n) {
      const s = Math.min(size, n - first);
      first += s;
      main += e * s;
    }
  }
  return Math.max(main, end);
}
const sizes = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096];
for (const cores of [1, 2]) {
  let from: number | undefined;
  for (const n of sizes) {
    if (predicted(n, cores) < e * n) from ??= n;
    else from = undefined;
  }
  const big = (e * 4096) / predicted(4096, cores);
  console.log(`  workers with ${cores} free core${cores > 1 ? "s" : ""} beside the calling thread: pays from ${from ?? "no size"} items on; ${big.toFixed(2)}× the loop at 4096 items`);
}
console.log(`POOL_THRESHOLD = ${POOL_THRESHOLD}, MIN_CORES_FOR_SHARED_POOL = ${MIN_CORES_FOR_SHARED_POOL} (src/batch/index.ts); this machine: ${threads} cores`);
await pool.close();
