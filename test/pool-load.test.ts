// A package install without a loadable Piscina: the pool reports it as a
// worker start failure, and a scan whose calling thread scans too goes on.
import { describe, expect, it, vi } from "vitest";
import { WorkerStartError } from "../src/batch/errors.js";
import { ScanPool } from "../src/batch/pool.js";
import { scanArchive, streamSource } from "../src/batch/stream.js";

vi.mock("piscina", () => {
  throw new Error("Cannot find package 'piscina'");
});

describe("a pool whose Piscina cannot load", () => {
  it("fails its tasks with WorkerStartError, and closes without error", async () => {
    const pool = new ScanPool({ threads: 1 });
    await expect(pool.workerStarted()).rejects.toThrow(WorkerStartError);
    await expect(pool.workerStarted()).rejects.toThrow(/cannot load Piscina/);
    await expect(pool.close()).resolves.toBeUndefined();
  });

  it("leaves an archive scan to the calling thread, said once", async () => {
    const pool = new ScanPool({ threads: 1 });
    const lines = Array.from({ length: 400 }, (_, i) => JSON.stringify({ thread_id: "t", message: { tool_call_id: `c${i}`, content: `/mnt/user-data/f${i}.txt` } }));
    const bytes = Buffer.from(lines.join("\n") + "\n");
    const unavailable: unknown[] = [];
    let entries = 0;
    async function* pieces() {
      for (let at = 0; at < bytes.length; at += 1000) {
        yield bytes.subarray(at, at + 1000);
        await new Promise((resume) => setTimeout(resume, 1));
      }
    }
    const summary = await scanArchive(streamSource(pieces()), (out, done) => {
      entries += Buffer.from(out).toString("utf8").split("\n").length - 1;
      done();
    }, { pool, alsoScanHere: true, format: "jsonl", chunkBytes: 2048, onFailure() {}, onPoolUnavailable: (err) => unavailable.push(err) });
    expect(summary).toMatchObject({ lines: 400, failed: 0, entries: 400 });
    expect(entries).toBe(400);
    expect(unavailable).toHaveLength(1);
    expect(unavailable[0]).toBeInstanceOf(WorkerStartError);
    await pool.close();
  });
});
