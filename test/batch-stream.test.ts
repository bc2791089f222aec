import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it, vi, type MockInstance } from "vitest";
import { BufferPool } from "../src/batch/buffers.js";
import { ScanPool } from "../src/batch/pool.js";
import { scanArchive, streamSource, type ArchiveOptions, type ArchiveSource } from "../src/batch/stream.js";
import { WorkerStartError, type LineFailure } from "../src/batch/errors.js";
import type { ScanTask } from "../src/batch/protocol.js";
import { extractArtifacts } from "../src/extract.js";
import { heldWorker, until } from "./support/pool.js";

const CREATED_AT = "2025-01-02T03:04:05.000Z";

/** An archive of n lines in the accepted shapes; every 97th line is broken, every 31st blank. */
function archive(n: number): { text: string; bad: number[]; tools: Map<number, { threadId: string; message: Record<string, unknown> }> } {
  const lines: string[] = [];
  const bad: number[] = [];
  const tools = new Map<number, { threadId: string; message: Record<string, unknown> }>();
  for (let i = 1; i <= n; i++) {
    const threadId = `t${i % 5}`;
    const message = { type: "tool", id: `m${i}`, name: "w", tool_call_id: `c${i}`, content: `line ${i} /mnt/user-data/f${i}.txt https://x.example/${i}.png ` + "é".repeat(i % 40) };
    if (i % 97 === 0) {
      lines.push(`{"thread_id": "t", "message": {broken ${i}`);
      bad.push(i);
    } else if (i % 31 === 0) lines.push(i % 2 ? "" : "   \r");
    else if (i % 3 === 0) {
      lines.push(JSON.stringify({ thread_id: threadId, ...message }) + (i % 2 ? "\r" : ""));
      tools.set(i, { threadId, message });
    } else {
      lines.push(JSON.stringify({ thread_id: threadId, message }));
      tools.set(i, { threadId, message });
    }
  }
  return { text: lines.join("\n"), bad, tools };
}

/** A task with archive bytes in it (not the empty one that waits for a worker). */
const isChunk = (task: ScanTask) => task.kind === "lines" && task.inputBytes > 0;

const rowsOf = (output: string) => output.split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);

/** Feed `bytes` in pieces of the given sizes, cycling. */
async function* pieces(bytes: Uint8Array, sizes: number[]): AsyncIterable<Uint8Array> {
  for (let at = 0, k = 0; at < bytes.length; k++) {
    const n = sizes[k % sizes.length];
    yield bytes.subarray(at, at + n);
    at += n;
  }
}

async function run(input: AsyncIterable<Uint8Array>, options: Partial<ArchiveOptions>, slowWriter = false) {
  const source = streamSource(input);
  const out: Buffer[] = [];
  const failures: LineFailure[] = [];
  let failedLines = 0;
  const held: Promise<void>[] = [];
  const summary = await scanArchive(
    source,
    async (bytes, done) => {
      const slot = out.push(Buffer.alloc(0)) - 1;
      const take = () => {
        out[slot] = Buffer.from(bytes);
        done();
      };
      if (!slowWriter) return take();
      // Hold on to the bytes a while, as a slow pipe would: they must not be reused meanwhile.
      held.push(new Promise((resume) => setTimeout(() => resume(take()), 1 + (slot % 4))));
      if (slot % 2) await new Promise((resume) => setTimeout(resume, 1));
    },
    {
      format: "jsonl",
      createdAt: CREATED_AT,
      onFailure: (f, lines) => {
        failures.push(f);
        failedLines += lines;
      },
      ...options,
    },
  );
  await Promise.all(held);
  return { output: Buffer.concat(out).toString("utf8"), failures, failedLines, summary };
}

