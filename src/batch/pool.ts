/**
 * The worker pool behind batch scanning: Piscina, one engine per worker,
 * every task and result moved as one ArrayBuffer.
 */
import { setMaxListeners } from "node:events";
import { availableParallelism } from "node:os";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import type { Worker } from "node:worker_threads";
import type { Piscina } from "piscina";
import { BufferPool } from "./buffers.js";
import { errorMessage, WorkerStartError } from "./errors.js";
import { unknownOptionProblem } from "../types.js";
import type { ScanResult, ScanTask, WorkerFaults } from "./protocol.js";

export interface ScanPoolOptions {
  /** Worker threads at most. Default: `os.availableParallelism()`. */
  threads?: number;
  /** How long an idle worker lives before it exits, in milliseconds. Default 2000. */
  idleTimeoutMs?: number;
  /** @internal Fault injection for tests. */
  faults?: WorkerFaults;
}

const SCAN_POOL_OPTIONS = ["threads", "idleTimeoutMs", "faults"] as const satisfies readonly (keyof ScanPoolOptions)[];

const DEFAULT_IDLE_TIMEOUT_MS = 2_000;

/** A task wrapped so that Piscina moves its buffers instead of copying them. */
type Move = (task: ScanTask, buffers: ArrayBuffer[]) => unknown;

/** A task that scans nothing: all it needs is a worker. */
const emptyTask = (): ScanTask => ({ kind: "lines", input: new ArrayBuffer(0), inputBytes: 0, options: { format: "jsonl" } });

/**
 * Workers get only the flags they need, never the parent's: flags such as
 * `--input-type` or `--eval` make a worker fail to start. Run from TypeScript
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

/** Every queued or running task listens to it: many at once are expected, not a leak (Node warns past 10). */
function startupSignal(): AbortController {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  return controller;
}

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

export class ScanPool {
  readonly threads: number;
  /** Buffers for tasks and results; workers send back what they were sent. */
  readonly buffers = new BufferPool();
  readonly #idleTimeout: number;
  readonly #faults: WorkerFaults | undefined;
  /**
   * Piscina, loaded and made at the first task: a pool that is never used
   * (the CLI's, on a short archive) costs neither its loading nor a worker.
   */
  #piscina?: Piscina<unknown, ScanResult>;
  #ready?: Promise<{ piscina: Piscina<unknown, ScanResult>; move: Move }>;
  /**
   * Aborted (and replaced) when a worker cannot start and none is left, so
   * queued tasks fail instead of waiting forever. No task is running then:
   * a task that fails with WorkerStartError was never moved to a worker.
   */
  #startup = startupSignal();
  #closing?: Promise<void>;
  /** Whether this pool has raised the stdout/stderr listener limit (see allowWorkerListeners). */
  #listenersAllowed = false;
  /** Workers Piscina has let go that have not exited yet. */
  #exiting = 0;
  /** Called once the last worker has exited (see #workersGone). */
  #onGone: (() => void)[] = [];
  /** This pool's tasks given to Piscina and not settled, queued or running. */
  readonly #pending = new Set<Promise<unknown>>();
  #closed = false;

  constructor(options: ScanPoolOptions = {}) {
    if (typeof options !== "object" || options === null) throw new TypeError("ScanPool: options must be an object");
    const unknown = unknownOptionProblem(options, SCAN_POOL_OPTIONS);
    if (unknown !== undefined) throw new TypeError(`ScanPool: ${unknown}`);
    const threads = options.threads ?? availableParallelism();
    if (!Number.isSafeInteger(threads) || threads < 1) throw new RangeError(`threads must be a positive integer, got ${threads}`);
    const idleTimeout = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    if (!(idleTimeout >= 0)) throw new RangeError(`idleTimeoutMs must be a non-negative number, got ${idleTimeout}`);
    this.threads = threads;
    this.#idleTimeout = idleTimeout;
    this.#faults = options.faults;
  }

