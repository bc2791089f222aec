/**
 * The worker pool behind batch scanning: Piscina, one engine per worker,
 * every task and result moved as one ArrayBuffer.
 */
import { availableParallelism } from "node:os";
import { createRequire } from "node:module";
// Node's, not the global one a host's fake timers or DOM environment replace.
import { setImmediate } from "node:timers";
import { pathToFileURL } from "node:url";
import type { Worker } from "node:worker_threads";
import type { Piscina } from "piscina";
import { BufferPool } from "./buffers.js";
import { abortReason } from "./abort.js";
import { errorMessage, WorkerStartError } from "./errors.js";
import { describeValue, unknownOptionProblem } from "../types.js";
import type { ScanResult, ScanTask, WorkerFaults } from "./protocol.js";

/** The options of `new ScanPool(options)`; unknown keys are refused. */
export interface ScanPoolOptions {
  /** Worker threads at most. Default: `os.availableParallelism()`. */
  threads?: number | undefined;
  /** How long an idle worker lives before it exits, in milliseconds. Default 2000. */
  idleTimeoutMs?: number | undefined;
  /** @internal Fault injection for tests. */
  faults?: WorkerFaults;
}

const SCAN_POOL_OPTIONS = ["threads", "idleTimeoutMs", "faults"] as const satisfies readonly (keyof ScanPoolOptions)[];

const DEFAULT_IDLE_TIMEOUT_MS = 2_000;

/** A task wrapped so that Piscina moves its buffers instead of copying them. */
type Move = (task: ScanTask, buffers: ArrayBuffer[], waiting?: Waiting) => unknown;

/** A task that scans nothing: all it needs is a worker. */
const emptyTask = (): ScanTask => ({ kind: "lines", input: new ArrayBuffer(0), inputBytes: 0, options: { format: "jsonl" } });

/**
 * Workers get only the flags they need, never the parent's: flags such as
 * `--input-type` or `--eval` make a worker fail to start (Node's own
 * inheritance, with no execArgv given, fails so too in some cases:
 * `--input-type can only be used with string input`). Options in
 * NODE_OPTIONS still reach the workers. Run from TypeScript
 * sources (tests, `tsx`), a worker needs the TypeScript loader; the built
 * package runs plain JavaScript.
 */
function workerEntry(): { filename: string; execArgv: string[] } {
  const fromSource = import.meta.url.endsWith(".ts");
  const filename = new URL(fromSource ? "./worker.ts" : "./worker.js", import.meta.url).href;
  if (!fromSource) return { filename, execArgv: [] };
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
  return { filename, execArgv: ["--import", tsx] };
}

/**
 * A task given to Piscina, until a worker takes it: only then may it be
 * aborted, which takes it out of the queue (aborting a task a worker has
 * would terminate that worker). The reason is why: no worker could start
 * (a WorkerStartError), the pool was closed, or the caller's signal aborted.
 */
type Waiting = AbortController;

/**
 * Each worker thread pipes its stdout and stderr into this process's, and
 * adds an "error" listener to each to do so: a pool of more than ten workers
 * must not make Node warn of a leak. Unlimited stays unlimited. A pool raises
 * the limit while it may have workers, from before it starts one until its
 * last has gone (idle, or closed), so a pool nobody closes does not keep the
 * limit raised for good.
 */
function allowWorkerListeners(workers: number): void {
  for (const stream of [process.stdout, process.stderr]) {
    const max = stream.getMaxListeners();
    // Never below 1 (0 means unlimited), nor a throw from a timer when the
    // host lowered the limit meanwhile.
    if (max !== 0) stream.setMaxListeners(Math.max(1, max + workers));
  }
}

/**
 * A pool of worker threads for `scanBatch`, one engine per worker. Workers
 * start at the first large batch and exit after `idleTimeoutMs` idle; a
 * worker that crashes fails only its items and is replaced. `close()` ends
 * it, after which the process can exit by itself.
 *
 * @example
 * ```ts
 * const pool = new ScanPool({ threads: 4 });
 * try {
 *   const { entries, errors } = await scanBatch(items, { pool });
 * } finally {
 *   await pool.close();
 * }
 * ```
 */
