/**
 * A pool worker kept busy on purpose, for tests of what happens around a
 * running task: the `hold` fault makes a worker that reaches an item of
 * `threadId` wait until `release()`.
 */
export function heldWorker(threadId: string) {
  const flag = new Int32Array(new SharedArrayBuffer(8)).fill(1, 0, 1); // [held, holding]
  return {
    fault: { threadId, flag },
    /** Whether a worker has reached the item and waits. */
    holding: () => Atomics.load(flag, 1) === 1,
    release: () => {
      Atomics.store(flag, 0, 0);
      Atomics.notify(flag, 0);
    },
  };
}

/** Resolves once `done()` holds, looking every 5 ms (for state that changes in workers, which sends no event here). */
export async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resume) => setTimeout(resume, 5));
}
