import { describe, expect, it, vi } from "vitest";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { tool } from "langchain";
import { z } from "zod";
import { extractArtifacts, type ExtractOptions, type ToolMessageLike } from "../src/extract.js";
import { generateHandle } from "../src/engine/hash.js";
import { scanText } from "../src/engine/scan.js";
import { walkStructured } from "../src/engine/walk.js";
import { engine, onRebuild } from "../src/engine/wasm.js";
import type { ArtifactEntry } from "../src/types.js";
import { collectGarbage, heapAfterGc } from "./support/heap.js";

const NOW = "2025-01-02T03:04:05.000Z";
const THREAD = "thread-1";

function extract(message: unknown, options: Partial<ExtractOptions> = {}): ArtifactEntry[] {
  return extractArtifacts(message as ToolMessageLike, { threadId: THREAD, now: () => NOW, ...options });
}
const refs = (entries: ArtifactEntry[]) => entries.map((e) => e.real_ref);
const types = (entries: ArtifactEntry[]) => entries.map((e) => e.artifact_type);

/** A tool result whose only source is one structured payload (Python shape). */
const structured = (payload: unknown, extra: ToolMessageLike = {}) => ({
  tool_call_id: "call-1",
  name: "tool",
  content: "",
  artifact: { structured_content: payload },
  ...extra,
});
const blocks = (...content: unknown[]) => ({ tool_call_id: "call-1", name: "tool", content });

/** A string of exactly `bytes` UTF-8 bytes that is an absolute path. */
const pathOfBytes = (bytes: number, fill = "a") => "/" + fill.repeat((bytes - 1) / Buffer.byteLength(fill));

/** `levels` nested arrays around `inner`: the innermost value sits at level levels + 1. */
function nest(levels: number, inner: unknown): unknown {
  let v = inner;
  for (let i = 0; i < levels; i++) v = [v];
  return v;
}

describe("options", () => {
  it.each([
    ["missing", undefined],
    ["empty", ""],
    ["a number", 7],
    ["null", null],
  ])("threadId %s is a TypeError", (_, threadId) => {
    expect(() => extractArtifacts({ content: "/mnt/user-data/a.txt" }, { threadId } as unknown as ExtractOptions)).toThrow(
      TypeError,
    );
  });

  it("missing options object is a TypeError", () => {
    expect(() => extractArtifacts({ content: "x" }, undefined as unknown as ExtractOptions)).toThrow(/threadId/);
  });

  it.each([-1, 1.5, Number.NaN, "2"])("callIndex %s is a TypeError", (callIndex) => {
    expect(() => extract({ content: "" }, { callIndex: callIndex as number })).toThrow(TypeError);
  });

  it("reads each option once: a getter that answers otherwise later changes nothing", () => {
    const message = { tool_call_id: "c", name: "tool", content: "/mnt/user-data/a.txt and /mnt/user-data/b.txt" };
    const plain: ExtractOptions = { threadId: THREAD, callIndex: 2, detectRefsInText: true, sandboxPrefixes: ["/mnt/user-data/"], now: () => NOW, onRejectedPayload: () => {}, onEngineFailure: () => {} };
    const reads = new Map<string, number>();
    const fickle = {} as ExtractOptions;
    for (const [key, value] of Object.entries(plain)) {
      Object.defineProperty(fickle, key, {
        enumerable: true,
        get() {
          reads.set(key, (reads.get(key) ?? 0) + 1);
          return reads.get(key) === 1 ? value : 42; // valid when checked, junk after
        },
      });
    }
    expect(extractArtifacts(message, fickle)).toEqual(extractArtifacts(message, plain));
    expect(Object.fromEntries(reads)).toEqual(Object.fromEntries(Object.keys(plain).map((key) => [key, 1])));
    // And the prefix list's items: checked and scanned as read the first time.
    let prefixReads = 0;
    const prefixes: string[] = [];
    Object.defineProperty(prefixes, 0, { enumerable: true, get: () => (prefixReads++ === 0 ? "/mnt/user-data/" : "/other/") });
    expect(extractArtifacts(message, { ...plain, sandboxPrefixes: prefixes })).toEqual(extractArtifacts(message, plain));
    expect(prefixReads).toBe(1);
  });

  it("callIndex defaults to 0 and is carried on every entry", () => {
    const m = blocks("/mnt/user-data/a.txt", "/mnt/user-data/b.txt");
    expect(extract(m).map((e) => e.call_index)).toEqual([0, 0]);
    expect(extract(m, { callIndex: 3 }).map((e) => e.call_index)).toEqual([3, 3]);
  });

  it("callIndex -0 is carried as 0, as JSON writes it", () => {
    const [entry] = extract(blocks("/mnt/user-data/a.txt"), { callIndex: -0 });
    expect(Object.is(entry.call_index, 0)).toBe(true);
  });
});

describe("entry fields", () => {
  it("copies tool name and tool_call_id, stamps created_at from the clock", () => {
    const [e] = extract({ content: "/mnt/user-data/out/r.pdf", tool_call_id: "call-9", name: "render" });
    expect(e).toEqual({
      handle: generateHandle(THREAD, "call-9", 0, 0),
      tool_name: "render",
      tool_call_id: "call-9",
      call_index: 0,
      artifact_type: "file",
      display_name: "r.pdf",
      real_ref: "/mnt/user-data/out/r.pdf",
      created_at: NOW,
    });
  });

  it.each([
    ["missing", undefined],
    ["empty", ""],
    ["not a string", 42],
  ])("tool name %s becomes unknown", (_, name) => {
    expect(extract({ content: "/mnt/user-data/a.txt", name })[0].tool_name).toBe("unknown");
  });

  it("default created_at is ISO-8601 UTC of the current time", () => {
    const before = Date.now();
    const [e] = extractArtifacts({ content: "/mnt/user-data/a.txt" }, { threadId: THREAD });
    expect(e.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Date.parse(e.created_at)).toBeGreaterThanOrEqual(before - 1);
    expect(Date.parse(e.created_at)).toBeLessThanOrEqual(Date.now());
  });

  it("the message id is the occurrence id of every handle", () => {
    const m = { content: "/mnt/user-data/a.txt /mnt/user-data/b.txt", tool_call_id: "c", id: "msg-7" };
    expect(extract(m, { callIndex: 2 }).map((e) => e.handle)).toEqual([
      generateHandle(THREAD, "c", 2, 0, "msg-7"),
      generateHandle(THREAD, "c", 2, 1, "msg-7"),
    ]);
    expect(extract({ ...m, id: undefined })[0].handle).toBe(generateHandle(THREAD, "c", 0, 0));
  });

  it("a ToolMessage instance gives the same entries as its plain fields", () => {
    const fields = {
      content: [{ type: "text", text: "see /mnt/user-data/a.csv" }, { type: "image", url: "https://x.io/i.png", mimeType: "image/png" }],
      tool_call_id: "call-3",
      name: "plot",
      id: "msg-3",
      artifact: { structured_content: { path: "/srv/out.json" } },
    };
    const fromInstance = extract(new ToolMessage(fields));
    expect(fromInstance).toEqual(extract(fields));
    expect(refs(fromInstance)).toEqual(["/srv/out.json", "/mnt/user-data/a.csv", "https://x.io/i.png"]);
  });

  it("an empty message id is an occurrence id, as only null and undefined are none (DESIGN §2, the Python implementation)", () => {
    const message = { content: "/mnt/user-data/a.txt", tool_call_id: "call-1" };
    expect(extract({ ...message, id: "" })[0]!.handle).toBe(generateHandle(THREAD, "call-1", 0, 0, ""));
    expect(extract({ ...message, id: "" })[0]!.handle).not.toBe(extract(message)[0]!.handle);
    expect(extract({ ...message, id: null })).toEqual(extract(message));
  });

  it("a message id that is no string is no occurrence id", () => {
    const m = { tool_call_id: "c", content: "/mnt/user-data/a.txt" };
    expect(extract({ ...m, id: 7 }).map((e) => e.handle)).toEqual([generateHandle(THREAD, "c", 0, 0)]);
  });

  it("a missing tool_call_id seeds handles with the empty string", () => {
    expect(extract({ content: "/mnt/user-data/a.txt" })[0]).toMatchObject({
      tool_call_id: "",
      handle: generateHandle(THREAD, "", 0, 0),
    });
  });
});

describe("error results", () => {
  it("status error gives no entries from any source", () => {
    const m = {
      status: "error",
      content: [{ type: "text", text: "/mnt/user-data/a.txt" }, { type: "file", url: "https://x.io/f.pdf" }],
      artifact: { structured_content: { path: "/a", rows: 1 } },
    };
    expect(extract(m)).toEqual([]);
    expect(extract({ ...m, status: "success" })).toHaveLength(3);
  });
});

