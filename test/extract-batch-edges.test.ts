/**
 * Extraction, handles, option checks and batch items at their edges, the
 * ones a mutation run found untested: byte bounds, blocks of the wrong
 * type, null where a value is optional, message kinds, the wire check's
 * exact bound, and archive lines' call indexes.
 */
import { describe, expect, it, vi } from "vitest";
import { extractArtifacts } from "../src/extract.js";
import { isHandle, resolveHandles } from "../src/handles.js";
import { scanBatch, ScanPool } from "../src/batch/index.js";
import { itemFromLine } from "../src/batch/items.js";
import { unpackLineResult } from "../src/batch/packing.js";
import { scanLinesPackedJs } from "../src/batch/scan.js";
import { describeValue, nearMiss, sameKey, sandboxPrefixesProblem, timestampProblem } from "../src/types.js";

const T = { threadId: "t" };

describe("edges: extract", () => {
  it("a free-text reference of at most 4096 UTF-16 units but over 4096 UTF-8 bytes is skipped", () => {
    const ref = "/mnt/user-data/" + "é".repeat(2100) + ".txt"; // 2119 units, 4219 bytes
    expect(extractArtifacts({ content: `see ${ref} now`, tool_call_id: "c" }, T)).toEqual([]);
  });

  it("structuredContent is read only on a text block", () => {
    const message = { content: [{ type: "image", data: "AAAA", mimeType: "image/png", structuredContent: { file: "/data/x.csv" } }], tool_call_id: "c" };
    expect(extractArtifacts(message, T)).toEqual([]);
  });

  it("a text block's null structuredContent is none: a later block's is the payload", () => {
    const message = {
      content: [
        { type: "text", text: "a", structuredContent: null },
        { type: "text", text: "b", structuredContent: { file: "/data/x.csv" } },
      ],
      tool_call_id: "c",
    };
    expect(extractArtifacts(message, T).map((e) => e.real_ref)).toEqual(["/data/x.csv"]);
  });

  it("in a JSON text, strings inside an object under a known key are free text", () => {
    const message = { content: JSON.stringify({ file: { note: "see /mnt/user-data/a.txt" } }), tool_call_id: "c" };
    expect(extractArtifacts(message, T).map((e) => e.real_ref)).toEqual(["/mnt/user-data/a.txt"]);
  });

  it("a block whose url is no string takes its source's url", () => {
    const message = { content: [{ type: "image", url: 42, source: { url: "https://x.example/a.png", mime_type: "image/png" } }], tool_call_id: "c" };
    expect(extractArtifacts(message, T).map((e) => [e.real_ref, e.mime_type])).toEqual([["https://x.example/a.png", "image/png"]]);
  });

  it("a string item of the artifact list is not scanned as text", () => {
    expect(extractArtifacts({ content: "", artifact: ["see /mnt/user-data/a.txt"], tool_call_id: "c" }, T)).toEqual([]);
  });

  it("options.now null is refused like any other non-function", () => {
    expect(() => extractArtifacts({ content: "/mnt/user-data/a.txt", tool_call_id: "c" }, { threadId: "t", now: null as never })).toThrow(TypeError);
  });
});

describe("edges: handles", () => {
  it("isHandle is exactly one handle, nothing after it", () => {
    expect(isHandle("art_0123abcd")).toBe(true);
    expect(isHandle("art_0123abcdx")).toBe(false);
    expect(isHandle("art_0123abcd\n")).toBe(false);
  });

  it("resolveHandles refuses a lookup that is neither a function nor a Map, before any handle is looked up", () => {
    expect(() => resolveHandles("no handle here", {} as never)).toThrow(TypeError);
    expect(() => resolveHandles({ a: "art_0123abcd" }, { get: 1 } as never)).toThrow(TypeError);
  });

  it("a copied array keeps its holes", () => {
    const args = [, "art_0123abcd"]; // eslint-disable-line no-sparse-arrays
    const out = resolveHandles(args, new Map([["art_0123abcd", "/mnt/user-data/a.txt"]]));
    expect(out).not.toBe(args);
    expect(out[1]).toBe("/mnt/user-data/a.txt");
    expect(0 in out).toBe(false);
  });
});

