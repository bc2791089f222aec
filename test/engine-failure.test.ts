/**
 * The engine failing on one source of a tool result (a trap, or memory it
 * could not grow). The kernels are written not to trap, so the trap is
 * injected: the engine's runner (src/engine/wasm.ts) is the real one, but the
 * kernel call it is handed throws a WebAssembly trap for the chosen
 * operation. extractArtifacts reads the other sources and tells
 * `onEngineFailure`; a batch item or an archive line fails, naming the
 * failure, instead of coming back short.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { scanBatch } from "../src/batch/index.js";
import { unpackLineResult } from "../src/batch/packing.js";
import { scanLinesPacked } from "../src/batch/scan.js";
import { extractArtifacts } from "../src/extract.js";

/** The operation whose kernel call traps (none: ""). */
const fault = vi.hoisted(() => ({ op: "" }));

vi.mock("../src/engine/wasm.js", async (importOriginal) => {
  const { aroundKernelCalls } = await import("./support/engine-fault.js");
  return aroundKernelCalls(await importOriginal(), (op, call) => {
    if (op === fault.op) throw new WebAssembly.RuntimeError("unreachable (injected)");
    return call();
  });
});

afterEach(() => {
  fault.op = "";
});

/** A result with a structured payload (the walk) and a plain text (the free-text scan). */
const message = (id: string) => ({
  type: "tool",
  id,
  tool_call_id: `call-${id}`,
  name: "fetch",
  content: `Saved /mnt/user-data/${id}.txt`,
  artifact: { structured_content: { url: `https://x.example/${id}.png` } },
});

describe("an engine failure on one source", () => {
  it("extractArtifacts keeps the other sources and tells onEngineFailure, naming the operation", () => {
    for (const [op, kept] of [
      ["walkStructured", "/mnt/user-data/m1.txt"],
      ["scanText", "https://x.example/m1.png"],
    ] as const) {
      fault.op = op;
      const told: Error[] = [];
      const entries = extractArtifacts(message("m1"), { threadId: "t", onEngineFailure: (e) => told.push(e) });
      expect(entries.map((e) => e.real_ref)).toEqual([kept]);
      expect(told).toHaveLength(1);
      expect(told[0]!.message).toMatch(new RegExp(`^tool-artifacts engine: ${op} failed on \\d+ bytes of input: unreachable \\(injected\\)`));
      // Without the hook, the same: a middleware never fails a turn for it.
      expect(extractArtifacts(message("m1"), { threadId: "t" }).map((e) => e.real_ref)).toEqual([kept]);
    }
    fault.op = "";
    expect(extractArtifacts(message("m1"), { threadId: "t" })).toHaveLength(2);
  });

  it("a JSON text whose walk fails adds nothing: not its structured values, nor its other strings, as free text", () => {
    fault.op = "walkStructured";
    const told: Error[] = [];
    const content = JSON.stringify({ path: "/mnt/user-data/my report.csv", size: 1, note: "see /mnt/user-data/b.txt" });
    expect(extractArtifacts({ tool_call_id: "c", content }, { threadId: "t", onEngineFailure: (e) => told.push(e) })).toEqual([]);
    expect(told).toHaveLength(1);
  });

  it("fails only the scanBatch item it hit, with an error naming it", async () => {
    const items = [
      { threadId: "t", message: { type: "tool", id: "a", tool_call_id: "ca", content: "/mnt/user-data/a.txt" } },
      { threadId: "t", message: message("b") },
      { threadId: "t", message: { type: "tool", id: "c", tool_call_id: "cc", content: "/mnt/user-data/c.txt" } },
    ];
    fault.op = "walkStructured";
    const { entries, errors } = await scanBatch(items, { poolThreshold: Infinity });
    expect(entries.map((list) => list.map((e) => e.real_ref))).toEqual([["/mnt/user-data/a.txt"], [], ["/mnt/user-data/c.txt"]]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ index: 1, threadId: "t" });
    expect(errors[0]!.error).toMatch(/item 1 .*walkStructured failed/);
  });

  it("fails only the archive line it hit, by number, on the TypeScript path", () => {
    const lines = [message("x"), message("y")].map((m) => JSON.stringify({ thread_id: "t", message: m })).join("\n");
    fault.op = "walkStructured";
    // The table format takes the TypeScript path for every line; the engine's
    // line path leaves lines with payloads it must walk to it too.
    const result = unpackLineResult(scanLinesPacked(new TextEncoder().encode(lines), { format: "table" }));
    expect(result.failures.map((f) => f.line)).toEqual([1, 2]);
    expect(result.failures[0]!.reason).toContain("walkStructured failed");
    expect(result.entries).toBe(0);
  });
});
