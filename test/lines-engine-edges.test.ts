// Engine line-path edges a hand mutation run on assembly/ found no other
// test pinned down. Each test checks that the engine itself took the line
// (stats.engineLines), so a pass is not the TypeScript path agreeing with itself.
import { describe, expect, it } from "vitest";
import { unpackLineResult } from "../src/batch/packing.js";
import { scanLinesPacked, scanLinesPackedJs, type LinePathStats, type LineScanOptions } from "../src/batch/scan.js";
import { engine } from "../src/engine/wasm.js";

const OPTIONS: LineScanOptions = { format: "jsonl", createdAt: "2025-01-02T03:04:05.000Z" };

function both(line: string, extra: Partial<LineScanOptions> = {}) {
  const bytes = new Uint8Array(Buffer.from(line + "\n", "utf8"));
  const options = { ...OPTIONS, ...extra };
  const stats: LinePathStats = { engineLines: 0, jsLines: 0 };
  const engine = unpackLineResult(scanLinesPacked(bytes, options, { stats }));
  const reference = unpackLineResult(scanLinesPackedJs(bytes, options));
  return {
    stats,
    engine: Buffer.from(engine.output).toString("utf8"),
    reference: Buffer.from(reference.output).toString("utf8"),
    entries: engine.entries,
    referenceEntries: reference.entries,
    failures: { engine: engine.failures, reference: reference.failures },
  };
}

/** A tool result line with this content and artifact (either may be undefined). */
const toolLine = (content: unknown, artifact?: unknown) =>
  JSON.stringify({ thread_id: "t", message: { type: "tool", tool_call_id: "c", content, ...(artifact === undefined ? {} : { artifact }) } });

/** The same line written by hand, for JSON text JSON.stringify would not write (escapes kept as written): content text, or a payload. */
const textLine = (escapedText: string) => `{"thread_id":"t","message":{"type":"tool","tool_call_id":"c","content":"${escapedText}"}}`;
const dataLine = (payload: string) => `{"thread_id":"t","message":{"type":"tool","tool_call_id":"c","content":"ok","artifact":{"structured_content":${payload}}}}`;

describe("engine output JSON: control characters in a reference", () => {
  // A sandbox path in free text ends at a Python space; C0 controls that are
  // not spaces (0x10, 0x1a, 0x01) stay in it and come out as \u00XX escapes,
  // lower-case hex, as JSON.stringify writes them.
  it.each([
    ["\u0010", "\\u0010"],
    ["\u001a", "\\u001a"],
    ["\u001b", "\\u001b"],
    ["\u0001", "\\u0001"],
  ])("writes %j in a ref as %s", (ch, escaped) => {
    const line = toolLine(`see /mnt/user-data/a${ch}b.csv now`);
    const got = both(line);
    expect(got.stats.engineLines).toBe(1);
    expect(got.entries).toBeGreaterThan(0);
    expect(got.engine).toBe(got.reference);
    expect(got.engine).toContain(`/mnt/user-data/a${escaped}b.csv`);
  });
});

describe("engine data entries: the compact size of lone surrogate escapes", () => {
  // JSON.stringify keeps a lone surrogate as a 6-byte \uXXXX escape; the
  // engine's compact size must count 6, not the 3 bytes of U+FFFD, or a
  // payload just over MAX_REF_BYTES (4096) becomes a `data` entry. High
  // (U+D800..U+DBFF) and low (U+DC00..U+DFFF) alike.
  for (const [count, entries, lone] of [[600, 1, "\\ud800"], [700, 0, "\\ud800"], [600, 1, "\\udc00"], [700, 0, "\\udc00"]] as const) {
    it(`${count} lone surrogates ${lone}: ${entries ? "a data entry" : "too big for one"}`, () => {
      const payload = `{"x":"${lone.repeat(count)}"}`;
      const line = dataLine(payload);
      const got = both(line);
      expect(got.engine).toBe(got.reference);
      expect(got.entries).toBe(entries);
      // Too big for a data entry, the payload needs no compact copy: the engine keeps the line.
      if (!entries) expect(got.stats.engineLines).toBe(1);
    });
  }
});