  #start() {
    return (this.#ready ??= (async () => {
      let loaded;
      try {
        loaded = await Promise.all([import("piscina"), import("./moved.js")]);
      } catch (err) {
        throw new WorkerStartError(`scan worker could not start: cannot load Piscina: ${errorMessage(err)}`, { cause: err });
      }
      const [{ Piscina }, { Moved }] = loaded;
      // Thread ids of the workers that have started (Piscina's workerCreate).
      const started = new Set<number>();
      const piscina = new Piscina<unknown, ScanResult>({
        ...workerEntry(),
        minThreads: 0,
        maxThreads: this.threads,
        idleTimeout: this.#idleTimeout,
        workerData: { faults: this.#faults },
        // A task goes only to an idle worker that has started. Piscina's own
        // balancer also gives one to a worker still starting, and should that
        // start fail, the task's moved input is lost with it.
        loadBalancer: (_task, workers) => workers.find((w) => w.currentUsage === 0 && started.has(w.id)) ?? null,
      });
      piscina.on("workerCreate", (worker: { id: number }) => started.add(worker.id));
      // Piscina reports a worker that fails before taking a task (its engine
      // did not load, say) only as this event, leaving queued tasks pending.
      // While another worker lives (busy, or starting), they wait for it:
      // aborting them would also stop the task it runs, input and all. With
      // none left, nothing would start one: they fail.
      piscina.on("error", (err: unknown) => {
        if (piscina.threads.length > 0) return;
        const startup = this.#startup;
        this.#startup = startupSignal();
        startup.abort(err);
      });
      // A worker keeps its pipes' listeners until it has exited, which comes
      // after Piscina's destroy event; a crashed one has exited already (its
      // thread id is then -1): look once Piscina has forgotten it.
      piscina.on("workerDestroy", (destroyed: { id: number }) => {
        started.delete(destroyed.id);
        const worker = destroyed.id === -1 ? undefined : piscina.threads.find((w) => w.threadId === destroyed.id);
        if (worker === undefined) {
          setImmediate(() => {
            for (const id of started) if (!piscina.threads.some((w) => w.threadId === id)) started.delete(id);
            this.#workersGone(piscina);
          });
          return;
        }
        this.#exiting++;
        worker.once("exit", () => {
          this.#exiting--;
          this.#workersGone(piscina);
        });
      });
      this.#piscina = piscina;
      const move: Move = (task, buffers) => Piscina.move(new Moved(task, buffers));
      return { piscina, move };
    })());
  }

  /** Whether `close()` was called: a closed pool takes no task. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Run one task. Its buffers are moved, not copied: detached here once a worker takes it. */
  async run(task: ScanTask): Promise<ScanResult> {
    // Piscina would take tasks again once closed, with workers close() never stops.
    if (this.#closed) throw new Error("ScanPool: the pool is closed");
    const { piscina, move } = await this.#start();
    const { signal } = this.#startup;
    const moved = task.spare ? [task.input, task.spare] : [task.input];
    this.#allowListeners(true);
    const result = piscina.run(move(task, moved), { signal });
    const settled: Promise<boolean> = result.then(
      () => this.#pending.delete(settled),
      () => this.#pending.delete(settled),
    );
    this.#pending.add(settled);
    try {
      return await result;
    } catch (err) {
      if (signal.aborted) throw new WorkerStartError(`scan worker could not start: ${errorMessage(signal.reason)}`, { cause: signal.reason });
      // close() fails the tasks no worker has taken; Piscina says only "The task has been aborted".
      if (this.#closed && err instanceof Error && err.name === "AbortError") throw new Error("ScanPool: the pool was closed before a worker took this task", { cause: err });
      this.#replaceLostWorker(piscina, move);
      throw err;
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
    if (piscina.threads.length > 0 || piscina.queueSize === 0) return;
    this.#allowListeners(true);
    piscina.run(move(emptyTask(), [])).catch(() => {});
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
    if (piscina.threads.length > 0 || this.#exiting > 0) return;
    this.#allowListeners(false);
    this.buffers.clear();
    for (const gone of this.#onGone.splice(0)) gone();
  }

  /** The live worker threads (diagnostics and fault tests). */
  get workers(): readonly Worker[] {
    return this.#piscina?.threads ?? [];
  }

  /**
   * Let running tasks finish, then stop every worker (tasks still queued
   * fail) and let idle buffers go; settles once the workers have exited. A
   * closed pool takes no more tasks.
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
   * Not Piscina's close alone: it would run the queued tasks, and spins
   * forever on one no worker can take (none may start while it closes), and
   * it waits out a 30 s timeout for a task whose worker died under it. So
   * its `force` fails the queued tasks at once, this pool waits for its
   * running ones itself, then stops the workers and waits for them to exit
   * (Piscina's close may be stopping them already: then destroy does not wait).
   */
  async #stop(piscina: Piscina<unknown, ScanResult>): Promise<void> {
    piscina.close({ force: true }).catch(() => {}); // settles by itself, or at its timeout: nothing waits for it
    await Promise.allSettled(this.#pending);
    const gone = new Promise<void>((resolve) => this.#onGone.push(resolve));
    await piscina.destroy();
    this.#workersGone(piscina);
    await gone;
  }
}
