/**
 * scanBatch's `signal`: a batch job's deadline or cancel. The call rejects
 * with the signal's reason once the calling thread is free (it scans at most
 * 512 items a turn of the event loop); nothing more is scanned or sent;
 * slices waiting in a busy pool's queue leave it; the pool serves on.
 */
import { getEventListeners } from "node:events";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { scanBatch, ScanPool, sliceSize, type BatchItem } from "../src/batch/index.js";
import { extractArtifacts } from "../src/extract.js";
import type { ToolMessage } from "@langchain/core/messages";
import type { WorkerFaults } from "../src/batch/protocol.js";
import { underPermission } from "./support/permission.js";
import { heldWorker, until } from "./support/pool.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CREATED_AT = "2025-01-02T03:04:05.000Z";

/** `n` tool results, item i on thread `threadOf(i)`; `read` collects the index of every item whose message was read. */
function tracked(n: number, threadOf: (i: number) => string = () => "t", onRead: (i: number) => void = () => {}) {
  const read = new Set<number>();
  const items = Array.from({ length: n }, (_, i): BatchItem => {
    const message = { type: "tool", tool_call_id: `c${i}`, name: "writer", content: `wrote /mnt/user-data/out/${i}.csv` };
    return {
      threadId: threadOf(i),
      get message() {
        read.add(i);
        onRead(i);
        return message;
      },
    } as BatchItem;
  });
  return { items, read };
}

/** A batch of one result on thread `threadId` (see the pool's faults). */
const one = (threadId: string): BatchItem[] => [{ threadId, message: { tool_call_id: threadId, content: `/mnt/user-data/${threadId}.txt` } }];
/** Every slice to the pool's workers, however small the batch. */
const onWorkers = { poolThreshold: 0, callingThreadScans: false } as const;

const range = (first: number, end: number) => Array.from({ length: end - first }, (_, k) => first + k);
const sorted = (read: Set<number>) => [...read].sort((a, b) => a - b);

/** A batch on `pool` gives extractArtifacts' entries: the pool still serves. */
async function servesOn(pool: ScanPool) {
  const items: BatchItem[] = range(0, 8).map((i) => ({ threadId: "after", message: { type: "tool", tool_call_id: `a${i}`, name: "w", content: `/mnt/user-data/after/${i}.txt` } }));
  const result = await scanBatch(items, { pool, ...onWorkers, createdAt: CREATED_AT });
  expect(result.errors).toEqual([]);
  expect(result.entries).toEqual(items.map((item) => extractArtifacts(item.message as ToolMessage, { threadId: "after", now: () => CREATED_AT })));
}

const pools: ScanPool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.close()));
});
function newPool(...args: ConstructorParameters<typeof ScanPool>) {
  const pool = new ScanPool(...args);
  pools.push(pool);
  return pool;
}

const releases: (() => void)[] = [];
afterEach(() => releases.splice(0).forEach((release) => release()));
/** A one-thread pool whose worker, reaching an item of thread "hold", waits until released (after the test at the latest). */
function heldPool(faults: WorkerFaults = {}) {
  const held = heldWorker("hold");
  releases.push(held.release);
  return { held, pool: newPool({ threads: 1, idleTimeoutMs: 60_000, faults: { ...faults, hold: held.fault } }) };
}