describe("the file gate: C1 controls at the ends of the range", () => {
  // DESIGN §4: no control characters in a reference; C1 is U+0080..U+009F, both ends included.
  it.each(["\u007f", "\u0080", "\u009e", "\u009f"])("rejects a path holding %j", async (ch) => {
    const { isReference, walkStructured } = await import("../src/engine/walk.js");
    expect(isReference(`/mnt/user-data/a${ch}b.csv`)).toBe(false);
    expect(walkStructured({ path: `/mnt/user-data/a${ch}b.csv` }).refs).toEqual([]);
  });
  it.each(["\u00a1", "\u00ff"])("accepts a path holding %j just past them", async (ch) => {
    const { isReference } = await import("../src/engine/walk.js");
    expect(isReference(`/mnt/user-data/a${ch}b.csv`)).toBe(true);
  });
});

describe("data entries: plain integers of up to 15 digits", () => {
  // An integer of at most 15 digits is written by JSON.stringify as it is, so
  // the engine copies the payload itself; longer or odd numbers go to the host.
  it.each(["123456789012345", "-123456789012345", "100000000000000"])("takes a payload holding %s in the engine", (n) => {
    const line = dataLine(`{"n":${n}}`);
    const got = both(line);
    expect(got.engine).toBe(got.reference);
    expect(got.entries).toBe(1);
    expect(got.stats.engineLines).toBe(1);
  });
});

describe("the file gate: 4096 UTF-8 bytes, U+0800 counted as 3", () => {
  // U+0800 is the first code point of three UTF-8 bytes.
  const path = (extra: string) => "/" + "\u0800".repeat(1365) + extra; // 1 + 4095 bytes, then extra
  it("accepts a path of exactly 4096 bytes", async () => {
    const { isReference, walkStructured } = await import("../src/engine/walk.js");
    expect(Buffer.byteLength(path(""), "utf8")).toBe(4096);
    expect(isReference(path(""))).toBe(true);
    expect(walkStructured({ path: path("") }).refs).toEqual([{ type: "file", ref: path("") }]);
  });
  it("rejects one of 4097 bytes", async () => {
    const { isReference, walkStructured } = await import("../src/engine/walk.js");
    expect(isReference(path("a"))).toBe(false);
    expect(walkStructured({ path: path("a") }).refs).toEqual([]);
  });
});

describe("engine display names", () => {
  // types.ts's displayName: every trailing separator stripped, then the last
  // segment; a last segment that is a bare scheme or drive ("C:") keeps the whole ref.
  it.each([
    ["text", "see /mnt/user-data/out// now"],
    ["text", "see /mnt/user-data/out/// now"],
    ["text", "see /mnt/user-data/a:/ now"],
    ["payload", "C:/"],
    ["payload", "/x/b:/"],
    ["payload", "/x/dir//"],
  ])("in %s: %j", (where, s) => {
    const got = both(where === "text" ? toolLine(s) : toolLine("ok", { structured_content: { path: s } }));
    expect(got.stats.engineLines).toBe(1);
    expect(got.entries).toBe(1);
    expect(got.engine).toBe(got.reference);
  });
});

describe("skipped values: nesting up to 512 levels in the engine", () => {
  // assembly/lines.ts keeps one byte per open container of a skipped value in
  // a 512-byte buffer: 512 levels stay in the engine, 513 go to the host
  // (JSON.parse), never a byte past the buffer.
  it.each([
    [512, 1, 0],
    [513, 0, 1],
  ])("a value %i levels deep under an unknown key", (depth, engineLines, jsLines) => {
    const deep = "[".repeat(depth) + "]".repeat(depth);
    const got = both(`{"thread_id":"t","x":${deep},"message":{"type":"tool","tool_call_id":"c","content":"/mnt/user-data/a.csv"}}`);
    expect(got.stats).toEqual({ engineLines, jsLines });
    expect(got.entries).toBe(1);
    expect(got.engine).toBe(got.reference);
  });
});

describe("escaped surrogate pairs are one code point", () => {
  // "\ud83d\ude00" is U+1F600: four UTF-8 bytes, four in the compact form.
  // Read as two lone surrogates it would be six bytes each in the compact
  // size, and a reference holding it would go to the host. Only an escape
  // in U+DC00..U+DFFF completes a pair: before U+E000 the high one stays lone.
  const emoji = "\\ud83d\\ude00";
  it("in a free-text reference", () => {
    const got = both(textLine(`see /mnt/user-data/${emoji}.csv now`));
    expect(got.stats.engineLines).toBe(1);
    expect(got.entries).toBe(1);
    expect(got.engine).toBe(got.reference);
    expect(got.engine).toContain("/mnt/user-data/\u{1f600}.csv");
  });
  it("a high surrogate before \\ue000 stays lone", () => {
    const got = both(textLine(`see /mnt/user-data/\\ud83d\\ue000.csv now`));
    expect(got.entries).toBe(1);
    expect(got.engine).toBe(got.reference);
  });
  it("in a payload's compact size: 1000 of them fit one data entry", () => {
    const got = both(dataLine(`{"x":"${emoji.repeat(1000)}"}`));
    expect(got.entries).toBe(1);
    expect(got.engine).toBe(got.reference);
  });
});

