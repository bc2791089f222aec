import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath, pathToFileURL } from "node:url";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { afterAll, describe, expect, it, vi } from "vitest";
import { MIN_CORES_FOR_SHARED_POOL, POOL_THRESHOLD, scanBatch, ScanPool, type BatchItem } from "../src/batch/index.js";
import { BufferPool } from "../src/batch/buffers.js";
import { WorkerStartError } from "../src/batch/errors.js";
import { formatEntries } from "../src/batch/format.js";
import { itemFromLine, normalizeItem, readItem, writeItem } from "../src/batch/items.js";
import { decodeEntries, encodeEntries, packLineResult, packRecords, unpackLineResult, unpackRecords } from "../src/batch/packing.js";
import type { ScanResult, ScanTask } from "../src/batch/protocol.js";
import { scanLinesPacked, scanLinesPackedJs, scanRecords } from "../src/batch/scan.js";
import { extractArtifacts } from "../src/extract.js";
import { STRUCTURED_RESPONSE_MARK, type ArtifactEntry } from "../src/types.js";
import { heldWorker, recordsTask, until } from "./support/pool.js";
import { underPermission } from "./support/permission.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CREATED_AT = "2025-01-02T03:04:05.000Z";
const now = () => CREATED_AT;

/** Tool results in every accepted shape, with 0..4 references each and uneven sizes. */
function corpus(n: number): BatchItem[] {
  return Array.from({ length: n }, (_, i): BatchItem & { original?: ToolMessage } => {
    const threadId = `thread-${i % 7}`;
    const text = `run ${i}: wrote /mnt/user-data/out/${i}.csv ` + "filler ".repeat(i % 50) + (i % 3 === 0 ? `see https://cdn.example.com/r/${i}.png` : "");
    switch (i % 4) {
      case 0:
        return { threadId, message: { type: "tool", id: `m${i}`, name: "writer", tool_call_id: `c${i}`, content: text } };
      case 1:
        return {
          threadId,
          callIndex: i % 5,
          message: new ToolMessage({ tool_call_id: `c${i}`, name: "job", content: [{ type: "text", text }], artifact: { structured_content: { job_id: `job-${i}`, path: `/data/${i}.json` } } }),
        };
      case 2: {
        // LangChain's serialized form, as found in archives; extractArtifacts itself takes the live message.
        const original = new ToolMessage({ id: `m${i}`, tool_call_id: `c${i}`, name: "weather", content: "ok", artifact: { structured_content: { city: "Lisbon", i } } });
        return { threadId, message: JSON.parse(JSON.stringify(original)), original };
      }
      default:
        return { threadId, message: { type: "tool", tool_call_id: `c${i}`, name: "img", content: [{ type: "image", url: `https://img.example.com/${i}.jpg`, mimeType: "image/jpeg" }] } };
    }
  });
}

const expected = (items: readonly BatchItem[], detectRefsInText?: boolean) =>
  items.map((item) =>
    extractArtifacts(((item as { original?: ToolMessage }).original ?? item.message) as ToolMessage, { threadId: item.threadId, callIndex: item.callIndex, detectRefsInText, now }),
  );

/**
 * `messages` after a corpus, all on `pool`'s workers: no error, the entries
 * extractArtifacts gives; returns the refs of the messages' entries.
 */
async function onPoolAsExtracted(pool: ScanPool, messages: readonly unknown[]) {
  const items: BatchItem[] = [...corpus(100), ...messages.map((message) => ({ threadId: "t", message }))];
  const result = await scanBatch(items, { pool, createdAt: CREATED_AT, poolThreshold: 0, callingThreadScans: false });
  expect(result.errors).toEqual([]);
  expect(result.entries).toEqual(expected(items));
  return result.entries.slice(100);
}

/** Every index is either scanned or failed, exactly once. */
function partition(result: { entries: unknown[][]; errors: { index: number }[] }, n: number) {
  const failed = result.errors.map((e) => e.index);
  expect(new Set(failed).size).toBe(failed.length);
  expect(result.entries).toHaveLength(n);
  return new Set(failed);
}

describe("packing", () => {
  it("round-trips records of any text, including astral characters and empty records", () => {
    const records = ["[]", "", '{"a":"é ✓ 𝄞 \\ud800"}', "x".repeat(100_000), JSON.stringify({ nested: ["𝄞", "\u2028"] })];
    expect(unpackRecords(packRecords(records))).toEqual(records);
    expect(unpackRecords(packRecords([]))).toEqual([]);
  });

  it("writes an item's text raw and reads the same item back", () => {
    const messages = [
      { tool_call_id: "a", content: "plain /mnt/user-data/x.txt \ud800 lone surrogate" },
      { tool_call_id: "b", content: [{ type: "text", text: "one" }, { type: "image", url: "https://x/y.png" }, "bare", { type: "text", text: "two", extra: 1 }] },
      { tool_call_id: "c", artifact: { structured_content: { path: "/p" } } },
      { tool_call_id: "d", content: [{ type: "text", text: 5 }], status: "success" },
    ];
    const records: string[] = [];
    for (const message of messages) writeItem(normalizeItem({ threadId: "t", callIndex: 2, message }), records);
    expect(records).toContain("plain /mnt/user-data/x.txt \ud800 lone surrogate");
    const back = unpackRecords(packRecords(records));
    const read = [];
    for (let at = 0; at < back.length; ) {
      const { item, next } = readItem(back, at);
      read.push(item);
      at = next;
    }
    // Every item, in order: one not written would be missing, not skipped over.
    expect(read).toEqual(messages.map((message) => normalizeItem({ threadId: "t", callIndex: 2, message })));
  });

  it("round-trips entries through their compact record, optional fields included", () => {
    const base = { handle: "art_0123abcd", tool_name: "t", tool_call_id: "c", call_index: 3, artifact_type: "file" as const, display_name: "a.png", real_ref: "/a.png", created_at: CREATED_AT };
    const entries = [base, { ...base, mime_type: "image/png" }, { ...base, consumed_by: ["x", "y"] }, { ...base, mime_type: "text/csv", consumed_by: [] }];
    expect(decodeEntries(encodeEntries(entries))).toEqual(entries);
    expect(decodeEntries(encodeEntries([]))).toEqual([]);
  });

  it("rejects a buffer whose table overruns it instead of reading garbage", () => {
    const buffer = packRecords(["abc", "def"]);
    new Uint32Array(buffer, 0, 3)[2] = 99;
    expect(() => unpackRecords(buffer)).toThrow(/record 1 ends at 99/);
    expect(() => unpackRecords(new ArrayBuffer(2))).toThrow(/shorter than the header/);
    expect(() => unpackRecords(new Uint32Array([5]).buffer)).toThrow("packed records: header of 5 records overruns 4 bytes");
  });

  it("round-trips a line result: counters, output bytes and failures", () => {
    const failures = [{ line: 3, reason: "invalid JSON: é" }];
    const out = unpackLineResult(packLineResult({ lines: 9, entries: 4, rejected: 1, skipped: 2, failures }, ["a\n", "𝄞\n"]));
    expect(out).toMatchObject({ lines: 9, entries: 4, rejected: 1, skipped: 2, failures });
    expect(Buffer.from(out.output).toString()).toBe("a\n𝄞\n");
  });

  it("reads back a line result that fills its buffer exactly: the engine's byte output, packed into a buffer of its size", () => {
    const bytes = Buffer.from('{"handle":"h"}\n');
    const packed = packLineResult({ lines: 1, entries: 1, rejected: 0, skipped: 0, failures: [] }, [new Uint8Array(bytes)]);
    expect(packed.byteLength).toBe(6 * 4 + bytes.byteLength);
    const out = unpackLineResult(packed);
    expect(out).toMatchObject({ lines: 1, entries: 1, failures: [] });
    expect(Buffer.from(out.output).toString()).toBe('{"handle":"h"}\n');
  });

  it("rejects a line result whose header or sections overrun it instead of reading garbage", () => {
    expect(() => unpackLineResult(new ArrayBuffer(20))).toThrow("packed line result: 20 bytes is shorter than the header");
    const buffer = packLineResult({ lines: 1, entries: 0, rejected: 0, skipped: 0, failures: [] }, ["ab"]);
    new Uint32Array(buffer, 0, 6)[4] = 1000; // output bytes
    expect(() => unpackLineResult(buffer)).toThrow(`packed line result: sections of 1000 + 0 bytes overrun ${buffer.byteLength} bytes`);
  });
});

