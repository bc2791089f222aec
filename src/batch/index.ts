/**
 * `scanBatch`: extract the entries of many tool results in one call.
 *
 * Small batches run on the calling thread. Large ones are cut into slices,
 * each packed into one buffer and moved to a worker of a Piscina pool (one
 * engine per worker); results come back packed the same way. A failing item
 * fails alone; a worker that dies fails only the items of the slice it held,
 * and the pool starts a fresh worker for the next slice.
 */
import { availableParallelism } from "node:os";
// Not the global: a host's test under fake timers (vitest's, jest's) replaces
// it, and a batch turning the event loop would wait for a tick never given.
import { setImmediate } from "node:timers";
import { describeValue, isIndex, unknownOptionProblem, type ArtifactEntry } from "../types.js";
import { abortReason, isAbortSignal, raiseListenerLimit, whenAborted } from "./abort.js";
import { itemError, WorkerStartError, workerLostError, type BatchItemError } from "./errors.js";
import { isOtherMessage } from "../messages.js";
import { normalizeBatchItem, writeItem, type BatchItem, type NormalizedItem } from "./items.js";
import { decodeEntries, packRecords, unpackRecords } from "./packing.js";
import { ScanPool } from "./pool.js";
import { MIN_CORES_FOR_SHARED_POOL } from "./threads.js";
import { scanNormalized, scanOptionsOf, type ScanOptions } from "./scan.js";

export type { BatchItem } from "./items.js";
export type { BatchItemError } from "./errors.js";
export { ScanPool, type ScanPoolOptions } from "./pool.js";
export { archivePool, archiveThreads, MIN_CORES_FOR_SHARED_POOL, POOL_MIN_ARCHIVE_BYTES } from "./threads.js";

/**
 * Below this many items a batch runs on the calling thread. Set from the run
 * of bench/batch.bench.ts that first replayed scanBatch's schedule with the
 * measured per-item costs (extracting ≈ 48 µs, packing and decoding on the
 * calling thread ≈ 30 µs, the worker's code ≈ 104 µs warm, a round trip
 * ≈ 0.06 ms): with two cores free beside the calling thread, the pool paid
 * from 32 items on (1.2× the loop at 4096 items). The replay moves with the
 * shared machine's speed: later runs printed "from 16 items, 1.18×" and
 * "never, 0.94×". It only applies where the pool is used (see below).
 */
export const POOL_THRESHOLD = 32;

/** Slices per worker: enough to balance uneven items, few enough to keep per-task overhead small. */
const SLICES_PER_THREAD = 4;
const MAX_SLICE_ITEMS = 512;

/** Items per slice of a large batch of `items` on `threads` workers (bench/batch.bench.ts replays it). */
export function sliceSize(items: number, threads: number): number {
  return Math.min(MAX_SLICE_ITEMS, Math.ceil(items / (threads * SLICES_PER_THREAD)));
}

/** The options of `scanBatch`: where it scans, and the extraction options every item gets; unknown keys are refused. */
export interface ScanBatchOptions extends ScanOptions {
  /**
   * The pool for large batches. Default: one shared pool of
   * `os.availableParallelism()` threads, on machines with at least
   * MIN_CORES_FOR_SHARED_POOL cores (below that the calling thread is faster).
   */
  pool?: ScanPool | undefined;
  /** Batches with fewer items run on the calling thread. Default `POOL_THRESHOLD`. */
  poolThreshold?: number | undefined;
  /**
   * Whether the calling thread scans slices of a large batch too, while every
   * worker is busy. Default true (the most throughput: it saves packing those
   * slices); false keeps the calling thread free for its event loop. When
   * no pool worker can start, a calling thread that scans takes the whole
   * batch; one kept free leaves each item an error saying so.
   */
  callingThreadScans?: boolean | undefined;
  /**
   * Stops the batch: the call rejects with the signal's reason, no further
   * slice is scanned or sent, and slices queued for a busy pool leave its
   * queue. Slices a worker is scanning finish there, their results dropped;
   * a slice the calling thread is scanning finishes first. Scanning only on
   * the calling thread, a batch with a signal yields every MAX_SLICE_ITEMS
   * items so that the abort can land.
   */
  signal?: AbortSignal | undefined;
}

const SCAN_BATCH_OPTIONS = ["pool", "poolThreshold", "callingThreadScans", "signal", "detectRefsInText", "sandboxPrefixes", "createdAt"] as const satisfies readonly (keyof ScanBatchOptions)[];

/** What `scanBatch` resolves to: per item, in input order, its entries; the failed and the skipped items by index. */
export interface BatchResult {
  /** `entries[i]` are the entries of `items[i]` (empty when it failed). */
  entries: ArtifactEntry[][];
  /** The failed items, by ascending index. */
  errors: BatchItemError[];
  /**
   * Indexes (ascending) of the items whose message is another kind of
   * message (AI, human, system, …), not a tool result: they give no
   * entries, as capture and the CLI skip them.
   */
  skipped: number[];
}

let sharedPool: ScanPool | undefined;