export class ScanPool {
  readonly threads: number;
  /** @internal Buffers for tasks and results; workers send back what they were sent. */
  readonly buffers = new BufferPool();
  readonly #idleTimeout: number;
  readonly #faults: WorkerFaults | undefined;
  /**
   * Piscina, loaded and made at the first task: a pool that is never used
   * (the CLI's, on a short archive) costs neither its loading nor a worker.
   */
  #piscina?: Piscina<unknown, ScanResult>;
  #ready?: Promise<{ piscina: Piscina<unknown, ScanResult>; move: Move }>;
  /** Tasks no worker has taken yet (the load balancer takes them out of this set). */
  readonly #waiting = new Set<Waiting>();
  #closing?: Promise<void>;
  /** Whether this pool has raised the stdout/stderr listener limit (see allowWorkerListeners). */
  #listenersAllowed = false;
  /** Workers seen (see #watch) that have not exited yet. */
  #alive = 0;
  readonly #watched = new WeakSet<Worker>();
  /** Called once the last worker has exited (see #workersGone). */
  #onGone?: () => void;
  /** This pool's tasks given to Piscina and not settled, queued or running. */
  readonly #pending = new Set<Promise<ScanResult>>();
  #closed = false;

  constructor(options: ScanPoolOptions = {}) {
    if (typeof options !== "object" || options === null) throw new TypeError("ScanPool: options must be an object");
    const unknown = unknownOptionProblem(options, SCAN_POOL_OPTIONS);
    if (unknown !== undefined) throw new TypeError(`ScanPool: ${unknown}`);
    const threads: unknown = options.threads ?? availableParallelism();
    // A string or boolean would pass a numeric comparison and fail only later, in Piscina, per item.
    if (typeof threads !== "number") throw new TypeError(`ScanPool: threads must be a positive integer, got ${describeValue(threads)}`);
    if (!Number.isSafeInteger(threads) || threads < 1) throw new RangeError(`ScanPool: threads must be a positive integer, got ${threads}`);
    const idleTimeout: unknown = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    if (typeof idleTimeout !== "number") throw new TypeError(`ScanPool: idleTimeoutMs must be a non-negative number, got ${describeValue(idleTimeout)}`);
    if (!(idleTimeout >= 0)) throw new RangeError(`ScanPool: idleTimeoutMs must be a non-negative number, got ${idleTimeout}`);
    this.threads = threads;
    this.#idleTimeout = idleTimeout;
    this.#faults = options.faults;
  }

