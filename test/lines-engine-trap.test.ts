/**
 * An engine that fails in the middle of a chunk. The kernel is written not to
 * trap, so the trap is injected: the engine's runner (src/engine/wasm.ts) is
 * the real one, but the kernel call it is handed throws a WebAssembly trap on
 * the Nth call of the line scanner, after the real kernel has run. By then
 * earlier runs of the chunk have written output, which must not leak: the
 * chunk goes to the TypeScript path whole, the instance is rebuilt, and the
 * next chunk is the engine's again.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { type LineFailure } from "../src/batch/errors.js";
import { unpackLineResult } from "../src/batch/packing.js";
import { scanLinesPacked, scanLinesPackedJs, type LinePathStats, type LineScanOptions } from "../src/batch/scan.js";
import { scanArchive } from "../src/batch/stream.js";
import { engine } from "../src/engine/wasm.js";

/** Calls of the line scanner left before the injected failure (0: none armed), and what it throws. */
const fault = vi.hoisted(() => ({ callsLeft: 0, error: (): Error => new WebAssembly.RuntimeError("unreachable (injected)"), calls: 0 }));

vi.mock("../src/engine/wasm.js", async (importOriginal) => {
  const { aroundKernelCalls } = await import("./support/engine-fault.js");
  return aroundKernelCalls(await importOriginal(), (op, call) => {
    const out = call();
    if (op === "scanLines") {
      fault.calls++;
      if (fault.callsLeft > 0 && --fault.callsLeft === 0) throw fault.error();
    }
    return out;
  });
});

const OPTIONS: LineScanOptions = { format: "jsonl", createdAt: "2025-01-02T03:04:05.000Z", sandboxPrefixes: ["/"] };

const LINES = 12;
const REFS = 600;

/** LINES lines whose output (REFS entries each) is far larger than the input: the kernel's output room fills, so a chunk takes several runs. */
function bigOutputChunk(tag: string): Uint8Array {
  const refs = Array.from({ length: REFS }, (_, i) => `/${tag}${i}`).join(" ");
  const lines = Array.from({ length: LINES }, (_, i) => JSON.stringify({ thread_id: "t", message: { type: "tool", tool_call_id: `${tag}${i}`, content: refs } }));
  return new Uint8Array(Buffer.from(lines.join("\n") + "\n"));
}

/** The packed result with its output as text, compared whole (a deep compare of a large Buffer is slow). */
const outcome = (packed: ArrayBuffer) => {
  const r = unpackLineResult(packed);
  return { ...r, output: Buffer.from(r.output).toString("utf8") };
};

afterEach(() => {
  fault.callsLeft = 0;
  fault.error = () => new WebAssembly.RuntimeError("unreachable (injected)");
});