describe("engine data entries: -0", () => {
  // JSON.stringify writes -0 as 0: it is no plain integer the engine may copy as written.
  it("is written as JSON.stringify writes it", () => {
    const got = both(dataLine(`{"n":-0,"m":[-0]}`));
    expect(got.entries).toBe(1);
    expect(got.engine).toBe(got.reference);
  });
});

describe("escaped texts: decoding to UTF-8", () => {
  // U+0800 is the first code point of three UTF-8 bytes: an escaped \u0800
  // in a text the engine decodes must come out as E0 A0 80, not two bytes.
  it("decodes \\u0800 in a free-text reference as three bytes", () => {
    const got = both(textLine(`see /mnt/user-data/a\\u0800\\u07ff.csv now`));
    expect(got.stats.engineLines).toBe(1);
    expect(got.entries).toBe(1);
    expect(got.engine).toBe(got.reference);
    expect(got.engine).toContain("/mnt/user-data/a\u0800\u07ff.csv");
  });
  // A lone low surrogate (U+DC00..U+DFFF) in a text is the host's, as a lone high one is:
  // TextEncoder would write U+FFFD where the reference keeps the surrogate.
  it.each(["\\udc00", "\\udfff"])("leaves a text with a lone %s to the host", (lone) => {
    const got = both(textLine(`see /mnt/user-data/a${lone}b.csv now`));
    expect(got.stats.engineLines).toBe(0);
    expect(got.engine).toBe(got.reference);
  });
});

describe("engine blocks: mime types", () => {
  // A source object's mime type: mime_type before mimeType (the block's own is the other way round).
  it("reads a source's mime_type before its mimeType", () => {
    const got = both(toolLine([{ type: "file", source: { url: "/mnt/user-data/a.csv", mimeType: "text/a", mime_type: "text/b" } }]));
    expect(got.stats.engineLines).toBe(1);
    expect(got.entries).toBe(1);
    expect(got.engine).toBe(got.reference);
    expect(got.engine).toContain('"mime_type":"text/b"');
  });
  // An empty mime type is none: no mime_type field, not "".
  it("writes no mime type for an empty one", () => {
    const got = both(toolLine([{ type: "file", url: "/mnt/user-data/a.csv", mimeType: "" }]));
    expect(got.stats.engineLines).toBe(1);
    expect(got.entries).toBe(1);
    expect(got.engine).toBe(got.reference);
    expect(got.engine).not.toContain('"mime_type":""');
  });
  // At most 255 UTF-16 units are kept (src/extract.ts, MAX_MIME_CHARS); the
  // engine leaves one of more bytes to the host, which counts units.
  it.each([
    ["255 ASCII characters: kept, in the engine", "t/" + "a".repeat(253), true, 1],
    ["256 ASCII characters: dropped, by the host", "t/" + "a".repeat(254), false, 0],
    ["200 characters in 300 bytes: kept, by the host", "t/" + "é".repeat(100) + "a".repeat(98), true, 0],
    ["256 characters in 384 bytes: dropped, by the host", "t/" + "é".repeat(128) + "a".repeat(126), false, 0],
  ])("%s", (_, mime, kept, engineLines) => {
    const got = both(toolLine([{ type: "file", url: "/mnt/user-data/a.csv", mimeType: mime }]));
    expect(got.stats.engineLines).toBe(engineLines);
    expect(got.entries).toBe(1);
    expect(got.engine).toBe(got.reference);
    expect(got.engine.includes(`"mime_type":${JSON.stringify(mime)}`)).toBe(kept);
  });
});

describe("engine content lists without text scanning", () => {
  // The JSON block rule reads only the content string, not a string item of a
  // content list: without text refs such an item is nothing to look at.
  it("keeps a list whose string item looks like JSON", () => {
    const got = both(toolLine(['{"path":"/mnt/user-data/a.csv"}', "plain"]), { detectRefsInText: false });
    expect(got.stats.engineLines).toBe(1);
    expect(got.engine).toBe(got.reference);
  });
});