describe("scanBatch", () => {
  const pool = new ScanPool({ threads: 2 });
  afterAll(() => pool.close());

  it("on the calling thread: the entries of each item, in order, as extractArtifacts gives them", async () => {
    const items = corpus(40);
    const result = await scanBatch(items, { createdAt: CREATED_AT, poolThreshold: Infinity });
    expect(result.errors).toEqual([]);
    expect(result.entries).toEqual(expected(items));
    expect(result.entries.flat().length).toBeGreaterThan(60);
  });

  it.each([
    ["sharing slices with the calling thread", true],
    ["workers only", false],
  ])("on the pool (%s): the same entries in the same order as on the calling thread", async (_, callingThreadScans) => {
    const items = corpus(1500);
    const result = await scanBatch(items, { pool, createdAt: CREATED_AT, poolThreshold: 0, callingThreadScans });
    expect(result.errors).toEqual([]);
    expect(result.entries).toEqual(expected(items));
    // Key order too (toEqual ignores it): entries with a mime type serialize alike.
    expect(JSON.stringify(result.entries)).toBe(JSON.stringify(expected(items)));
  });

  it.each([
    ["on the calling thread", Infinity],
    ["on the pool", 0],
  ])("%s: reads LangChain's stored form ({type, data}, what chat history stores keep) as the message itself", async (_, poolThreshold) => {
    const tools = corpus(40);
    const live = new ToolMessage({ id: "m-stored", tool_call_id: "c-stored", name: "render", content: "wrote /mnt/user-data/stored.pdf", artifact: { structured_content: { job_id: "job-9" } } });
    const stored = { type: "tool", data: { content: live.content, tool_call_id: live.tool_call_id, name: live.name, id: live.id, artifact: live.artifact } };
    // Python's message_to_dict names a chunk by its class.
    const pythonChunk = { type: "ToolMessageChunk", data: { ...stored.data, type: "ToolMessageChunk" } };
    const items: BatchItem[] = [...tools, { threadId: "t", message: stored }, { threadId: "t", message: { type: "ai", data: { content: "/mnt/user-data/ai.csv" } } }, { threadId: "t", message: pythonChunk }];
    const result = await scanBatch(items, { pool, createdAt: CREATED_AT, poolThreshold });
    expect(result.errors).toEqual([]);
    expect(result.skipped).toEqual([41]);
    expect(result.entries[40]).toEqual(extractArtifacts(live, { threadId: "t", now }));
    expect(result.entries[42]).toEqual(result.entries[40]);
    expect(result.entries[40]!.map((e) => e.real_ref)).toEqual(["job-9", "/mnt/user-data/stored.pdf"]);
  });

  it("scans the items the array held when called: a caller that clears or refills it meanwhile loses none", async () => {
    const items = corpus(400);
    const want = expected(items);
    const batch = scanBatch(items, { pool, createdAt: CREATED_AT, poolThreshold: 0 });
    items.length = 0; // reused for the next batch
    items.push(...corpus(3));
    const result = await batch;
    expect(result.errors).toEqual([]);
    expect(result.entries).toEqual(want);
  });

  it("refuses a closed pool, and finishes a batch whose pool is closed under it here, blaming no worker", async () => {
    const items = corpus(600);
    const closed = new ScanPool({ threads: 2 });
    await closed.close();
    await expect(scanBatch(items, { pool: closed, poolThreshold: 0 })).rejects.toThrow("scanBatch: options.pool is closed");
    const closing = new ScanPool({ threads: 2 });
    const batch = scanBatch(items, { pool: closing, createdAt: CREATED_AT, poolThreshold: 0 });
    await closing.close();
    const result = await batch;
    expect(result.errors).toEqual([]);
    expect(result.entries).toEqual(expected(items));
  });

  it("finishes here a batch whose pool is closed under it even when the calling thread was to stay free, blaming no worker", async () => {
    const items = corpus(600);
    const closing = new ScanPool({ threads: 2 });
    const batch = scanBatch(items, { pool: closing, createdAt: CREATED_AT, poolThreshold: 0, callingThreadScans: false });
    await closing.close();
    const result = await batch;
    expect(result.errors).toEqual([]);
    expect(result.entries).toEqual(expected(items));
  });

  it.each([
    ["on the calling thread", Infinity],
    ["on the pool", 0],
  ])("%s: skips messages that are no tool result, as capture and the CLI do, and says which", async (_, poolThreshold) => {
    const tools = corpus(60);
    const others = [
      new AIMessage({ content: "I will read /mnt/user-data/ai.csv", id: "ai-1" }),
      new HumanMessage("see /mnt/user-data/human.csv"),
      JSON.parse(JSON.stringify(new AIMessage("serialized /mnt/user-data/s.csv"))),
      { role: "assistant", content: "/mnt/user-data/openai.csv" },
    ];
    const items: BatchItem[] = [...tools];
    others.forEach((message, k) => items.splice(7 + 13 * k, 0, { threadId: "t", message }));
    const otherAt = [7, 20, 33, 46];
    const result = await scanBatch(items, { pool, createdAt: CREATED_AT, poolThreshold });
    expect(result.skipped).toEqual(otherAt);
    expect(result.errors).toEqual([]);
    for (const i of otherAt) expect(result.entries[i]).toEqual([]);
    expect(result.entries.filter((_, i) => !otherAt.includes(i))).toEqual(expected(tools));
    // A message that says nothing of its kind is still taken as a tool result, as extractArtifacts takes it.
    const bare = await scanBatch([{ threadId: "t", message: { content: "/mnt/user-data/bare.csv" } }]);
    expect(bare.skipped).toEqual([]);
    expect(bare.entries[0]!.map((e) => e.real_ref)).toEqual(["/mnt/user-data/bare.csv"]);
  });

  it("skips the marked answer to a structured response, as capture does: in items and in archive lines of every shape, on each path", async () => {
    // What resolution leaves in the state for a toolStrategy response (test/middleware/structured-output.test.ts makes one in an agent).
    const answer = new ToolMessage({ id: "extract-1", tool_call_id: "call-s", name: "Report", content: "Returning structured response: {\"file\":\"/mnt/user-data/final.csv\"}", additional_kwargs: { [STRUCTURED_RESPONSE_MARK]: true } });
    const plain = { type: "tool", id: "extract-2", tool_call_id: "call-t", content: "see /mnt/user-data/plain.csv", additional_kwargs: { [STRUCTURED_RESPONSE_MARK]: true } };
    const stored = { type: "tool", data: { id: "extract-3", tool_call_id: "call-u", content: "see /mnt/user-data/stored.csv", additional_kwargs: { [STRUCTURED_RESPONSE_MARK]: true } } };
    // Beside each: a tool's result, and one whose mark is not `true` (read as usual).
    const result = { type: "tool", id: "r-1", tool_call_id: "call-r", content: "wrote /mnt/user-data/a.csv" };
    const unmarked = { ...plain, id: "r-2", tool_call_id: "call-v", additional_kwargs: { [STRUCTURED_RESPONSE_MARK]: "true" } };
    const messages = [answer, result, plain, stored, unmarked];
    for (const poolThreshold of [Infinity, 0]) {
      const batch = await scanBatch(
        messages.map((message) => ({ threadId: "t", message })),
        { pool, createdAt: CREATED_AT, poolThreshold },
      );
      expect(batch.skipped).toEqual([0, 2, 3]);
      expect(batch.entries.map((found) => found.map((e) => e.real_ref))).toEqual([[], ["/mnt/user-data/a.csv"], [], [], ["/mnt/user-data/plain.csv"]]);
    }
    // Lines: serialized (JSON.stringify of the instance), wrapped and flat; the
    // engine's pass and the TypeScript path give the same.
    const lines = [
      JSON.stringify({ thread_id: "t", message: answer }),
      JSON.stringify({ thread_id: "t", ...JSON.parse(JSON.stringify(answer)) }),
      JSON.stringify({ thread_id: "t", message: result }),
      JSON.stringify({ thread_id: "t", message: plain }),
      JSON.stringify({ thread_id: "t", ...plain }),
      JSON.stringify({ thread_id: "t", message: stored }),
      JSON.stringify({ thread_id: "t", message: unmarked }),
    ].join("\n") + "\n";
    const options = { format: "jsonl" as const, createdAt: CREATED_AT };
    for (const scan of [scanLinesPacked, scanLinesPackedJs]) {
      const archive = unpackLineResult(scan(new TextEncoder().encode(lines), options));
      const refs = Buffer.from(archive.output).toString("utf8").split("\n").filter(Boolean).map((line) => (JSON.parse(line) as ArtifactEntry).real_ref);
      expect(refs).toEqual(["/mnt/user-data/a.csv", "/mnt/user-data/plain.csv"]);
      expect(archive.skipped).toBe(5);
      expect(archive.failures).toEqual([]);
    }
    // Lines whose additional_kwargs hold something (and the stored form, as
    // ever) leave the engine's pass; a serialized result has them empty, and
    // the engine takes it.
    const ordinary = JSON.stringify({ thread_id: "t", message: new ToolMessage({ id: "r-3", tool_call_id: "call-w", content: "wrote /mnt/user-data/b.csv" }) }) + "\n";
    expect(ordinary).toContain('"additional_kwargs":{}');
    const stats = { engineLines: 0, jsLines: 0 };
    const taken = unpackLineResult(scanLinesPacked(new TextEncoder().encode(ordinary + lines), options, { stats }));
    expect(taken.entries).toBe(3);
    expect(stats).toEqual({ engineLines: 2, jsLines: 6 }); // the two results without marks, and the rest
  });

  it("tells a result from another kind of message as archive lines are told apart: the serialized class before its kwargs' type, a tool_call_id before a role", async () => {
    const messages = [
      { role: "assistant", tool_call_id: "c1", content: "/mnt/user-data/a.txt" },
      { role: "user", tool_call_id: "c2", content: "/mnt/user-data/b.txt" },
      { lc: 1, type: "constructor", id: ["langchain_core", "messages", "ToolMessage"], kwargs: { type: "ai", tool_call_id: "c3", content: "/mnt/user-data/c.txt" } },
      { lc: 1, type: "constructor", id: ["langchain_core", "messages", "AIMessage"], kwargs: { type: "tool", tool_call_id: "c4", content: "/mnt/user-data/d.txt" } },
      { role: "assistant", content: "/mnt/user-data/e.txt" },
    ];
    const lines = messages.map((message) => JSON.stringify({ thread_id: "t", message })).join("\n") + "\n";
    const options = { format: "jsonl" as const, createdAt: CREATED_AT };
    const archive = unpackLineResult(scanLinesPacked(new TextEncoder().encode(lines), options));
    const refs = (text: string) => text.split("\n").filter(Boolean).map((line) => (JSON.parse(line) as ArtifactEntry).real_ref);
    expect(refs(Buffer.from(archive.output).toString("utf8"))).toEqual(["/mnt/user-data/a.txt", "/mnt/user-data/b.txt", "/mnt/user-data/c.txt"]);
    expect(archive.skipped).toBe(2);
    for (const poolThreshold of [Infinity, 0]) {
      const result = await scanBatch(
        messages.map((message) => ({ threadId: "t", message })),
        { pool, createdAt: CREATED_AT, poolThreshold },
      );
      expect(result.skipped).toEqual([3, 4]);
      expect(result.entries.flat().map((e) => e.real_ref)).toEqual(["/mnt/user-data/a.txt", "/mnt/user-data/b.txt", "/mnt/user-data/c.txt"]);
    }
  });

  it("passes extraction options through to the workers", async () => {
    const items = corpus(200);
    const options = { detectRefsInText: false, createdAt: CREATED_AT };
    const onPool = await scanBatch(items, { ...options, pool, poolThreshold: 0 });
    expect(onPool.entries).toEqual(expected(items, false));
    expect(onPool.entries.flat().some((e) => e.real_ref.startsWith("/mnt/user-data/"))).toBe(false);
  });

  it.each([
    ["calling thread", Infinity],
    ["pool", 0],
  ])("fails bad items alone, with an error naming each (%s)", async (_, poolThreshold) => {
    const items: unknown[] = corpus(300);
    const cyclic: Record<string, unknown> = { type: "tool", tool_call_id: "cyc", content: "/mnt/user-data/cyclic.txt" };
    cyclic.self = cyclic;
    items[3] = { threadId: "", message: { tool_call_id: "c3" } };
    items[150] = null;
    items[151] = { threadId: "t", message: "not an object" };
    items[152] = { threadId: "t", callIndex: -1, message: { tool_call_id: "c152" } };
    items[153] = { threadId: "t", message: cyclic }; // not JSON: still scanned, like on the calling thread
    // Misspelt keys (archive lines spell thread_id so) are named, not dropped:
    // a dropped callIndex would give other handles. The host's own keys stay.
    items[154] = { thread_id: "t", message: { tool_call_id: "c154" } };
    items[155] = { threadId: "t", callindex: 7, message: { tool_call_id: "c155" } };
    items[156] = { threadId: "t", message: { tool_call_id: "c156", content: "/mnt/user-data/f156.txt" }, source: "archive 3", call_index: 2, callIndex: 2 };
    // Near callIndex, but no spelling of it: a host's own; a key set to undefined is none.
    items[157] = { threadId: "t", message: { tool_call_id: "c157", content: "/mnt/user-data/f157.txt" }, cellIndex: 4, col_index: 1, call_index_v2: 3, call_index: undefined };
    // tool_call_id spelt otherwise: every such result would share its handles (extractArtifacts refuses it too).
    items[158] = { threadId: "t", message: { toolCallId: "c158", content: "/mnt/user-data/f158.txt" } };
    const result = await scanBatch(items as BatchItem[], { pool, createdAt: CREATED_AT, poolThreshold });
    expect(result.errors.map((e) => e.index)).toEqual([3, 150, 151, 152, 154, 155, 158]);
    expect(result.errors[6].error).toMatch(/^item 158 \(thread "t"\): the message has "toolCallId"; did you mean tool_call_id\?$/);
    expect(result.errors[4].error).toMatch(/^item 154 \(tool call "c154"\): unknown key "thread_id"; did you mean threadId\?$/);
    expect(result.errors[5].error).toMatch(/^item 155 \(thread "t", tool call "c155"\): unknown key "callindex"; did you mean callIndex\?$/);
    expect(result.entries[156].map((e) => [e.real_ref, e.call_index])).toEqual([["/mnt/user-data/f156.txt", 2]]);
    expect(result.entries[157].map((e) => [e.real_ref, e.call_index])).toEqual([["/mnt/user-data/f157.txt", 0]]);
    expect(result.errors[0]).toMatchObject({ threadId: "", toolCallId: "c3" });
    expect(result.errors[0].error).toMatch(/^item 3 \(thread "", tool call "c3"\): threadId must be a non-empty string/);
    expect(result.errors[1].error).toMatch(/^item 150: an item must be an object/);
    expect(result.errors[3].error).toMatch(/callIndex must be a non-negative integer/);
    for (const i of [3, 150, 151, 152, 154, 155, 158]) expect(result.entries[i]).toEqual([]);
    expect(result.entries[153].map((e) => e.real_ref)).toEqual(["/mnt/user-data/cyclic.txt"]);
    const good = items.map((item, i) => ([3, 150, 151, 152, 153, 154, 155, 156, 157, 158].includes(i) ? undefined : (item as BatchItem)));
    good.forEach((item, i) => {
      if (item) expect(result.entries[i]).toEqual(expected([item])[0]);
    });
  });

  it.each([
    ["calling thread", Infinity],
    ["pool", 0],
  ])("names an item whose fields throw when read, and fails it alone (%s)", async (_, poolThreshold) => {
    const items: unknown[] = corpus(300);
    const { proxy: revoked, revoke } = Proxy.revocable({}, {});
    revoke();
    items[5] = {
      get threadId() {
        throw new Error("threadId getter");
      },
      message: {},
    };
    items[6] = revoked;
    items[7] = {
      threadId: "t",
      get message() {
        throw new Error("message getter");
      },
    };
    const result = await scanBatch(items as BatchItem[], { pool, createdAt: CREATED_AT, poolThreshold });
    expect(result.errors.map((e) => e.index)).toEqual([5, 6, 7]);
    expect(result.errors[0]).toMatchObject({ threadId: undefined, error: "item 5: threadId getter" });
    expect(result.errors[1]!.error).toMatch(/^item 6: .*revoked/);
    expect(result.errors[2]).toMatchObject({ threadId: "t", error: 'item 7 (thread "t"): message getter' });
    const good = items.map((item, i) => (i >= 5 && i <= 7 ? undefined : (item as BatchItem)));
    good.forEach((item, i) => {
      if (item) expect(result.entries[i]).toEqual(expected([item])[0]);
    });
  });

  it("on the pool reads a class instance or a value with toJSON as extraction reads it, by property", async () => {
    class Artifact {
      get structured_content() {
        return { path: "/mnt/user-data/getter.csv" };
      }
    }
    class FileBlock {
      readonly type = "file";
      readonly #url = "https://example.com/private.pdf";
      get url() {
        return this.#url;
      }
    }
    const messages = [
      { type: "tool", tool_call_id: "c1", content: "x", artifact: new Artifact() },
      { type: "tool", tool_call_id: "c2", content: "x", artifact: { structured_content: { path: "/mnt/user-data/a.csv" }, toJSON: () => ({}) } },
      { type: "tool", tool_call_id: "c3", content: [new FileBlock()] },
      { type: "tool", tool_call_id: "c4", content: [{ type: "file", url: "https://example.com/b.pdf", toJSON: () => ({ type: "text", text: "nothing" }) }] },
      { type: "tool", tool_call_id: "c5", content: [{ type: "image", source: Object.assign(Object.create({ get url() { return "https://example.com/c.png"; } }), {}) }] },
      // One level further in: an embedded resource, a block's metadata, an artifact item's source.
      { type: "tool", tool_call_id: "c6", content: "x", artifact: [{ type: "resource", resource: Object.create({ uri: "https://example.com/embedded.pdf", mimeType: "application/pdf" }) }] },
      { type: "tool", tool_call_id: "c7", content: [{ type: "file", source_type: "base64", data: "AAAA", metadata: Object.create({ uri: "https://example.com/meta.pdf" }) }] },
      { type: "tool", tool_call_id: "c8", content: "x", artifact: [{ type: "image", source: Object.create({ url: "https://example.com/d.png" }) }] },
    ];
    const entries = await onPoolAsExtracted(pool, messages);
    expect(entries.map((list) => list.map((e) => e.real_ref))).toEqual([
      ["/mnt/user-data/getter.csv"],
      ["/mnt/user-data/a.csv"],
      ["https://example.com/private.pdf"],
      ["https://example.com/b.pdf"],
      ["https://example.com/c.png"],
      ["https://example.com/embedded.pdf"],
      ["https://example.com/meta.pdf"],
      ["https://example.com/d.png"],
    ]);
  });

  it("on the pool reads values JSON would turn into strings, or skip, as extraction reads them", async () => {
    const hidden = (target: object, url: string) => Object.defineProperty(target, "url", { value: url, enumerable: false });
    const messages = [
      { type: "tool", tool_call_id: "c1", content: new URL("https://example.com/report.pdf") },
      { type: "tool", tool_call_id: "c2", content: new String("/mnt/user-data/boxed.txt") },
      { type: "tool", tool_call_id: "c3", content: [{ type: "image_url", image_url: { url: new URL("https://example.com/i.png") } }] },
      { type: "tool", tool_call_id: "c4", content: "done", artifact: [{ type: "resource", resource: { uri: new URL("https://example.com/r.txt") } }] },
      { type: "tool", tool_call_id: "c5", content: [{ type: "image", source: { url: "https://example.com/k.png", mime_type: new String("image/png") } }] },
      { type: "tool", tool_call_id: new String("c6"), content: "/mnt/user-data/d.txt" },
      { type: "tool", tool_call_id: "c7", status: new String("error"), content: "/mnt/user-data/f.txt" },
      { type: "tool", tool_call_id: "c8", content: [hidden({ type: "file" }, "https://example.com/hidden.pdf")] },
      { type: "tool", tool_call_id: "c9", content: [{ type: "image", source: hidden({}, "https://example.com/hidden.png") }] },
      { type: "tool", tool_call_id: "c10", content: new ToolMessage({ tool_call_id: "x", content: "/mnt/user-data/inner.txt" }) },
      // An array with named keys: JSON writes only its items, extraction reads it as a block.
      { type: "tool", tool_call_id: "c11", content: [Object.assign([], { type: "text", text: "see /mnt/user-data/named.txt" })] },
    ];
    const entries = await onPoolAsExtracted(pool, messages);
    expect(entries.map((list) => list.map((e) => e.real_ref))).toEqual([
      [],
      [],
      [],
      [],
      ["https://example.com/k.png"],
      ["/mnt/user-data/d.txt"],
      ["/mnt/user-data/f.txt"],
      ["https://example.com/hidden.pdf"],
      ["https://example.com/hidden.png"],
      [],
      ["/mnt/user-data/named.txt"],
    ]);
    expect(entries[4][0].mime_type).toBeUndefined();
    expect(entries[5][0].tool_call_id).toBe("");
  });

  it("scans here, not on a worker, an item whose data no worker should get: not plain, or too many values", async () => {
    // The worker fails every item of thread "here": an item scanned here does not.
    const failing = new ScanPool({ threads: 1, faults: { failOnThreadId: "here" } });
    try {
      const many = Array.from({ length: 5000 }, (_, i) => ({ i }));
      const items: BatchItem[] = [
        { threadId: "here", message: { tool_call_id: "c0", content: new Uint8Array(1 << 20) } },
        { threadId: "here", message: { tool_call_id: "c1", content: "/mnt/user-data/a.txt", artifact: { image: { bytes: Buffer.alloc(1 << 20) } } } },
        { threadId: "here", message: { tool_call_id: "c2", content: "/mnt/user-data/b.txt", artifact: { structured_content: { rows: many } } } },
        { threadId: "here", message: { tool_call_id: "c3", content: "/mnt/user-data/c.txt" } },
        { threadId: "here", message: { tool_call_id: "c4", content: "/mnt/user-data/d.txt", artifact: { structured_content: { rows: many.slice(0, 1000) } } } },
        // Python's message_to_dict writes null for an absent id or name: still plain.
        { threadId: "here", message: { type: "tool", id: null, name: null, tool_call_id: "c5", content: "/mnt/user-data/e.txt" } },
        // Values, not only objects, count: a million numbers are never listed for a worker.
        { threadId: "here", message: { tool_call_id: "c6", content: "/mnt/user-data/f.txt", artifact: { embedding: new Array<number>(1_000_000).fill(0.5) } } },
      ];
      const result = await scanBatch(items, { pool: failing, createdAt: CREATED_AT, poolThreshold: 0, callingThreadScans: false });
      // Plain items within the bound went to the worker (and failed there).
      expect(result.errors.map((e) => e.index)).toEqual([3, 4, 5]);
      expect(result.entries.slice(0, 3)).toEqual(expected(items.slice(0, 3)));
      expect(result.entries[6]).toEqual(expected([items[6]!])[0]);
      expect(result.entries[1].map((e) => e.real_ref)).toEqual(["/mnt/user-data/a.txt"]);
    } finally {
      await failing.close();
    }
  });

  it.each([
    ["calling thread", Infinity],
    ["pool", 0],
  ])("reads a message field whose getter throws as not given, and callIndex null as none and -0 as 0, as extractArtifacts does (%s)", async (_, poolThreshold) => {
    const message = {
      type: "tool",
      tool_call_id: "g",
      content: "/mnt/user-data/g.txt",
      get artifact(): unknown {
        throw new Error("artifact getter");
      },
    };
    const items = [
      { threadId: "t", message },
      { threadId: "t", callIndex: null, message: { tool_call_id: "n", content: "/mnt/user-data/n.txt" } },
      { threadId: "t", callIndex: -0, message: { tool_call_id: "z", content: "/mnt/user-data/z.txt" } },
    ] as unknown as BatchItem[];
    const result = await scanBatch(items, { pool, createdAt: CREATED_AT, poolThreshold });
    expect(result.errors).toEqual([]);
    expect(result.entries).toEqual(expected(items));
    expect(result.entries.map((entries) => entries.map((e) => [e.real_ref, e.call_index]))).toEqual([
      [["/mnt/user-data/g.txt", 0]],
      [["/mnt/user-data/n.txt", 0]],
      [["/mnt/user-data/z.txt", 0]],
    ]);
    expect(Object.is(result.entries[2][0].call_index, 0)).toBe(true);
  });

  it("refuses a poolThreshold or callingThreadScans of another type, naming it", async () => {
    await expect(scanBatch([], { poolThreshold: "10" as unknown as number })).rejects.toThrow('scanBatch: options.poolThreshold must be a non-negative integer or Infinity (got "10")');
    await expect(scanBatch([], { poolThreshold: NaN })).rejects.toThrow("options.poolThreshold must be a non-negative integer or Infinity (got number NaN)");
    await expect(scanBatch([], { poolThreshold: -1 })).rejects.toThrow("(got number -1)");
    await expect(scanBatch([], { callingThreadScans: "false" as unknown as boolean })).rejects.toThrow('scanBatch: options.callingThreadScans must be a boolean (got "false")');
    expect((await scanBatch([], { poolThreshold: Infinity, callingThreadScans: false })).entries).toEqual([]);
  });

  it("moves buffers both ways: the sender's are detached, the worker's come back with the result", async () => {
    const records: string[] = [];
    writeItem(normalizeItem({ threadId: "t", message: { tool_call_id: "c", content: "/mnt/user-data/a.txt" } }), records);
    const input = packRecords(records);
    const spare = new ArrayBuffer(1 << 16);
    const inputBytes = input.byteLength;
    const { output, free } = await pool.run({ kind: "records", input, spare, options: { createdAt: CREATED_AT } });
    expect([input.byteLength, spare.byteLength]).toEqual([0, 0]);
    // The result was written into the spare; the input buffer came back for reuse.
    expect(output.byteLength).toBe(1 << 16);
    expect(free.map((b) => b.byteLength)).toEqual([inputBytes]);
    expect(decodeEntries(unpackRecords(output)[0])).toMatchObject([{ real_ref: "/mnt/user-data/a.txt", created_at: CREATED_AT }]);
  });

  it("close() lets a running task finish and fails a queued one at once, moving nothing", async () => {
    const held = heldWorker("hold");
    const closing = new ScanPool({ threads: 1, faults: { hold: held.fault } });
    const task = (threadId: string) => recordsTask([{ threadId, message: { tool_call_id: "c", content: `/mnt/user-data/${threadId}.txt` } }]);
    try {
      const running = closing.run(task("hold"));
      await until(held.holding);
      const waiting = task("t");
      const queued = closing.run(waiting);
      await new Promise((resume) => setImmediate(resume)); // it is in Piscina's queue by then
      let exits = 0;
      for (const worker of closing.workers) worker.once("exit", () => exits++);
      const closed = closing.close().then(() => exits);
      await expect(queued).rejects.toThrow("ScanPool: the pool was closed before a worker took this task");
      expect(waiting.input.byteLength).toBeGreaterThan(0);
      held.release();
      const { output } = await running;
      expect(decodeEntries(unpackRecords(output)[0])).toMatchObject([{ real_ref: "/mnt/user-data/hold.txt" }]);
      expect(await closed).toBe(1); // settled once its worker had exited
      expect(closing.workers).toHaveLength(0);
    } finally {
      held.release();
      await closing.close();
    }
  });

  it("on the lines path too, writes the result into the spare it was sent, and sends back a spare too small to use", async () => {
    const bytes = Buffer.from(JSON.stringify({ thread_id: "t", message: { type: "tool", tool_call_id: "c", content: "/mnt/user-data/a.txt" } }) + "\n");
    const task = (spare: ArrayBuffer): ScanTask => {
      const input = new ArrayBuffer(bytes.length);
      new Uint8Array(input).set(bytes);
      return { kind: "lines", input, inputBytes: bytes.length, spare, options: { format: "jsonl", createdAt: CREATED_AT } };
    };
    const big = await pool.run(task(new ArrayBuffer(1 << 16)));
    expect(big.output.byteLength).toBe(1 << 16);
    expect(big.free.map((b) => b.byteLength)).toEqual([bytes.length]);
    const small = await pool.run(task(new ArrayBuffer(8)));
    expect(small.free.map((b) => b.byteLength)).toEqual([bytes.length, 8]);
  });

  it("close() lets every running task finish, not only the first to end", async () => {
    // Piscina's own close stopped every worker once the first task after it ended.
    const held = heldWorker("hold");
    const closing = new ScanPool({ threads: 2, idleTimeoutMs: 60_000, faults: { hold: held.fault } });
    try {
      const running = closing.run(recordsTask([{ threadId: "hold", message: { tool_call_id: "h", content: "/mnt/user-data/held.txt" } }]));
      await until(held.holding);
      await closing.workerStarted(); // a second worker, which ran it: started and idle
      expect(closing.workers).toHaveLength(2);
      const items = corpus(300);
      const other = closing.run(recordsTask(items, CREATED_AT));
      await new Promise((resume) => setImmediate(resume)); // the other worker has it by then
      const closed = closing.close();
      const { output } = await other;
      expect(unpackRecords(output).map(decodeEntries)).toEqual(expected(items));
      await new Promise((resume) => setTimeout(resume, 50)); // room for a wrong stop to land
      held.release();
      const result = await running;
      expect(decodeEntries(unpackRecords(result.output)[0])).toMatchObject([{ real_ref: "/mnt/user-data/held.txt" }]);
      await closed;
    } finally {
      held.release();
      await closing.close();
    }
  });

  it("the worker hands its result's buffers over to be moved, not copied", async () => {
    const { transferableSymbol, valueSymbol } = await import("piscina");
    const handle = await (await import("../src/batch/worker.js")).default;
    const records: string[] = [];
    writeItem(normalizeItem({ threadId: "t", message: { tool_call_id: "c", content: "/mnt/user-data/a.txt" } }), records);
    const moved = handle({ kind: "records", input: packRecords(records), spare: new ArrayBuffer(1 << 16), options: { createdAt: CREATED_AT } }) as unknown as Record<symbol, unknown>;
    const { output, free } = moved[valueSymbol] as { output: ArrayBuffer; free: ArrayBuffer[] };
    const transferred = moved[transferableSymbol] as ArrayBuffer[];
    expect(transferred).toHaveLength(1 + free.length);
    expect([output, ...free].every((b, i) => transferred[i] === b)).toBe(true);
  });

  it("a worker dying mid-batch fails only its slice, loses and duplicates nothing, and the pool keeps serving", async () => {
    const crashing = new ScanPool({ threads: 2, faults: { exitOnThreadId: "crash" } });
    try {
      const items = corpus(800);
      items[421] = { threadId: "crash", message: { tool_call_id: "boom", content: "x" } };
      // Every slice on a worker: the crash must happen there, not on this thread.
      const result = await scanBatch(items, { pool: crashing, createdAt: CREATED_AT, poolThreshold: 0, callingThreadScans: false });
      const failed = partition(result, items.length);
      // One slice (contiguous, containing item 421) failed; every other item was scanned.
      const indexes = [...failed].sort((a, b) => a - b);
      expect(indexes).toContain(421);
      expect(indexes.length).toBeLessThan(items.length / 2);
      expect(indexes[indexes.length - 1] - indexes[0]).toBe(indexes.length - 1);
      for (const e of result.errors) {
        expect(e.error).toMatch(new RegExp(`^item ${e.index} .*not scanned, the worker scanning items ${indexes[0]}\\.\\.${indexes[indexes.length - 1]} failed \\(.*exited with code: 70\\)`));
      }
      const want = expected(items);
      items.forEach((_, i) => {
        if (!failed.has(i)) expect(result.entries[i]).toEqual(want[i]);
      });

      const again = corpus(600);
      const next = await scanBatch(again, { pool: crashing, createdAt: CREATED_AT, poolThreshold: 0 });
      expect(next.errors).toEqual([]);
      expect(next.entries).toEqual(expected(again));
    } finally {
      await crashing.close();
    }
  });

  it("reports errors by ascending index, whichever thread failed first", async () => {
    // Slice 0 goes to a worker that dies on it, while the calling thread scans a later slice with a bad item.
    const crashing = new ScanPool({ threads: 1, faults: { exitOnThreadId: "crash" } });
    try {
      const items: unknown[] = corpus(64);
      items[0] = { threadId: "crash", message: { tool_call_id: "c0", content: "/mnt/user-data/x.txt" } };
      items[60] = null;
      const result = await scanBatch(items as BatchItem[], { pool: crashing, poolThreshold: 0, createdAt: CREATED_AT });
      const order = result.errors.map((e) => e.index);
      expect(order).toContain(0);
      expect(order).toContain(60);
      expect(order).toEqual([...order].sort((a, b) => a - b));
    } finally {
      await crashing.close();
    }
  });

  it("an item that fails in a worker fails alone, named, and the worker goes on with its slice", async () => {
    const failing = new ScanPool({ threads: 2, faults: { failOnThreadId: "fail" } });
    try {
      const items = corpus(200);
      for (const i of [3, 150]) items[i] = { threadId: "fail", message: { tool_call_id: `f${i}`, content: "/mnt/user-data/x.txt" } };
      const result = await scanBatch(items, { pool: failing, createdAt: CREATED_AT, poolThreshold: 0, callingThreadScans: false });
      expect(result.errors).toEqual([3, 150].map((index) => ({ index, threadId: "fail", toolCallId: `f${index}`, error: `item ${index} (thread "fail", tool call "f${index}"): injected item failure` })));
      const want = expected(items);
      items.forEach((_, i) => expect(result.entries[i]).toEqual(i === 3 || i === 150 ? [] : want[i]));
      expect(failing.workers.length).toBeGreaterThan(0);
    } finally {
      await failing.close();
    }
  });

  it("starts no new worker after a crash when no task waits for one", async () => {
    const crashing = new ScanPool({ threads: 1, faults: { exitOnThreadId: "crash" } });
    try {
      const items = [{ threadId: "crash", message: { tool_call_id: "c0", content: "/mnt/user-data/x.txt" } }];
      const result = await scanBatch(items, { pool: crashing, poolThreshold: 0, callingThreadScans: false });
      expect(result.errors.map((e) => e.index)).toEqual([0]);
      // A replacement is started (synchronously, by Piscina's run) only for queued tasks.
      expect(crashing.workers).toHaveLength(0);
    } finally {
      await crashing.close();
    }
  });

  it("uses the pool from POOL_THRESHOLD items, not below", async () => {
    // A pool that cannot start, with the calling thread kept free: each item sent to it fails.
    const broken = new ScanPool({ threads: 1, faults: { failStartup: true } });
    try {
      const below = await scanBatch(corpus(POOL_THRESHOLD - 1), { pool: broken, callingThreadScans: false, createdAt: CREATED_AT });
      expect(below.errors).toEqual([]);
      const at = await scanBatch(corpus(POOL_THRESHOLD), { pool: broken, callingThreadScans: false, createdAt: CREATED_AT });
      expect(at.errors).toHaveLength(POOL_THRESHOLD);
    } finally {
      await broken.close();
    }
  });

  it("scans on the calling thread when no worker can start, as the CLI does, losing no item", async () => {
    const broken = new ScanPool({ threads: 2, faults: { failStartup: true } });
    try {
      const items = corpus(100);
      const result = await scanBatch(items, { pool: broken, poolThreshold: 0, createdAt: CREATED_AT });
      expect(result.errors).toEqual([]);
      expect(result.entries).toEqual(expected(items));
    } finally {
      await broken.close();
    }
  });

  it("serves again once a worker can start, after one could not", async () => {
    // Workers fail to start while the flag is set: a start failure that passes (out of memory for a moment, say).
    const failing = new Int32Array(new SharedArrayBuffer(4)).fill(1);
    const pool = new ScanPool({ threads: 1, faults: { failStartup: failing } });
    try {
      await expect(pool.workerStarted()).rejects.toThrow(WorkerStartError);
      Atomics.store(failing, 0, 0);
      await expect(pool.workerStarted()).resolves.toBeUndefined();
      const items = corpus(40);
      const result = await scanBatch(items, { pool, poolThreshold: 0, callingThreadScans: false, createdAt: CREATED_AT });
      expect(result.errors).toEqual([]);
      expect(result.entries).toEqual(expected(items));
    } finally {
      await pool.close();
    }
  });

  it("keeps a running worker's task when another worker cannot start; a queued task is scanned, or fails as in a crash if that worker took it", async () => {
    const failing = new Int32Array(new SharedArrayBuffer(4));
    const held = heldWorker("hold");
    const pool = new ScanPool({ threads: 2, faults: { failStartup: failing, hold: held.fault } });
    try {
      // One item, one slice: one worker starts, before start-ups fail.
      const first = [{ threadId: "hold", message: { tool_call_id: "h0", content: "/mnt/user-data/held.txt" } }];
      const running = scanBatch(first, { pool, poolThreshold: 0, callingThreadScans: false, createdAt: CREATED_AT });
      await until(held.holding);
      expect(pool.workers).toHaveLength(1);
      Atomics.store(failing, 0, 1);
      const items = corpus(60);
      const queued = scanBatch(items, { pool, poolThreshold: 0, callingThreadScans: false, createdAt: CREATED_AT });
      await until(() => pool.workers.length === 2); // the second worker starting...
      await until(() => pool.workers.length === 1); // ...and failing while the first is busy
      held.release();
      const kept = await running;
      expect(kept.errors).toEqual([]);
      expect(kept.entries).toEqual(expected(first));
      const rest = await queued;
      const failed = new Set(rest.errors.map((e) => e.index));
      for (const e of rest.errors) expect(e.error).toMatch(/not scanned, the worker scanning items \d+\.\.\d+ failed/);
      const want = expected(items);
      items.forEach((_, i) => expect(rest.entries[i]).toEqual(failed.has(i) ? [] : want[i]));
      expect(failed.size).toBeLessThan(items.length);
    } finally {
      held.release();
      await pool.close();
    }
  });

  it("fails the batch's items with a clear error when no worker can start and the calling thread is to stay free, instead of waiting forever", async () => {
    const broken = new ScanPool({ threads: 2, faults: { failStartup: true } });
    try {
      for (let round = 0; round < 2; round++) {
        const result = await scanBatch(corpus(100), { pool: broken, poolThreshold: 0, callingThreadScans: false });
        expect(partition(result, 100).size).toBe(100);
        expect(result.errors[0].error).toMatch(/^item 0 .*not scanned, .*failed \(scan worker could not start: /);
      }
    } finally {
      await broken.close();
    }
  });
});

describe("buffer pool", () => {
  it("reuses buffers, but holds at most 64 MiB of idle ones, keeping the larger", () => {
    const MiB = 1 << 20;
    const buffers = new BufferPool();
    const big = Array.from({ length: 8 }, () => new ArrayBuffer(25 * MiB));
    for (const b of big) buffers.give(b);
    expect(buffers.idleBytes).toBe(50 * MiB); // two of eight
    const kept = [buffers.take(20 * MiB), buffers.take(20 * MiB)];
    expect(kept.every((b) => big.includes(b))).toBe(true); // reused, not new

    // Room is made by letting smaller ones go, smallest first, only if that is enough.
    const [five, ten, twenty, fifty] = [5, 10, 20, 50].map((n) => new ArrayBuffer(n * MiB));
    for (const b of [five, fifty]) buffers.give(b);
    expect(buffers.idleBytes).toBe(55 * MiB);
    buffers.give(twenty); // letting 5 go would not make room: 20 goes, 5 stays
    expect(buffers.idleBytes).toBe(55 * MiB);
    buffers.give(ten); // letting 5 go does
    expect(buffers.idleBytes).toBe(60 * MiB);
    expect(buffers.take(6 * MiB)).toBe(ten);
    expect(buffers.take(6 * MiB)).toBe(fifty);
    expect(buffers.take(MiB)).not.toBe(five);
    buffers.give(new ArrayBuffer(64 * MiB + 1)); // larger than the whole budget: left to the GC
    expect(buffers.idleBytes).toBe(0);
  });

  it("holds at most 16 idle buffers, keeping the larger", () => {
    const buffers = new BufferPool();
    const sizes = Array.from({ length: 20 }, (_, i) => (i + 1) * 1024);
    for (const n of sizes) buffers.give(new ArrayBuffer(n));
    expect(buffers.idleBytes).toBe(sizes.slice(4).reduce((a, b) => a + b, 0));
  });

  it("lets its idle buffers go when the pool closes", async () => {
    const pool = new ScanPool({ threads: 1 });
    try {
      const items = corpus(200);
      expect((await scanBatch(items, { pool, createdAt: CREATED_AT, poolThreshold: 0 })).entries).toEqual(expected(items));
      expect(pool.buffers.idleBytes).toBeGreaterThan(0);
    } finally {
      await pool.close();
    }
    expect(pool.buffers.idleBytes).toBe(0);
  });
});

describe("process lifetime", () => {
  /**
   * Run a module script in a child process; it must end by itself. It runs
   * the TypeScript sources with their loader, or (`built`) the built package,
   * whose workers start without a loader; `nodeArgs` go before the script.
   * `timeout` only guards against a hang: a busy machine may take long over 24 worker starts.
   */
  function child(body: string, timeout = 30_000, { built = false, nodeArgs = [] as string[], env = process.env } = {}) {
    const script = `
      import { closeSharedPool, scanBatch, ScanPool } from ${JSON.stringify(ROOT + (built ? "dist/index.js" : "src/batch/index.ts"))};
      const items = Array.from({ length: 300 }, (_, i) => ({ threadId: "t", message: { tool_call_id: "c" + i, content: "/mnt/user-data/f" + i + ".txt" } }));
      ${body}`;
    const loader = built ? [] : ["--import", "tsx"];
    return spawnSync(process.execPath, [...nodeArgs, ...loader, "--input-type=module", "-e", script], { cwd: ROOT, encoding: "utf8", timeout, env });
  }

  /** Child script lines that make the child report `cores` cores (Node's documented way to change a builtin's ES exports). */
  const reportCores = (cores: number) => `
      const os = await import("node:os");
      const { syncBuiltinESMExports } = await import("node:module");
      os.default.availableParallelism = () => ${cores};
      syncBuiltinESMExports();`;

  describe("under Node's permission model without --allow-worker", () => {
    // These run the built package (npm test builds it first): see underPermission.

    it("scanBatch with a pool scans every item on the calling thread, or fails each naming the flag, and the process ends cleanly", () => {
      const script = `
        import { scanBatch, ScanPool } from ${JSON.stringify(ROOT + "dist/index.js")};
        const items = Array.from({ length: 200 }, (_, i) => ({ threadId: "t", message: { id: "m" + i, tool_call_id: "c" + i, content: "/mnt/user-data/f" + i + ".txt" } }));
        const pool = new ScanPool({ threads: 2 });
        const shared = await scanBatch(items, { pool, poolThreshold: 0 });
        const alone = await scanBatch(items, { pool, poolThreshold: 0, callingThreadScans: false });
        await pool.close();
        console.log(JSON.stringify({ refs: shared.entries.map((e) => e.map((x) => x.real_ref)), errors: shared.errors.length, alone: alone.errors.map((e) => e.error) }));`;
      const r = underPermission(["--input-type=module", "-e", script]);
      // Before, the pool's tasks waited for a worker Node refused, a quarter of the items failed, and close() left
      // promises of Piscina's rejected with nobody to catch them: the process died with status 1.
      expect(r.stderr).not.toMatch(/AbortError/);
      expect(r.status).toBe(0);
      const out = JSON.parse(r.stdout) as { refs: string[][]; errors: number; alone: string[] };
      expect(out.refs).toEqual(Array.from({ length: 200 }, (_, i) => [`/mnt/user-data/f${i}.txt`]));
      expect(out.errors).toBe(0);
      expect(out.alone).toHaveLength(200);
      for (const error of out.alone) expect(error).toMatch(/permission model does not allow worker threads \(run node with --allow-worker\)/);
    });

    // --threads is capped at the machine's cores: on one, no pool is made.
    it.skipIf(availableParallelism() < 2)("the CLI says once that it scans on this thread alone, writes every entry and exits 0", () => {
      const dir = mkdtempSync(join(tmpdir(), "ta-permission-"));
      try {
        // Over four 1 MiB chunks: the CLI asks for its worker before it reads.
        const line = (i: number) => JSON.stringify({ thread_id: "t", message: { type: "tool", id: `m${i}`, tool_call_id: `c${i}`, content: `/mnt/user-data/f${i}.txt ${"x".repeat(200)}` } });
        const lines = Array.from({ length: 24_000 }, (_, i) => line(i));
        writeFileSync(join(dir, "a.jsonl"), lines.join("\n") + "\n");
        const r = underPermission([join(ROOT, "dist/cli.js"), "scan", join(dir, "a.jsonl"), "--threads", "2", "--stats"]);
        expect(r.stderr).not.toMatch(/AbortError/);
        expect(r.status).toBe(0);
        expect(r.stderr.match(/permission model does not allow worker threads \(run node with --allow-worker\); scanning on this thread alone/g)).toHaveLength(1);
        const refs = r.stdout.trim().split("\n").map((l) => (JSON.parse(l) as { real_ref: string }).real_ref);
        expect(refs).toEqual(lines.map((_, i) => `/mnt/user-data/f${i}.txt`));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  it("close() stops every worker thread; the process then exits by itself", () => {
    const r = child(`
      const pool = new ScanPool({ threads: 2 });
      const result = await scanBatch(items, { pool, poolThreshold: 0 });
      const workers = [...pool.workers];
      let exits = 0;
      const exited = Promise.all(workers.map((w) => new Promise((done) => w.once("exit", done)).then(() => exits++)));
      await pool.close();
      const exitedByClose = exits;
      const stopped = await Promise.race([exited.then(() => true), new Promise((done) => setTimeout(done, 10_000, false).unref())]);
      console.log(JSON.stringify({ entries: result.entries.flat().length, workers: workers.length, exitedByClose, stopped, left: pool.workers.length }));`);
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
    // close() settles once its workers have exited, not merely been told to.
    expect(JSON.parse(r.stdout)).toEqual({ entries: 300, workers: 2, exitedByClose: 2, stopped: true, left: 0 });
  });

  /** Child script lines: a worker kept busy on the thread "hold" (test/support/pool.ts), and polling for worker state. */
  const held = `
      const { heldWorker, recordsTask } = await import(${JSON.stringify(ROOT + "test/support/pool.ts")});
      const { fault, release } = heldWorker("hold");
      const hold = fault.flag;
      const until = async (done) => { while (!done()) await new Promise((resume) => setTimeout(resume, 5)); };
      const heldItem = { threadId: "hold", message: { tool_call_id: "h", content: "/mnt/user-data/held.txt" } };`;

  it("close() while tasks wait for a busy worker, another having failed to start, ends once the running task is done", () => {
    // Piscina's own close would hand the waiting tasks out again and again, trying to start a worker for them while closing: a loop that never yields.
    const r = child(`${held}
      const failing = new Int32Array(new SharedArrayBuffer(4));
      const pool = new ScanPool({ threads: 2, faults: { failStartup: failing, hold: { threadId: "hold", flag: hold } } });
      const first = scanBatch([heldItem], { pool, poolThreshold: 0, callingThreadScans: false });
      await until(() => Atomics.load(hold, 1) === 1);
      Atomics.store(failing, 0, 1);
      const queued = scanBatch(items, { pool, poolThreshold: 0, callingThreadScans: false });
      await until(() => pool.workers.length === 2);
      await until(() => pool.workers.length === 1);
      const closing = pool.close();
      release();
      const [a, b] = await Promise.all([first, queued]);
      await closing;
      console.log(JSON.stringify({ entries: a.entries.flat().length + b.entries.flat().length, errors: a.errors.length + b.errors.length, left: pool.workers.length }));`);
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
    // The waiting slices fail on the pool; a closed pool's items are scanned on the calling thread.
    expect(JSON.parse(r.stdout)).toEqual({ entries: 301, errors: 0, left: 0 });
  });

  it("close() while a running task's worker dies settles once it has died, not at Piscina's 30 s close timeout", () => {
    // That timeout's timer does not hold the process: with nothing else to do, it would end with close() never settled.
    const r = child(`${held}
      const limit = () => process.stdout.getMaxListeners();
      const before = limit();
      const pool = new ScanPool({ threads: 2, idleTimeoutMs: 60_000, faults: { exitOnThreadId: "crash", hold: { threadId: "hold", flag: hold } } });
      await Promise.all([pool.workerStarted(), pool.workerStarted()]);
      const crash = { threadId: "crash", message: { tool_call_id: "x", content: "/mnt/user-data/crash.txt" } };
      // One worker waits on its task, then dies on it; the other is idle.
      const running = pool.run(recordsTask([heldItem, crash])).then(() => "scanned", (err) => err.message);
      await until(() => Atomics.load(hold, 1) === 1);
      const workers = pool.workers.length;
      const closing = pool.close();
      release();
      const outcome = await running;
      await closing;
      console.log(JSON.stringify({ workers, outcome, left: pool.workers.length, restored: limit() === before }));`);
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ workers: 2, outcome: "worker exited with code: 70", left: 0, restored: true });
  });

  it("the default (shared) pool: large batches scanned, closeSharedPool() ends it, the process exits", () => {
    // The shared pool is used from MIN_CORES_FOR_SHARED_POOL cores: the child
    // reports four, so the shared pool is made here too, and every pool's tasks are counted.
    const r = child(`${reportCores(4)}
      const pools = new Map();
      const run = ScanPool.prototype.run;
      ScanPool.prototype.run = function (task) {
        pools.set(this, (pools.get(this) ?? 0) + 1);
        return run.call(this, task);
      };
      const result = await scanBatch(items);
      const [[pool, tasks]] = [...pools];
      const workers = pool.workers.length;
      await closeSharedPool();
      await closeSharedPool(); // closing twice is harmless
      console.log(JSON.stringify({ entries: result.entries.flat().length, errors: result.errors.length, pools: pools.size, threads: pool.threads, tasks: tasks > 0, workers: workers > 0, closed: pool.closed, left: pool.workers.length }));`);
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ entries: 300, errors: 0, pools: 1, threads: 4, tasks: true, workers: true, closed: true, left: 0 });
  });

  it("a pool nobody closes does not hold the process, however long its idle timeout", () => {
    const r = child(`
      const pool = new ScanPool({ threads: 2, idleTimeoutMs: 3_600_000 });
      const result = await scanBatch(items, { pool, poolThreshold: 0 });
      console.log(result.entries.flat().length, pool.workers.length);`);
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe("300 2");
  });

  it("a pool of more than ten workers, or with many tasks queued, makes Node warn of no leak", () => {
    const r = child(`
      const pool = new ScanPool({ threads: 12 });
      const limits = () => [process.stdout.getMaxListeners(), process.stderr.getMaxListeners()];
      const before = limits();
      const result = await scanBatch(items, { pool, poolThreshold: 0, callingThreadScans: false });
      await Promise.all(Array.from({ length: 24 }, () => pool.workerStarted()));
      const workers = pool.workers.length;
      await pool.close();
      console.log(JSON.stringify({ entries: result.entries.flat().length, many: workers > 10, restored: limits().join() === before.join() }));`);
    expect(r.status).toBe(0);
    expect(r.stderr).not.toMatch(/MaxListenersExceededWarning/);
    expect(JSON.parse(r.stdout)).toEqual({ entries: 300, many: true, restored: true });
  });

  it("a pool nobody closes raises the stdout/stderr listener limit only while it has workers", () => {
    const r = child(`
      const limit = () => process.stdout.getMaxListeners() + "/" + process.stderr.getMaxListeners();
      const before = limit();
      const seen = [];
      const pause = () => new Promise((done) => setTimeout(done, 20));
      // Each pool's batch holds one of its workers at an item (the hold
      // fault, test/support/pool.ts) until every pool has one held, so all
      // five have workers when the limit is read, however slow the machine.
      const { heldWorker } = await import(${JSON.stringify(ROOT + "test/support/pool.ts")});
      const holds = Array.from({ length: 5 }, () => heldWorker("hold"));
      const pools = holds.map(({ fault }) => new ScanPool({ threads: 2, idleTimeoutMs: 50, faults: { hold: fault } }));
      const held = [...items, { threadId: "hold", message: { tool_call_id: "h", content: "/mnt/user-data/h.txt" } }];
      const batches = pools.map((pool) => scanBatch(held, { pool, poolThreshold: 0, callingThreadScans: false }));
      const heldBy = Date.now() + 30000; // bounded, so that a hold never reached fails with what was seen
      while (holds.some((hold) => !hold.holding()) && Date.now() < heldBy) await pause();
      seen.push(limit());
      for (const hold of holds) hold.release();
      await Promise.all(batches);
      // The limit drops once the workers have exited, which a busy machine
      // can delay: wait for that, up to 15 s (the child is killed at 60 s,
      // and a failure should show the limits it saw).
      const deadline = Date.now() + 15000;
      for (const pool of pools) while (pool.workers.length > 0 && Date.now() < deadline) await pause();
      while (limit() !== before && Date.now() < deadline) await pause();
      seen.push(limit());
      await scanBatch(items, { pool: pools[0], poolThreshold: 0 }); // its workers start again
      seen.push(limit());
      await pools[0].close();
      seen.push(limit());
      console.log(JSON.stringify({ before, seen }));`, 60_000); // ten workers on two cores: slow when the machine is busy
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ before: "10/10", seen: ["20/20", "10/10", "12/12", "10/10"] });
  });

  it("leaves a host's unlimited stdout/stderr listener limit unlimited", () => {
    const r = child(`
      process.stdout.setMaxListeners(0);
      process.stderr.setMaxListeners(0);
      const limit = () => process.stdout.getMaxListeners() + "/" + process.stderr.getMaxListeners();
      const pool = new ScanPool({ threads: 2 });
      await scanBatch(items, { pool, poolThreshold: 0 });
      const during = limit();
      await pool.close();
      console.log(JSON.stringify({ during, after: limit() }));`);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ during: "0/0", after: "0/0" });
  });

  it("lowers the listener limit only once its workers have exited, never below 1, and takes no task once closed", () => {
    // Eleven workers are the fewest whose pipe listeners outnumber Node's
    // default limit of 10; six take a host's 5 below 0, where an unguarded
    // setMaxListeners throws (five would make it 0: unlimited).
    const r = child(`
      const baseline = process.stdout.listenerCount("error");
      const pool = new ScanPool({ threads: 11, idleTimeoutMs: 50 });
      await Promise.all(Array.from({ length: 22 }, () => pool.workerStarted()));
      const raised = process.stdout.getMaxListeners();
      // Sampled every millisecond until the limit is back (a timer, not a
      // spin, leaves the CPU to the exiting workers): their pipe listeners
      // never outnumber it. Given up after 30 s, so that a limit that never
      // comes back fails with what was seen instead of the child being killed.
      let over = 0;
      const deadline = Date.now() + 30000;
      while (process.stdout.getMaxListeners() !== 10 && Date.now() < deadline) {
        if (process.stdout.listenerCount("error") > process.stdout.getMaxListeners()) over++;
        await new Promise((done) => setTimeout(done, 1));
      }
      const back = process.stdout.getMaxListeners();
      const listenersLeft = process.stdout.listenerCount("error") - baseline;
      // A host that lowered the limit meanwhile: the pool's share is taken back without a throw.
      const other = new ScanPool({ threads: 6, idleTimeoutMs: 50 });
      await Promise.all(Array.from({ length: 12 }, () => other.workerStarted()));
      process.stdout.setMaxListeners(5);
      // Bounded like the wait above: a worker that never idles out fails with what was seen (once, under a
      // full suite on a busy machine, the child was killed at 90 s here instead).
      const idleBy = Date.now() + 30000;
      while (other.workers.length > 0 && Date.now() < idleBy) await new Promise((done) => setTimeout(done, 20));
      const otherLeft = other.workers.length;
      // Its workers' exits can lag on a busy machine: wait for the drop, up to 10 s.
      for (let i = 0; i < 500 && process.stdout.getMaxListeners() === 5; i++) await new Promise((done) => setTimeout(done, 20));
      const lowered = process.stdout.getMaxListeners();
      await pool.close();
      const closed = await pool.workerStarted().then(() => "ran", (e) => e.message);
      await other.close();
      console.log(JSON.stringify({ raised, over, back, listenersLeft, otherLeft, lowered, closed, workers: pool.workers.length }));`, 90_000);
    expect(r.stderr).not.toMatch(/MaxListenersExceededWarning|RangeError/);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ raised: 21, over: 0, back: 10, listenersLeft: 0, otherLeft: 0, lowered: 1, closed: "ScanPool: the pool is closed", workers: 0 });
  });

  it("a pool that never runs a task loads no Piscina and starts nothing, and closes at once", () => {
    const r = child(`
      const { createRequire } = await import("node:module");
      const loaded = () => Object.keys(createRequire(import.meta.url).cache).some((m) => m.includes("/node_modules/piscina/"));
      const before = loaded();
      const pool = new ScanPool({ threads: 2 });
      await pool.close();
      const after = loaded();
      const used = new ScanPool({ threads: 1 });
      await scanBatch(items, { pool: used, poolThreshold: 0 });
      console.log(JSON.stringify({ before, after, workers: pool.workers.length, loadedOnUse: loaded() }));
      await used.close();`);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ before: false, after: false, workers: 0, loadedOnUse: true });
  });

  it("lets its idle buffers go once its last worker has exited, without close()", async () => {
    const pool = new ScanPool({ threads: 1, idleTimeoutMs: 50 });
    try {
      await scanBatch(corpus(300), { pool, poolThreshold: 0 });
      expect(pool.buffers.idleBytes).toBeGreaterThan(0);
      // The exit comes a little after the idle timeout: wait for it, up to 10 s.
      for (let i = 0; i < 500 && (pool.workers.length > 0 || pool.buffers.idleBytes > 0); i++) await new Promise((done) => setTimeout(done, 20));
      expect(pool.workers).toHaveLength(0);
      expect(pool.buffers.idleBytes).toBe(0);
    } finally {
      await pool.close();
    }
  });

  it("lets its idle buffers go once its only worker has died, without close()", async () => {
    const pool = new ScanPool({ threads: 1, idleTimeoutMs: 3_600_000, faults: { exitOnThreadId: "crash" } });
    try {
      await scanBatch(corpus(200), { pool, poolThreshold: 0, callingThreadScans: false });
      // More idle buffers than the dying task takes (its input and spare go with it).
      for (let i = 0; i < 4; i++) pool.buffers.give(new ArrayBuffer(1 << 16));
      const crashed = await scanBatch([{ threadId: "crash", message: { tool_call_id: "c", content: "/mnt/user-data/c.txt" } }], { pool, poolThreshold: 0, callingThreadScans: false });
      expect(crashed.errors).toHaveLength(1);
      expect(pool.buffers.idleBytes).toBeGreaterThan(0);
      await until(() => pool.workers.length === 0 && pool.buffers.idleBytes === 0);
    } finally {
      await pool.close();
    }
  });

  it("idle workers exit after the idle timeout", async () => {
    const pool = new ScanPool({ threads: 2, idleTimeoutMs: 50 });
    try {
      await scanBatch(corpus(300), { pool, poolThreshold: 0 });
      expect(pool.workers.length).toBeGreaterThan(0);
      while (pool.workers.length > 0) await new Promise((done) => setTimeout(done, 20));
      expect(pool.workers).toHaveLength(0);
      const again = await scanBatch(corpus(300), { pool, poolThreshold: 0, createdAt: CREATED_AT });
      expect(again.entries).toEqual(expected(corpus(300)));
    } finally {
      await pool.close();
    }
  });

  it("every worker exits once idle, even one whose reply came back while another's was handled", () => {
    // Thirty empty tasks at a time on three workers: a worker handed a task
    // while another's reply is handled can answer before that handling ends,
    // and Piscina reads such a reply at once. Piscina 5.3.2 then sets its
    // idle timer and clears it a microtask later, as part of handing it the
    // task: that worker never exited (seen within a few rounds here). The
    // built package, whose workers start without a TypeScript loader, runs
    // the rounds in a few seconds.
    const r = child(
      `
      const pool = new ScanPool({ threads: 3, idleTimeoutMs: 20 });
      let left = 0;
      for (let round = 0; round < 25 && left === 0; round++) {
        await Promise.all(Array.from({ length: 30 }, () => pool.workerStarted()));
        // An idle worker exits a little after the timeout; a stuck one never does. Up to 10 s.
        for (let i = 0; i < 500 && pool.workers.length > 0; i++) await new Promise((done) => setTimeout(done, 20));
        left = pool.workers.length;
      }
      await pool.close();
      console.log(JSON.stringify({ left }));`,
      90_000,
      { built: true },
    );
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout)).toEqual({ left: 0 });
  });

  it("the built package's workers run without the host's command-line options, and with those in NODE_OPTIONS", () => {
    // A preload that reports where it ran and whether the intrinsics are frozen there.
    const dir = mkdtempSync(join(tmpdir(), "tool-artifacts-execargv-"));
    try {
      const preload = join(dir, "preload.mjs");
      writeFileSync(preload, `import { isMainThread } from "node:worker_threads";\nprocess.stderr.write((isMainThread ? "main" : "worker") + " frozen " + Object.isFrozen(Array.prototype) + "\\n");\n`);
      const script = `
        const pool = new ScanPool({ threads: 2 });
        const r = await scanBatch(items.slice(0, 200), { pool, poolThreshold: 0, callingThreadScans: false });
        await pool.close();
        console.log(JSON.stringify({ entries: r.entries.flat().length, errors: r.errors.length }));`;
      const options = ["--frozen-intrinsics", "--import", pathToFileURL(preload).href];
      const run = (nodeArgs: string[], nodeOptions?: string) => {
        const r = child(script, 60_000, { built: true, nodeArgs, env: { ...process.env, NODE_OPTIONS: nodeOptions ?? "" } });
        expect(JSON.parse(r.stdout)).toEqual({ entries: 200, errors: 0 });
        return [...new Set(r.stderr.split("\n").filter((line) => / frozen /.test(line)))].sort();
      };
      expect(run(options)).toEqual(["main frozen true"]);
      expect(run([], options.join(" "))).toEqual(["main frozen true", "worker frozen true"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    ["below MIN_CORES_FOR_SHARED_POOL cores, a large batch without a pool is scanned on the calling thread: no shared pool", MIN_CORES_FOR_SHARED_POOL - 1, false],
    ["at exactly MIN_CORES_FOR_SHARED_POOL cores, a large batch without a pool goes to the shared pool", MIN_CORES_FOR_SHARED_POOL, true],
  ])("%s", (_, cores, pooled) => {
    const r = child(`${reportCores(cores)}
      let tasks = 0;
      const run = ScanPool.prototype.run;
      ScanPool.prototype.run = function (task) {
        tasks++;
        return run.call(this, task);
      };
      const result = await scanBatch(items);
      await closeSharedPool();
      console.log(JSON.stringify({ entries: result.entries.flat().length, errors: result.errors.length, pooled: tasks > 0 }));`);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ entries: 300, errors: 0, pooled });
  });
});