describe("scanArchive", () => {
  const pool = new ScanPool({ threads: 2 });
  afterAll(() => pool.close());
  const { text, bad, tools } = archive(3000);
  const bytes = Buffer.from(text);

  const expectedOutput = () =>
    [...tools.entries()]
      .sort(([a], [b]) => a - b)
      .flatMap(([, { threadId, message }]) => extractArtifacts(message, { threadId, now: () => CREATED_AT }).map((e) => JSON.stringify({ thread_id: threadId, ...e }) + "\n"))
      .join("");

  it.each([
    ["calling thread, one piece", undefined, [bytes.length], 1 << 20],
    ["calling thread, ragged pieces, small chunks", undefined, [7, 1, 300, 4096], 2048],
    ["pool, ragged pieces, small chunks", "pool", [13, 5000, 2], 4096],
    ["pool and calling thread, ragged pieces, small chunks", "both", [13, 5000, 2], 4096],
  ])("%s: every entry in input order, every bad line by its number", async (_, usePool, sizes, chunkBytes) => {
    const r = await run(pieces(bytes, sizes), { pool: usePool ? pool : undefined, alsoScanHere: usePool === "both", chunkBytes }, usePool !== undefined);
    expect(r.output).toBe(expectedOutput());
    expect(r.failures.map((f) => f.line)).toEqual(bad);
    for (const f of r.failures) expect(f.reason).toMatch(/^invalid JSON: /);
    expect(r.summary).toMatchObject({ lines: 3000, failed: bad.length, bytesRead: bytes.length, entries: r.output.split("\n").length - 1 });
  });

  it("skips a UTF-8 byte order mark at the start, whatever the pieces it comes in; not one later", async () => {
    const marked = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes]);
    for (const sizes of [[marked.length], [1, 1, 1, 4096], [2, 5, 300], [3, 4096]]) {
      const r = await run(pieces(marked, sizes), { chunkBytes: 4096 });
      expect(r.output).toBe(expectedOutput());
      expect(r.failures.map((f) => f.line)).toEqual(bad);
    }
    const onlyMark = await run(pieces(Buffer.from([0xef, 0xbb, 0xbf]), [1]), {});
    expect(onlyMark.summary).toMatchObject({ lines: 0, failed: 0 });
    // A mark on a later line is that line's content: invalid JSON there.
    const later = await run(pieces(Buffer.from(text.split("\n")[1] + "\n\ufeff" + text.split("\n")[1] + "\n"), [7]), {});
    expect(later.failures.map((f) => f.line)).toEqual([2]);
  });

  it("reads lines longer than a chunk whole, on either thread", async () => {
    const long = (n: number) => JSON.stringify({ thread_id: "t", message: { tool_call_id: `long${n}`, content: "x ".repeat(n * 3000) + `/mnt/user-data/long${n}.txt` } });
    const lines = [long(1), text.split("\n").slice(0, 5).join("\n"), long(2), long(3), "{bad"].join("\n");
    for (const usePool of [undefined, pool]) {
      const r = await run(pieces(Buffer.from(lines), [300, 7]), { pool: usePool, chunkBytes: 256 });
      expect(rowsOf(r.output).filter((e) => String(e.tool_call_id).startsWith("long")).map((e) => e.real_ref)).toEqual([
        "/mnt/user-data/long1.txt",
        "/mnt/user-data/long2.txt",
        "/mnt/user-data/long3.txt",
      ]);
      expect(r.failures.map((f) => f.line)).toEqual([9]);
      expect(r.summary.lines).toBe(9);
    }
  });

  it.each(["this thread", "a pool"])("from a source that never pauses long, writes the lines held for a second before a chunk fills (%s)", async (where) => {
    // A line every 20 ms: the input never pauses IDLE_FLUSH_MS, and its
    // lines would fill a chunk of 1 MiB only after minutes.
    const line = (n: number) => `${JSON.stringify({ thread_id: "steady", message: { tool_call_id: `c${n}`, content: `/mnt/user-data/steady-${n}.txt` } })}\n`;
    let written = 0;
    let fed = 0;
    async function* input() {
      // Until the first entry is written, or 500 lines (10 s) without one.
      for (; written === 0 && fed < 500; fed++) {
        yield Buffer.from(line(fed));
        await sleep(20);
      }
    }
    const summary = await scanArchive(
      streamSource(input()),
      (bytes, done) => {
        written += rowsOf(Buffer.from(bytes).toString()).length;
        done();
      },
      { pool: where === "a pool" ? pool : undefined, format: "jsonl", onFailure() {} },
    );
    expect(fed).toBeLessThan(500);
    expect(summary.entries).toBe(fed);
    expect(written).toBe(fed);
  });

  it("from a source that pauses, writes the chunks a worker has before more input comes", async () => {
    // Lines of exactly 1024 bytes and chunks of 4096: every chunk is cut at a
    // line end, so nothing is held here when the input pauses; the last chunk
    // is with a worker, and must be written all the same.
    const line = (n: number) => {
      const base = JSON.stringify({ thread_id: "live", message: { tool_call_id: `c${n}`, content: `/mnt/user-data/live-${n}.txt` }, pad: "" });
      return base.replace('"pad":""', `"pad":"${" ".repeat(1023 - base.length)}"`) + "\n";
    };
    let resume!: () => void;
    const paused = new Promise<void>((resolve) => (resume = resolve));
    async function* input() {
      for (let n = 0; n < 40; n++) yield Buffer.from(line(n));
      await paused;
      yield Buffer.from(line(40));
    }
    const written: string[] = [];
    let allForty!: () => void;
    const forty = new Promise<void>((resolve) => (allForty = resolve));
    const scan = scanArchive(
      streamSource(input()),
      (bytes, done) => {
        written.push(...rowsOf(Buffer.from(bytes).toString()).map((e) => e.real_ref as string));
        done();
        if (written.length >= 40) allForty();
      },
      { pool, chunkBytes: 4096, format: "jsonl", onFailure() {} },
    );
    await forty;
    expect(written).toEqual(Array.from({ length: 40 }, (_, n) => `/mnt/user-data/live-${n}.txt`));
    resume();
    const summary = await scan;
    expect(written).toHaveLength(41);
    expect(summary.workerChunks).toBe(summary.chunks);
  });

  it("skips an over-long line without buffering it whole, and numbers the lines after it correctly", async () => {
    const long = JSON.stringify({ thread_id: "t", message: { tool_call_id: "long", content: "/mnt/user-data/" + "x".repeat(50_000) } });
    const lines = [text.split("\n").slice(0, 10).join("\n"), long, long, text.split("\n").slice(10, 20).join("\n")].join("\n");
    for (const usePool of [undefined, pool]) {
      const taken: number[] = [];
      const original = BufferPool.prototype.take;
      const take = vi.spyOn(BufferPool.prototype, "take").mockImplementation(function (this: BufferPool, bytes: number) {
        taken.push(bytes);
        return original.call(this, bytes);
      });
      const r = await run(pieces(Buffer.from(lines), [1000]), { pool: usePool, chunkBytes: 2000, maxLineBytes: 10_000 });
      take.mockRestore();
      // Grown for the long lines, but never past a line's limit and one read
      // (how far depends on the idle buffers a pool hands back, so a bound).
      expect(Math.max(...taken)).toBeGreaterThan(2000);
      expect(Math.max(...taken)).toBeLessThanOrEqual(12_000);
      expect(r.failures).toEqual([
        { line: 11, reason: "line longer than 10000 bytes, skipped" },
        { line: 12, reason: "line longer than 10000 bytes, skipped" },
      ]);
      expect(r.summary.lines).toBe(22);
      expect(r.output).toContain('"tool_call_id":"c20"');
      expect(r.output).not.toContain('"tool_call_id":"long"');
    }
  });

  it("gives a result with no id and no tool_call_id its line number as call index, so its handles are its own", async () => {
    // Line i (from 1): anonymous, or with an id, a tool_call_id or a call_index of its own; an over-long line and blank lines count too.
    const lines: string[] = [];
    const want: Record<string, unknown>[] = [];
    for (let i = 1; i <= 400; i++) {
      const message: Record<string, unknown> = { type: "tool", content: `/mnt/user-data/n${i}.txt` };
      const line: Record<string, unknown> = { thread_id: "t", message };
      let callIndex: number | undefined = i;
      if (i % 50 === 0) {
        lines.push("x".repeat(3000)); // over maxLineBytes: skipped, but numbered
        continue;
      }
      if (i % 11 === 0) {
        lines.push("");
        continue;
      }
      if (i % 7 === 0) message.id = `m${i}`;
      else if (i % 5 === 0) message.tool_call_id = `c${i}`;
      else if (i % 3 === 0) line.call_index = callIndex = 1000 + i;
      else if (i % 4 === 0) message.tool_call_id = ""; // no call id either
      if (i % 7 === 0 || i % 5 === 0) callIndex = undefined;
      lines.push(JSON.stringify(line));
      want.push(...extractArtifacts(message, { threadId: "t", callIndex, now: () => CREATED_AT }).map((e) => ({ thread_id: "t", ...e })));
    }
    const input = Buffer.from(lines.join("\n"));
    for (const usePool of [undefined, "pool", "both"]) {
      const r = await run(pieces(input, [97, 1000]), { pool: usePool ? pool : undefined, alsoScanHere: usePool === "both", chunkBytes: 1024, maxLineBytes: 2048 });
      const rows = rowsOf(r.output);
      expect(rows).toEqual(want);
      expect(rows.find((e) => e.real_ref === "/mnt/user-data/n398.txt")?.call_index).toBe(398);
      expect(new Set(rows.map((e) => e.handle)).size).toBe(rows.length);
    }
  });

  it("reports the lines of a chunk whose worker died, and scans every other chunk", async () => {
    const crashing = new ScanPool({ threads: 2, faults: { exitOnThreadId: "crash" } });
    try {
      const lines = text.split("\n");
      lines[1499] = JSON.stringify({ thread_id: "crash", message: { tool_call_id: "boom", content: "x" } });
      const r = await run(pieces(Buffer.from(lines.join("\n")), [65536]), { pool: crashing, chunkBytes: 16_384 });
      const lost = r.failures.filter((f) => /not scanned/.test(f.reason));
      expect(lost).toHaveLength(1);
      const [, first, last] = /^lines (\d+)\.\.(\d+) not scanned: .*exited with code: 70/.exec(lost[0].reason)!.map(Number);
      expect(lost[0].line).toBe(first);
      expect(first).toBeLessThanOrEqual(1500);
      expect(last).toBeGreaterThanOrEqual(1500);
      // Bad lines outside the lost chunk are still reported, by number.
      expect(r.failures.filter((f) => !/not scanned/.test(f.reason)).map((f) => f.line)).toEqual(bad.filter((n) => n < first || n > last));
      const survivors = [...tools.keys()].filter((n) => n < first || n > last);
      for (const n of [survivors[0], survivors[survivors.length - 1]]) expect(r.output).toContain(`"tool_call_id":"c${n}"`);
      expect(r.output).not.toContain(`"tool_call_id":"c${first + 1}"`);
      expect(r.summary.lines).toBe(3000);
      expect(r.summary.failed).toBe(last - first + 1 + bad.filter((n) => n < first || n > last).length);
      // Each report says how many lines it stands for (what the CLI counts when the output closes early).
      expect(r.failedLines).toBe(r.summary.failed);
    } finally {
      await crashing.close();
    }
  });
  it("a crash of the only worker while another chunk waits for it loses that chunk only, and the scan ends", async () => {
    const crashing = new ScanPool({ threads: 1, faults: { exitOnThreadId: "crash" } });
    try {
      // A worker up first, so the chunks go to the pool from the start.
      await crashing.workerStarted();
      const line = (i: number) => JSON.stringify({ thread_id: i === 150 ? "crash" : "t", message: { type: "tool", tool_call_id: `c${i}`, content: `line ${i} /mnt/user-data/f${i}.txt` } });
      // About 60 lines a chunk: the crash is in the third of four, the fourth queued behind it.
      const lines = Array.from({ length: 200 }, (_, i) => line(i)).join("\n") + "\n";
      const r = await run(pieces(Buffer.from(lines), [4096]), { pool: crashing, chunkBytes: 4096 });
      const lost = r.failures.filter((f) => /not scanned/.test(f.reason));
      expect(lost).toHaveLength(1);
      const [, first, last] = /^lines (\d+)\.\.(\d+) not scanned/.exec(lost[0].reason)!.map(Number);
      expect(first).toBeLessThanOrEqual(151);
      expect(last).toBeGreaterThanOrEqual(151);
      expect(r.summary.lines).toBe(200);
      expect(r.output).toContain('"tool_call_id":"c199"');
    } finally {
      await crashing.close();
    }
  });

  // The next read is started before a chunk is scanned and written, so the
  // two overlap; reads stay one at a time and in order.
  it("reads ahead: the next read starts before the chunk is written, one read at a time", async () => {
    const events: string[] = [];
    let at = 0;
    let reading = false;
    const source = {
      read: async (into: Uint8Array) => {
        expect(reading, "a read started while another was pending").toBe(false);
        reading = true;
        events.push("read");
        await new Promise((resume) => setTimeout(resume, 1));
        const n = Math.min(into.byteLength, bytes.length - at);
        into.set(bytes.subarray(at, at + n));
        at += n;
        reading = false;
        return n;
      },
    };
    const out: Buffer[] = [];
    await scanArchive(
      source,
      (chunk, done) => {
        events.push("write");
        out.push(Buffer.from(chunk));
        done();
      },
      { format: "jsonl", createdAt: CREATED_AT, chunkBytes: 16_384, onFailure() {} },
    );
    expect(Buffer.concat(out).toString("utf8")).toBe(expectedOutput());
    const writes = events.filter((e) => e === "write").length;
    expect(writes).toBeGreaterThan(5);
    // Every write but the last comes after the read of the bytes that follow it had started.
    expect(events.slice(0, 2)).toEqual(["read", "read"]);
    for (let i = 0; i < events.length; i++) if (events[i] === "write" && i < events.lastIndexOf("write")) expect(events[i - 1], `event ${i}`).toBe("read");
  });

  it("a scan that fails while a read ahead is pending leaves no unhandled rejection", async () => {
    let reads = 0;
    const source = {
      read: async (into: Uint8Array) => {
        if (++reads === 1) {
          into.set(bytes.subarray(0, into.byteLength));
          return into.byteLength;
        }
        await new Promise((resume) => setTimeout(resume, 20));
        throw new Error("disk gone");
      },
    };
    const write = () => {
      throw new Error("EPIPE: reader went away");
    };
    await expect(scanArchive(source, write, { format: "jsonl", createdAt: CREATED_AT, chunkBytes: 4096, onFailure() {} })).rejects.toThrow("EPIPE");
    expect(reads).toBe(2);
    // The read ahead fails after the scan has ended: vitest fails the run on an unhandled rejection.
    await new Promise((resume) => setTimeout(resume, 50));
  });

  it("a read that fails ends the scan with its error", async () => {
    let reads = 0;
    const source = {
      read: async (into: Uint8Array) => {
        if (++reads === 3) throw new Error("disk gone");
        const n = Math.min(into.byteLength, 4096);
        into.set(bytes.subarray((reads - 1) * 4096, (reads - 1) * 4096 + n));
        return n;
      },
    };
    await expect(scanArchive(source, (_, done) => done(), { format: "jsonl", createdAt: CREATED_AT, chunkBytes: 4096, onFailure() {} })).rejects.toThrow("disk gone");
  });
  it("ends with one error, not a failure per chunk, when no pool worker can start", async () => {
    const broken = new ScanPool({ threads: 2, faults: { failStartup: true } });
    try {
      const failures: unknown[] = [];
      const scan = run(pieces(bytes, [4096]), { pool: broken, chunkBytes: 4096, onFailure: (f) => failures.push(f) });
      await expect(scan).rejects.toThrow(WorkerStartError);
      // (From TypeScript sources Piscina swallows the injected error and reports its own failed second try at loading the worker: only the prefix is ours.)
      await expect(scan).rejects.toThrow(/^scan worker could not start: /);
      expect(failures).toEqual([]);
    } finally {
      await broken.close();
    }
  });

  it("from a source that does not pause, holds complete lines until a chunk fills: chunks of chunkBytes, not one per read", async () => {
    const line = JSON.stringify({ thread_id: "t", message: { tool_call_id: "c", content: "/mnt/user-data/a.txt" } }) + "\n";
    const input = Buffer.from(line.repeat(400));
    // Reads of 100 bytes, each answered at once: every read ends a line, and no line waits for more input.
    // The clock stands still, so no line is held past MAX_HOLD_MS however slow the machine is.
    vi.useFakeTimers({ toFake: ["performance"] });
    try {
      const summary = await scanArchive(streamSource(pieces(input, [100])), (_, done) => done(), { format: "jsonl", createdAt: CREATED_AT, chunkBytes: 4096, onFailure() {} });
      expect(summary).toMatchObject({ lines: 400, entries: 400, bytesRead: input.length });
      // A chunk is sent once it holds chunkBytes, so at most one per 4 KiB read; not one per read.
      expect(summary.chunks).toBeLessThanOrEqual(Math.ceil(input.length / 4096));
    } finally {
      vi.useRealTimers();
    }
  });

  it("never calls the writer for a chunk without output", async () => {
    const other = JSON.stringify({ thread_id: "t", message: { type: "ai", content: "/mnt/user-data/a.txt" } }) + "\n";
    const writes: number[] = [];
    const summary = await scanArchive(streamSource(pieces(Buffer.from(other.repeat(200)), [4096])), (chunk, done) => (writes.push(chunk.byteLength), done()), {
      format: "jsonl",
      createdAt: CREATED_AT,
      chunkBytes: 4096,
      onFailure() {},
    });
    expect(summary).toMatchObject({ lines: 200, entries: 0, skipped: 200, chunks: 4 });
    expect(writes).toEqual([]);
  });

  describe("scanning on the calling thread too (alsoScanHere)", () => {
    /** Reads `bytes` 4096 at a time; the read after `gateAfter` reads first waits for `gate()`. */
    const gatedSource = (gateAfter: number, gate: () => Promise<unknown>) => {
      let at = 0;
      let reads = 0;
      return {
        read: async (into: Uint8Array) => {
          if (++reads === gateAfter + 1) await gate();
          const n = Math.min(into.byteLength, 4096, bytes.length - at);
          into.set(bytes.subarray(at, at + n));
          at += n;
          return n;
        },
      };
    };

    /** Scan `source` in 4096-byte chunks on `pool` and this thread; the output as text. */
    const scanBoth = async (source: ArchiveSource, pool: ScanPool, more: Partial<ArchiveOptions> = {}) => {
      const out: Buffer[] = [];
      const summary = await scanArchive(
        source,
        (chunk, done) => {
          out.push(Buffer.from(chunk));
          done();
        },
        { pool, alsoScanHere: true, format: "jsonl", createdAt: CREATED_AT, chunkBytes: 4096, onFailure() {}, ...more },
      );
      return { output: Buffer.concat(out).toString("utf8"), summary };
    };

    /** Scan `bytes` 4096 at a time on `pool` and this thread. */
    const run_ = (bytes: Buffer, pool: ScanPool, onPoolUnavailable?: () => unknown) =>
      scanArchive(streamSource(pieces(bytes, [4096])), (_, done) => done(), { pool, alsoScanHere: true, format: "jsonl", chunkBytes: 4096, onFailure() {}, onPoolUnavailable });

    /** The first task `run` was given (the scan's empty one, sent with its fourth chunk), once it has come back. */
    const firstTask = async (run: MockInstance<ScanPool["run"]>) => {
      while (run.mock.results.length === 0) await new Promise((resume) => setImmediate(resume));
      return run.mock.results[0]!.value as ReturnType<ScanPool["run"]>;
    };

    it("takes every chunk until a worker has started, then shares them with the pool", async () => {
      const fresh = new ScanPool({ threads: 1 });
      const run = vi.spyOn(fresh, "run");
      try {
        let chunksBeforeReady = -1;
        // The first run is the empty task that tells when a worker is up: hold the input back until it is back.
        const source = gatedSource(8, async () => {
          await firstTask(run);
          chunksBeforeReady = run.mock.calls.length - 1;
        });
        const { output, summary } = await scanBoth(source, fresh);
        expect(output).toBe(expectedOutput());
        expect(summary.lines).toBe(3000);
        expect(run.mock.calls[0]![0]).toMatchObject({ kind: "lines", inputBytes: 0 });
        expect(chunksBeforeReady).toBe(0);
        const pooled = run.mock.calls.slice(1).filter(([task]) => isChunk(task)).length;
        expect(pooled).toBeGreaterThan(0);
        expect(summary.workerChunks).toBe(pooled);
        expect(summary.chunks).toBeGreaterThan(pooled);
        // Several chunks were read before the gate, and none of them went to the pool.
        expect(pooled).toBeLessThan(Math.ceil(bytes.length / 4096) - 7);
      } finally {
        await fresh.close();
      }
    });

    it("gives each worker at most two chunks at a time and scans the others here", async () => {
      const fresh = new ScanPool({ threads: 1 });
      const real = fresh.run.bind(fresh);
      let outstanding = 0;
      let most = 0;
      let pooled = 0;
      // Results held back a while: the pool stays busy, as a slow worker would.
      const run = vi.spyOn(fresh, "run").mockImplementation(async (task) => {
        if (isChunk(task)) {
          pooled++;
          most = Math.max(most, ++outstanding);
        }
        try {
          const result = await real(task);
          await new Promise((resume) => setTimeout(resume, 15));
          return result;
        } finally {
          if (isChunk(task)) outstanding--;
        }
      });
      try {
        let writes = 0;
        const out: Buffer[] = [];
        await scanArchive(
          // No input after the fourth chunk until the first run (the scan's empty task) is back: a worker is up.
          gatedSource(4, () => firstTask(run)),
          (chunk, done) => {
            writes++;
            out.push(Buffer.from(chunk));
            done();
          },
          { pool: fresh, alsoScanHere: true, format: "jsonl", createdAt: CREATED_AT, chunkBytes: 4096, onFailure() {} },
        );
        expect(Buffer.concat(out).toString("utf8")).toBe(expectedOutput());
        expect(most).toBe(2);
        expect(pooled).toBeGreaterThan(2);
        expect(pooled).toBeLessThan(writes / 2);
      } finally {
        await fresh.close();
      }
    });

    it("scans everything here when no worker can start, and says so once", async () => {
      const broken = new ScanPool({ threads: 1, faults: { failStartup: true } });
      const run = vi.spyOn(broken, "run");
      try {
        const unavailable: unknown[] = [];
        // Input held back after the fifth read until the failed start is known.
        const source = gatedSource(5, () => firstTask(run).catch(() => {}));
        const { output, summary } = await scanBoth(source, broken, { onPoolUnavailable: (err) => unavailable.push(err) });
        expect(output).toBe(expectedOutput());
        expect(summary.lines).toBe(3000);
        expect(unavailable).toHaveLength(1);
        expect(unavailable[0]).toBeInstanceOf(WorkerStartError);
        expect(run).toHaveBeenCalledTimes(1);
      } finally {
        await broken.close();
      }
    });

    it("scans here the chunk of a worker that could not start, and the rest, when one has started before", async () => {
      const fresh = new ScanPool({ threads: 1 });
      const real = fresh.run.bind(fresh);
      let given = 0;
      // The third chunk given to the pool finds that a new worker cannot start (as after a crash or an idle exit),
      // late, as a start-up failure is known: more chunks may be handed out meanwhile.
      const run = vi.spyOn(fresh, "run").mockImplementation(async (task) => {
        if (isChunk(task) && ++given >= 3) {
          await new Promise((resume) => setTimeout(resume, 50));
          throw new WorkerStartError("scan worker could not start: injected");
        }
        return real(task);
      });
      try {
        const unavailable: unknown[] = [];
        let givenAtLoss = -1;
        const { output, summary } = await scanBoth(gatedSource(4, () => firstTask(run)), fresh, {
          onPoolUnavailable: (err) => ((givenAtLoss = given), unavailable.push(err)),
        });
        expect(output).toBe(expectedOutput());
        expect(summary).toMatchObject({ lines: 3000, failed: bad.length });
        expect(unavailable).toHaveLength(1);
        expect(givenAtLoss).toBeGreaterThanOrEqual(3);
        // No chunk goes to the pool once it is lost.
        expect(given).toBe(givenAtLoss);
      } finally {
        await fresh.close();
      }
    });

    it("scans everything here with a pool closed before, saying no worker failed to start", async () => {
      const closed = new ScanPool({ threads: 1 });
      await closed.close();
      const unavailable: unknown[] = [];
      const { output, summary } = await scanBoth(gatedSource(Infinity, async () => {}), closed, { onPoolUnavailable: (err) => unavailable.push(err) });
      expect(output).toBe(expectedOutput());
      expect(summary).toMatchObject({ lines: 3000, workerChunks: 0 });
      expect(unavailable).toEqual([]);
    });

    it("reports a chunk whose worker died as not scanned, not as a pool that cannot start", async () => {
      const crashing = new ScanPool({ threads: 1, faults: { exitOnThreadId: "t1" } }); // a line of t1 in every chunk
      const run = vi.spyOn(crashing, "run");
      try {
        const unavailable: unknown[] = [];
        const failures: LineFailure[] = [];
        const { summary } = await scanBoth(gatedSource(4, () => firstTask(run)), crashing, {
          onPoolUnavailable: (err) => unavailable.push(err),
          onFailure: (f) => failures.push(f),
        });
        expect(summary.lines).toBe(3000);
        const lost = failures.filter((f) => /not scanned/.test(f.reason));
        expect(lost.length).toBeGreaterThan(0);
        for (const f of lost) expect(f.reason).toMatch(/^lines \d+\.\.\d+ not scanned: .*exited with code: 70/);
        expect(unavailable).toEqual([]);
      } finally {
        await crashing.close();
      }
    });

    it("keeps a running worker's chunk when another worker cannot start, and the pool: only chunks that worker took are lost", async () => {
      const failing = new Int32Array(new SharedArrayBuffer(4));
      const held = heldWorker("t1");
      const fresh = new ScanPool({ threads: 2, idleTimeoutMs: 60_000, faults: { failStartup: failing, hold: held.fault } });
      try {
        await fresh.workerStarted(); // one worker up before start-ups fail
        Atomics.store(failing, 0, 1);
        const run = vi.spyOn(fresh, "run");
        // The worker holds its first chunk until a second worker has tried to start, for the next one, and failed.
        const released = (async () => {
          await until(held.holding);
          await until(() => fresh.workers.length === 2);
          await until(() => fresh.workers.length === 1);
          held.release();
        })();
        const unavailable: unknown[] = [];
        const failures: LineFailure[] = [];
        // No input after the fourth chunk until the scan's empty task is back: chunks then go to the pool.
        const { output, summary } = await scanBoth(gatedSource(4, () => firstTask(run)), fresh, {
          onPoolUnavailable: (err) => unavailable.push(err),
          onFailure: (f) => failures.push(f),
        });
        await released;
        // A chunk a starting worker took is lost with its failed start, as in a crash.
        const lost = failures.filter((f) => /not scanned/.test(f.reason)).map((f) => /^lines (\d+)\.\.(\d+) /.exec(f.reason)!.slice(1).map(Number));
        const kept = (n: number) => !lost.some(([a, b]) => n >= a! && n <= b!);
        expect(failures.filter((f) => !/not scanned/.test(f.reason)).map((f) => f.line)).toEqual(bad.filter(kept));
        const rows = rowsOf(expectedOutput()).filter((r) => kept(Number(String(r.tool_call_id).slice(1))));
        expect(rowsOf(output)).toEqual(rows);
        expect(unavailable).toEqual([]);
        expect(summary.workerChunks).toBeGreaterThan(0); // the held chunk, finished on its worker
      } finally {
        held.release();
        await fresh.close();
      }
    });

    it("writes a chunk scanned here once it is done, before a worker has started, not when the in-flight limit is reached", async () => {
      const fresh = new ScanPool({ threads: 1 });
      let readsAtFirstWrite = -1;
      let reads = 0;
      const source = gatedSource(Infinity, async () => {});
      const counted = { read: (into: Uint8Array) => (reads++, source.read(into)) };
      try {
        await scanArchive(
          counted,
          (_, done) => {
            if (readsAtFirstWrite === -1) readsAtFirstWrite = reads;
            done();
          },
          { pool: fresh, alsoScanHere: true, format: "jsonl", createdAt: CREATED_AT, chunkBytes: 4096, onFailure() {} },
        );
      } finally {
        await fresh.close();
      }
      // The first chunk is written while the read ahead of the next one is out, not chunks later.
      expect(readsAtFirstWrite).toBeGreaterThan(0);
      expect(readsAtFirstWrite).toBeLessThanOrEqual(3);
    });

    it("says nothing of a worker that failed to start after the scan has ended", async () => {
      const broken = new ScanPool({ threads: 1, faults: { failStartup: true } });
      const run = vi.spyOn(broken, "run");
      try {
        let ended = false;
        const lateCalls: unknown[] = [];
        await run_(bytes.subarray(0, 8 * 4096), broken, () => ended && lateCalls.push("late"));
        ended = true;
        await firstTask(run).catch(() => {});
        expect(run).toHaveBeenCalledTimes(1);
        expect(lateCalls).toEqual([]);
      } finally {
        await broken.close();
      }
    });

    it("starts the worker before reading when the archive's size says it is long", async () => {
      for (const [sizeHint, early] of [
        [bytes.length, true],
        [3 * 4096, false],
        [undefined, false],
      ] as const) {
        const fresh = new ScanPool({ threads: 1 });
        const run = vi.spyOn(fresh, "run");
        try {
          let runsAtFirstRead = -1;
          const source = streamSource(pieces(bytes, [4096]));
          const watched: ArchiveSource = {
            read(into) {
              if (runsAtFirstRead === -1) runsAtFirstRead = run.mock.calls.length;
              return source.read(into);
            },
          };
          const { output } = await scanBoth(watched, fresh, { sizeHint });
          expect(output).toBe(expectedOutput());
          expect(runsAtFirstRead, `size hint ${sizeHint}`).toBe(early ? 1 : 0);
        } finally {
          await fresh.close();
        }
      }
      // Without alsoScanHere, a chunk waits for its worker anyway: no worker is started before it.
      const fresh = new ScanPool({ threads: 1 });
      const run = vi.spyOn(fresh, "run");
      try {
        const { output } = await scanBoth(streamSource(pieces(bytes, [4096])), fresh, { sizeHint: bytes.length, alsoScanHere: false });
        expect(output).toBe(expectedOutput());
        expect(run.mock.calls.filter(([task]) => !isChunk(task))).toEqual([]);
      } finally {
        await fresh.close();
      }
    });

    it("starts no worker for an archive of a few chunks, and one for a longer archive", async () => {
      const fresh = new ScanPool({ threads: 1 });
      const run = vi.spyOn(fresh, "run");
      try {
        const chunks = (n: number) => {
          const lines = text.split("\n");
          let end = 0;
          for (let size = 0; end < lines.length && size + lines[end].length < n * 4096 - 200; end++) size += lines[end].length + 1;
          return Buffer.from(lines.slice(0, end).join("\n") + "\n");
        };
        await run_(chunks(3), fresh);
        expect(run).not.toHaveBeenCalled();
        await run_(chunks(8), fresh);
        expect(run.mock.calls[0]![0]).toMatchObject({ kind: "lines", inputBytes: 0 });
      } finally {
        await fresh.close();
      }
    });
  });
});