describe("engine payloads: the first mcp_structured_content item", () => {
  // extract.ts takes the first such item with non-null data; later ones are ignored.
  it("takes the first of two", () => {
    const got = both(toolLine("ok", [
      { type: "mcp_structured_content", data: { path: "/mnt/user-data/a.csv" } },
      { type: "mcp_structured_content", data: { path: "/mnt/user-data/b.csv" } },
    ]));
    expect(got.stats.engineLines).toBe(1);
    expect(got.entries).toBe(1);
    expect(got.engine).toBe(got.reference);
    expect(got.engine).toContain("/mnt/user-data/a.csv");
  });
});

describe("engine data entries: keys JSON.parse may reorder", () => {
  // A 10-digit array index ("1000000000" < 2^32 - 1) comes first in JSON.stringify's text:
  // the raw copy would keep the written order, so the host writes it.
  it("leaves a 10-digit index key to the host", () => {
    const got = both(dataLine(`{"a":"x","1000000000":"y"}`));
    expect(got.stats.engineLines).toBe(0);
    expect(got.entries).toBe(1);
    expect(got.engine).toBe(got.reference);
  });
  // "01" and "00" are no array indices: their order holds, the engine copies them.
  it.each(["01", "00"])("keeps a key %j with a leading zero", (key) => {
    const got = both(dataLine(`{"a":"x","${key}":"y"}`));
    expect(got.stats.engineLines).toBe(1);
    expect(got.entries).toBe(1);
    expect(got.engine).toBe(got.reference);
  });
  // Strings in an array are values, not keys: no duplicate or index check applies to them.
  it("keeps arrays of repeated and digit strings", () => {
    const got = both(dataLine(`{"a":["x","1","1","x"]}`));
    expect(got.stats.engineLines).toBe(1);
    expect(got.entries).toBe(1);
    expect(got.engine).toBe(got.reference);
  });
});

describe("engine payloads: KEY_LEVELS (64) open containers", () => {
  // 64 levels stay in the engine (the walk rejects the payload); a 65th goes to the host.
  it.each([
    [64, 1],
    [65, 0],
  ])("a payload %i levels deep", (depth, engineLines) => {
    const deep = "[".repeat(depth) + "]".repeat(depth);
    const got = both(dataLine(deep));
    expect(got.stats.engineLines).toBe(engineLines);
    expect(got.engine).toBe(got.reference);
  });
});

describe("engine output JSON: backspace in a reference", () => {
  // JSON.stringify writes U+0008 as \b, not \u0008 (it is no Python space, so a free-text path keeps it).
  it("writes \\b", () => {
    const got = both(toolLine("see /mnt/user-data/a\bb.csv now"));
    expect(got.stats.engineLines).toBe(1);
    expect(got.entries).toBe(1);
    expect(got.engine).toBe(got.reference);
    expect(got.engine).toContain("/mnt/user-data/a\\bb.csv");
  });
});

describe("engine display names: schemes with + and drive paths", () => {
  // A last segment that is a bare scheme (/^[a-z][a-z0-9+.-]*:$/i, + allowed) keeps the whole ref.
  it("keeps /x/a+b:/ whole", () => {
    const got = both(toolLine("ok", { structured_content: { path: "/x/a+b:/" } }));
    expect(got.stats.engineLines).toBe(1);
    expect(got.entries).toBe(1);
    expect(got.engine).toBe(got.reference);
    expect(got.engine).toContain('"display_name":"/x/a+b:/"');
  });
  // A last segment ending in ":" that is no scheme (a digit first, or "_") is the name as any other.
  it.each([["/x/1a:", "1a:"], ["/x/a_b:", "a_b:"]])("names %s %s", (path, name) => {
    const got = both(toolLine("ok", { structured_content: { path } }));
    expect(got.stats.engineLines).toBe(1);
    expect(got.entries).toBe(1);
    expect(got.engine).toBe(got.reference);
    expect(got.engine).toContain(`"display_name":"${name}"`);
  });
  // In a drive path `\` separates as `/` does, whichever follows the colon.
  it("splits C:/dir\\a.txt at the backslash", () => {
    const got = both(toolLine("see C:/dir\\a.txt now"), { sandboxPrefixes: ["C:/"] });
    expect(got.stats.engineLines).toBe(1);
    expect(got.engine).toBe(got.reference);
    expect(got.engine).toContain('"display_name":"a.txt"');
  });
  // A backslash right after the colon makes a drive path too: C:\dir\a.txt is named a.txt, not kept whole.
  it("splits C:\\dir\\a.txt at the backslashes", () => {
    const got = both(toolLine("see C:\\dir\\a.txt now"), { sandboxPrefixes: ["C:\\"] });
    expect(got.stats.engineLines).toBe(1);
    expect(got.entries).toBe(1);
    expect(got.engine).toBe(got.reference);
    expect(got.engine).toContain('"display_name":"a.txt"');
  });
});