describe("output format", () => {
  it("makes the table's grapheme segmenter at the first table row, not at load (making one is slow, and every scan and worker would pay it)", async () => {
    const Original = Intl.Segmenter;
    let made = 0;
    const use = (value: typeof Original) => Object.defineProperty(Intl, "Segmenter", { value });
    use(class extends Original {
      constructor(...args: ConstructorParameters<typeof Original>) {
        super(...args);
        made++;
      }
    });
    try {
      vi.resetModules();
      const { formatEntries } = await import("../src/batch/format.js");
      const entries = extractArtifacts({ type: "tool", tool_call_id: "c", name: "w", content: "wrote /mnt/user-data/报告.pdf" }, { threadId: "t", now });
      const out: string[] = [];
      formatEntries("t", entries, "jsonl", out);
      expect(made).toBe(0);
      formatEntries("t", entries, "table", out);
      formatEntries("t", entries, "table", out);
      expect(made).toBe(1);
      expect(out[1]).toBe(out[2]);
      expect(out[1]).toContain("报告.pdf");
    } finally {
      use(Original);
    }
  });
});

describe("scanBatch edge cases", () => {
  it("takes a tool message with its own artifact beside a data field as the message, not as the stored form", async () => {
    const message = { type: "tool", name: "export", id: "m1", artifact: { structured_content: { files: ["/data/out.csv"] } }, data: { rows: 3 } };
    const { entries, errors } = await scanBatch([{ threadId: "t", message }], { createdAt: CREATED_AT });
    expect(errors).toEqual([]);
    expect(entries[0]!.map((e) => e.real_ref)).toEqual(["/data/out.csv"]);
  });

  it("scans free text with the sandbox prefixes it is given, in place of the default", async () => {
    const message = { type: "tool", tool_call_id: "c", content: "wrote /data/out.csv and /mnt/user-data/a.txt" };
    const { entries } = await scanBatch([{ threadId: "t", message }], { sandboxPrefixes: ["/data/"], createdAt: CREATED_AT });
    expect(entries[0]!.map((e) => e.real_ref)).toEqual(["/data/out.csv"]);
  });

  it("names the tool call of a failed item given in stored or serialized form", async () => {
    const stored = { type: "tool", data: { tool_call_id: "c9", content: "x" } };
    const serialized = { lc: 1, type: "constructor", id: ["langchain_core", "messages", "ToolMessage"], kwargs: { tool_call_id: "c8", content: "x" } };
    const { errors } = await scanBatch([
      { threadId: "t", message: stored, callIndex: -1 },
      { threadId: "t", message: serialized, callIndex: -1 },
    ]);
    expect(errors.map((e) => e.toolCallId)).toEqual(["c9", "c8"]);
    expect(errors[0]!.error).toMatch(/^item 0 \(thread "t", tool call "c9"\): callIndex must be/);
  });

  it("does not report a threadId that is no string as the item's thread", async () => {
    const { errors } = await scanBatch([{ threadId: 5 as never, message: { type: "tool", tool_call_id: "c", content: "x" } }]);
    expect(errors[0]).toMatchObject({ index: 0, threadId: undefined, toolCallId: "c" });
    expect(errors[0]!.error).toMatch(/^item 0 \(tool call "c"\): threadId must be a non-empty string/);
  });

  it("says what an item's getter threw when it is no Error", async () => {
    const item = {
      threadId: "t",
      get message(): unknown {
        throw "message unavailable";
      },
    };
    const { errors } = await scanBatch([item]);
    expect(errors[0]!.error).toBe('item 0 (thread "t"): message unavailable');
  });
});