  #start() {
    return (this.#ready ??= (async () => {
      // Node's permission model refuses worker threads without --allow-worker:
      // `new Worker` throws inside Piscina's run after it has queued the task,
      // which then waits for a worker that never comes and, failed at close(),
      // rejects a promise of Piscina's that nobody holds (the process dies).
      // Only this refusal can be seen ahead for free: catching the throw in
      // run() leaves that queued task, and probing with a thread of our own
      // (which would catch a thread limit too) costs every pool a thread
      // start on the path the CLI's start-up figures turn on.
      if (process.permission !== undefined && !process.permission.has("worker")) {
        throw new WorkerStartError("scan worker could not start: Node's permission model does not allow worker threads (run node with --allow-worker)");
      }
      // Piscina unrefs the timers it sets (a worker's idle timeout), which
      // throws inside it, and leaves its tasks pending for ever, where the
      // global setTimeout is a DOM's (jest's jsdom environment: a number).
      const probe = setTimeout(() => {}, 0);
      clearTimeout(probe);
      if (typeof (probe as { unref?: unknown } | undefined)?.unref !== "function") {
        throw new WorkerStartError(`scan worker could not start: the global setTimeout is not Node's (it gave ${describeValue(probe)}, which Piscina cannot unref): a DOM test environment's? Run this in a node environment`);
      }
      let loaded;
      try {
        loaded = await Promise.all([import("piscina"), import("./moved.js")]);
      } catch (err) {
        throw new WorkerStartError(`scan worker could not start: cannot load Piscina: ${errorMessage(err)}`, { cause: err });
      }
      const [{ Piscina, queueOptionsSymbol }, { Moved }] = loaded;
      const piscina = new Piscina<unknown, ScanResult>({
        ...workerEntry(),
        minThreads: 0,
        maxThreads: this.threads,
        idleTimeout: this.#idleTimeout,
        // Replies by message events only. With Atomics, Piscina (5.3.2) reads
        // a reply at once when one arrives while another is handled; a worker
        // handed a task in that handling could then answer within it, and
        // the idle timer its answer set was cleared a microtask later by the
        // handing-out: that worker never exited. Tasks here are large, so the
        // faster wake-up Atomics give is not missed.
        atomics: "disabled",
        workerData: { faults: this.#faults },
        // Piscina's own choice (one task per worker), noting the task handed
        // out: from now on it is running, not waiting. A worker still starting
        // may take one; should its start fail, the task fails as in a crash.
        // (Waiting for workers to have started instead leaves, now and then,
        // a worker whose idle timer Piscina cleared: it never exits.)
        loadBalancer: (task, workers) => {
          const worker = workers.find((w) => w.currentUsage === 0);
          if (worker) this.#waiting.delete((task as unknown as Record<symbol, Waiting>)[queueOptionsSymbol]);
          return worker ?? null;
        },
      });
      // Piscina reports a worker that fails before taking a task (its engine
      // did not load, say) only as this event, leaving queued tasks pending.
      // While another worker lives (busy, or starting), they wait for it.
      // With none left, nothing would start one: they fail. (Piscina also
      // emits this for other errors; a task's error reaches its caller.)
      piscina.on("error", (err: unknown) => {
        if (piscina.threads.length > 0) return;
        this.#abortWaiting(new WorkerStartError(`scan worker could not start: ${errorMessage(err)}`, { cause: err }));
      });
      // A worker keeps its pipes' listeners until it has exited, which in
      // Node comes after Piscina's destroy event, and in Deno inside it (its
      // terminate() emits "exit"): so each worker is watched from when it is
      // seen, and the destroy event only looks again once Piscina has
      // forgotten the worker.
      piscina.on("workerCreate", () => this.#watch(piscina));
      piscina.on("workerDestroy", () => {
        this.#watch(piscina);
        setImmediate(() => this.#workersGone(piscina));
      });
      this.#piscina = piscina;
      // The task's waiting state rides along under Piscina's queue-options
      // key, which its load balancer sees (a symbol key, so never sent to the worker).
      const move: Move = (task, buffers, waiting) => Piscina.move(new Moved(waiting ? { ...task, [queueOptionsSymbol]: waiting } : task, buffers));
      return { piscina, move };
    })());
  }