describe("an engine trap in the middle of a chunk", () => {
  it("the chunk takes several kernel runs when unharmed (so a later run can fail after output was written)", () => {
    fault.calls = 0;
    const stats: LinePathStats = { engineLines: 0, jsLines: 0 };
    const got = outcome(scanLinesPacked(bigOutputChunk("a"), OPTIONS, { stats }));
    expect(fault.calls).toBeGreaterThanOrEqual(3);
    expect(stats).toEqual({ engineLines: LINES, jsLines: 0 });
    expect(got).toEqual(outcome(scanLinesPackedJs(bigOutputChunk("a"), OPTIONS)));
  });

  it("sends the whole chunk to the TypeScript path: same bytes as the reference, every line counted once", () => {
    for (const failOn of [1, 2, 3]) {
      const bytes = bigOutputChunk(`f${failOn}`);
      fault.calls = 0;
      fault.callsLeft = failOn;
      const stats: LinePathStats = { engineLines: 0, jsLines: 0 };
      const got = outcome(scanLinesPacked(bytes, OPTIONS, { stats }));
      expect(fault.callsLeft, `trap on run ${failOn}`).toBe(0); // it did fire
      expect(stats, `trap on run ${failOn}`).toEqual({ engineLines: 0, jsLines: LINES });
      expect(got.entries).toBe(LINES * REFS);
      expect(got, `trap on run ${failOn}`).toEqual(outcome(scanLinesPackedJs(bytes, OPTIONS)));
    }
  });

  it("the engine is rebuilt and takes the next chunk", () => {
    const before = engine();
    fault.callsLeft = 2;
    scanLinesPacked(bigOutputChunk("x"), OPTIONS);
    expect(engine(), "a fresh instance after the trap").not.toBe(before);
    const stats: LinePathStats = { engineLines: 0, jsLines: 0 };
    const got = outcome(scanLinesPacked(bigOutputChunk("y"), OPTIONS, { stats }));
    expect(stats).toEqual({ engineLines: LINES, jsLines: 0 });
    expect(got).toEqual(outcome(scanLinesPackedJs(bigOutputChunk("y"), OPTIONS)));
  });

  it("an error that is not the engine's surfaces instead of being hidden by the fallback", () => {
    fault.callsLeft = 2;
    fault.error = () => new TypeError("a bug in the facade");
    expect(() => scanLinesPacked(bigOutputChunk("b"), OPTIONS)).toThrow("a bug in the facade");
  });

  /** Four chunks of bigOutputChunk lines through scanArchive on this thread, one chunk per read. */
  const chunks = ["p", "q", "r", "s"].map(bigOutputChunk);
  const scanAll = async () => {
    const archive = Buffer.concat(chunks);
    const out: Buffer[] = [];
    const failures: LineFailure[] = [];
    let at = 0;
    const summary = await scanArchive(
      {
        read: async (into) => {
          const n = Math.min(into.byteLength, archive.length - at);
          into.set(archive.subarray(at, at + n));
          at += n;
          return n;
        },
      },
      (bytes, done) => {
        out.push(Buffer.from(bytes));
        done();
      },
      { ...OPTIONS, chunkBytes: chunks[0].byteLength, onFailure: (f) => failures.push(f) },
    );
    return { summary, failures, output: Buffer.concat(out).toString("utf8") };
  };

  it("through scanArchive: a trap in one chunk of many loses and repeats nothing", async () => {
    fault.calls = 0;
    const clean = await scanAll();
    const perChunk = Math.floor(fault.calls / chunks.length);
    expect(perChunk).toBeGreaterThanOrEqual(3);
    fault.callsLeft = perChunk + 2; // the third kernel run of the second chunk
    const trapped = await scanAll();
    expect(fault.callsLeft).toBe(0);
    expect([clean.failures, trapped.failures]).toEqual([[], []]);
    expect(trapped.output).toBe(clean.output);
    expect({ ...trapped.summary, elapsedMs: 0 }).toEqual({ ...clean.summary, elapsedMs: 0 });
    const lines = trapped.output.trimEnd().split("\n");
    expect(lines).toHaveLength(4 * LINES * REFS);
    expect(new Set(lines).size).toBe(lines.length);
  });

  it("through scanArchive: an error that is not the engine's loses that chunk's lines, reported, and the scan goes on", async () => {
    fault.calls = 0;
    const clean = await scanAll();
    const perChunk = Math.floor(fault.calls / chunks.length);
    fault.callsLeft = perChunk + 2; // in the second chunk
    fault.error = () => new TypeError("a bug in the facade");
    const broken = await scanAll();
    expect(broken.failures).toEqual([{ line: LINES + 1, reason: `lines ${LINES + 1}..${2 * LINES} not scanned: a bug in the facade` }]);
    expect(broken.summary.failed).toBe(LINES);
    const cleanLines = clean.output.trimEnd().split("\n");
    const second = new Set(cleanLines.slice(LINES * REFS, 2 * LINES * REFS));
    expect(broken.output).toBe(cleanLines.filter((l) => !second.has(l)).join("\n") + "\n");
  });
});