describe("table cells", () => {
  const tableRow = (threadId: string, patch: Partial<ArtifactEntry> = {}) => {
    const e: ArtifactEntry = { handle: "art_0000abcd", tool_name: "t", tool_call_id: "c", call_index: 0, artifact_type: "file", display_name: "a.txt", real_ref: "/mnt/user-data/a.txt", created_at: CREATED_AT, ...patch };
    const out: string[] = [];
    formatEntries(threadId, [e], "table", out);
    return out.join("");
  };

  it("shows bidirectional isolates and C1 controls as blanks", () => {
    const row = tableRow("a\u2067b\x9bc\u2069");
    expect(row).not.toMatch(/[\u2066-\u2069\x80-\x9f]/);
    expect(row.startsWith("a b c ")).toBe(true);
  });

  it("keeps every column before the ellipsis of a cut cell", () => {
    expect(tableRow("t", { display_name: "n".repeat(40) })).toContain(` ${"n".repeat(27)}… /mnt/user-data/a.txt`);
  });

  it("gives a lone combining mark no column", () => {
    expect(tableRow("\u0300").indexOf("art_")).toBe(1 + 16 + 1);
  });

  it("pads no blank after the ellipsis of a cut reference, the line's last column, where a wide character straddles the cut", () => {
    // 94 columns, then 数 takes 95..96 and the next one would pass the 96: only the first 94 fit before the "…".
    expect(tableRow("t", { real_ref: `/${"a".repeat(93)}数数` })).toMatch(/ \/a{93}…\n$/);
  });
});