/** A JSON line of exactly `bytes` bytes (newline excluded) naming `ref`. */
function lineOfBytes(bytes: number, ref: string): string {
  const head = JSON.stringify({ thread_id: "t", message: { tool_call_id: "c", content: `${ref} ` } });
  const pad = bytes - head.length;
  const line = JSON.stringify({ thread_id: "t", message: { tool_call_id: "c", content: `${ref} ${"x".repeat(pad)}` } });
  expect(Buffer.byteLength(line)).toBe(bytes);
  return line;
}

describe("maxLineBytes", () => {
  it("a line of exactly maxLineBytes bytes, its newline not yet read, is still scanned", async () => {
    const line = lineOfBytes(2048, "/mnt/user-data/edge.txt");
    const input = Buffer.from(`${line}\n{"thread_id":"t","message":{"tool_call_id":"d","content":"/mnt/user-data/next.txt"}}\n`);
    // Two reads of 1024 bytes hold the whole line but not its newline; the next read brings it.
    const r = await run(pieces(input, [1024, 1024, 1, 4096]), { chunkBytes: 1024, maxLineBytes: 2048 });
    expect(r.failures).toEqual([]);
    expect(r.output).toContain('"real_ref":"/mnt/user-data/edge.txt"');
    expect(r.output).toContain('"real_ref":"/mnt/user-data/next.txt"');
    expect(r.summary).toMatchObject({ lines: 2, failed: 0, entries: 2 });
  });

  it("one byte more is skipped, and the line after it keeps its number", async () => {
    const line = lineOfBytes(2049, "/mnt/user-data/edge.txt");
    const input = Buffer.from(`${line}\n{"thread_id":"t","message":{"tool_call_id":"d","content":"/mnt/user-data/next.txt"}}\n{bad\n`);
    const r = await run(pieces(input, [1024, 1025, 1, 4096]), { chunkBytes: 1024, maxLineBytes: 2048 });
    expect(r.failures.map((f) => f.line)).toEqual([1, 3]);
    expect(r.failures[0].reason).toBe("line longer than 2048 bytes, skipped");
    expect(r.output).not.toContain("edge.txt");
    expect(r.output).toContain('"real_ref":"/mnt/user-data/next.txt"');
  });
});