  /** Whether `close()` was called: a closed pool takes no task. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * @internal Run one task. Its buffers are moved, not copied: detached here
   * once a worker takes it. `signal` takes it out of the queue while no
   * worker has it; a running task is not stopped (that would kill its worker).
   */
  async run(task: ScanTask, signal?: AbortSignal): Promise<ScanResult> {
    // Piscina would take tasks again once closed, with workers close() never stops.
    if (this.#closed) throw new Error("ScanPool: the pool is closed");
    const { piscina, move } = await this.#start();
    if (this.#closed) throw new Error("ScanPool: the pool is closed");
    if (signal?.aborted) throw abortReason(signal);
    const waiting: Waiting = new AbortController();
    const onAbort = () => {
      if (this.#waiting.delete(waiting)) waiting.abort("aborted");
    };
    signal?.addEventListener("abort", onAbort);
    const moved = task.spare ? [task.input, task.spare] : [task.input];
    this.#allowListeners(true);
    this.#waiting.add(waiting);
    const result = piscina.run(move(task, moved, waiting), { signal: waiting.signal });
    this.#watch(piscina); // a worker Piscina made for this task is in its list by now
    this.#pending.add(result);
    const forget = () => this.#pending.delete(result);
    result.then(forget, forget);
    try {
      return await result;
    } catch (err) {
      this.#waiting.delete(waiting);
      // Aborted before a worker took it: its input was never moved.
      const why: unknown = waiting.signal.reason;
      if (why instanceof WorkerStartError) throw why;
      if (why === "closed") throw new Error("ScanPool: the pool was closed before a worker took this task", { cause: err });
      if (why === "aborted") throw abortReason(signal!);
      this.#replaceLostWorker(piscina, move);
      throw err;
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /** Resolves once a worker has started (it ran an empty task); rejects with WorkerStartError when none can. */
  async workerStarted(): Promise<void> {
    await this.run(emptyTask());
  }

  /**
   * Piscina replaces a worker that died only up to `minThreads` (0 here): had
   * the dead one been the last, the tasks queued behind its task would wait
   * for the next `run` to start a worker, and at the end of an archive there
   * is none. An empty task starts one; it runs after those queued.
   */
  #replaceLostWorker(piscina: Piscina<unknown, ScanResult>, move: Move): void {
    if (this.#closed || piscina.threads.length > 0 || piscina.queueSize === 0) return;
    this.#allowListeners(true);
    piscina.run(move(emptyTask(), [])).catch(() => {});
    this.#watch(piscina);
  }

  /** Count every worker in Piscina's list not seen before as alive until its "exit". */
  #watch(piscina: Piscina<unknown, ScanResult>): void {
    for (const worker of piscina.threads) {
      // Thread id -1: one that has exited already (a crash Piscina has not forgotten yet).
      if (this.#watched.has(worker) || worker.threadId === -1) continue;
      this.#watched.add(worker);
      this.#alive++;
      worker.once("exit", () => {
        this.#alive--;
        // Piscina's own exit listener (added first) may still be settling the dead worker's task.
        setImmediate(() => this.#workersGone(piscina));
      });
    }
  }

  #allowListeners(allow: boolean): void {
    // A closing pool starts no worker (run rejects).
    if (allow === this.#listenersAllowed || (allow && this.#closed)) return;
    this.#listenersAllowed = allow;
    allowWorkerListeners(allow ? this.threads : -this.threads);
  }

  /**
   * Once the last worker has exited, the limit goes back, and so do the idle
   * buffers: a pool nobody closes (the shared one) must not hold up to
   * BufferPool's 64 MiB for the process's life. The next task's workers start
   * anew anyway.
   */
  #workersGone(piscina: Piscina<unknown, ScanResult>): void {
    if (piscina.threads.length > 0 || this.#alive > 0) return;
    this.#allowListeners(false);
    this.buffers.clear();
    this.#onGone?.();
  }

  /** Fail every task no worker has taken (taking it out of Piscina's queue). */
  #abortWaiting(why: WorkerStartError | "closed"): void {
    for (const waiting of this.#waiting) waiting.abort(why);
    this.#waiting.clear();
  }

  /** @internal The live worker threads (diagnostics and fault tests). */
  get workers(): readonly Worker[] {
    return this.#piscina?.threads ?? [];
  }

  /**
   * Fail the tasks still queued, let running ones finish (however long they
   * take), then stop every worker and let idle buffers go; settles once the
   * workers have exited. A closed pool takes no more tasks.
   */
  async close(): Promise<void> {
    this.#closed = true;
    try {
      const ready = await this.#ready?.catch(() => undefined); // a pool that could not load has nothing to stop
      if (ready !== undefined) await (this.#closing ??= this.#stop(ready.piscina));
    } finally {
      this.buffers.clear();
    }
  }

  /**
   * Not Piscina's close: it would run the queued tasks, and spins forever on
   * one no worker can take (none may start while it closes); it counts a
   * worker that died under its task as never done, waiting out a 30 s
   * timeout; and it stops every worker once the first task after it ends,
   * so a second running task was killed.
   */
  async #stop(piscina: Piscina<unknown, ScanResult>): Promise<void> {
    this.#abortWaiting("closed");
    await Promise.allSettled(this.#pending);
    const gone = new Promise<void>((resolve) => (this.#onGone = resolve));
    await piscina.destroy();
    this.#workersGone(piscina);
    await gone;
  }
}