describe("unpackRecords", () => {
  it("rejects a table whose ends go backwards instead of reading garbage", () => {
    const buffer = packRecords(["abc", "def", "ghi"]);
    // Record 1 ends before record 0 does.
    new Uint32Array(buffer, 0, 4)[2] = 1;
    expect(() => unpackRecords(buffer)).toThrow(/record 1 ends at 1, outside 3\.\.9/);
  });
});

describe("ScanPool options", () => {
  it.each([0, -1, 1.5, Number.NaN])("threads %s is a RangeError", (threads) => {
    expect(() => new ScanPool({ threads })).toThrow(RangeError);
    expect(() => new ScanPool({ threads })).toThrow(`threads must be a positive integer, got ${threads}`);
  });

  it("threads 1 is accepted", async () => {
    const pool = new ScanPool({ threads: 1 });
    expect(pool.threads).toBe(1);
    await pool.close();
  });
});

/** A pool whose "worker" scans on this thread and corrupts the last record of each slice it returns. */
class CorruptingPool extends ScanPool {
  override async run(task: ScanTask): Promise<ScanResult> {
    if (task.kind !== "records") throw new Error("records only");
    const records = unpackRecords(scanRecords(task.input, task.options));
    records[records.length - 1] = "[not json";
    return { output: packRecords(records), free: [] };
  }
}