describe("scanArchive: after a dropped over-long line", () => {
  it("cuts the next chunk after the newline of the lines kept from the dropping read, so later lines keep their numbers", async () => {
    // Line 1 is dropped; the read that ends it brings line 2 whole and the start of line 3,
    // and line 3 (under the limit) is still open when the buffer fills: the cut is at line 2's end.
    const input = Buffer.from(
      `${lineOfBytes(5000, "/mnt/user-data/long.txt")}\n` +
        `{"thread_id":"t","message":{"tool_call_id":"a","content":"/mnt/user-data/a.txt"}}\n` +
        `${lineOfBytes(1500, "/mnt/user-data/b.txt")}\n{bad\n` +
        `{"thread_id":"t","message":{"tool_call_id":"d","content":"/mnt/user-data/d.txt"}}\n`,
    );
    const r = await run(pieces(input, [1024]), { chunkBytes: 1024, maxLineBytes: 2048 });
    expect(r.failures.map((f) => f.line)).toEqual([1, 4]);
    expect(r.failures[0].reason).toBe("line longer than 2048 bytes, skipped");
    expect(r.failures[1].reason).toMatch(/^invalid JSON: /);
    expect(r.summary).toMatchObject({ lines: 5, failed: 2, entries: 3 });
    expect(r.output).toContain('"real_ref":"/mnt/user-data/a.txt"');
    expect(r.output).toContain('"real_ref":"/mnt/user-data/b.txt"');
    expect(r.output).toContain('"real_ref":"/mnt/user-data/d.txt"');
  });
});