describe("structured sources", () => {
  it("artifact.structured_content (Python shape)", () => {
    expect(refs(extract(structured({ path: "/data/a.csv" })))).toEqual(["/data/a.csv"]);
  });

  it("an artifact array item {type: mcp_structured_content, data}", () => {
    const m = { content: "", artifact: [{ type: "resource", resource: {} }, { type: "mcp_structured_content", data: { url: "https://x.io/a.json" } }] };
    expect(refs(extract(m))).toEqual(["https://x.io/a.json"]);
  });

  it("reads no other artifact: a content_and_artifact tool's plain object gives nothing (README, Where references are read)", () => {
    const m = { tool_call_id: "call-1", name: "tool", content: "made it", artifact: { path: "/data/a.csv", url: "https://x.io/a.json" } };
    expect(extract(m)).toEqual([]);
    expect(refs(extract({ ...m, artifact: { structured_content: m.artifact } }))).toEqual(["/data/a.csv", "https://x.io/a.json"]);
  });

  it("tells onRejectedPayload why a payload was rejected whole, and only then", () => {
    const reasons: string[] = [];
    let deep: unknown = "/data/deep.txt";
    for (let i = 0; i < 40; i++) deep = { path: deep };
    extractArtifacts(structured(deep) as never, { threadId: "t", onRejectedPayload: (r) => reasons.push(r) });
    extractArtifacts(structured(Array.from({ length: 2000 }, (_, i) => i)) as never, { threadId: "t", onRejectedPayload: (r) => reasons.push(r) });
    extractArtifacts(structured({ path: "/data/a.csv" }) as never, { threadId: "t", onRejectedPayload: (r) => reasons.push(r) });
    expect(reasons).toEqual(["depth", "nodes"]);
  });

  it("structuredContent on a text block", () => {
    const m = blocks({ type: "text", text: "done", structuredContent: { file: "/data/b.txt" } });
    expect(refs(extract(m))).toEqual(["/data/b.txt"]);
  });

  it("only the first structured source present is walked", () => {
    const m = {
      content: [{ type: "text", text: "", structuredContent: { path: "/from/block" } }],
      artifact: [{ type: "mcp_structured_content", data: { path: "/from/artifact" } }],
    };
    expect(refs(extract(m))).toEqual(["/from/artifact"]);
  });

  it("a null structured_content falls through to the next source", () => {
    const m = { content: [{ type: "text", text: "", structuredContent: { path: "/from/block" } }], artifact: { structured_content: null } };
    expect(refs(extract(m))).toEqual(["/from/block"]);
  });

  it.each(["file", "files", "file_path", "path", "url", "urls"])("key %s gives a file entry", (key) => {
    const e = extract(structured({ [key]: "/srv/out/x.bin" }));
    expect(e.map((x) => [x.artifact_type, x.real_ref, x.display_name])).toEqual([["file", "/srv/out/x.bin", "x.bin"]]);
  });

  it.each(["task_id", "job_id"])("key %s gives a task entry", (key) => {
    expect(extract(structured({ [key]: "job-42" })).map((x) => [x.artifact_type, x.real_ref])).toEqual([["task", "job-42"]]);
  });

  it("keys are matched exactly (case and spelling)", () => {
    const e = extract(structured({ Path: "/a", FILE: "/b", filepath: "/c", taskId: "t" }));
    expect(types(e)).toEqual(["data"]);
  });

  it("strings in a list under a known key are references; other list items are walked", () => {
    const e = extract(structured({ files: ["/a", 3, { path: "/b" }, ["/nested-list-not-under-key"], "/c"] }));
    expect(refs(e)).toEqual(["/a", "/b", "/c"]);
  });

  it("references keep document order across nesting and kinds", () => {
    const e = extract(structured({ a: { job_id: "j1", b: [{ url: "https://h/1" }] }, path: "/2", urls: ["https://h/3"] }));
    expect(e.map((x) => [x.artifact_type, x.real_ref])).toEqual([
      ["task", "j1"],
      ["file", "https://h/1"],
      ["file", "/2"],
      ["file", "https://h/3"],
    ]);
  });
});

describe("reference gate (structured keys and blocks)", () => {
  it.each([
    "https://example.com/a.pdf",
    "HTTP://EXAMPLE.COM/a",
    "HTTPS://EXAMPLE.COM/a.pdf",
    "http://h",
    "/abs/path with space/x.txt",
    "/",
    "C:\\Users\\me\\x.docx",
    "d:/data/x.csv",
  ])("accepts %j", (ref) => {
    expect(refs(extract(structured({ path: ref })))).toEqual([ref]);
    expect(refs(extract(blocks({ type: "file", url: ref })))).toEqual([ref]);
  });

  it.each([
    ["relative path", "outputs/x.txt"],
    ["network path", "//server/share/x"],
    ["data: URI", "data:text/plain;base64,aGk="],
    ["blob: URL", "blob:https://x.io/123"],
    ["file: URL", "file:///etc/passwd"],
    ["javascript: URL", "javascript:alert(1)"],
    ["ftp URL", "ftp://x.io/a"],
    ["URL with empty host", "http:///a.txt"],
    ["URL with a space", "https://x.io/a b.pdf"],
    ["URL with a no-break space", "https://x.io/a\u00a0b.pdf"],
    ["path with a line break", "/a/b\nc"],
    ["path with a NUL", "/a/\u0000b"],
    ["path with a C1 control", "/a/\u0085b"],
    ["path with a line separator", "/a/\u2028b"],
    ["empty string", ""],
  ])("rejects a %s", (_, ref) => {
    expect(extract(structured({ path: ref }))).toEqual([]);
    expect(extract(blocks({ type: "file", url: ref }))).toEqual([]);
  });

  it("a reference of exactly 4096 UTF-8 bytes is kept", () => {
    const ref = pathOfBytes(4096);
    expect(refs(extract(structured({ path: ref })))).toEqual([ref]);
    expect(refs(extract(blocks({ type: "image", url: ref })))).toEqual([ref]);
  });

  it("a reference of 4097 UTF-8 bytes is skipped, never truncated", () => {
    const ref = pathOfBytes(4097);
    expect(extract(structured({ path: ref }))).toEqual([]);
    expect(extract(blocks({ type: "image", url: ref }))).toEqual([]);
  });

  it("the byte bound counts UTF-8 bytes, not UTF-16 units", () => {
    const fits = "/" + "é".repeat(2047) + "a"; // 1 + 4094 + 1 bytes, 2049 units
    const over = "/" + "€".repeat(1366); // 1 + 4098 bytes, 1367 units
    expect(refs(extract(structured({ path: fits })))).toEqual([fits]);
    expect(extract(structured({ path: over }))).toEqual([]);
  });
});

describe("task token gate", () => {
  it("a 256-character token is kept", () => {
    const t = "t".repeat(256);
    expect(refs(extract(structured({ task_id: t })))).toEqual([t]);
  });

  it("a 257-character token is skipped", () => {
    expect(extract(structured({ task_id: "t".repeat(257) }))).toEqual([]);
  });

  it.each([
    ["empty", ""],
    ["with a space", "job 1"],
    ["with a tab", "job\t1"],
    ["with an ideographic space", "job\u30001"],
  ])("a token %s is skipped", (_, t) => {
    expect(extract(structured({ job_id: t }))).toEqual([]);
  });

  it("a token needs no path shape", () => {
    expect(refs(extract(structured({ job_id: ["relative/ok", "x:y"] })))).toEqual(["relative/ok", "x:y"]);
  });
});

describe("walk budgets", () => {
  const wide = (n: number) => ({ path: "/kept", pad: new Array(n - 3).fill(0) }); // root + path + pad + items

  it("1024 nodes are walked", () => {
    expect(refs(extract(structured(wide(1024))))).toEqual(["/kept"]);
  });

  it("1025 nodes reject the payload whole", () => {
    expect(extract(structured(wide(1025)))).toEqual([]);
  });

  it("keys do not count as nodes", () => {
    const many = Object.fromEntries(Array.from({ length: 1022 }, (_, i) => [`k${i}`, i]));
    expect(refs(extract(structured({ path: "/kept", ...many })))).toEqual(["/kept"]);
  });

  it("a value at level 32 is walked", () => {
    expect(refs(extract(structured(nest(30, { path: "/deep" }))))).toEqual(["/deep"]);
  });

  it("a value at level 33 rejects the payload whole", () => {
    expect(extract(structured({ path: "/first", deep: nest(30, [1]) }))).toEqual([]);
  });

  it("a rejected payload leaves the other sources captured", () => {
    const m = { ...structured(wide(5000)), content: [{ type: "file", url: "https://x.io/a.pdf" }, "/mnt/user-data/b.txt"] };
    expect(refs(extract(m))).toEqual(["https://x.io/a.pdf", "/mnt/user-data/b.txt"]);
  });
});