describe("edges: types", () => {
  it("a sandbox prefix holding U+FFFD is refused (it would match a lone surrogate in text)", () => {
    expect(sandboxPrefixesProblem(["/mnt/\ufffd/"])).toMatch(/lone surrogate or U\+FFFD/);
    expect(() => extractArtifacts({ content: "x", tool_call_id: "c" }, { threadId: "t", sandboxPrefixes: ["/d\ufffd/"] })).toThrow(TypeError);
  });

  it("describeValue cuts a string only past 40 characters", () => {
    expect(describeValue("a".repeat(40))).toBe(JSON.stringify("a".repeat(40)));
    expect(describeValue("a".repeat(41))).toBe(JSON.stringify(`${"a".repeat(40)}…`));
  });

  it("a -00:00 offset is UTC too", () => {
    expect(timestampProblem("2025-01-01T00:00:00-00:00")).toBeUndefined();
    expect(timestampProblem("2025-01-01T00:00:00+00:00")).toBeUndefined();
    expect(timestampProblem("2025-01-01T00:00:00+01:00")).toBeDefined();
  });

  it("toISOString's six-digit form of a year before 0 is accepted", () => {
    const iso = new Date(Date.UTC(-5, 0, 1)).toISOString();
    expect(iso.startsWith("-000005-")).toBe(true);
    expect(timestampProblem(iso)).toBeUndefined();
  });

  it("detectRefsInText null is refused, not taken as the default", () => {
    expect(() => extractArtifacts({ content: "x", tool_call_id: "c" }, { threadId: "t", detectRefsInText: null as never })).toThrow(TypeError);
  });

  it("a key with dashes is the same key as its camelCase", () => {
    expect(sameKey("call-index", "callIndex")).toBe(true);
    expect(nearMiss("max-entrie", ["maxEntries"])).toBe("maxEntries");
  });
});

describe("edges: batch items", () => {
  const here = { poolThreshold: Infinity };

  it("a serialized ToolMessageChunk is a tool result", async () => {
    const message = { lc: 1, type: "constructor", id: ["langchain_core", "messages", "ToolMessageChunk"], kwargs: { content: "/mnt/user-data/a.txt", tool_call_id: "c" } };
    const { entries, skipped } = await scanBatch([{ threadId: "t", message }], here);
    expect(skipped).toEqual([]);
    expect(entries[0]!.map((e) => e.real_ref)).toEqual(["/mnt/user-data/a.txt"]);
  });

  it("a message's own type wins over a tool_call_id", async () => {
    const message = { type: "ai", tool_call_id: "c", content: "/mnt/user-data/a.txt" };
    const { entries, skipped } = await scanBatch([{ threadId: "t", message }], here);
    expect(skipped).toEqual([0]);
    expect(entries[0]).toEqual([]);
  });

  it("an archive line's message is not told apart by its role", () => {
    expect(itemFromLine({ thread_id: "t", message: { role: "tool", content: "/mnt/user-data/a.txt" } })).toBeUndefined();
  });

  it("an inherited key of an item is not taken as a misspelt one", async () => {
    const item = Object.assign(Object.create({ call_index: 2 }), { threadId: "t", message: { type: "tool", tool_call_id: "c", content: "/mnt/user-data/a.txt" } });
    const { entries, errors } = await scanBatch([item], here);
    expect(errors).toEqual([]);
    expect(entries[0]!.map((e) => e.call_index)).toEqual([0]);
  });

  it("an archive line may name its thread threadId", () => {
    expect(itemFromLine({ threadId: "t", message: { type: "tool", tool_call_id: "c", content: "x" } })?.threadId).toBe("t");
  });

  it("an item holding a function is scanned as the calling thread reads it, not as its JSON", async () => {
    const message = () => ({
      type: "tool",
      tool_call_id: "c",
      content: [
        { type: "text", text: "a", structuredContent: () => 1 },
        { type: "text", text: "b", structuredContent: { file: "/data/x.csv" } },
      ],
    });
    const onHere = await scanBatch([{ threadId: "t", message: message() }], here);
    const pool = new ScanPool({ threads: 1 });
    try {
      const onPool = await scanBatch([{ threadId: "t", message: message() }], { pool, poolThreshold: 0, callingThreadScans: false });
      expect(onPool.entries).toEqual(onHere.entries);
    } finally {
      await pool.close();
    }
  });

  it("an item of exactly 4096 wire values goes to a worker, one of 4097 (the last an object key) stays here", async () => {
    // The worker fails every item of thread "here": an item scanned on the calling thread does not.
    const failing = new ScanPool({ threads: 1, faults: { failOnThreadId: "here" } });
    const item = (inner: object) => ({
      threadId: "here",
      message: { tool_call_id: "c", content: "/mnt/user-data/a.txt", artifact: { a: inner, b: new Array<number>(4093).fill(0) } },
    });
    try {
      // Charged: artifact's 2 keys, the array's 4093 items, then the inner object's keys.
      const result = await scanBatch([item({ c: 1 }), item({ c: 1, d: 1 })], { pool: failing, poolThreshold: 0, callingThreadScans: false });
      expect(result.errors.map((e) => e.index)).toEqual([0]);
      expect(result.entries[1]!.map((e) => e.real_ref)).toEqual(["/mnt/user-data/a.txt"]);
    } finally {
      await failing.close();
    }
  });
});

