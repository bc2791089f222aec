// A host's tests often run in a DOM environment (vitest's happy-dom or jsdom,
// jest's jsdom), which puts the DOM's AbortController over Node's, and under
// jest's jsdom the DOM's timers too. scanBatch on a pool works there as it
// does on Node, or its pool says why it cannot start and every item is
// scanned on the calling thread. The globals are put in place as such an
// environment does, with happy-dom's own classes.
import { setTimeout as nodeSetTimeout } from "node:timers";
import { Window } from "happy-dom";
import { afterEach, describe, expect, it, vi } from "vitest";
import { scanBatch, ScanPool, type BatchItem } from "../src/batch/index.js";
import { extractArtifacts } from "../src/extract.js";

const CREATED_AT = "2025-01-02T03:04:05.000Z";
const items: BatchItem[] = Array.from({ length: 600 }, (_, i) => ({ threadId: "t", message: { type: "tool", tool_call_id: `c${i}`, content: `wrote /mnt/user-data/f${i}.txt` } }));
const expected = items.map((item) => extractArtifacts(item.message as never, { threadId: item.threadId, now: () => CREATED_AT }));

afterEach(() => vi.unstubAllGlobals());

describe("scanBatch where a DOM environment replaced Node's globals", () => {
  it("with the DOM's AbortController (happy-dom's): a batch with a signal on a pool gives every entry, and an abort lands", async () => {
    const window = new Window();
    const pool = new ScanPool({ threads: 2 });
    vi.stubGlobal("AbortController", window.AbortController);
    try {
      expect(new AbortController().signal).toBeInstanceOf(window.AbortSignal);
      const r = await scanBatch(items, { pool, poolThreshold: 0, createdAt: CREATED_AT, signal: new AbortController().signal });
      expect(r.errors).toEqual([]);
      expect(r.entries).toEqual(expected);
      expect(pool.workers.length).toBeGreaterThan(0);
      const stop = new AbortController();
      const stopped = scanBatch(items, { pool, poolThreshold: 0, createdAt: CREATED_AT, signal: stop.signal });
      stop.abort(new Error("cancelled"));
      await expect(stopped).rejects.toThrow("cancelled");
    } finally {
      vi.unstubAllGlobals();
      await pool.close();
      await window.happyDOM.close();
    }
  });

  it("with a DOM's setTimeout, which gives a number (jsdom's): the pool says it cannot start, and every item is scanned here", async () => {
    const pool = new ScanPool({ threads: 2 });
    const nodeSetTimeout = globalThis.setTimeout;
    vi.stubGlobal("setTimeout", (run: () => void, ms?: number) => Number(nodeSetTimeout(run, ms)));
    try {
      const r = await scanBatch(items, { pool, poolThreshold: 0, createdAt: CREATED_AT });
      expect(r.errors).toEqual([]);
      expect(r.entries).toEqual(expected);
      await expect(pool.workerStarted()).rejects.toThrow("scan worker could not start: the global setTimeout is not Node's (it gave number ");
    } finally {
      vi.unstubAllGlobals();
      await pool.close();
    }
  });

  it.each([
    ["gives a number (jsdom's)", "number ", (run: () => void, ms?: number) => Number(nodeSetTimeout(run, ms))],
    ["gives nothing", "undefined", (run: () => void, ms?: number) => void nodeSetTimeout(run, ms)],
  ])("with a DOM's setTimeout that %s and no global setImmediate (jest's jsdom has none): the pool says it cannot start, and every item is scanned here", async (_, gave, domSetTimeout) => {
    const pool = new ScanPool({ threads: 2 });
    vi.stubGlobal("setTimeout", domSetTimeout);
    vi.stubGlobal("setImmediate", undefined);
    try {
      const r = await scanBatch(items, { pool, poolThreshold: 0, createdAt: CREATED_AT, signal: new AbortController().signal });
      expect(r.errors).toEqual([]);
      expect(r.entries).toEqual(expected);
      await expect(pool.workerStarted()).rejects.toThrow(`scan worker could not start: the global setTimeout is not Node's (it gave ${gave}`);
    } finally {
      vi.unstubAllGlobals();
      await pool.close();
    }
  });
});
