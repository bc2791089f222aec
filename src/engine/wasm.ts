/**
 * The one place that touches `WebAssembly`.
 *
 * The module is compiled once per thread at import (the public API is
 * synchronous) and instantiated once; an engine trap or a failed memory grow
 * rebuilds the instance so the next call starts from a clean arena, and so
 * does an ordinary call after a huge one (releaseMemoryFor), to give the
 * memory back.
 *
 * The ABI is numbers only: the host asks `reserve(n)` for n bytes of scratch,
 * writes its input there through a `Uint8Array` view, calls a kernel with
 * (pointer, length, ...) and reads results back from the same arena.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { ENGINE_UNAVAILABLE } from "../types.js";

/** Exports every kernel file has; each facade extends this with its kernels' signatures (HashExports, ScanExports, WalkExports, LineExports). */
export interface EngineExports {
  memory: WebAssembly.Memory;
  reserve(bytes: number): number;
  [kernel: string]: unknown;
}

/** Why the engine cannot load here. */
function unavailable(message: string, cause?: unknown): Error {
  return Object.assign(new Error(`tool-artifacts: ${message}`, cause === undefined ? undefined : { cause }), { code: ENGINE_UNAVAILABLE });
}

function compile(): WebAssembly.Module {
  // V8 has no WebAssembly under --jitless (Node 20 to 24; and --no-expose-wasm before 24): say so, not "WebAssembly is not defined".
  if (typeof WebAssembly === "undefined") {
    throw unavailable("this Node.js has no WebAssembly, which its engine needs (was node started with --jitless?)");
  }
  const bundled = "in a bundle, keep tool-artifacts external (the engine is found next to its module)";
  let url: URL;
  try {
    url = new URL("../../build/engine.wasm", import.meta.url);
  } catch (cause) {
    // A CommonJS bundle gives this module an empty import.meta: no place of its own to find the engine from.
    throw unavailable(`cannot find its engine: its module has no URL (import.meta.url is ${String(import.meta.url)}); ${bundled}.`, cause);
  }
  let bytes: Buffer;
  try {
    bytes = readFileSync(url);
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code ?? (cause as Error).name ?? cause;
    const path = fileURLToPath(url);
    // Node's permission model (and Deno's, NotCapable): the file is there, rebuilding would not help.
    if (code === "ERR_ACCESS_DENIED" || code === "NotCapable") {
      throw unavailable(`cannot read its engine, ${path} (${code}): allow reading the package's files (node --allow-fs-read).`, cause);
    }
    // Three ways to get here: a checkout not yet built, an install that lost
    // the file, a bundle that moved this module away from it.
    throw unavailable(
      `cannot read its engine, ${path} (${code}). ` +
        `In a checkout, run "npm run build:wasm"; in an installed package, reinstall it; ${bundled}.`,
      cause,
    );
  }
  return new WebAssembly.Module(new Uint8Array(bytes));
}

const wasmModule = compile();
let instance = instantiate();
let view = new Uint8Array(instance.memory.buffer);
// The arena this instance has reserved so far (-1: nothing yet), and its base.
let reserved = -1;
let arenaBase = 0;

function instantiate(): EngineExports {
  return new WebAssembly.Instance(wasmModule, {}).exports as unknown as EngineExports;
}

/** The engine could not do what it was asked: it trapped, or its memory could not grow. The instance has been rebuilt. */
export class EngineError extends Error {}

/** The live exports. Do not cache across calls: a trap replaces the instance. */
export function engine(): EngineExports {
  return instance;
}

/**
 * Reserve `bytes` of arena and return its base pointer. Throws a clear Error
 * (and rebuilds the instance) when memory cannot grow.
 */
export function reserve(bytes: number, op: string): number {
  // The base never moves and memory only grows: a request within what this
  // instance already reserved needs no call into the engine.
  if (bytes <= reserved) return arenaBase;
  // Past 4 GiB the u32 ABI would wrap; treat it as the failed grow it is.
  const ptr = bytes < 2 ** 32 ? instance.reserve(bytes) : 0;
  if (ptr === 0) {
    rebuild();
    throw new EngineError(`tool-artifacts engine: ${op} could not grow memory to ${bytes} bytes`);
  }
  arenaBase = ptr;
  reserved = bytes;
  return ptr;
}

/** A byte view of engine memory, refreshed when memory has grown. */
export function memoryView(): Uint8Array {
  if (view.buffer !== instance.memory.buffer) view = new Uint8Array(instance.memory.buffer);
  return view;
}

// What each facade does on a rebuild (see onRebuild).
const rebuildHooks: Array<() => void> = [];

/**
 * Run `drop` whenever the instance is replaced. A facade that caches views
 * over engine memory drops them there: a view of the old memory would keep
 * it alive (hundreds of MB after a huge input) until that facade's next call.
 */
export function onRebuild(drop: () => void): void {
  rebuildHooks.push(drop);
}

/** Throw away the instance (and its memory) and start a fresh one. */
export function rebuild(): void {
  instance = instantiate();
  view = new Uint8Array(instance.memory.buffer);
  reserved = -1;
  for (const drop of rebuildHooks) drop();
}

/**
 * Engine memory kept from one operation to the next. WebAssembly memory only
 * grows, so one huge input (a line of hundreds of MB) would otherwise pin
 * about three times its size for the thread's life.
 */
const KEEP_MEMORY_BYTES = 64 << 20;

/**
 * Start over on a fresh instance when memory has grown past
 * KEEP_MEMORY_BYTES and an operation needing about `bytes` would fit well
 * within it. Only at the start of an operation: results still in engine
 * memory are lost.
 */
export function releaseMemoryFor(bytes: number): void {
  if (instance.memory.buffer.byteLength > KEEP_MEMORY_BYTES && bytes < KEEP_MEMORY_BYTES / 4) rebuild();
}

/**
 * Run `fn` against the engine; a trap becomes an Error naming the operation
 * and the input size, and the instance is rebuilt so the next call works.
 */
export function runEngine<T>(op: string, inputBytes: number, fn: (e: EngineExports) => T): T {
  try {
    return fn(instance);
  } catch (err) {
    // A RangeError is memory that could not grow, or a view past its end
    // (an output length the engine got wrong); any other one from the
    // facade's own code costs only a needless rebuild.
    if (err instanceof WebAssembly.RuntimeError || err instanceof RangeError) {
      rebuild();
      throw new EngineError(
        `tool-artifacts engine: ${op} failed on ${inputBytes} bytes of input: ${(err as Error).message}`,
        { cause: err },
      );
    }
    throw err;
  }
}
