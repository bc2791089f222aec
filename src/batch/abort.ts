/**
 * A caller's AbortSignal in batch scanning: what is taken as one, what a
 * stopped call rejects with, and listening without piling up listeners
 * (or a leak warning).
 */
import { setMaxListeners } from "node:events";

/**
 * No limit on `signal`'s listeners. A DOM test environment's AbortController
 * (happy-dom's, jsdom's) makes no Node event target, which setMaxListeners
 * refuses; it gives no leak warning either, so there is nothing to raise.
 */
export function raiseListenerLimit(signal: AbortSignal): void {
  try {
    setMaxListeners(0, signal);
  } catch {
    // Not Node's: nothing to raise.
  }
}

/** Whether `given` can be listened to as an AbortSignal (Node's own test: an object with `aborted`; a polyfill's passes too). */
export function isAbortSignal(given: unknown): given is AbortSignal {
  if (typeof given !== "object" || given === null) return false;
  const signal = given as Partial<AbortSignal>;
  return typeof signal.aborted === "boolean" && typeof signal.addEventListener === "function" && typeof signal.removeEventListener === "function";
}

/**
 * What a call stopped by `signal` rejects with: its reason, as
 * `signal.throwIfAborted()` throws it (`null` included), and an AbortError
 * for a signal that has none.
 */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason === undefined ? new DOMException("This operation was aborted", "AbortError") : signal.reason;
}

/** The calls waiting on each signal, behind the one listener they share. */
const waiting = new WeakMap<AbortSignal, { calls: Set<() => void>; listener: () => void }>();

/**
 * Call `onAbort` when `signal` aborts, until the returned function is called.
 * However many calls wait on one signal at once, it has one listener of
 * ours: Node warns of a leak from eleven, and one deadline for a job's
 * concurrent batches is a natural use.
 */
export function whenAborted(signal: AbortSignal, onAbort: () => void): () => void {
  let entry = waiting.get(signal);
  if (entry === undefined) {
    const calls = new Set<() => void>();
    const listener = () => {
      for (const call of calls) call();
    };
    signal.addEventListener("abort", listener);
    waiting.set(signal, (entry = { calls, listener }));
  }
  const { calls, listener } = entry;
  calls.add(onAbort);
  return () => {
    calls.delete(onAbort);
    if (calls.size > 0) return;
    signal.removeEventListener("abort", listener);
    waiting.delete(signal);
  };
}