describe("scanBatch with a worker result corrupt part way", () => {
  it("keeps the items decoded before the corrupt record, and fails only the rest", async () => {
    // 12 items on one thread: slices of 3 (sliceSize), each slice's third record corrupt.
    const items: BatchItem[] = Array.from({ length: 12 }, (_, i) => ({
      threadId: "t",
      message: { tool_call_id: `c${i}`, name: "w", content: `/mnt/user-data/f${i}.txt` },
    }));
    const pool = new CorruptingPool({ threads: 1 });
    const r = await scanBatch(items, { pool, poolThreshold: 1, callingThreadScans: false, createdAt: "2025-01-02T03:04:05.000Z" });
    expect(r.entries.map((e) => e.map((x) => x.real_ref))).toEqual(items.map((_, i) => (i % 3 === 2 ? [] : [`/mnt/user-data/f${i}.txt`])));
    expect(r.errors.map((e) => e.index)).toEqual([2, 5, 8, 11]);
    expect(r.errors[0].error).toMatch(/not scanned, the worker scanning items 0\.\.2 failed/);
    // What the decoded items hold is what the calling thread would give.
    const here = await scanBatch(items, { createdAt: "2025-01-02T03:04:05.000Z" });
    expect(encodeEntries(r.entries[0])).toBe(encodeEntries(here.entries[0]));
  });
});

