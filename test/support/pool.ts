/**
 * Pool test helpers: a worker kept busy on purpose (the `hold` fault makes a
 * worker that reaches an item of `threadId` wait until `release()`), a
 * records task to run on a pool directly, and waiting for state that
 * changes in workers, which sends no event here.
 */
import { vi } from "vitest";
import { normalizeItem, writeItem } from "../../src/batch/items.js";
import { packRecords } from "../../src/batch/packing.js";
import type { ScanTask } from "../../src/batch/protocol.js";
import type { BatchItem } from "../../src/batch/index.js";

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

/** A task of these items for `ScanPool.run`, as scanBatch packs them. */
export function recordsTask(items: readonly BatchItem[], createdAt?: string): ScanTask & { input: ArrayBuffer } {
  const records: string[] = [];
  for (const item of items) writeItem(normalizeItem(item), records);
  return { kind: "records", input: packRecords(records), options: createdAt === undefined ? {} : { createdAt } };
}

/** Resolves once `done()` holds, looking every 5 ms; fails after 30 s with what it waited for. */
export async function until(done: () => boolean): Promise<void> {
  await vi.waitFor(
    () => {
      if (!done()) throw new Error(`still waiting for ${done.toString()}`);
    },
    { timeout: 30_000, interval: 5 },
  );
}