describe("scanBatch's signal", () => {
  it.each([
    ["a string", "stop"],
    ["null", null],
    ["an object without listeners", { aborted: false }],
    ["an object that can add a listener but not remove it", { aborted: false, addEventListener() {} }],
    ["an AbortController", new AbortController()],
  ])("refuses %s, naming the option", async (_, signal) => {
    await expect(scanBatch([], { signal: signal as never })).rejects.toThrow(/^scanBatch: options\.signal must be an AbortSignal \(got /);
  });

  it.each([
    ["the calling thread", Infinity],
    ["a pool", 0],
  ])("an aborted signal rejects with its reason before anything is read (%s)", async (_, poolThreshold) => {
    const pool = newPool({ threads: 1 });
    const { items, read } = tracked(40);
    const reason = new Error("deadline passed");
    await expect(scanBatch(items, { pool, poolThreshold, signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    // Without a reason of its own, Node's AbortError; a polyfill's signal without one gets one too.
    await expect(scanBatch(items, { pool, poolThreshold, signal: AbortSignal.abort() })).rejects.toMatchObject({ name: "AbortError" });
    const polyfill = { aborted: true, reason: undefined, addEventListener() {}, removeEventListener() {} } as unknown as AbortSignal;
    await expect(scanBatch(items, { pool, poolThreshold, signal: polyfill })).rejects.toMatchObject({ name: "AbortError" });
    // Any other reason is the rejection itself, as signal.throwIfAborted() throws it: null too.
    await expect(scanBatch(items, { pool, poolThreshold, signal: AbortSignal.abort(null) })).rejects.toBe(null);
    expect(read.size).toBe(0);
  });

  it("on the calling thread, hears an abort from the event loop at the next slice", async () => {
    // What a batch without a pool does, as on a machine below three cores.
    const { items, read } = tracked(3000);
    const controller = new AbortController();
    const reason = new Error("timed out");
    setImmediate(() => controller.abort(reason)); // as a timeout's timer would, once the loop turns
    await expect(scanBatch(items, { poolThreshold: Infinity, signal: controller.signal, createdAt: CREATED_AT })).rejects.toBe(reason);
    expect(sorted(read)).toEqual(range(0, 512)); // the first slice, scanned before the loop turned
    // An abort while the last slice is scanned rejects too, as the pool's listener does.
    const last = new AbortController();
    const small = tracked(100, undefined, (i) => i === 50 && last.abort(reason));
    await expect(scanBatch(small.items, { poolThreshold: Infinity, signal: last.signal, createdAt: CREATED_AT })).rejects.toBe(reason);
    expect(small.read.size).toBe(100); // the slice it was on, finished
  });

  it("rejects at once while a worker still scans its slice, sends no further slice, and the pool serves on", async () => {
    const { held, pool } = heldPool();
    const { items, read } = tracked(40, (i) => (i === 0 ? "hold" : "t"));
    const controller = new AbortController();
    const batch = scanBatch(items, { pool, ...onWorkers, signal: controller.signal, createdAt: CREATED_AT });
    await until(held.holding);
    const first = range(0, sliceSize(40, 1));
    expect(sorted(read)).toEqual(first); // the one slice sent, packed here
    const reason = new Error("cancelled by the job");
    controller.abort(reason);
    await expect(batch).rejects.toBe(reason);
    expect(held.holding()).toBe(true); // the rejection did not wait for the worker
    held.release();
    // Its slice done, the worker takes the next batch; the aborted one sent nothing more meanwhile.
    await servesOn(pool);
    expect(sorted(read)).toEqual(first);
  });

  it("lets the slice a worker is scanning finish there when the signal aborts: that worker is not ended", async () => {
    const { held, pool } = heldPool();
    const controller = new AbortController();
    const batch = scanBatch(one("hold"), { pool, ...onWorkers, signal: controller.signal });
    await until(held.holding);
    const [worker] = pool.workers;
    let exited = false;
    worker.once("exit", () => (exited = true));
    controller.abort();
    await expect(batch).rejects.toMatchObject({ name: "AbortError" });
    held.release();
    await servesOn(pool);
    expect(exited).toBe(false);
    expect(pool.workers).toEqual([worker]);
  });

  it("takes its slices out of a busy pool's queue: they never run", async () => {
    const { held, pool } = heldPool({ exitOnThreadId: "crash" });
    const holding = scanBatch(one("hold"), { pool, ...onWorkers });
    await until(held.holding);
    const [worker] = pool.workers;
    const controller = new AbortController();
    // Were this slice to run, its item would end the worker.
    const queued = scanBatch(one("crash"), { pool, ...onWorkers, signal: controller.signal });
    await new Promise((resume) => setImmediate(resume)); // it is in Piscina's queue by then
    controller.abort();
    await expect(queued).rejects.toMatchObject({ name: "AbortError" });
    held.release();
    expect((await holding).entries[0]).toMatchObject([{ real_ref: "/mnt/user-data/hold.txt" }]);
    await servesOn(pool); // queued behind where the aborted slice was
    expect(pool.workers).toEqual([worker]);
  });

  it("aborted while the pool loads, sends its slice to no worker", async () => {
    const { held, pool } = heldPool();
    const controller = new AbortController();
    // Were this slice to reach the worker, it would hold the pool's one thread.
    const batch = scanBatch(one("hold"), { pool, ...onWorkers, signal: controller.signal });
    controller.abort(); // the pool is still loading Piscina
    await expect(batch).rejects.toMatchObject({ name: "AbortError" });
    await servesOn(pool);
    expect(held.holding()).toBe(false);
  });

  it.each([
    [4, false],
    [1, true],
  ])("an abort while a slice is packed for the pool stops there (threads: %i, calling thread scans: %s)", async (threads, callingThreadScans) => {
    const pool = newPool({ threads, idleTimeoutMs: 60_000 });
    const controller = new AbortController();
    const reason = new Error("stop");
    const slice = sliceSize(400, threads);
    const { items, read } = tracked(400, undefined, (i) => i === 10 && controller.abort(reason));
    await expect(scanBatch(items, { pool, poolThreshold: 0, callingThreadScans, signal: controller.signal, createdAt: CREATED_AT })).rejects.toBe(reason);
    await servesOn(pool);
    expect(sorted(read)).toEqual(range(0, slice)); // the slice it was packing, finished; no other read, packed or scanned here
  });

  it("with the calling thread scanning too, stops at the end of the slice it is on", async () => {
    const { held, pool } = heldPool();
    const controller = new AbortController();
    const reason = new Error("stop");
    const n = 400;
    const slice = sliceSize(n, 1);
    // The worker holds the first slice; this thread scans the next ones and
    // reads the abort in the middle of the third slice.
    const abortAt = 2 * slice + slice / 2;
    const { items, read } = tracked(
      n,
      (i) => (i === 0 ? "hold" : "t"),
      (i) => i === abortAt && controller.abort(reason),
    );
    await expect(scanBatch(items, { pool, poolThreshold: 0, signal: controller.signal, createdAt: CREATED_AT })).rejects.toBe(reason);
    held.release();
    await servesOn(pool);
    expect(sorted(read)).toEqual(range(0, 3 * slice));
  });

  it.each([true, false])("after close() in the middle of a batch, this thread scans the rest a turn of the event loop at a time, so a timer's abort lands (calling thread scans: %s)", async (callingThreadScans) => {
    const pool = newPool({ threads: 2 });
    await pool.workerStarted();
    const controller = new AbortController();
    const reason = new Error("deadline");
    let closed = false;
    let readAtTimer: number | undefined;
    let readAtAbort: number | undefined;
    const { items, read } = tracked(20_000, undefined, () => {
      if (!closed || readAtTimer !== undefined) return;
      readAtTimer = read.size; // the first item read once the pool is closed
      setTimeout(() => {
        readAtAbort = read.size;
        controller.abort(reason);
      }, 0);
    });
    const batch = scanBatch(items, { pool, poolThreshold: 0, callingThreadScans, signal: controller.signal, createdAt: CREATED_AT });
    await new Promise((resume) => setImmediate(resume)); // the first slices are out
    const closing = pool.close();
    closed = true;
    await expect(batch).rejects.toBe(reason);
    await closing;
    // 512 items a turn: what was left of this turn's, then the next turn's, which starts before timers run.
    expect(readAtAbort! - readAtTimer!).toBeLessThan(2 * sliceSize(20_000, 2));
  });

  it("this thread scans at most 512 items a turn of the event loop, even when several workers' results come in one", async () => {
    const n = 4096;
    const pool = newPool({ threads: 2, idleTimeoutMs: 60_000 });
    await scanBatch(tracked(n).items, { pool, ...onWorkers }); // both workers started
    expect(pool.workers).toHaveLength(2);
    const slice = sliceSize(n, 2);
    expect(slice).toBe(512);
    // Reading an item past the first two slices takes this thread 0.2 ms, so
    // both workers' first results come in while it scans the third slice.
    let turn = 0;
    let ticking = true;
    const tick = () => {
      turn++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const byTurn = new Map<number, Set<number>>();
    const { items } = tracked(n, undefined, (i) => {
      if (i < 2 * slice) return;
      for (const start = performance.now(); performance.now() - start < 0.2; );
      byTurn.set(turn, (byTurn.get(turn) ?? new Set()).add(i));
    });
    try {
      const result = await scanBatch(items, { pool, poolThreshold: 0, createdAt: CREATED_AT });
      expect(result.entries.flat()).toHaveLength(n);
    } finally {
      ticking = false;
    }
    // A turn reads at most the slices packed for the two workers and the one scanned here.
    expect(Math.max(...[...byTurn.values()].map((read) => read.size))).toBeLessThanOrEqual(3 * slice);
  });

  it("hears a timer's abort while a pool that cannot start refuses each slice, the calling thread kept free", () => {
    // Node's permission model without --allow-worker: the pool refuses every task within a microtask.
    const script = `
      import { scanBatch, ScanPool } from ${JSON.stringify(ROOT + "dist/index.js")};
      const read = new Set();
      const items = Array.from({ length: 20000 }, (_, i) => {
        const message = { type: "tool", tool_call_id: "c" + i, content: "/mnt/user-data/f" + i + ".txt" };
        return { threadId: "t", get message() { read.add(i); return message; } };
      });
      const controller = new AbortController();
      const reason = new Error("deadline");
      const pool = new ScanPool({ threads: 2 });
      const batch = scanBatch(items, { pool, poolThreshold: 0, callingThreadScans: false, signal: controller.signal });
      setTimeout(() => controller.abort(reason), 0);
      const outcome = await batch.then((r) => "resolved with " + r.errors.length + " errors", (e) => (e === reason ? "rejected with the reason" : String(e)));
      await pool.close();
      console.log(JSON.stringify({ outcome, read: read.size }));`;
    const r = underPermission(["--input-type=module", "-e", script]);
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { outcome: string; read: number };
    // Before, the batch was packed to its end (20000 items, each failed) before the timer could run.
    expect(out.outcome).toBe("rejected with the reason");
    expect(out.read).toBeLessThan(20000);
  });

  it("a batch still running hears the abort after another batch on the same signal has settled", async () => {
    const { held, pool } = heldPool();
    const controller = new AbortController();
    const { signal } = controller;
    const waiting = scanBatch(one("hold"), { pool, ...onWorkers, signal });
    await until(held.holding);
    const done = await scanBatch(one("other"), { pool: newPool({ threads: 1 }), ...onWorkers, signal });
    expect(done.entries[0]).toMatchObject([{ real_ref: "/mnt/user-data/other.txt" }]);
    const reason = new Error("late");
    controller.abort(reason);
    held.release(); // a batch that missed the abort would now resolve
    await expect(waiting).rejects.toBe(reason);
  });

  it("leaves no listener on the signal and no leak warning: many tasks in flight, many batches at once", async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    try {
      // More tasks in flight, and more batches on one signal, than Node's default of ten listeners per signal.
      const pool = newPool({ threads: 12 });
      const controller = new AbortController();
      const { signal } = controller;
      const { items } = tracked(12 * 4 * 3);
      const batches = () => Array.from({ length: 12 }, () => scanBatch(items, { pool, ...onWorkers, signal, createdAt: CREATED_AT }));
      for (let round = 0; round < 2; round++) {
        for (const result of await Promise.all(batches())) {
          expect(result.errors).toEqual([]);
          expect(result.entries.flat()).toHaveLength(items.length);
        }
        expect(getEventListeners(signal, "abort")).toHaveLength(0);
      }
      // One abort stops them all.
      const running = batches();
      const reason = new Error("the job's deadline");
      controller.abort(reason);
      for (const batch of running) await expect(batch).rejects.toBe(reason);
      expect(getEventListeners(signal, "abort")).toHaveLength(0);
      await new Promise((resume) => setImmediate(resume)); // warnings are emitted on the next tick
      expect(warnings.map((w) => w.name)).not.toContain("MaxListenersExceededWarning");
    } finally {
      process.off("warning", onWarning);
    }
  });
});