describe("edges: scanBatch", () => {
  it("options.pool null is no pool", async () => {
    const message = { type: "tool", tool_call_id: "c", content: "/mnt/user-data/a.txt" };
    const result = await scanBatch([{ threadId: "t", message }], { pool: null as never });
    expect(result.entries[0]!.map((e) => e.real_ref)).toEqual(["/mnt/user-data/a.txt"]);
  });
});

describe("edges: archive lines on the TypeScript path", () => {
  const scan = (lines: unknown[] | string) => {
    const text = typeof lines === "string" ? lines : lines.map((l) => JSON.stringify(l)).join("\n");
    const result = unpackLineResult(scanLinesPackedJs(new TextEncoder().encode(text), { format: "jsonl", createdAt: "2025-01-01T00:00:00Z" }));
    const out = Buffer.from(result.output).toString("utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as { call_index: number });
    return { ...result, out };
  };
  const anon = (line: object = {}, message: object = {}) => ({ thread_id: "t", ...line, message: { type: "tool", content: "/mnt/user-data/a.txt", ...message } });

  it("an anonymous line's own call_index is kept, not replaced by its line number", () => {
    expect(scan([anon(), anon({ call_index: 5 })]).out.map((e) => e.call_index)).toEqual([1, 5]);
  });

  it("an anonymous line (no id, empty tool_call_id) gets its 1-based line number as call index", () => {
    expect(scan([anon({}, { tool_call_id: "" }), anon({}, { tool_call_id: "" })]).out.map((e) => e.call_index)).toEqual([1, 2]);
  });

  it("a line of blanks only is no failure", () => {
    const r = scan("   \t\n" + JSON.stringify(anon({}, { tool_call_id: "c" })));
    expect(r.failures).toEqual([]);
    expect(r.out).toHaveLength(1);
  });
});

describe("edges: the clock", () => {
  it("refuses a now() that answers undefined, also before any good time was checked", async () => {
    vi.resetModules();
    const fresh = await import("../src/extract.js"); // its last good time not yet set
    expect(() => fresh.extractArtifacts({ content: "/mnt/user-data/a.txt", tool_call_id: "c" }, { threadId: "t", now: () => undefined as never })).toThrow(TypeError);
  });
});