describe("data fallback", () => {
  it("a payload without known keys is one data entry of its compact JSON", () => {
    const payload = { rows: 42, cols: ["a", "b"], ok: true };
    const e = extract(structured(payload), { callIndex: 1 });
    expect(e).toEqual([
      {
        handle: generateHandle(THREAD, "call-1", 1, 0),
        tool_name: "tool",
        tool_call_id: "call-1",
        call_index: 1,
        artifact_type: "data",
        display_name: "tool structured result",
        real_ref: JSON.stringify(payload),
        created_at: NOW,
      },
    ]);
  });

  it.each([
    ["{}", {}],
    ["[]", []],
    ["null", null],
    ['""', ""],
  ])("the empty payload %s gives nothing", (_, payload) => {
    expect(extract(structured(payload))).toEqual([]);
  });

  it("a scalar payload is data", () => {
    expect(refs(extract(structured(0)))).toEqual(["0"]);
  });

  it("compact JSON of exactly 4096 bytes is data", () => {
    const payload = { note: "n".repeat(4096 - '{"note":""}'.length) };
    expect(refs(extract(structured(payload)))).toEqual([JSON.stringify(payload)]);
  });

  it("compact JSON of 4097 bytes gives nothing", () => {
    expect(extract(structured({ note: "n".repeat(4097 - '{"note":""}'.length) }))).toEqual([]);
  });

  it("a payload whose only known-key value is a rejected data: URI gives nothing", () => {
    expect(extract(structured({ url: "data:image/png;base64,iVBORw0KGgo=", w: 1 }))).toEqual([]);
  });

  it("a known key holding no string still allows data", () => {
    expect(types(extract(structured({ path: null, task_id: 7, files: [1, 2] })))).toEqual(["data"]);
  });

  it("a payload over the node budget gives no data either", () => {
    expect(extract(structured({ pad: new Array(2000).fill(0) }))).toEqual([]);
  });

  it("the display name uses unknown for a nameless tool", () => {
    expect(extract(structured({ a: 1 }, { name: undefined }))[0].display_name).toBe("unknown structured result");
  });

  // DESIGN §4: embedded payloads never enter state or tool arguments. MCP's
  // filesystem server's read_media_file copies its image block into
  // structuredContent ({content: [block]}), which has no known key.
  it.each([
    ["an MCP image block", { content: [{ type: "image", data: "iVBORw0KGgoAAAANSUhEUg==", mimeType: "image/png" }] }],
    ["an MCP audio block", [{ type: "audio", data: "UklGRiQ=", mimeType: "audio/wav" }]],
    ["an embedded resource's blob", { content: [{ type: "resource", resource: { uri: "file:///a.bin", blob: "AQIDBAUGBwg=" } }] }],
    ["an embedded resource's text", { content: [{ type: "resource", resource: { uri: "file:///a.txt", mimeType: "text/plain", text: "secret notes" } }] }],
    ["a LangChain base64 block", { blocks: [{ type: "file", source_type: "base64", data: "JVBERi0=", mime_type: "application/pdf" }] }],
    ["an Anthropic base64 source", { source: { type: "base64", media_type: "image/png", data: "iVBORw0=" } }],
    ["a data: URI under another key", { thumbnail: "DATA:image/png;base64,iVBORw0KGgo=", w: 1 }],
    ["a data: URI inside markdown", { summary: "The chart: ![chart](data:image/png;base64,iVBORw0KGgo=) as drawn." }],
    ["a data: URI as a key", { "data:text/plain,secret": 1 }],
    ["OpenAI's input_audio", { input: [{ type: "input_audio", input_audio: { data: "UklGRiQAAABXQVZFZm10IBAAAAABAAEA", format: "wav" } }] }],
    ["Gemini's inline data", { parts: [{ inline_data: { mime_type: "image/png", data: "iVBORw0KGgo=" } }] }],
    ["Bedrock's bytes", { image: { format: "png", source: { bytes: "iVBORw0KGgoAAAANSUhEUgAAAAE" } } }],
    ["a resource's blob without a type", { resource: { uri: "file:///a.bin", blob: "AQID" } }],
    ["sixteen characters of base64 under data", { id: 7, data: "AbCdEfGh12345678" }],
    // base64url (JWTs, web-safe encoders) as well, so an id of its alphabet counts too.
    ["base64url under data", { id: 7, data: "AbCd-EfGh_1234567" }],
    ["an id in base64url's alphabet under data", { data: "Q3-2024-Sales-Summary", rows: 3 }],
    ["OpenAI's file block (raw base64 under file_data)", { content: [{ type: "file", file: { filename: "a.pdf", file_data: "JVBERi0xLjQKJcfsj6IKNSAw" } }] }],
    ["a data: URI with ;base64 and no media type", { note: "see data:;base64,c2VjcmV0IG5vdGVz" }],
    ["a LangChain base64 block without a MIME type", { blocks: [{ type: "file", source_type: "base64", data: "JVBERi0=" }] }],
    ["base64 with two padding characters under data", { id: 7, data: "iVBORw0KGgoAAAANSUhEUg==" }],
    ["base64 broken into lines under data", { id: 7, data: "iVBORw0KGgoAAAAN\r\nSUhEUgAAAAEAAAAB" }],
  ])("a payload carrying embedded content (%s) gives no data entry", (_, payload) => {
    expect(extract(structured(payload))).toEqual([]);
  });

  it.each([
    ["prose that starts with data:", { note: "data: 5 rows, 3 columns" }],
    ["a key named data", { data: { rows: 5 }, metadata: { blob: 3 } }],
    ["an image block without inline data", { content: [{ type: "image", id: "img-7" }] }],
    ["a word under data", { type: "file", data: "report ready" }],
    ["a short word that is base64's alphabet", { items: [{ type: "image", data: "queued" }] }],
    ["a digest under blob", { tree: [{ blob: "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678" }] }],
    ["text that starts like a data: URI", { note: "data:5,rows", header: "DATA:col1,col2" }],
    ["a CSV with its format", { format: "csv", data: "name,total\nq3,12" }],
    ["a long identifier in both cases with no digit, + or /", { status: "done", data: "CamelCaseIdentifierName" }],
    ["fifteen characters of base64 under data", { id: 7, data: "AbCdEfGh1234567" }],
  ])("a payload without embedded content (%s) is still data", (_, payload) => {
    expect(types(extract(structured(payload)))).toEqual(["data"]);
  });
});