/** Close the shared pool (if one was started). Idle workers exit anyway; this makes it immediate. */
export async function closeSharedPool(): Promise<void> {
  const pool = sharedPool;
  sharedPool = undefined;
  await pool?.close();
}

/**
 * Why `given` is not a pool this scanBatch can use. Each load of the package
 * (a second copy in node_modules, or one module loaded by both `import` and
 * `require` under tsx) has its own ScanPool class and engine, so `instanceof`
 * refuses the other's pools; the message names that case.
 */
function poolProblem(given: unknown): string {
  const name = typeof given === "object" ? (given as { constructor?: { name?: unknown } }).constructor?.name : undefined;
  return name === "ScanPool"
    ? "options.pool is a ScanPool of another copy of tool-artifacts (another node_modules copy, or the package loaded by both import and require); make it with the ScanPool exported beside this scanBatch"
    : `options.pool must be a ScanPool (got ${describeValue(given)})`;
}

/** Extract the entries of many tool results, in order, with a per-item error for each one that failed. */
export async function scanBatch(items: readonly BatchItem[], options: ScanBatchOptions = {}): Promise<BatchResult> {
  if (!Array.isArray(items)) throw new TypeError("scanBatch: items must be an array");
  // The items as they are now: later slices are read after awaits, and a
  // caller that reuses its array (clears or refills it) would otherwise lose
  // items without an error, or have others scanned in their place.
  const batch: readonly unknown[] = Array.prototype.slice.call(items);
  if (typeof options !== "object" || options === null) throw new TypeError("scanBatch: options must be an object");
  const unknown = unknownOptionProblem(options, SCAN_BATCH_OPTIONS);
  if (unknown !== undefined) throw new TypeError(`scanBatch: ${unknown}`);
  const { poolThreshold, callingThreadScans, pool: given, signal } = options;
  if (poolThreshold !== undefined && !(isIndex(poolThreshold) || poolThreshold === Infinity)) {
    throw new TypeError(`scanBatch: options.poolThreshold must be a non-negative integer or Infinity (got ${describeValue(poolThreshold)})`);
  }
  if (callingThreadScans !== undefined && typeof callingThreadScans !== "boolean") {
    throw new TypeError(`scanBatch: options.callingThreadScans must be a boolean (got ${describeValue(callingThreadScans)})`);
  }
  if (signal !== undefined && !isAbortSignal(signal)) throw new TypeError(`scanBatch: options.signal must be an AbortSignal (got ${describeValue(signal)})`);
  // Anything else would be waited on forever, or fail deep inside.
  if (given != null && !(given instanceof ScanPool)) throw new TypeError(`scanBatch: ${poolProblem(given)}`);
  // Else part of the batch would be scanned here and the rest blamed on workers that never ran.
  if (given?.closed) throw new Error("scanBatch: options.pool is closed");
  let scan: ScanOptions;
  try {
    scan = scanOptionsOf(options);
  } catch (error) {
    throw new TypeError(`scanBatch: ${(error as Error).message}`);
  }
  if (signal?.aborted) throw abortReason(signal);
  const entries: ArtifactEntry[][] = new Array(batch.length);
  const errors: BatchItemError[] = [];
  const skipped: number[] = [];
  /** Whether item `i` (`item` reduced) is no tool result, and so is done: it gives no entries. */
  const skip = (i: number, item: NormalizedItem): boolean => {
    if (!isOtherMessage(item.message)) return false;
    entries[i] = [];
    skipped.push(i);
    return true;
  };
  const scanHere = (i: number) => {
    try {
      const item = normalizeBatchItem(batch[i]);
      if (!skip(i, item)) entries[i] = scanNormalized(item, scan);
    } catch (err) {
      entries[i] = [];
      errors.push(itemError(i, batch[i], err));
    }
  };

  const large = batch.length >= (poolThreshold ?? POOL_THRESHOLD);
  const pool = !large ? undefined : (given ?? (availableParallelism() >= MIN_CORES_FOR_SHARED_POOL ? (sharedPool ??= new ScanPool()) : undefined));
  if (pool === undefined) {
    // With a signal, turn the event loop between slices: a timeout's or a
    // host's abort cannot land while this thread scans.
    const step = signal === undefined ? batch.length : MAX_SLICE_ITEMS;
    for (let first = 0; first < batch.length; first += step) {
      if (first > 0 && signal !== undefined) {
        await new Promise(setImmediate);
        if (signal.aborted) throw abortReason(signal);
      }
      const end = Math.min(first + step, batch.length);
      for (let i = first; i < end; i++) scanHere(i);
    }
    // As on the pool, where the abort's listener rejects: one during the last slice too.
    if (signal?.aborted) throw abortReason(signal);
    return { entries, errors, skipped };
  }

  const sliceItems = sliceSize(batch.length, pool.threads);

  const shareWork = callingThreadScans ?? true;
  /** No worker could start: as the CLI does, a calling thread that scans anyway takes the rest. */
  let poolDown = false;
  /** Closed during the batch, or down: no worker fails on what is left, which is scanned here. */
  const scanLeftHere = () => pool.closed || poolDown;
  // With a signal, the batch's tasks listen to one of its own, not the
  // caller's: one listener per task in flight would make Node warn of a leak
  // on a signal shared by a pool of more than ten threads.
  const stop = signal === undefined ? undefined : new AbortController();
  if (stop !== undefined) raiseListenerLimit(stop.signal);
  const stopped = () => stop?.signal.aborted === true;

  /** Items a worker was to scan, left to this thread (the pool closed or went down meanwhile). */
  const redo: number[] = [];

  /**
   * Scan items first..end-1 on a worker; settles (never rejects) once their
   * results are in place, or their items are in `redo`.
   */
  const send = (first: number, end: number): Promise<void> => {
    const indexes: number[] = [];
    const records: string[] = [];
    for (let i = first; i < end; i++) {
      const written = records.length;
      try {
        const item = normalizeBatchItem(batch[i]);
        if (skip(i, item)) continue;
        writeItem(item, records);
      } catch {
        // Bad shape, or not plain data (a cycle, a BigInt, a class, a URL; see readsAsWritten):
        // scanning it here gives the same entries or error the calling thread path would.
        records.length = written;
        scanHere(i);
        continue;
      }
      indexes.push(i);
    }
    if (indexes.length === 0) return Promise.resolve();
    const { buffers } = pool;
    const input = packRecords(records, (bytes) => buffers.take(bytes));
    return pool
      .run({ kind: "records", input, spare: buffers.spare(), options: scan }, stop?.signal)
      .then(({ output, free }) => {
        if (!stopped()) unpackRecords(output).forEach((record, j) => {
          const i = indexes[j];
          if (record.startsWith("[")) entries[i] = decodeEntries(record);
          else {
            entries[i] = [];
            errors.push(itemError(i, batch[i], (JSON.parse(record) as { error: string }).error));
          }
        });
        for (const b of [output, ...free]) buffers.give(b);
      })
      .catch((err: unknown) => {
        if (stopped()) return;
        if (err instanceof WorkerStartError && shareWork) poolDown = true;
        for (const i of indexes) {
          if (entries[i] !== undefined) continue; // decoded before a corrupt record stopped the rest
          // Unless this thread is to stay free: then each item says why it has nothing.
          if (scanLeftHere()) redo.push(i);
          else {
            entries[i] = [];
            errors.push(workerLostError(i, batch[i], indexes[0], indexes[indexes.length - 1], err));
          }
        }
        // A pool that cannot start (Node's permission model without
        // --allow-worker) refuses a task within a microtask: feeding it the
        // next slice at once would pack the rest of the batch without the
        // event loop turning, so no abort could land. Feed on the next turn.
        if (err instanceof WorkerStartError) return new Promise<void>((resume) => setImmediate(resume));
      });
  };

  // Keep every worker busy with one slice; while they all are, the calling
  // thread (unless told to stay free) scans the next slice itself, then yields
  // so finished slices are collected and their workers fed again.
  let next = 0;
  let running = 0;
  /** Items this thread has scanned since the event loop last turned (see feed). */
  let scannedThisTurn = 0;
  let stopListening = () => {};
  await new Promise<void>((resolve, reject) => {
    // Rejects at once; the slices still out finish on their own (see feed).
    if (signal !== undefined) {
      stopListening = whenAborted(signal, () => {
        stop?.abort();
        reject(abortReason(signal));
      });
    }
    const pump = () => {
      try {
        feed();
      } catch (err) {
        reject(err); // out of memory for a buffer, say: fail the call rather than hang it
      }
    };
    const feed = () => {
      // An abort may come from the caller's code an item runs (a getter), in send or scanHere too.
      while (!stopped() && !scanLeftHere() && next < batch.length && running < pool.threads) {
        const first = next;
        next = Math.min(first + sliceItems, batch.length);
        running++;
        void send(first, next).then(() => {
          running--;
          pump();
        });
      }
      // This thread scans at most MAX_SLICE_ITEMS items a turn of the event
      // loop, however many results came in it, so that an abort can land
      // between: items workers were to scan and cannot, else the next slice.
      if (stopped() || (scannedThisTurn > 0 && scannedThisTurn + sliceItems > MAX_SLICE_ITEMS)) return;
      let scanned: number;
      if (redo.length > 0) {
        const left = redo.splice(0, sliceItems);
        for (const i of left) scanHere(i);
        scanned = left.length;
      } else if (next < batch.length && (shareWork || scanLeftHere())) {
        const first = next;
        next = Math.min(first + sliceItems, batch.length);
        for (let i = first; i < next; i++) scanHere(i);
        scanned = next - first;
      } else {
        if (next >= batch.length && running === 0) resolve();
        return;
      }
      if (scannedThisTurn === 0) {
        setImmediate(() => {
          scannedThisTurn = 0;
          pump();
        });
      }
      scannedThisTurn += scanned;
    };
    pump();
  }).finally(() => stopListening());
  errors.sort((a, b) => a.index - b.index);
  skipped.sort((a, b) => a - b);
  return { entries, errors, skipped };
}