describe("engine lines: blanks String.prototype.trim drops", () => {
  // A line of a vertical tab is blank (trim drops U+000B); the engine takes it as blank itself.
  it("takes a line of \\v as blank", () => {
    const got = both("\u000b");
    expect(got.stats).toEqual({ engineLines: 1, jsLines: 0 });
    expect(got.engine).toBe(got.reference);
  });
  // A tab after the object is trailing blank, not trailing garbage.
  it("takes a line with a trailing tab", () => {
    const got = both(toolLine("see /mnt/user-data/a.csv now") + "\t \t");
    expect(got.stats).toEqual({ engineLines: 1, jsLines: 0 });
    expect(got.entries).toBe(1);
    expect(got.engine).toBe(got.reference);
  });
});

describe("engine lines: a flat tool result whose message field is no object", () => {
  // items.ts's isFlatWithMessageField: with a tool_call_id, a message that is not an object
  // makes the line itself the message; the engine reads it so.
  it("takes the line itself as the message", () => {
    const got = both(JSON.stringify({ thread_id: "t", type: "tool", tool_call_id: "c", message: "see /mnt/user-data/a.csv now" }));
    expect(got.stats.engineLines).toBe(1);
    expect(got.engine).toBe(got.reference);
  });
});

describe("engine lines: LangChain's serialized form needs lc exactly 1", () => {
  // lc 12, 10, 0, 2 or 9 is no serialized message: a plain object of type "constructor", skipped.
  it.each(["12", "10", "0", "2", "9"])("lc %s", (lc) => {
    const line = `{"thread_id":"t","lc":${lc},"type":"constructor","id":["langchain","schema","messages","ToolMessage"],"kwargs":{"tool_call_id":"c","content":"see /mnt/user-data/a.csv now"}}`;
    const got = both(line);
    expect(got.entries).toBe(0);
    expect(got.referenceEntries).toBe(0);
    expect(got.engine).toBe(got.reference);
  });
  it("lc 1 is one, read by the engine", () => {
    const line = `{"thread_id":"t","lc":1,"type":"constructor","id":["langchain","schema","messages","ToolMessage"],"kwargs":{"tool_call_id":"c","content":"see /mnt/user-data/a.csv now"}}`;
    const got = both(line);
    expect(got.stats.engineLines).toBe(1);
    expect(got.entries).toBe(1);
    expect(got.engine).toBe(got.reference);
  });
});

describe("options the engine does not take: the TypeScript path fails the lines", () => {
  // Options reach scanLinesPacked unchecked from a worker's task. The engine
  // would cast a bad first line number to an integer and write a created_at
  // that is no string raw (a number, or text that is no JSON); the reference
  // fails each line it touches, and so must the engine path.
  const anonymous = JSON.stringify({ thread_id: "t", message: { type: "tool", content: "see /mnt/user-data/a.csv" } });
  for (const firstLine of [1.5, -3, Number.NaN, 2 ** 53, 1e300]) {
    it(`firstLine ${firstLine}: the anonymous result's line fails`, () => {
      const got = both(anonymous, { firstLine });
      expect(got.stats.engineLines).toBe(0);
      expect(got.engine).toBe("");
      expect(got.failures.engine).toEqual(got.failures.reference);
      expect(got.failures.engine).toEqual([{ line: 1, reason: expect.stringContaining("options.callIndex must be a non-negative integer") }]);
    });
  }

  it("firstLine 0 is taken: the first line's call index is 0", () => {
    const got = both(anonymous, { firstLine: 0 });
    expect(got.stats.engineLines).toBe(1);
    expect(got.engine).toBe(got.reference);
    expect(got.engine).toContain(`"call_index":0,`);
  });

  it("firstLine 2**53 - 1: the second line's call index would be past the safe integers", () => {
    const got = both(`${anonymous}\n${anonymous}`, { firstLine: Number.MAX_SAFE_INTEGER });
    expect(got.engine).toBe(got.reference);
    expect(got.engine).toContain(`"call_index":${Number.MAX_SAFE_INTEGER},`);
    expect(got.failures.engine).toEqual(got.failures.reference);
    expect(got.failures.engine).toEqual([{ line: 2, reason: expect.stringContaining("options.callIndex must be a non-negative integer") }]);
  });

  for (const createdAt of [5, null, { at: 1 }, "yesterday"]) {
    it(`createdAt ${JSON.stringify(createdAt)}: every line fails`, () => {
      const got = both(toolLine("see /mnt/user-data/a.csv"), { createdAt: createdAt as unknown as string });
      expect(got.stats.engineLines).toBe(0);
      expect(got.engine).toBe("");
      expect(got.failures.engine).toEqual(got.failures.reference);
      expect(got.failures.engine).toEqual([{ line: 1, reason: expect.stringContaining("options.now must return a string") }]);
    });
  }
});