describe("archive lines holding U+FFFD", () => {
  it("a line with a literal U+FFFD (valid UTF-8) is scanned, not rejected as another encoding", () => {
    const line = JSON.stringify({ thread_id: "t", message: { tool_call_id: "c", content: "see /mnt/user-data/\ufffd.txt" } });
    const bytes = new TextEncoder().encode(line + "\n");
    const options = { format: "jsonl" as const, createdAt: "2025-01-02T03:04:05.000Z" };
    for (const packed of [scanLinesPackedJs(bytes, options), scanLinesPacked(bytes, options), scanLinesPacked(bytes, { ...options, format: "table" as const })]) {
      const result = unpackLineResult(packed);
      expect(result.failures).toEqual([]);
      expect(result.entries).toBe(1);
      expect(Buffer.from(result.output).toString("utf8")).toContain("/mnt/user-data/\ufffd.txt");
    }
  });
});

describe("archive lines and batch items: shapes at their edges", () => {
  it("a constructor-shaped object without lc: 1 is no serialized message (it is another kind of message, skipped)", () => {
    const kwargs = { tool_call_id: "c1", content: "/mnt/user-data/a.txt" };
    const id = ["langchain_core", "messages", "ToolMessage"];
    expect(itemFromLine({ thread_id: "t", lc: 1, type: "constructor", id, kwargs })).toMatchObject({ threadId: "t" });
    expect(itemFromLine({ thread_id: "t", type: "constructor", id, kwargs })).toBeUndefined();
    expect(itemFromLine({ thread_id: "t", lc: 2, type: "constructor", id, kwargs })).toBeUndefined();
  });

  it("a tool message with its own tool_call_id beside a data field is the message, not the stored form", () => {
    const message = { type: "tool", tool_call_id: "own", data: { content: "/mnt/user-data/inner.txt", tool_call_id: "inner" } };
    const item = normalizeItem({ threadId: "t", message });
    expect(item.message.tool_call_id).toBe("own");
    expect(item.message.content).toBeUndefined();
  });

  it("names callIndex when call_index is null and callIndex is bad", () => {
    expect(() => itemFromLine({ thread_id: "t", call_index: null, callIndex: -1, message: { tool_call_id: "c", content: "x" } })).toThrow(/^callIndex must be a non-negative integer$/);
  });

  it("a tool message whose own message field is no object is read flat, not as a wrapper", () => {
    const line = { thread_id: "t", tool_call_id: "c", message: "a note" };
    expect(itemFromLine(line)).toEqual({ threadId: "t", message: line, callIndex: undefined });
  });
});

/** n tool results, one file each. */
const toolItems = (n: number): BatchItem[] =>
  Array.from({ length: n }, (_, i) => ({ threadId: "t", message: { tool_call_id: `c${i}`, name: "w", content: `/mnt/user-data/f${i}.txt` } }));

describe("scanBatch slices on a pool", () => {

  it("cuts a batch that does not divide evenly into slices of the rounded-up share", async () => {
    // 10 items on one thread: four slices per thread, so ceil(10 / 4) = 3 items each (the last holds 1); each slice's last record is corrupt.
    const pool = new CorruptingPool({ threads: 1 });
    const r = await scanBatch(toolItems(10), { pool, poolThreshold: 1, callingThreadScans: false, createdAt: CREATED_AT });
    expect(r.errors.map((e) => e.index)).toEqual([2, 5, 8, 9]);
    expect(r.errors[3].error).toMatch(/not scanned, the worker scanning items 9\.\.9 failed/);
  });

  it("rounds a share with a small remainder up too: 9 items on one thread go in slices of 3", async () => {
    const pool = new CorruptingPool({ threads: 1 });
    const r = await scanBatch(toolItems(9), { pool, poolThreshold: 1, callingThreadScans: false, createdAt: CREATED_AT });
    expect(r.errors.map((e) => e.index)).toEqual([2, 5, 8]);
    expect(r.errors[2].error).toMatch(/not scanned, the worker scanning items 6\.\.8 failed/);
  });

  it("names the slice a worker failed by the items it was sent, not those scanned here or skipped", async () => {
    // Slice 0..2: item 0 is no tool result (skipped here), so the worker held items 1..2 only.
    const batch: unknown[] = toolItems(12);
    batch[0] = { threadId: "t", message: { type: "ai", content: "hi" } };
    batch[3] = { threadId: "", message: { tool_call_id: "bad" } }; // fails here: the worker held 4..5
    const pool = new CorruptingPool({ threads: 1 });
    const r = await scanBatch(batch as BatchItem[], { pool, poolThreshold: 1, callingThreadScans: false, createdAt: CREATED_AT });
    expect(r.skipped).toEqual([0]);
    expect(r.errors.map((e) => e.index)).toEqual([2, 3, 5, 8, 11]);
    expect(r.errors[0].error).toMatch(/not scanned, the worker scanning items 1\.\.2 failed/);
    expect(r.errors[2].error).toMatch(/not scanned, the worker scanning items 4\.\.5 failed/);
  });
});