describe("content blocks", () => {
  it.each([
    ["LangChain.js v1 file", { type: "file", url: "https://x.io/a.pdf", mimeType: "application/pdf" }, "file", "application/pdf"],
    ["LangChain.js v1 image", { type: "image", url: "https://x.io/a.png", mimeType: "image/png" }, "image", "image/png"],
    ["legacy / resource_link file", { type: "file", source_type: "url", url: "https://x.io/a.pdf", mime_type: "text/csv" }, "file", "text/csv"],
    ["legacy image", { type: "image", source_type: "url", url: "https://x.io/a.png" }, "image", undefined],
    ["Python source file", { type: "file", source: { url: "https://x.io/a.pdf", mime_type: "application/pdf" } }, "file", "application/pdf"],
    ["Python source image", { type: "image", source: { type: "url", url: "https://x.io/a.png" } }, "image", undefined],
    ["image_url object", { type: "image_url", image_url: { url: "https://x.io/a.png", detail: "low" } }, "image", undefined],
    ["image_url string", { type: "image_url", image_url: "https://x.io/a.png" }, "image", undefined],
  ])("%s block", (_, block, type, mime) => {
    const [e, ...rest] = extract(blocks(block));
    expect(rest).toEqual([]);
    expect(e.artifact_type).toBe(type);
    expect(e.mime_type).toBe(mime);
    expect("mime_type" in e).toBe(mime !== undefined);
    expect(e.display_name).toMatch(/^a\.(pdf|png)$/);
  });

  it.each([
    ["base64 image (standard)", { type: "image", source_type: "base64", data: "iVBORw0KGgo=", mime_type: "image/png" }],
    ["base64 image (v1)", { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" }],
    ["base64 file carrying a uri", { type: "file", source_type: "base64", data: "UEsDBA==", url: "https://x.io/a.zip" }],
    ["text file", { type: "file", source_type: "text", text: "/mnt/user-data/inside.txt" }],
    ["data: image_url", { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }],
    ["blob: image", { type: "image", url: "blob:https://x.io/1" }],
    ["file id", { type: "file", fileId: "file-123" }],
    ["audio", { type: "audio", url: "https://x.io/a.mp3" }],
    ["resource", { type: "resource", resource: { uri: "https://x.io/r.txt", text: "hi" } }],
  ])("%s gives nothing", (_, block) => {
    expect(extract(blocks(block))).toEqual([]);
  });

  it("text blocks and string items are scanned in place", () => {
    const e = extract(
      blocks(
        { type: "file", url: "https://x.io/1.pdf" },
        { type: "text", text: "wrote /mnt/user-data/2.txt and https://x.io/3.csv." },
        "/mnt/user-data/4.md",
        { type: "image", url: "https://x.io/5.png" },
      ),
    );
    expect(refs(e)).toEqual(["https://x.io/1.pdf", "/mnt/user-data/2.txt", "https://x.io/3.csv", "/mnt/user-data/4.md", "https://x.io/5.png"]);
  });

  it("plain-string content is one text", () => {
    expect(refs(extract({ content: "see https://x.io/r.pdf; saved /mnt/user-data/r.pdf." }))).toEqual([
      "/mnt/user-data/r.pdf",
      "https://x.io/r.pdf",
    ]);
  });

  it("detectRefsInText false skips text but keeps structured and block references", () => {
    const m = { ...blocks({ type: "text", text: "/mnt/user-data/a.txt" }, { type: "file", url: "/b" }, "/mnt/user-data/c.txt"), artifact: { structured_content: { path: "/s" } } };
    expect(refs(extract(m, { detectRefsInText: false }))).toEqual(["/s", "/b"]);
    expect(extract({ content: "/mnt/user-data/a.txt" }, { detectRefsInText: false })).toEqual([]);
  });

  it("sandboxPrefixes choose what free text counts as a sandbox path", () => {
    const m = { content: "/workspace/out.csv and /mnt/user-data/x.txt" };
    expect(refs(extract(m, { sandboxPrefixes: ["/workspace/"] }))).toEqual(["/workspace/out.csv"]);
    expect(refs(extract(m))).toEqual(["/mnt/user-data/x.txt"]);
  });

  it("a free-text reference over 4096 bytes is skipped", () => {
    const long = "/mnt/user-data/" + "a".repeat(4082); // 4097 bytes
    const fits = "/mnt/user-data/" + "b".repeat(4081); // 4096 bytes
    expect(refs(extract({ content: `${long} ${fits}` }))).toEqual([fits]);
  });
});

describe("JSON block content (beyond DESIGN's letter)", () => {
  const textBlock = { type: "text", text: "wrote /mnt/user-data/a.txt: 3 bytes", structuredContent: { path: "/mnt/user-data/b.txt", size: 3 } };

  it("string content that is one text block's JSON is read as that block", () => {
    const e = extract({ content: JSON.stringify(textBlock) });
    expect(refs(e)).toEqual(["/mnt/user-data/b.txt", "/mnt/user-data/a.txt"]);
  });

  it("the artifact stays the first structured source; the block's structuredContent is not walked then", () => {
    const m = { content: JSON.stringify(textBlock), artifact: [{ type: "mcp_structured_content", data: { path: "/srv/first" } }] };
    expect(refs(extract(m))).toEqual(["/srv/first", "/mnt/user-data/a.txt"]);
  });

  it("string content that is a file block's JSON gives a block reference with its MIME type", () => {
    const [e, ...rest] = extract({ content: JSON.stringify({ type: "file", url: "https://x.io/a.pdf", mimeType: "application/pdf" }) });
    expect(rest).toEqual([]);
    expect([e.artifact_type, e.real_ref, e.mime_type]).toEqual(["file", "https://x.io/a.pdf", "application/pdf"]);
  });

  it("string content that is a list of handled blocks is read block by block", () => {
    const content = JSON.stringify([
      { type: "image_url", image_url: { url: "https://x.io/1.png" } },
      { type: "text", text: "see /mnt/user-data/2.txt" },
      { type: "image", url: "data:image/png;base64,AAAA" },
    ]);
    expect(refs(extract({ content }))).toEqual(["https://x.io/1.png", "/mnt/user-data/2.txt"]);
  });

  it("leading JSON blanks are allowed", () => {
    expect(refs(extract({ content: ` \n\t\r${JSON.stringify(textBlock)}` }))).toEqual(["/mnt/user-data/b.txt", "/mnt/user-data/a.txt"]);
  });

  it("with detectRefsInText false the block's structured and URL references are still read", () => {
    expect(refs(extract({ content: JSON.stringify(textBlock) }, { detectRefsInText: false }))).toEqual(["/mnt/user-data/b.txt"]);
  });

  it.each([
    ["an object without a type", { path: "/mnt/user-data/a.csv", size: 3 }, ["/mnt/user-data/a.csv"]],
    ["a block type not read here", { type: "resource", text: "/mnt/user-data/a.csv", uri: "https://x.io/r" }, ["/mnt/user-data/a.csv"]],
    ["a non-string type", { type: ["text"], text: "/mnt/user-data/a.csv" }, ["/mnt/user-data/a.csv"]],
    ["a list mixing a handled and an unhandled block", [{ type: "text", text: "x" }, { type: "audio", url: "/mnt/user-data/a.mp3" }], ["/mnt/user-data/a.mp3"]],
    ["a list holding a string", [{ type: "text", text: "x" }, "/mnt/user-data/a.csv"], ["/mnt/user-data/a.csv"]],
    ["an empty list", [], []],
  ])("JSON of %s is not blocks: its strings are scanned (the JSON text rule)", (_, value, expected) => {
    expect(refs(extract({ content: JSON.stringify(value) }))).toEqual(expected);
  });

  it("invalid JSON that starts like an object is scanned as text", () => {
    expect(refs(extract({ content: '{"type":"text","text":"/mnt/user-data/a.txt"' }))).toEqual(["/mnt/user-data/a.txt"]);
  });

  it("only plain-string content is parsed, not the text of a text block", () => {
    const text = JSON.stringify({ type: "file", url: "https://x.io/a.pdf", mimeType: "application/pdf" });
    const [e, ...rest] = extract(blocks({ type: "text", text }));
    expect(rest).toEqual([]);
    expect([e.real_ref, e.mime_type]).toEqual(["https://x.io/a.pdf", undefined]); // found by the scan, not read as a block
  });

  /** A text block's JSON of exactly `units` UTF-16 units whose structuredContent holds "/s". */
  const blockOfUnits = (units: number) => {
    const bare = JSON.stringify({ type: "text", text: "", structuredContent: { path: "/s" } });
    return JSON.stringify({ type: "text", text: "x".repeat(units - bare.length), structuredContent: { path: "/s" } });
  };

  it("string content of exactly 1 MiB is parsed", () => {
    const content = blockOfUnits(2 ** 20);
    expect(content).toHaveLength(2 ** 20);
    expect(refs(extract({ content }))).toEqual(["/s"]);
  });

  it("string content over 1 MiB is scanned as text, never parsed", () => {
    const content = blockOfUnits(2 ** 20 + 1);
    expect(content).toHaveLength(2 ** 20 + 1);
    expect(refs(extract({ content }))).toEqual([]);
  });
});

describe("JSON text (beyond DESIGN's letter)", () => {
  it("a LangChain tool that returns an object gives its references whole, not with the JSON's quotes and commas", async () => {
    const writer = tool(async () => ({ path: "/mnt/user-data/report.csv", size: 12, files: ["/mnt/user-data/a.png", "/mnt/user-data/b.png"] }), {
      name: "writer",
      description: "writes files",
      schema: z.object({}),
    });
    const message = await writer.invoke({ type: "tool_call", id: "call-1", name: "writer", args: {} });
    expect(ToolMessage.isInstance(message) && typeof message.content).toBe("string");
    expect(refs(extractArtifacts(message, { threadId: "t" }))).toEqual(["/mnt/user-data/report.csv", "/mnt/user-data/a.png", "/mnt/user-data/b.png"]);
  });

  it("structured keys are read as in a structured payload, whole and through its gates, then the other strings as one text", () => {
    const content = JSON.stringify({
      "/mnt/user-data/by-key.csv": { url: "https://x.io/api/items" },
      log: "wrote /mnt/user-data/a.txt\nthen https://x.io/b.png and /mnt/user-data/b.txt",
      path: "/mnt/user-data/my report.csv",
      files: ["relative.csv", "data:text/plain,x", { note: "/mnt/user-data/in-list.txt" }],
      job_id: "job-7",
    });
    expect(extract({ content }).map((e) => [e.artifact_type, e.real_ref])).toEqual([
      ["file", "https://x.io/api/items"],
      ["file", "/mnt/user-data/my report.csv"],
      ["task", "job-7"],
      ["file", "/mnt/user-data/by-key.csv"],
      ["file", "/mnt/user-data/a.txt"],
      ["file", "/mnt/user-data/b.txt"],
      ["file", "/mnt/user-data/in-list.txt"],
      ["file", "https://x.io/b.png"],
    ]);
  });

  it("a value under a structured key that its gate refuses is not scanned as text either", () => {
    expect(extract({ content: JSON.stringify({ url: "see /mnt/user-data/a.csv", path: "x\n/mnt/user-data/b.csv" }) })).toEqual([]);
  });

  it("past the walk's budgets every string is text", () => {
    const content = JSON.stringify({ path: "/mnt/user-data/a.csv", pad: new Array(1100).fill(0) });
    expect(refs(extract({ content }))).toEqual(["/mnt/user-data/a.csv"]);
    const spaced = JSON.stringify({ path: "/mnt/user-data/my report.csv", pad: new Array(1100).fill(0) });
    expect(refs(extract({ content: spaced }))).toEqual(["/mnt/user-data/my"]);
  });

  it("escapes are read as JSON reads them (Python's json.dumps escapes non-ASCII)", () => {
    const content = '{"path": "/mnt/user-data/\\u62a5\\u544a.pdf", "q": "\\"/mnt/user-data/quoted.txt\\""}';
    expect(refs(extract({ content }))).toEqual(["/mnt/user-data/报告.pdf", "/mnt/user-data/quoted.txt"]);
  });

  it("a text block that is JSON is read the same way", () => {
    expect(refs(extract(blocks({ type: "text", text: JSON.stringify({ out: "/mnt/user-data/x.csv", n: 1 }) })))).toEqual(["/mnt/user-data/x.csv"]);
  });

  it("nesting far deeper than the stack is read", () => {
    const depth = 200_000;
    const content = "[".repeat(depth) + '"/mnt/user-data/deep.txt"' + "]".repeat(depth);
    expect(refs(extract({ content }))).toEqual(["/mnt/user-data/deep.txt"]);
  });

  it("text that only starts like JSON, and JSON past 1 MiB, is scanned as written", () => {
    expect(refs(extract({ content: '{"path":"/mnt/user-data/a.csv","size":1 and more' }))).toEqual(['/mnt/user-data/a.csv","size":1']);
    const big = JSON.stringify({ path: "/mnt/user-data/a.csv", size: 1, pad: " " + "x".repeat(2 ** 20) });
    expect(refs(extract({ content: big }))).toEqual(['/mnt/user-data/a.csv","size":1,"pad']);
  });

  it("with detectRefsInText false nothing is read from it", () => {
    expect(extract({ content: JSON.stringify({ path: "/mnt/user-data/a.csv" }) }, { detectRefsInText: false })).toEqual([]);
  });
});

describe("structured mirror texts (beyond DESIGN's letter)", () => {
  const payload = { path: "/mnt/user-data/a.csv", size: 3, note: "also /mnt/user-data/notes.txt" };
  const mirror = JSON.stringify(payload);
  const withPayload = (content: unknown) => ({ tool_call_id: "c", content, artifact: { structured_content: payload } });
  const withPayloadOf = (structured: unknown, text: string) => ({ tool_call_id: "c", content: [{ type: "text", text }], artifact: { structured_content: structured } });

  // The payload's walk reads only its structured keys: the note's file is
  // free text in the mirror (a memory server's observations), and scanned.
  it("a text block mirroring the structured payload adds its other strings' references, read as JSON", () => {
    expect(refs(extract(withPayload([{ type: "text", text: mirror }])))).toEqual(["/mnt/user-data/a.csv", "/mnt/user-data/notes.txt"]);
    // The same references in free text as written would come out as junk: `a.csv","size":3,…`.
    expect(refs(extract(withPayload([{ type: "text", text: mirror }])))).not.toContainEqual(expect.stringContaining('"'));
  });

  it("plain-string content and string items mirroring it are read the same way", () => {
    expect(refs(extract(withPayload(mirror)))).toEqual(["/mnt/user-data/a.csv", "/mnt/user-data/notes.txt"]);
    expect(refs(extract(withPayload([mirror])))).toEqual(["/mnt/user-data/a.csv", "/mnt/user-data/notes.txt"]);
  });

  it("a mirror in any JSON layout counts (indented, Python's separators)", () => {
    const python = '{"path": "/mnt/user-data/a.csv", "size": 3, "note": "also /mnt/user-data/notes.txt"}';
    for (const text of [JSON.stringify(payload, null, 2), python]) {
      expect(refs(extract(withPayload([{ type: "text", text }])))).toEqual(["/mnt/user-data/a.csv", "/mnt/user-data/notes.txt"]);
    }
  });

  it("a text item of the artifact list mirroring its structured item adds nothing under a structured key", () => {
    const data = { files: ["/mnt/user-data/a.txt", { note: "see /mnt/user-data/b.txt" }] };
    const message = { tool_call_id: "c", content: "", artifact: [{ type: "mcp_structured_content", data }, { type: "text", text: JSON.stringify(data) }] };
    expect(refs(extract(message))).toEqual(["/mnt/user-data/a.txt"]);
  });

  it("a mirror of the structuredContent on its own block counts", () => {
    expect(refs(extract(blocks({ type: "text", text: mirror, structuredContent: payload })))).toEqual(["/mnt/user-data/a.csv", "/mnt/user-data/notes.txt"]);
  });

  it("a mirror adds nothing under a structured key (the walk read it all) and nothing of embedded content", () => {
    // {files: [["/a"]]}: the nested list is plain to the walk (DESIGN §4), so it is in the data entry only.
    const nested = { files: [["/mnt/user-data/n.csv"]], n: 1 };
    expect(types(extract(withPayloadOf(nested, JSON.stringify(nested))))).toEqual(["data"]);
    // An embedded resource's own text names a path: no reference of this result.
    const embedded = { content: [{ type: "resource", resource: { uri: "file:///notes.txt", text: "see /mnt/user-data/secret.txt" } }], note: "/mnt/user-data/kept.txt" };
    expect(refs(extract(withPayloadOf(embedded, JSON.stringify(embedded))))).toEqual(["/mnt/user-data/kept.txt"]);
  });

  it("a free-text match that is a structured reference cut at a blank is not registered", () => {
    const spaced = { path: "/mnt/user-data/my report.csv", note: "wrote /mnt/user-data/my report.csv" };
    // The mirror, a JSON text that is no mirror, and prose beside the payload.
    for (const text of [JSON.stringify(spaced), JSON.stringify({ ...spaced, n: 2 }), "Saved /mnt/user-data/my report.csv and /mnt/user-data/my-notes.md"]) {
      expect(refs(extract(withPayloadOf(spaced, text))).filter((r) => r !== "/mnt/user-data/my-notes.md")).toEqual(["/mnt/user-data/my report.csv"]);
    }
    // A reference that only starts the same way stays.
    expect(refs(extract(withPayloadOf(spaced, "see /mnt/user-data/my.csv")))).toEqual(["/mnt/user-data/my report.csv", "/mnt/user-data/my.csv"]);
    // So does one that the spaced reference starts with, but not up to its blank.
    expect(refs(extract(withPayloadOf(spaced, "see /mnt/user-data/m and /mnt/user-data/my report.csv")))).toEqual(["/mnt/user-data/my report.csv", "/mnt/user-data/m"]);
    // And one that a later word of the spaced reference gives, however like its start it reads (a property test's counterexample).
    const repeated = "/mnt/user-data/out/r.pdfsee /mnt/user-data/out/r.pdf";
    const json = JSON.stringify({ path: { url: repeated }, "/mnt/user-data/out/r.pdf": 0 });
    expect(refs(extract({ tool_call_id: "c", content: json }))).toEqual([repeated, "/mnt/user-data/out/r.pdf"]);
    expect(refs(extract(withPayloadOf({ path: repeated }, "see /mnt/user-data/out/r.pdf")))).toEqual([repeated, "/mnt/user-data/out/r.pdf"]);
    // A sandbox prefix may hold a blank itself: the cut runs to the blank past it.
    const inSpacedSandbox = extract(withPayloadOf({ path: "/mnt/my data/a b.csv" }, "saved /mnt/my data/a b.csv"), { sandboxPrefixes: ["/mnt/my data/"] });
    expect(refs(inSpacedSandbox)).toEqual(["/mnt/my data/a b.csv"]);
    // Past the prefix's own blank, however long the word after it is.
    const longWord = "/mnt/my data/quarterly report.csv";
    expect(refs(extract(withPayloadOf({ path: longWord }, `saved ${longWord}`), { sandboxPrefixes: ["/mnt/my data/"] }))).toEqual([longWord]);
    // Past the prefix the reference starts with, not a longer one it merely holds.
    const underShortPrefix = "/tmp/a.pdfx /tmp/a.pdf /mnt/user-data/a.pdf";
    const twoPrefixes = extract(withPayloadOf({ path: underShortPrefix }, "see /tmp/a.pdf"), { sandboxPrefixes: ["/tmp/", "/mnt/user-data/"] });
    expect(refs(twoPrefixes)).toEqual([underShortPrefix, "/tmp/a.pdf"]);
    // A reference whose only blank is in its sandbox prefix has no cut: a match that ends where free text strips the
    // punctuation at the text's end has no blank after it (README's rule), under a prefix with a blank as under one without.
    for (const [prefix, whole] of [["/mnt/my data/", "/mnt/my data/x.csv."], ["/mnt/user-data/", "/mnt/user-data/x.csv."]] as const) {
      expect(refs(extract(withPayloadOf({ path: whole }, `saved ${whole}`), { sandboxPrefixes: [prefix] }))).toEqual([whole, whole.slice(0, -1)]);
    }
  });

  it("a cut at a blank is dropped with the punctuation free text strips before the blank", () => {
    for (const whole of ["/mnt/user-data/Smith, John.pdf", "/mnt/user-data/notes: v2.txt", "/mnt/user-data/v1. final.txt", "/mnt/user-data/a). b.csv"]) {
      expect(refs(extract(withPayloadOf({ path: whole }, `Saved ${whole} (3 rows)`)))).toEqual([whole]);
    }
    // A cut that leaves more than the punctuation before the blank is a reference of its own.
    expect(refs(extract(withPayloadOf({ path: "/mnt/user-data/a,b c.csv" }, "see /mnt/user-data/a, then /mnt/user-data/a,b c.csv")))).toEqual(["/mnt/user-data/a,b c.csv", "/mnt/user-data/a"]);
  });

  it("a cut at a blank is dropped with a backtick free text strips before the blank", () => {
    const whole = "/mnt/user-data/`draft` v2.md";
    expect(refs(extract(withPayloadOf({ path: whole }, `Saved ${whole}`)))).toEqual([whole]);
  });

  it("a cut at a blank is dropped whichever source gives the whole reference first, unless another source gives the cut too", () => {
    const whole = "/mnt/user-data/my report.csv";
    const text = { type: "text", text: `Saved ${whole}` };
    const file = { type: "file", url: whole, mimeType: "text/csv" };
    expect(refs(extract(blocks(text, file)))).toEqual([whole]);
    expect(refs(extract(blocks(file, text)))).toEqual([whole]);
    expect(refs(extract(blocks(text, { type: "text", text: JSON.stringify({ path: whole }) })))).toEqual([whole]);
    expect(refs(extract({ tool_call_id: "c", content: `Saved ${whole}`, artifact: [{ type: "file", source_type: "url", url: whole }] }))).toEqual([whole]);
    // Dropped entries take no ordinal: the handle is the one a result of the whole reference alone gets.
    expect(extract(blocks(text, file)).map((e) => e.handle)).toEqual(extract(blocks(file)).map((e) => e.handle));
    // A block that names the cut itself keeps it, in the place free text gave it.
    expect(refs(extract(blocks(text, { type: "file", url: "/mnt/user-data/my" }, file)))).toEqual(["/mnt/user-data/my", whole]);
  });

  it("a cut at a blank inside a longer sandbox prefix is dropped, whichever prefix is listed first and whichever source comes first", () => {
    const whole = "/mnt/my data/x.csv";
    // "/mnt/" listed first: a text naming the reference gives "/mnt/my", the reference cut at its prefix's blank.
    expect(refs(extract(blocks({ type: "file", url: whole }, { type: "text", text: `saved ${whole}` }), { sandboxPrefixes: ["/mnt/", "/mnt/my data/"] }))).toEqual([whole]);
    // The longer prefix first: a text naming only the start of a reference under it gives that cut.
    const spaced = "/mnt/my data/x y.csv";
    expect(refs(extract(blocks({ type: "file", url: spaced }, { type: "text", text: "saved /mnt/my d" }), { sandboxPrefixes: ["/mnt/my data/", "/mnt/"] }))).toEqual([spaced]);
    // Free text gives the whole reference before the block does.
    expect(refs(extract(blocks({ type: "text", text: `saved ${whole} and /mnt/my d` }, { type: "file", url: whole }), { sandboxPrefixes: ["/mnt/my data/", "/mnt/"] }))).toEqual([whole]);
    // A match whose end free text strips reaches into its prefix ("/mnt/my" of "/mnt/my..." under "/mnt/my.").
    expect(refs(extract(blocks({ type: "file", url: "/mnt/my. data/x" }, { type: "text", text: "see /mnt/my..." }), { sandboxPrefixes: ["/mnt/my."] }))).toEqual(["/mnt/my. data/x"]);
  });

  it("a data entry is no reference cut at a blank: a free-text match its JSON starts with stays", () => {
    const m = withPayloadOf({ note: "a b" }, 'said {"note":"a b"}');
    expect(refs(extract(m, { sandboxPrefixes: ['{"note":"'] }))).toEqual(['{"note":"a b"}', '{"note":"a']);
  });

  it("a mirror of a payload without structured keys gives its data entry and the references in its strings", () => {
    // @modelcontextprotocol/server-memory's read_graph: the graph as structuredContent and as its JSON text.
    const graph = { entities: [{ name: "Q3", entityType: "report", observations: ["saved to /mnt/user-data/q3.pdf", "source https://example.com/data/q3.csv"] }], relations: [] };
    const e = extract({ tool_call_id: "c", name: "read_graph", content: [{ type: "text", text: JSON.stringify(graph, null, 2) }], artifact: [{ type: "mcp_structured_content", data: graph }] });
    expect(e.map((x) => [x.artifact_type, x.real_ref])).toEqual([
      ["data", JSON.stringify(graph)],
      ["file", "/mnt/user-data/q3.pdf"],
      ["file", "https://example.com/data/q3.csv"],
    ]);
  });

  it("a mirror of an over-budget payload is read as text: the payload gave nothing, and the other sources are still captured (DESIGN §4)", () => {
    const big = { path: "/mnt/user-data/a.csv", pad: new Array(1100).fill(0) };
    const rejected: string[] = [];
    const m = { content: [{ type: "text", text: JSON.stringify(big) }], artifact: { structured_content: big } };
    // Past the walk's budgets, every string of a JSON text is free text.
    expect(refs(extractArtifacts(m, { threadId: "t", onRejectedPayload: (reason) => rejected.push(reason) }))).toEqual(["/mnt/user-data/a.csv"]);
    expect(rejected).toEqual(["nodes"]);
  });

  it("checking a mirror reads no more of the payload than the text's length allows", () => {
    let reads = 0;
    const counted = { get v() { reads++; return 0; } };
    const payload = new Array(100_000).fill(counted);
    const m = { content: [{ type: "text", text: "[0, 0]" }], artifact: { structured_content: payload } };
    expect(extract(m)).toEqual([]);
    // The walk stops at its node budget; the mirror check at the text's two items.
    expect(reads).toBeGreaterThan(0);
    expect(reads).toBeLessThan(2 * 1024);
  });

  // Not mirrors: their strings are scanned (the JSON text rule), so the note's file comes too.
  it("JSON of a different payload is scanned", () => {
    const other = JSON.stringify({ ...payload, size: 4 });
    expect(refs(extract(withPayload([{ type: "text", text: other }])))).toEqual(["/mnt/user-data/a.csv", "/mnt/user-data/notes.txt"]);
  });

  it("the same members in another order are not a mirror (JSON.stringify differs)", () => {
    const reordered = JSON.stringify({ note: payload.note, size: 3, path: payload.path });
    expect(refs(extract(withPayload([{ type: "text", text: reordered }])))).toEqual(["/mnt/user-data/a.csv", "/mnt/user-data/notes.txt"]);
  });

  it("JSON text is scanned when the result has no structured payload", () => {
    expect(refs(extract(blocks({ type: "text", text: mirror })))).toEqual(["/mnt/user-data/a.csv", "/mnt/user-data/notes.txt"]);
  });

  /** A payload without known keys whose mirror is exactly `units` UTF-16 units. */
  const padded = (units: number) => {
    const bare = JSON.stringify({ pad: "", note: "/mnt/user-data/n.txt" });
    return { pad: "x".repeat(units - bare.length), note: "/mnt/user-data/n.txt" };
  };

  it("a mirror of exactly 1 MiB is read as JSON", () => {
    const p = padded(2 ** 20);
    expect(JSON.stringify(p)).toHaveLength(2 ** 20);
    expect(refs(extract({ content: [{ type: "text", text: JSON.stringify(p) }], artifact: { structured_content: p } }))).toEqual(["/mnt/user-data/n.txt"]);
  });

  it("a mirror over 1 MiB is scanned as text", () => {
    const p = padded(2 ** 20 + 1);
    const m = { content: [{ type: "text", text: JSON.stringify(p) }], artifact: { structured_content: p } };
    expect(refs(extract(m))).toEqual(["/mnt/user-data/n.txt"]);
  });
});

describe("order, ordinals and de-duplication", () => {
  it("structured first, then blocks in order; ordinals count kept entries", () => {
    const m = {
      tool_call_id: "c",
      content: [{ type: "text", text: "/mnt/user-data/t.txt" }, { type: "image", url: "data:x" }, { type: "file", url: "/f" }],
      artifact: [{ type: "mcp_structured_content", data: { path: "/s", url: "data:bad" } }],
    };
    const e = extract(m);
    expect(refs(e)).toEqual(["/s", "/mnt/user-data/t.txt", "/f"]);
    expect(e.map((x) => x.handle)).toEqual([0, 1, 2].map((i) => generateHandle(THREAD, "c", 0, i)));
  });

  it("a reference already taken from an earlier source is skipped without using an ordinal", () => {
    const m = {
      tool_call_id: "c",
      content: [
        { type: "text", text: "saved /mnt/user-data/r.pdf" },
        { type: "file", source_type: "url", url: "/mnt/user-data/r.pdf", mime_type: "application/pdf" },
        { type: "file", url: "https://x.io/new.csv" },
        "again /mnt/user-data/r.pdf and https://x.io/new.csv",
      ],
      artifact: { structured_content: { files: ["/mnt/user-data/r.pdf", "/mnt/user-data/r.pdf"] } },
    };
    const e = extract(m);
    expect(refs(e)).toEqual(["/mnt/user-data/r.pdf", "https://x.io/new.csv"]);
    expect(e[1].handle).toBe(generateHandle(THREAD, "c", 0, 1));
    expect(e[0].mime_type).toBeUndefined(); // the first occurrence wins whole
  });

  it("an artifact list's blocks come after the content's references", () => {
    const m = { tool_call_id: "c", content: "see /mnt/user-data/a.txt", artifact: [{ type: "file", source_type: "url", url: "https://x.example/b.pdf" }] };
    expect(refs(extract(m))).toEqual(["/mnt/user-data/a.txt", "https://x.example/b.pdf"]);
  });

  it("image and image_url blocks in the artifact list are read; a resource's uri must pass the reference gate", () => {
    const artifact = [
      { type: "image", url: "https://x.example/a.png", mimeType: "image/png" },
      { type: "image_url", image_url: { url: "https://x.example/b.png" } },
      { type: "resource", resource: { uri: "file:///c.bin", mimeType: "application/octet-stream", blob: "AQID" } },
    ];
    expect(extract({ tool_call_id: "c", content: "", artifact }).map((e) => [e.artifact_type, e.real_ref])).toEqual([
      ["image", "https://x.example/a.png"],
      ["image", "https://x.example/b.png"],
    ]);
  });

  it("string content that is an image_url block's JSON is read as that block", () => {
    const content = JSON.stringify({ type: "image_url", image_url: { url: "https://x.example/a.png" } });
    expect(extract({ tool_call_id: "c", content }).map((e) => [e.artifact_type, e.real_ref])).toEqual([["image", "https://x.example/a.png"]]);
  });

  it("a repeat is skipped however many references came before it", () => {
    const files = Array.from({ length: 40 }, (_, i) => `/mnt/user-data/f${i}.txt`);
    const m = { content: [{ type: "text", text: `again ${files[3]} ${files[39]} new /mnt/user-data/new.txt` }, { type: "file", url: files[20] }], artifact: { structured_content: { files } } };
    expect(refs(extract(m))).toEqual([...files, "/mnt/user-data/new.txt"]);
  });

  it("handles are unique within a result", () => {
    const text = Array.from({ length: 50 }, (_, i) => `/mnt/user-data/f${i}.txt`).join(" ");
    const handles = extract({ content: text }).map((e) => e.handle);
    expect(handles).toHaveLength(50);
    expect(new Set(handles).size).toBe(50);
  });
});

describe("a message that says it is no tool result", () => {
  it.each([
    ["a HumanMessage", new HumanMessage("see /mnt/user-data/a.txt")],
    ["an AIMessage", new AIMessage("see /mnt/user-data/a.txt")],
    ["a plain {type: 'ai'}", { type: "ai", tool_call_id: "c", content: "/mnt/user-data/a.txt" }],
    ["OpenAI's {role: 'assistant'}, as scanBatch skips it", { role: "assistant", content: "/mnt/user-data/a.txt" }],
    ["an empty type, which is no tool's", { type: "", tool_call_id: "c", content: "/mnt/user-data/a.txt" }],
  ])("is refused: %s", (_, m) => {
    expect(() => extract(m)).toThrow(/^extractArtifacts: message is not a tool result \(it says "(human|ai|assistant|)"\)$/);
  });

  it.each(["toolCallId", "toolCallID", "tool-call-id", "TOOL_CALL_ID"])("is refused with tool_call_id spelt %s, which would seed every such result alike", (key) => {
    expect(() => extract({ content: "/mnt/user-data/a.txt", [key]: "call_1" })).toThrow(`extractArtifacts: the message has "${key}"; did you mean tool_call_id?`);
  });

  it("takes the serialized and stored forms of a ToolMessage, and Python's chunk type, as the message (a serialized one was refused, or read as no result)", () => {
    const message = new ToolMessage({ content: "/mnt/user-data/a.txt", tool_call_id: "c", id: "m-1", name: "read" });
    const want = extract(message);
    expect(want).toHaveLength(1);
    expect(extract(JSON.parse(JSON.stringify(message)))).toEqual(want);
    expect(extract({ type: "tool", data: { content: "/mnt/user-data/a.txt", tool_call_id: "c", id: "m-1", name: "read" } })).toEqual(want);
    expect(extract({ type: "ToolMessageChunk", content: "/mnt/user-data/a.txt", tool_call_id: "c", id: "m-1", name: "read" })).toEqual(want);
    // Another class serialized is another kind of message; a misspelt id inside kwargs is seen too.
    expect(() => extract(JSON.parse(JSON.stringify(new AIMessage("/mnt/user-data/a.txt"))))).toThrow('extractArtifacts: message is not a tool result (it says "AIMessage")');
    const serialized = JSON.parse(JSON.stringify(message));
    serialized.kwargs = { content: "/mnt/user-data/a.txt", toolCallId: "c" };
    expect(() => extract(serialized)).toThrow('extractArtifacts: the message has "toolCallId"; did you mean tool_call_id?');
  });

  it("takes a tool message with its own content beside a data field as the message, not as the stored form", () => {
    // Only {type, data} with no result fields of its own is LangChain's stored form.
    const message = { type: "tool", name: "export", id: "m1", content: "wrote /mnt/user-data/out.csv", data: { rows: 3 } };
    expect(extract(message).map((e) => e.real_ref)).toEqual(["/mnt/user-data/out.csv"]);
  });

  it("sees tool_call_id spelt otherwise beside another key whose getter throws (odd data elsewhere in the message)", () => {
    // The throwing key comes first, so it is met before the misspelt one.
    const message = Object.assign(Object.defineProperty({}, "boom", { enumerable: true, get: () => { throw new Error("odd"); } }), { toolCallId: "c1", content: "/mnt/user-data/a.txt" });
    expect(() => extract(message)).toThrow('extractArtifacts: the message has "toolCallId"; did you mean tool_call_id?');
  });

  it("reads a near miss given as undefined as no key, and an error result as none before asking", () => {
    expect(extract({ content: "/mnt/user-data/a.txt", toolCallId: undefined })).toEqual(extract({ content: "/mnt/user-data/a.txt" }));
    expect(extract({ content: "/mnt/user-data/a.txt", toolCallId: "c", status: "error" })).toEqual([]);
  });

  it("is not a ToolMessage, a {type: 'tool'} object, or one without tool_call_id and without a near miss", () => {
    const a = extract(new ToolMessage({ content: "/mnt/user-data/a.txt", tool_call_id: "c" }));
    expect(extract({ type: "tool", content: "/mnt/user-data/a.txt", tool_call_id: "c" })).toEqual(a);
    // No tool_call_id given: seeded with "" (DESIGN §2), told apart by callIndex; beside a near miss the given one counts.
    expect(extract({ content: "/mnt/user-data/a.txt", toolCallId: "c", tool_call_id: "c" })).toEqual(a);
    expect(extract({ content: "/mnt/user-data/a.txt" })[0]!.handle).toBe(generateHandle(THREAD, "", 0, 0));
  });
});

describe("totality on odd input", () => {
  it.each([
    ["null", null],
    ["undefined", undefined],
    ["a number", 42],
    ["a string", "/mnt/user-data/a.txt"],
    ["an array", ["/mnt/user-data/a.txt"]],
    ["a function", () => 1],
  ])("a message that is %s gives nothing", (_, m) => {
    expect(extract(m)).toEqual([]);
  });

  it.each([
    ["null", null],
    ["a number", 7],
    ["a boolean", true],
    ["an object", { type: "text", text: "/mnt/user-data/a.txt" }],
    ["nested arrays", [["/mnt/user-data/a.txt"]]],
    ["an array of junk", [null, 1, undefined, true, Symbol("s"), 10n, { type: 5 }, { type: "text", text: 9 }, { type: "file", url: 5 }]],
  ])("content that is %s gives nothing", (_, content) => {
    expect(extract({ content })).toEqual([]);
  });

  it("a cyclic structured payload is rejected; other sources are kept", () => {
    const payload: Record<string, unknown> = { path: "/a" };
    payload.self = payload;
    expect(refs(extract({ ...structured(payload), content: "/mnt/user-data/k.txt" }))).toEqual(["/mnt/user-data/k.txt"]);
  });

  it("a BigInt in the structured payload rejects it", () => {
    expect(extract(structured({ path: "/a", n: 10n }))).toEqual([]);
  });

  it("cyclic content and artifact arrays are read once", () => {
    const content: unknown[] = ["/mnt/user-data/a.txt"];
    content.push(content);
    const artifact: unknown[] = [];
    artifact.push(artifact);
    expect(refs(extract({ content, artifact }))).toEqual(["/mnt/user-data/a.txt"]);
  });

  it("throwing getters are read as missing", () => {
    const boom = () => {
      throw new Error("boom");
    };
    const m = Object.defineProperties({}, { content: { get: boom }, status: { get: boom }, name: { get: boom }, artifact: { get: boom } });
    expect(extract(m)).toEqual([]);
    const block = Object.defineProperty({ type: "file" }, "url", { get: boom });
    expect(refs(extract({ content: [block, "/mnt/user-data/ok.txt"] }))).toEqual(["/mnt/user-data/ok.txt"]);
  });

  it("reads long content and artifact arrays by the items they hold, not by their length", () => {
    // A tool can return content whose length claims billions of slots with
    // one block in them; read slot by slot, 2^32 - 1 of them stalled capture
    // for minutes. Ten million here, so that reading them all fails in seconds.
    const sparse = (first: unknown, last: unknown) => {
      const items: unknown[] = [first];
      items.length = 10_000_000;
      items[9_999_999] = last;
      return items;
    };
    let reads = 0;
    const slot = (k: PropertyKey) => typeof k === "string" && /^\d+$/.test(k) && reads++;
    const watched = (items: unknown[]) => new Proxy(items, { get: (t, k, r) => (slot(k), Reflect.get(t, k, r)), has: (t, k) => (slot(k), Reflect.has(t, k)) });
    const content = watched(sparse({ type: "text", text: "/mnt/user-data/a.txt" }, { type: "file", url: "https://x.test/b.pdf" }));
    const artifact = watched(sparse({ type: "mcp_structured_content", data: { path: "/srv/c.csv" } }, null));
    expect(refs(extract({ content, artifact }))).toEqual(["/srv/c.csv", "/mnt/user-data/a.txt", "https://x.test/b.pdf"]);
    // Slot by slot only until 65,536 of them held nothing, then by their keys.
    expect(reads).toBeLessThan(1_000_000);
  });

  it("a revoked proxy as message, content or block gives nothing from it", () => {
    const revoked = () => {
      const p = Proxy.revocable({}, {});
      p.revoke();
      return p.proxy;
    };
    expect(extract(revoked())).toEqual([]);
    expect(extract({ content: revoked() })).toEqual([]);
    expect(refs(extract({ content: [revoked(), "/mnt/user-data/ok.txt"], artifact: revoked() }))).toEqual(["/mnt/user-data/ok.txt"]);
  });

  it("__proto__ keys are walked as plain keys and pollute nothing", () => {
    const payload = JSON.parse('{"__proto__": {"path": "/from/proto", "polluted": true}, "constructor": {"prototype": {"polluted": true}}}');
    const block = JSON.parse('{"__proto__": {"type": "file", "url": "/from/block/proto"}, "type": "text", "text": "x"}');
    const e = extract({ ...structured(payload), content: [block] });
    expect(refs(e)).toEqual(["/from/proto"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).path).toBeUndefined();
    expect(Object.keys(Object.prototype)).toEqual([]);
  });

  it("lone surrogates in text and structured values do not throw", () => {
    const m = { ...structured({ path: "/a\ud800b", job_id: "j\udc00" }), content: "\ud800 /mnt/user-data/x\udfff.txt \udc00" };
    const e = extract(m);
    expect(refs(e).slice(0, 2)).toEqual(["/a\ud800b", "j\udc00"]);
    expect(e).toHaveLength(3);
    expect(e[2].real_ref.startsWith("/mnt/user-data/x")).toBe(true);
  });

  it("JSON text nested deeper than the stack is harmless as content and as a mirror candidate", () => {
    const deep = "[".repeat(200_000) + "]".repeat(200_000);
    expect(extract({ content: deep })).toEqual([]);
    expect(refs(extract({ content: [{ type: "text", text: deep }], artifact: { structured_content: { path: "/a" } } }))).toEqual(["/a"]);
    expect(refs(extract({ content: deep, artifact: { structured_content: { path: "/a" } } }))).toEqual(["/a"]);
  });

  it("a 32 MB text is scanned to the end", () => {
    const big = "lorem ipsum ".repeat(32 * 1024 * 1024 / 12) + " /mnt/user-data/last.txt";
    expect(refs(extract({ content: big }))).toEqual(["/mnt/user-data/last.txt"]);
  });

  it("a hostile URL run (144 KB of http://a.) finishes with no entries", () => {
    expect(extract({ content: "http://a.".repeat(16_000) })).toEqual([]);
  });
});

describe("engine memory", () => {
  // WebAssembly memory only grows: after a huge result, the next ordinary
  // extraction starts on a fresh engine instance instead of keeping it.
  it("gives back the memory a huge text result grew at the next ordinary extraction", () => {
    const options: ExtractOptions = { threadId: "t", now: () => "2025-01-02T03:04:05.000Z" };
    const huge = extractArtifacts({ type: "tool", tool_call_id: "big", content: "x ".repeat(20_000_000) + "/mnt/user-data/huge.csv" }, options);
    expect(huge.map((e) => e.real_ref)).toEqual(["/mnt/user-data/huge.csv"]);
    expect(engine().memory.buffer.byteLength).toBeGreaterThan(64 << 20);
    const small = { type: "tool", tool_call_id: "c", content: "see /mnt/user-data/a.csv and https://x.example/b.png" };
    const entries = extractArtifacts(small, options);
    expect(engine().memory.buffer.byteLength).toBeLessThan(4 << 20);
    expect(entries.map((e) => e.real_ref)).toEqual(["/mnt/user-data/a.csv", "https://x.example/b.png"]);
    expect(entries[0].handle).toBe(generateHandle("t", "c", 0, 0));
  });

  it("keeps it within one extraction: a result with several huge texts grows it once", () => {
    const options: ExtractOptions = { threadId: "t", now: () => "2025-01-02T03:04:05.000Z" };
    extractArtifacts({ type: "tool", tool_call_id: "small", content: "/mnt/user-data/a.csv" }, options); // starts small
    let rebuilds = 0;
    onRebuild(() => rebuilds++);
    const huge = (name: string) => ({ type: "text", text: "x ".repeat(20_000_000) + `/mnt/user-data/${name}.csv` });
    const content = [huge("one"), { type: "text", text: "/mnt/user-data/small.csv" }, huge("two")];
    const entries = extractArtifacts({ type: "tool", tool_call_id: "big", content }, options);
    expect(entries.map((e) => e.real_ref)).toEqual(["/mnt/user-data/one.csv", "/mnt/user-data/small.csv", "/mnt/user-data/two.csv"]);
    expect(rebuilds).toBe(0);
  });

  it("keeps it for a huge text result after a huge one: only an ordinary result gives it back", () => {
    const options: ExtractOptions = { threadId: "t", now: () => "2025-01-02T03:04:05.000Z" };
    const huge = (name: string) => ({ type: "tool", tool_call_id: name, content: "x ".repeat(20_000_000) + `/mnt/user-data/${name}.csv` });
    extractArtifacts(huge("one"), options);
    let rebuilds = 0;
    onRebuild(() => rebuilds++);
    expect(extractArtifacts(huge("two"), options).map((e) => e.real_ref)).toEqual(["/mnt/user-data/two.csv"]);
    expect(rebuilds).toBe(0);
  });

  it("gives it back at the next ordinary scanText too", () => {
    expect(scanText("x ".repeat(20_000_000) + "/mnt/user-data/huge.csv").map((r) => r.ref)).toEqual(["/mnt/user-data/huge.csv"]);
    expect(engine().memory.buffer.byteLength).toBeGreaterThan(64 << 20);
    expect(scanText("see /mnt/user-data/a.csv").map((r) => r.ref)).toEqual(["/mnt/user-data/a.csv"]);
    expect(engine().memory.buffer.byteLength).toBeLessThan(4 << 20);
  });

  it("keeps no view of a replaced instance's memory alive (scanning, walking, hashing)", async () => {
    // Each facade caches its views over the big memory...
    expect(scanText("x ".repeat(20_000_000) + "/mnt/user-data/huge.csv")).toHaveLength(1);
    expect(walkStructured({ path: "/mnt/user-data/j.csv" }).refs).toHaveLength(1);
    expect(generateHandle("t", "c", 0, 0)).toMatch(/^art_/);
    const old = new WeakRef(engine().memory.buffer);
    expect(old.deref()!.byteLength).toBeGreaterThan(64 << 20);
    // ...then an extraction that neither scans nor walks starts a fresh instance.
    const options: ExtractOptions = { threadId: "t", now: () => "2025-01-02T03:04:05.000Z" };
    expect(extractArtifacts({ type: "tool", tool_call_id: "img", content: [{ type: "image_url", image_url: { url: "https://x.example/a.png" } }] }, options)).toHaveLength(1);
    expect(engine().memory.buffer.byteLength).toBeLessThan(4 << 20);
    await new Promise((resolve) => setTimeout(resolve, 0)); // a WeakRef target lives to the end of the job
    collectGarbage();
    // Not toBeUndefined(): a failure would print the 85 MB buffer.
    expect(old.deref() === undefined, "the replaced memory is still reachable").toBe(true);
  });
  it("keeps no tool result alive through the entries it gave (references are not views of the text)", () => {
    const options: ExtractOptions = { threadId: "t", now: () => "2025-01-02T03:04:05.000Z" };
    const before = heapAfterGc();
    // 40 results of 1 MiB, each naming one file (a lone surrogate in some, which a copy must keep).
    const entries = Array.from({ length: 40 }, (_, i) => {
      const name = i % 2 ? `/mnt/user-data/run-${i}/out.csv` : `/mnt/user-data/run-${i}/\ud800.csv`;
      return extractArtifacts({ type: "tool", tool_call_id: `c${i}`, content: `${String(i).padEnd(1 << 20, ".")} wrote ${name} ok` }, options)[0]!;
    });
    const held = heapAfterGc() - before;
    expect(entries.map((e) => e.real_ref)).toEqual(entries.map((_, i) => (i % 2 ? `/mnt/user-data/run-${i}/out.csv` : `/mnt/user-data/run-${i}/\ud800.csv`)));
    expect(entries[0]!.display_name).toBe("\ud800.csv");
    // 40 MiB if each entry kept its result; the entries themselves take a few KB.
    expect(held, `${(held / 2 ** 20).toFixed(1)} MiB held`).toBeLessThan(8 << 20);
  });
});

describe("JSON text: a list under a known key", () => {
  it("goes through the structured walk whole, not through the free-text scan", () => {
    // Scanned as free text, a path runs to the next blank: `/mnt/user-data/my`.
    const content = JSON.stringify({ files: ["/mnt/user-data/my report.csv"] });
    expect(refs(extract({ tool_call_id: "c", name: "t", content }))).toEqual(["/mnt/user-data/my report.csv"]);
  });

  it("its other strings are free text in document order, each key before its value", () => {
    const content = JSON.stringify({ "/mnt/user-data/k.txt": ["/mnt/user-data/a.txt", "/mnt/user-data/b.txt"] });
    expect(refs(extract({ tool_call_id: "c", name: "t", content }))).toEqual(["/mnt/user-data/k.txt", "/mnt/user-data/a.txt", "/mnt/user-data/b.txt"]);
  });

  it("a string item that the gate refuses is not scanned as text either", () => {
    const content = JSON.stringify({ files: ["see /mnt/user-data/a.csv"], rows: 1 });
    expect(extract({ tool_call_id: "c", name: "t", content })).toEqual([]);
  });

  it("as a text block too", () => {
    const text = JSON.stringify({ urls: ["/mnt/user-data/a b.pdf"], note: "see /mnt/user-data/n.txt" });
    expect(refs(extract({ tool_call_id: "c", name: "t", content: [{ type: "text", text }] }))).toEqual([
      "/mnt/user-data/a b.pdf",
      "/mnt/user-data/n.txt",
    ]);
  });
});

describe("url block mime type", () => {
  it("a block's own mimeType is taken before its mime_type (as the lines engine does)", () => {
    const block = { type: "file", url: "https://x.example/a.pdf", mimeType: "application/pdf", mime_type: "text/plain" };
    const [entry] = extract({ tool_call_id: "c", name: "t", content: [block] });
    expect(entry.mime_type).toBe("application/pdf");
  });

  it("a source object's mime_type is taken before its mimeType", () => {
    const block = { type: "image", source: { url: "https://x.example/a.png", mime_type: "image/png", mimeType: "image/jpeg" } };
    const [entry] = extract({ tool_call_id: "c", name: "t", content: [block] });
    expect(entry.mime_type).toBe("image/png");
  });

  it("a block whose source_type is null is no url block (a source_type other than url; the engine's line path reads it so too)", () => {
    expect(extract(blocks({ type: "file", source_type: null, url: "https://x.example/a.pdf", mime_type: "application/pdf" }))).toEqual([]);
  });

  it("an embedded-data block's mime_type is taken before its mimeType", () => {
    const block = { type: "file", source_type: "base64", data: "JVBERi0=", mime_type: "application/pdf", mimeType: "text/plain", metadata: { uri: "https://x.example/a.pdf" } };
    const [entry] = extract({ tool_call_id: "c", name: "t", content: [block] });
    expect([entry.real_ref, entry.mime_type]).toEqual(["https://x.example/a.pdf", "application/pdf"]);
  });

  it("an entry's keys are in ArtifactEntry's order: mime_type before created_at", () => {
    const [entry] = extract(blocks({ type: "file", url: "https://x.example/a.pdf", mimeType: "application/pdf" }));
    expect(Object.keys(entry)).toEqual(["handle", "tool_name", "tool_call_id", "call_index", "artifact_type", "display_name", "real_ref", "mime_type", "created_at"]);
  });
});

describe("options.callIndex", () => {
  it.each([2 ** 53, Number.MAX_VALUE])("%s (an integer, but not a safe one) is a TypeError even when the result gives no entries", (callIndex) => {
    expect(() => extract({ content: "" }, { callIndex })).toThrow(/options\.callIndex must be a non-negative integer/);
  });
});

describe("created_at", () => {
  it("is read from the clock once per result: every entry of the result has the same time", () => {
    let ticks = 0;
    const now = () => `2025-01-02T03:04:0${ticks++}.000Z`;
    const entries = extract(
      { tool_call_id: "c", name: "t", content: "/mnt/user-data/a.txt /mnt/user-data/b.txt https://x.example/c.png" },
      { now },
    );
    expect(entries).toHaveLength(3);
    expect(entries.map((e) => e.created_at)).toEqual(Array(3).fill("2025-01-02T03:04:00.000Z"));
    expect(ticks).toBe(1);
  });
});

describe("extractArtifacts: bounds, block types and null options", () => {
  const T = { threadId: "t" };

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

describe("extractArtifacts: the clock", () => {
  it("refuses a now() that answers undefined, also before any good time was checked", async () => {
    vi.resetModules();
    const fresh = await import("../src/extract.js"); // its last good time not yet set
    expect(() => fresh.extractArtifacts({ content: "/mnt/user-data/a.txt", tool_call_id: "c" }, { threadId: "t", now: () => undefined as never })).toThrow(TypeError);
  });
});