describe("engine lines: output that first outgrows its room by more than 1 MiB", () => {
  it("is held and written by the engine, as the TypeScript path writes it", () => {
    // Each line names 40 short files: its output is many times its input, so the first
    // run fills the room (about the input's size, over 1 MiB) and is held at once.
    const refs = Array.from({ length: 40 }, (_, k) => `/mnt/user-data/${k}.txt`).join(" ");
    const lines = Array.from({ length: 1500 }, (_, i) => JSON.stringify({ thread_id: "t", message: { type: "tool", tool_call_id: `c${i}`, content: refs } })).join("\n") + "\n";
    const bytes = new Uint8Array(Buffer.from(lines));
    expect(bytes.byteLength).toBeGreaterThan(1 << 20);
    const stats: LinePathStats = { engineLines: 0, jsLines: 0 };
    const engine = unpackLineResult(scanLinesPacked(bytes, OPTIONS, { stats }));
    const reference = unpackLineResult(scanLinesPackedJs(bytes, OPTIONS));
    expect(stats.engineLines).toBe(1500);
    expect(engine.entries).toBe(1500 * 40);
    expect(Buffer.from(engine.output).equals(Buffer.from(reference.output))).toBe(true);
  });
});

describe("archive lines on the TypeScript path: call indexes and blank lines", () => {
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

describe("engine data entries: embedded content is the host's to judge", () => {
  // holdsEmbeddedContent (src/extract.ts) reads the JSON; the engine leaves
  // every data payload holding "data", "blob", "reso(urce)", "base(64)" or "byte(s)",
  // in any case, to it, and keeps the rest.
  it.each([
    ['{"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]}', 0],
    ['{"r":{"uri":"x","BLOB":"AQID"}}', 1], // deferred for its word, judged no blob (keys are case-sensitive)
    ['{"image":{"format":"png","source":{"bytes":"iVBORw0KGgoAAAANSUhEUgAAAAE"}}}', 0],
    ['{"metadata":{"rows":5}}', 1],
    ['{"note":"Base camp"}', 1],
  ])("%s: the same output either way, %i data entries", (payload, entries) => {
    const got = both(dataLine(payload));
    expect(got.stats.engineLines).toBe(0);
    expect(got.engine).toBe(got.reference);
    expect(got.entries).toBe(entries);
  });

  it("a payload without those words stays in the engine", () => {
    const got = both(dataLine('{"rows":5,"cols":["a","b"]}'));
    expect(got.stats.engineLines).toBe(1);
    expect(got.engine).toBe(got.reference);
    expect(got.entries).toBe(1);
  });
});

/** A tool result line around the message fields written as JSON text by hand. */
const messageLine = (fieldsJson: string) => `{"thread_id":"t","message":{"type":"tool","tool_call_id":"c",${fieldsJson}}}`;

describe("engine lines: JSON that JSON.parse refuses is a failed line on both paths", () => {
  // A skipped value whose brackets do not pair up.
  it.each(['[1}', '{"a":1]', '[[1]}', '{"a":[1}}'])("a skipped value %s", (bad) => {
    const got = both(messageLine(`"note":${bad},"content":"see /mnt/user-data/a.csv now"`));
    expect(got.failures.reference).toHaveLength(1);
    expect(got.failures.engine).toEqual(got.failures.reference);
    expect(got.engine).toBe(got.reference);
  });
});

describe("engine data entries: the key \"0\" comes first in JSON.stringify's text", () => {
  // "0" is an array index (JSON.parse orders such keys first); the data entry
  // is JSON.stringify's text (DESIGN §4), so a raw copy in written order is wrong.
  it.each(['{"b":1,"0":2}', '{"x":{"b":true,"0":"y"}}'])("%s", (payload) => {
    const got = both(`{"thread_id":"t","message":{"type":"tool","tool_call_id":"c","content":"ok","artifact":{"structured_content":${payload}}}}`);
    expect(got.referenceEntries).toBe(1);
    expect(got.engine).toBe(got.reference);
    expect(got.engine).toContain(JSON.stringify(JSON.stringify(JSON.parse(payload))));
  });
});

describe("engine lines: a line that is no serialized message but wraps one", () => {
  // serializedClass needs a string last id item; without one the line is a
  // plain wrapper, and its `message` is the tool result (items.ts's itemFromLine).
  it.each(["[]", "[1]", '["x",null]'])("id %s at the top, a tool result under message", (id) => {
    const line = `{"thread_id":"t","lc":1,"type":"constructor","id":${id},"kwargs":{},"message":{"type":"tool","tool_call_id":"c","content":"see /mnt/user-data/a.csv now"}}`;
    const got = both(line);
    expect(got.referenceEntries).toBe(1);
    expect(got.engine).toBe(got.reference);
    expect(got.entries).toBe(1);
  });
});

describe("engine lines: serialized kwargs the engine cannot read go to the host", () => {
  // A key written with an escape may spell a field the message needs; the
  // host's JSON.parse reads it. Several lines, so no stale read of an earlier
  // line's kwargs can pass for this one's.
  it("an escaped key in kwargs", () => {
    const serialized = (call: string, kwargs: string) =>
      `{"thread_id":"t","lc":1,"type":"constructor","id":["langchain_core","messages","ToolMessage"],"kwargs":{"tool_call_id":"${call}",${kwargs}}}`;
    const text = [
      serialized("a", `"content":"see /mnt/user-data/a.csv now"`),
      serialized("b", `"cont\\u0065nt":"see /mnt/user-data/b.csv now"`),
      serialized("c", `"content":"see /mnt/user-data/c.csv now","content":"see /mnt/user-data/d.csv now"`),
    ].join("\n");
    const got = both(text);
    expect(got.referenceEntries).toBe(3);
    expect(got.engine).toBe(got.reference);
    expect(got.engine).toContain("/mnt/user-data/b.csv");
    expect(got.engine).toContain("/mnt/user-data/d.csv");
  });
});

describe("engine lines: output room and references written with escapes", () => {
  // A control character in a free-text path (not a Python space, so it stays
  // in the path) is written as \u00XX: six output bytes per input byte, in the
  // reference and again in its display name. Lines whose output is about
  // twice their input fill the output room mid-chunk at many points; every
  // line must still be written whole and exactly as the reference writes it.
  it("fills the room with escaped references and stays exact", () => {
    const lines: string[] = [];
    for (let i = 0; i < 400; i++) {
      const k = 20 + ((i * 37) % 400);
      const refs = [`/mnt/user-data/${"\u0001".repeat(k)}/x${i}`, `/mnt/user-data/y${i}${"\u0002".repeat(k >> 1)}`];
      lines.push(JSON.stringify({ thread_id: "t", message: { type: "tool", tool_call_id: `c${i}`, content: `see ${refs.join(" and ")} now` } }));
    }
    const bytes = new Uint8Array(Buffer.from(lines.join("\n")));
    const stats: LinePathStats = { engineLines: 0, jsLines: 0 };
    const engine = unpackLineResult(scanLinesPacked(bytes, OPTIONS, { stats }));
    const reference = unpackLineResult(scanLinesPackedJs(bytes, OPTIONS));
    expect(stats).toEqual({ engineLines: 400, jsLines: 0 });
    expect(reference.entries).toBe(800);
    expect(engine.entries).toBe(800);
    expect(reference.output.byteLength).toBeGreaterThan(bytes.byteLength);
    expect(Buffer.from(engine.output).equals(Buffer.from(reference.output))).toBe(true);
  });
  // The same at one chosen point: a first line of many short references
  // (output far larger than its input) leaves about half the 64 KiB room,
  // and the next line's one reference of 4000 escaped characters needs about
  // 48 KB of it (the reference, and its display name, six bytes per character).
  it.each([100, 150, 200, 250])("a long escaped reference after %i short ones", (short) => {
    const first = JSON.stringify({ thread_id: "t", message: { type: "tool", tool_call_id: "a", content: Array.from({ length: short }, (_, k) => `/${k}`).join(" ") } });
    const second = JSON.stringify({ thread_id: "t", message: { type: "tool", tool_call_id: "b", content: `see /${"\u0001".repeat(4000)} now` } });
    const options = { sandboxPrefixes: ["/"] };
    const got = both(`${first}\n${second}`, options);
    expect(got.stats).toEqual({ engineLines: 2, jsLines: 0 });
    expect(got.referenceEntries).toBe(short + 1);
    expect(got.engine).toBe(got.reference);
  });
});

describe("engine lines: ids and names written with escapes", () => {
  // JSON.stringify writes "A" and "/" plainly: an id or name the line spells
  // with an escape must come out decoded, and hash as its decoded text.
  it.each([
    ["a tool name", `{"thread_id":"t","message":{"type":"tool","name":"wr\\u0069ter","tool_call_id":"c","content":"see /mnt/user-data/a.csv now"}}`],
    ["a tool name with \\/", `{"thread_id":"t","message":{"type":"tool","name":"a\\/b","tool_call_id":"c","content":"see /mnt/user-data/a.csv now"}}`],
    ["a thread id", `{"thread_id":"t\\u0031","message":{"type":"tool","name":"w","tool_call_id":"c","content":"see /mnt/user-data/a.csv now"}}`],
    ["a thread id with \\/", `{"thread_id":"t\\/1","message":{"type":"tool","name":"w","tool_call_id":"c","content":"see /mnt/user-data/a.csv now"}}`],
  ])("%s", (_, line) => {
    const got = both(line);
    expect(got.referenceEntries).toBe(1);
    expect(got.engine).toBe(got.reference);
  });
});

describe("engine display names: only scheme:// starts a URL", () => {
  // types.ts's displayName drops a query and fragment only for /^[a-z][a-z0-9+.-]*:\/\//i;
  // a drive path ("C:/…": "C:" reads as a scheme) keeps its ? and # in the name.
  it.each(["C:/dir/a?b.txt", "d:/x/r#1.csv"])("%j", (path) => {
    const got = both(JSON.stringify({ thread_id: "t", message: { type: "tool", tool_call_id: "c", content: "ok", artifact: { structured_content: { path } } } }));
    expect(got.stats.engineLines).toBe(1);
    expect(got.entries).toBe(1);
    expect(got.engine).toBe(got.reference);
  });
});

describe("engine payloads: keys that are the same once decoded", () => {
  // JSON.parse decodes "p\u0061th" to "path": a second "path", whose value
  // replaces the first. The walk must see one path, as the host does.
  it.each([
    `{"path":"/mnt/user-data/a.csv","p\\u0061th":"/mnt/user-data/b.csv"}`,
    `{"url":"https://x.io/a.png","\\u0075rl":"https://x.io/b.png","rows":1}`,
  ])("%s", (payload) => {
    const got = both(`{"thread_id":"t","message":{"type":"tool","tool_call_id":"c","content":"ok","artifact":{"structured_content":${payload}}}}`);
    expect(got.referenceEntries).toBe(1);
    expect(got.engine).toBe(got.reference);
  });
});

describe("engine lines: memory a huge line grew", () => {
  // WebAssembly memory only grows: the engine path itself must give it back
  // at its next ordinary chunk (here no TypeScript-path scan runs in between,
  // which would give it back on its own).
  it("is given back by the next ordinary chunk on the engine path alone", () => {
    const line = (content: string) => JSON.stringify({ thread_id: "t", message: { type: "tool", tool_call_id: "c", content } });
    const huge = new Uint8Array(Buffer.from(line("x ".repeat(20_000_000) + "/mnt/user-data/huge.csv")));
    const stats: LinePathStats = { engineLines: 0, jsLines: 0 };
    expect(unpackLineResult(scanLinesPacked(huge, OPTIONS, { stats })).entries).toBe(1);
    expect(engine().memory.buffer.byteLength).toBeGreaterThan(64 << 20);
    const small = new Uint8Array(Buffer.from(line("/mnt/user-data/a.csv /mnt/user-data/b.csv")));
    expect(unpackLineResult(scanLinesPacked(small, OPTIONS, { stats })).entries).toBe(2);
    expect(stats).toEqual({ engineLines: 2, jsLines: 0 });
    expect(engine().memory.buffer.byteLength).toBeLessThan(4 << 20);
  });
});