describe("scanArchive with alsoScanHere: the early worker's size threshold", () => {
  const pool = new ScanPool({ threads: 1 });
  afterAll(() => pool.close());

  it("an archive said to be exactly WORKER_AFTER_CHUNKS (4) chunks long starts no worker before reading", async () => {
    const runSpy = vi.spyOn(pool, "run");
    const line = `{"thread_id":"t","message":{"tool_call_id":"a","content":"/mnt/user-data/a.txt"}}\n`;
    const inner = streamSource(pieces(Buffer.from(line.repeat(10)), [4096]));
    let runsAtFirstRead = -1;
    const watched: ArchiveSource = {
      read(into) {
        if (runsAtFirstRead === -1) runsAtFirstRead = runSpy.mock.calls.length;
        return inner.read(into);
      },
    };
    const summary = await scanArchive(watched, (_bytes, done) => done(), { format: "jsonl", createdAt: CREATED_AT, onFailure() {}, pool, alsoScanHere: true, chunkBytes: 4096, sizeHint: 4 * 4096 });
    expect(summary.entries).toBe(10);
    expect(runsAtFirstRead).toBe(0);
    // ...and, short as it is, none at all.
    expect(runSpy).not.toHaveBeenCalled();
    runSpy.mockRestore();
  });

  it("a live source cut into more than four small chunks by its pauses starts no worker", async () => {
    // Six lines, each followed by a pause longer than IDLE_FLUSH_MS: six
    // chunks of one line each, far below four chunks' worth of bytes.
    const startSpy = vi.spyOn(pool, "workerStarted");
    const runSpy = vi.spyOn(pool, "run");
    async function* input() {
      for (let n = 0; n < 6; n++) {
        yield Buffer.from(`{"thread_id":"t","message":{"tool_call_id":"c${n}","content":"/mnt/user-data/live-${n}.txt"}}\n`);
        await sleep(250);
      }
    }
    let writes = 0;
    const summary = await scanArchive(
      streamSource(input()),
      (_bytes, done) => {
        writes++;
        done();
      },
      { format: "jsonl", createdAt: CREATED_AT, onFailure() {}, pool, alsoScanHere: true, chunkBytes: 4096 },
    );
    expect(summary.entries).toBe(6);
    expect(writes).toBe(6); // each line was written at its pause: six chunks
    expect(startSpy).not.toHaveBeenCalled();
    expect(runSpy).not.toHaveBeenCalled();
    startSpy.mockRestore();
    runSpy.mockRestore();
  });
});