describe("scanBatch and a pool under a host's fake timers", () => {
  // vitest's vi.useFakeTimers (and jest's) replace the global setImmediate: a
  // batch that turned the event loop with it would wait for a tick the
  // host's test never gives (the first two hang so), and a pool would not
  // see that its last worker had gone.
  it.each([
    ["on the calling thread alone, with a signal (a turn every 512 items)", false],
    ["on a pool, the calling thread scanning too (a turn after each slice it scans)", true],
  ])("finishes %s", async (_, onPool) => {
    const items = corpus(2000);
    const pool = onPool ? new ScanPool({ threads: 2 }) : undefined;
    vi.useFakeTimers();
    try {
      const options = onPool ? { pool, poolThreshold: 0 } : { poolThreshold: Infinity, signal: new AbortController().signal };
      const r = await scanBatch(items, { ...options, createdAt: CREATED_AT });
      expect(r.errors).toEqual([]);
      expect(r.entries).toEqual(expected(items));
    } finally {
      vi.useRealTimers();
      await pool?.close();
    }
  });

  it("lets a pool's idle buffers go once its only worker has died", async () => {
    const pool = new ScanPool({ threads: 1, idleTimeoutMs: 3_600_000, faults: { exitOnThreadId: "crash" } });
    vi.useFakeTimers();
    try {
      await scanBatch(corpus(200), { pool, poolThreshold: 0, callingThreadScans: false });
      for (let i = 0; i < 4; i++) pool.buffers.give(new ArrayBuffer(1 << 16));
      const crashed = await scanBatch([{ threadId: "crash", message: { tool_call_id: "c", content: "/mnt/user-data/c.txt" } }], { pool, poolThreshold: 0, callingThreadScans: false });
      expect(crashed.errors).toHaveLength(1);
      // Looked at on Node's own timers (vi.waitFor would run the fake ones), up to 10 s.
      for (let i = 0; i < 500 && (pool.workers.length > 0 || pool.buffers.idleBytes > 0); i++) await sleep(20);
      expect([pool.workers.length, pool.buffers.idleBytes]).toEqual([0, 0]);
    } finally {
      vi.useRealTimers();
      await pool.close();
    }
  });

  it("lets a pool's idle buffers go once its only worker has exited idle, the host's fake timers run past the idle timeout", async () => {
    const pool = new ScanPool({ threads: 1, idleTimeoutMs: 1_000 });
    vi.useFakeTimers();
    try {
      await scanBatch(corpus(200), { pool, poolThreshold: 0, callingThreadScans: false });
      for (let i = 0; i < 4; i++) pool.buffers.give(new ArrayBuffer(1 << 16));
      expect(pool.workers.length).toBe(1);
      // Piscina's idle timer is one of the host's fake timers: only this runs it. The worker's exit comes later.
      vi.advanceTimersByTime(1_000);
      // Looked at on Node's own timers, up to 10 s, without running the fake ones again.
      for (let i = 0; i < 500 && (pool.workers.length > 0 || pool.buffers.idleBytes > 0); i++) await sleep(20);
      expect([pool.workers.length, pool.buffers.idleBytes]).toEqual([0, 0]);
    } finally {
      vi.useRealTimers();
      await pool.close();
    }
  });
});

/** A real pool that records each task it is given and the result buffers it hands back. */
class WatchedPool extends ScanPool {
  readonly spares: boolean[] = [];
  resultBytes = 0;
  inFlight = 0;
  maxInFlight = 0;
  override async run(task: ScanTask): Promise<ScanResult> {
    this.spares.push(task.spare !== undefined);
    this.maxInFlight = Math.max(this.maxInFlight, ++this.inFlight);
    try {
      const result = await super.run(task);
      for (const b of [result.output, ...result.free]) this.resultBytes += b.byteLength;
      return result;
    } finally {
      this.inFlight--;
    }
  }
}

describe("scanBatch and the pool's buffers and workers", () => {

  it("keeps every buffer a worker hands back, and sends a kept one along for the next result", async () => {
    const pool = new WatchedPool({ threads: 1 });
    try {
      // One task: the result and the input buffer the worker freed both come back to the pool.
      await scanBatch(toolItems(1), { pool, poolThreshold: 1, callingThreadScans: false, createdAt: CREATED_AT });
      expect(pool.spares).toEqual([false]);
      expect(pool.buffers.idleBytes).toBe(pool.resultBytes);
      // The next task carries one of them to write its result into, instead of the worker allocating one.
      await scanBatch(toolItems(1), { pool, poolThreshold: 1, callingThreadScans: false, createdAt: CREATED_AT });
      expect(pool.spares).toEqual([false, true]);
    } finally {
      await pool.close();
    }
  });

  it("gives each worker one slice at a time; the rest wait for one to finish, not in Piscina's queue", async () => {
    const pool = new WatchedPool({ threads: 2 });
    try {
      const batch = toolItems(64);
      const r = await scanBatch(batch, { pool, poolThreshold: 1, callingThreadScans: false, createdAt: CREATED_AT });
      expect(r.errors).toEqual([]);
      expect(pool.spares.length).toBe(8); // 64 items in slices of 8
      expect(pool.maxInFlight).toBe(2);
    } finally {
      await pool.close();
    }
  });

  it("sends a worker no task for a slice whose every item is skipped or fails here", async () => {
    const pool = new WatchedPool({ threads: 1 });
    try {
      // Four items on one thread: slices of one each; only items 1 and 3 can go to the worker.
      const batch: unknown[] = toolItems(4);
      batch[0] = { threadId: "t", message: { type: "ai", content: "hi" } };
      batch[2] = { threadId: "", message: { tool_call_id: "bad" } };
      const r = await scanBatch(batch as BatchItem[], { pool, poolThreshold: 1, callingThreadScans: false, createdAt: CREATED_AT });
      expect([r.skipped, r.errors.map((e) => e.index)]).toEqual([[0], [2]]);
      expect(r.entries.map((list) => list.length)).toEqual([0, 1, 0, 1]);
      expect(pool.spares.length).toBe(2);
    } finally {
      await pool.close();
    }
  });
});

describe("BufferPool take", () => {
  it("reuses a free buffer of exactly the size asked", () => {
    const buffers = new BufferPool();
    const exact = new ArrayBuffer(1024);
    buffers.give(exact);
    expect(buffers.take(1024)).toBe(exact);
    expect(buffers.idleBytes).toBe(0);
  });
});

describe("packed line results: room for text", () => {
  const counts = { lines: 1, entries: 1, rejected: 0, skipped: 0, failures: [] };

  it("makes room for text of three UTF-8 bytes per UTF-16 unit", () => {
    // CJK: one unit, three bytes each; too little room would cut the output short without an error.
    const text = "中文字 ファイル\n";
    const result = unpackLineResult(packLineResult(counts, [text]));
    expect(Buffer.from(result.output).toString("utf8")).toBe(text);
  });
});

describe("scanBatch and tool_call_id spelt otherwise", () => {
  it("fails only a tool result that would be scanned: another kind of message is skipped and an error result gives nothing, as extractArtifacts does", async () => {
    const items: BatchItem[] = [
      { threadId: "t", message: { type: "ai", toolCallId: "c0", content: "/mnt/user-data/a.txt" } },
      { threadId: "t", message: { status: "error", toolCallId: "c1", content: "/mnt/user-data/b.txt" } },
      { threadId: "t", message: { toolCallId: "c2", content: "/mnt/user-data/c.txt" } },
      { threadId: "t", message: { type: "ToolMessageChunk", tool_call_id: "c3", content: "/mnt/user-data/d.txt" } },
    ];
    const result = await scanBatch(items);
    expect(result.skipped).toEqual([0]);
    expect(result.errors.map((e) => e.index)).toEqual([2]);
    expect(result.entries.map((e) => e.map((x) => x.real_ref))).toEqual([[], [], [], ["/mnt/user-data/d.txt"]]);
    for (const [i, item] of items.entries()) {
      if (i === 0 || i === 2) expect(() => extractArtifacts(item.message as never, { threadId: "t" })).toThrow(TypeError);
      else expect(extractArtifacts(item.message as never, { threadId: "t" }).map((x) => x.real_ref)).toEqual(result.entries[i]!.map((x) => x.real_ref));
    }
  });
});

describe("ScanPool options of the wrong type", () => {
  it.each([
    [{ threads: "2" }, 'ScanPool: threads must be a positive integer, got "2"'],
    [{ threads: true }, "ScanPool: threads must be a positive integer, got boolean true"],
    [{ idleTimeoutMs: "100" }, 'ScanPool: idleTimeoutMs must be a non-negative number, got "100"'],
    [{ idleTimeoutMs: true }, "ScanPool: idleTimeoutMs must be a non-negative number, got boolean true"],
    [{ idleTimeoutMs: [] }, "ScanPool: idleTimeoutMs must be a non-negative number, got object"],
  ])("%o is a TypeError when made, not a failure of every item later (Piscina refuses it in each worker)", (options, message) => {
    expect(() => new ScanPool(options as never)).toThrow(new TypeError(message));
  });
});

describe("ScanPool idleTimeoutMs", () => {
  it.each([-1, Number.NaN])("idleTimeoutMs %s is a RangeError", (idleTimeoutMs) => {
    // NaN compares false both ways: the check must accept only what is >= 0.
    expect(() => new ScanPool({ idleTimeoutMs })).toThrow(`idleTimeoutMs must be a non-negative number, got ${idleTimeoutMs}`);
  });

  it("idleTimeoutMs 0 is accepted", async () => {
    await new ScanPool({ threads: 1, idleTimeoutMs: 0 }).close();
  });
});

describe("formatEntries lines", () => {
  const entry: ArtifactEntry = { handle: "art_0000abcd", tool_name: "t", tool_call_id: "c", call_index: 0, artifact_type: "file", display_name: "a.txt", real_ref: "/mnt/user-data/a.txt", created_at: CREATED_AT };

  it("shows DEL as a blank in a table cell", () => {
    const out: string[] = [];
    formatEntries("a\x7fb", [entry], "table", out);
    expect(out[0]).not.toContain("\x7f");
    expect(out[0].startsWith("a b ")).toBe(true);
  });

  it("writes consumed_by in a JSON line, as JSON.stringify does, even for an entry sharing the first one's call", () => {
    // The shared-fields shortcut has no place for consumed_by: such an entry must take the general path.
    const entries = [entry, { ...entry, handle: "art_0000abce", consumed_by: ["art_0000abcd"] }];
    const out: string[] = [];
    formatEntries("t", entries, "jsonl", out);
    expect(out).toEqual(entries.map((e) => JSON.stringify({ thread_id: "t", ...e }) + "\n"));
  });

  it("writes entries that differ from the first in tool name or time as JSON.stringify does", () => {
    const entries = [entry, { ...entry, handle: "art_0000abce", tool_name: "other" }, { ...entry, handle: "art_0000abcf", created_at: "2026-01-01T00:00:00.000Z" }];
    const out: string[] = [];
    formatEntries("t", entries, "jsonl", out);
    expect(out).toEqual(entries.map((e) => JSON.stringify({ thread_id: "t", ...e }) + "\n"));
  });

  it("counts a lone U+FEFF or word joiner as no column, Hangul, fullwidth forms and ideographs as two, and a pictograph without U+FE0F as one", () => {
    // THREAD is 16 columns and a blank: the handle starts 17 columns in.
    const handleAt = (threadId: string) => {
      const out: string[] = [];
      formatEntries(threadId, [entry], "table", out);
      return out[0]!.indexOf("art_");
    };
    expect(handleAt("a\ufeffb")).toBe(17 + 1);
    expect(handleAt("한국")).toBe(17 - 2);
    expect(handleAt("\u2764")).toBe(17);
    // A word joiner is no column either; fullwidth forms and a CJK ideograph past the BMP are two.
    expect(handleAt("a\u2060b")).toBe(17 + 1);
    expect(handleAt("\uff54\uff4f")).toBe(17 - 2);
    expect(handleAt("\u{20000}")).toBe(17);
  });
});

describe("BufferPool bounds", () => {
  it("keeps no empty (detached) buffer, so it never offers one as a spare", () => {
    const buffers = new BufferPool();
    buffers.give(new ArrayBuffer(0));
    expect(buffers.spare()).toBeUndefined();
  });

  it("keeps a buffer of exactly its byte budget", () => {
    const buffers = new BufferPool(16, 1024);
    buffers.give(new ArrayBuffer(1024));
    expect(buffers.idleBytes).toBe(1024);
  });

  it("allocates a quarter more than asked, so a slightly larger request reuses the buffer", () => {
    const buffers = new BufferPool();
    const first = buffers.take(1000);
    expect(first.byteLength).toBe(1250);
    buffers.give(first);
    expect(buffers.take(1200)).toBe(first);
  });

  it("offers its largest free buffer as the spare", () => {
    const buffers = new BufferPool();
    const [small, large] = [new ArrayBuffer(1024), new ArrayBuffer(4096)];
    buffers.give(large);
    buffers.give(small);
    expect(buffers.spare()).toBe(large);
  });

  it("writes into a spare of exactly the size needed", async () => {
    const { spareOrNew } = await import("../src/batch/buffers.js");
    const spare = new ArrayBuffer(64);
    const { alloc, unused } = spareOrNew(spare);
    expect(alloc(64)).toBe(spare);
    expect(unused()).toBeUndefined();
  });
});

describe("batch items: kinds, keys and the wire bound", () => {
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

describe("scanBatch: pool null", () => {
  it("options.pool null is no pool", async () => {
    const message = { type: "tool", tool_call_id: "c", content: "/mnt/user-data/a.txt" };
    const result = await scanBatch([{ threadId: "t", message }], { pool: null as never });
    expect(result.entries[0]!.map((e) => e.real_ref)).toEqual(["/mnt/user-data/a.txt"]);
  });
});
