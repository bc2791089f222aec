/**
 * Property tests: extraction is total and deterministic, handles are unique
 * within a result, every reference passes the gates, and the result equals
 * the independent RegExp + JSON.stringify oracle (bench/baselines/extract-ts.ts)
 * on generated messages that sit on and around every bound and gate.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { extractArtifacts, type ExtractOptions, type ToolMessageLike } from "../src/extract.js";
import { isReference, isTaskToken } from "../src/engine/walk.js";
import { scanText } from "../src/engine/scan.js";
import {
  baselineExtractArtifacts,
  baselineIsReference,
  baselineIsTaskToken,
} from "../bench/baselines/extract-ts.js";

const NOW = "2025-01-01T00:00:00.000Z";
const RUNS = { numRuns: 300 };

// Well-formed strings only: the engine works on UTF-8 and may map lone
// surrogates to U+FFFD where the oracle keeps them (their totality is unit-tested).
const anyText = fc.string({ unit: "binary", maxLength: 24 });
const ws = fc.constantFrom(" ", "\t", "\n", "\u00a0", "\u3000", "\u2028", "\u0085", "\x1c");

/**
 * Sandbox prefixes that hold blanks (of PY_SPACE, ASCII and other; a tab and
 * NEL are controls no reference holds, so only free text gives them; one
 * after punctuation free text strips), prefixes of each other, in every order.
 */
const SPACED_PREFIXES = ["/mnt/", "/mnt/my data/", "/mnt/my data/x\u00a0y/", "/mnt/my\u3000data/", "/mnt/my\tdata/", "/mnt/my\x85data/", "/mnt/my, data/"];
const spacedPrefixes = fc.shuffledSubarray(SPACED_PREFIXES, { minLength: 1, maxLength: 5 });
/** References under them (or reading like one under another), with and without blanks past the prefix, maybe ending in punctuation. */
const spacedRef = fc
  .tuple(fc.constantFrom(...SPACED_PREFIXES), fc.constantFrom("x.csv", "a b.csv", "Smith, John.pdf", "my data/x.csv", "x\u00a0y/z", "q"), fc.constantFrom("", "", ".", ",", ")", "'."))
  .map(([p, name, end]) => p + name + end);

/** Strings near every edge of the reference and token gates. */
const refLike = fc.oneof(
  spacedRef,
  fc.constantFrom(
    "/mnt/user-data/out/a.csv",
    "/srv/x y.txt",
    "/",
    "C:\\x\\y.docx",
    "d:/a",
    "https://h.io/a.png?x=1#f",
    "HTTP://H/",
    "http://h",
    "rel/x",
    "//srv/x",
    "data:text/plain,hi",
    "blob:https://h/1",
    "file:///etc/passwd",
    "javascript:alert(1)",
    "http:///x",
    "https://h/a b",
    "/a\nb",
    "/a\u0000b",
    "/a\u007fb",
    "",
    "job-1",
    "job 1",
    "x\u3000y",
    "t".repeat(256),
    "t".repeat(257),
    "/" + "a".repeat(4095),
    "/" + "a".repeat(4096),
    "/" + "é".repeat(2047) + "a",
    "/" + "€".repeat(1366),
  ),
  fc.tuple(fc.constantFrom("/", "//", "https://", "http://h/", "HTTPS://h.", "C:\\", "z:/", "rel/", "data:", "ftp://"), anyText).map(
    ([a, b]) => a + b,
  ),
  fc.tuple(fc.constantFrom("/p/", "https://h/", "job"), ws, anyText).map(([a, b, c]) => a + b + c),
  anyText,
);

const key = fc.constantFrom(
  "file", "files", "file_path", "path", "url", "urls", "task_id", "job_id",
  "name", "items", "meta", "Path", "__proto__", "constructor", "toString",
  // The shapes of embedded content (a data entry that holds one is dropped).
  "data", "blob", "bytes", "type", "mimeType", "source_type", "uri", "resource", "text",
);
const leaf = fc.oneof(
  { weight: 4, arbitrary: refLike },
  fc.constantFrom("image", "resource", "base64", "iVBORw0KGgoAAAANSUhEUg==", "queued", "data:image/png;base64,AAAA", "data: 5 rows", "see ![x](data:text/plain,hi)", "/mnt/user-data/a b.txt"),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.date({ noInvalidDate: true }),
  // What JSON.stringify treats specially: toJSON, boxed primitives, Maps, typed arrays, holes, null prototypes.
  fc.constantFrom<unknown>(
    { toJSON: () => ({ path: "/via/toJSON" }) },
    new String("/boxed"),
    new Number(-0),
    new Map([["path", "/from/map"]]),
    new Uint8Array([1, 2]),
    [, "/after/hole"],
    Object.assign(Object.create(null), { url: "https://null.proto/x" }),
    Number.NaN,
    Number.POSITIVE_INFINITY,
    () => "/fn",
  ),
);
const { value: jsonish } = fc.letrec<{ value: unknown; array: unknown[]; object: Record<string, unknown> }>((tie) => ({
  value: fc.oneof({ depthSize: "small", withCrossShrink: true }, leaf, tie("array"), tie("object")),
  array: fc.array(tie("value"), { maxLength: 5 }),
  // Object.fromEntries defines own properties, so "__proto__" stays a plain key.
  object: fc.array(fc.tuple(key, tie("value")), { maxLength: 5 }).map((e) => Object.fromEntries(e)),
}));

function nest(levels: number, inner: unknown, asObject: boolean): unknown {
  let v = inner;
  for (let i = 0; i < levels; i++) v = asObject ? { k: v } : [v];
  return v;
}

/** Payloads on both sides of the node, level and data-size budgets. */
const payload = fc.oneof(
  { weight: 5, arbitrary: jsonish },
  fc.tuple(fc.integer({ min: 1010, max: 1030 }), refLike).map(([n, r]) => ({ path: r, pad: new Array(Math.max(0, n - 3)).fill(0) })),
  fc.tuple(fc.integer({ min: 1018, max: 1030 })).map(([n]) => ({ pad: new Array(Math.max(0, n - 2)).fill(1) })),
  fc.tuple(fc.integer({ min: 28, max: 34 }), refLike, fc.boolean()).map(([n, r, o]) => nest(n, { url: r }, o)),
  fc.tuple(fc.integer({ min: 28, max: 34 }), fc.boolean()).map(([n, o]) => nest(n, 7, o)),
  fc.integer({ min: 4080, max: 4100 }).map((n) => ({ note: "n".repeat(n - 11) })),
  fc.constantFrom({}, [], null, "", 0, "x", { url: "data:image/png;base64,AAAA" }),
);

const refPiece = fc.constantFrom(
  "/mnt/user-data/out/r.pdf", "/mnt/user-data/a b.txt", "/workspace/out.csv", "/tmp/out/x", "https://x.io/a.csv",
  "https://h.io/r.PNG?x=1", "http://h/x.json#a", "/mnt/user-data/数据/😀.md", "https://x.io/a.csv)",
);
const textPiece = fc.oneof(
  { weight: 2, arbitrary: refPiece },
  spacedRef,
  fc.constantFrom(
    "see ", " and ", ". ", "\n", "\t", "\u00a0", "\u3000", '"', "'", "`", "<", ">", ")", "]", "}", ",", ";", ":", ".",
    "/mnt/user-data/", "/workspace/", "https://", "http://a.", "HTTP://x.io/",
    ".png", ".csv", ".json", ".xlsx", ".docx", ".md", ".PDF", "?q=1", "#frag", "数据", "😀", "/",
  ),
  anyText,
);
const text = fc.array(textPiece, { maxLength: 14 }).map((p) => p.join(""));
const someText = fc.array(fc.oneof(textPiece, fc.constant(" ")), { minLength: 1, maxLength: 20 }).map((p) => p.join(""));

const mime = fc.option(fc.constantFrom("image/png", "text/csv", ""), { nil: undefined });
const block = fc.oneof(
  someText.map((t) => ({ type: "text", text: t })),
  someText,
  fc.tuple(text, payload).map(([t, s]) => ({ type: "text", text: t, structuredContent: s })),
  fc.tuple(fc.constantFrom("file", "image"), refLike, mime).map(([type, url, m]) => ({ type, url, mimeType: m })),
  fc.tuple(fc.constantFrom("file", "image"), refLike, mime, fc.constantFrom("url", "base64", undefined)).map(
    ([type, url, m, st]) => ({ type, source_type: st, url, mime_type: m }),
  ),
  fc.tuple(fc.constantFrom("file", "image"), refLike, mime).map(([type, url, m]) => ({ type, source: { url, mime_type: m } })),
  refLike.map((url) => ({ type: "image_url", image_url: { url } })),
  refLike.map((url) => ({ type: "image_url", image_url: url })),
  // An embedded resource as mcp-adapters' standard blocks carry it: data, and its uri in metadata.
  fc.tuple(fc.constantFrom("file", "image"), refLike, mime, fc.constantFrom("base64", "text")).map(([type, uri, m, st]) => ({ type, source_type: st, data: "AA==", text: "/mnt/user-data/inside.txt", mime_type: m, metadata: { uri } })),
  fc.constantFrom(
    { type: "image", source_type: "base64", data: "iVBORw0KGgo=", mime_type: "image/png" },
    { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" },
    { type: "audio", url: "https://h/a.mp3" },
    { type: "resource", resource: { uri: "https://h/r.txt", blob: "AA==" } },
    null,
    42,
  ),
);
const artifact = fc.oneof(
  fc.constant(undefined),
  payload.map((p) => ({ structured_content: p })),
  fc.array(
    fc.oneof(
      payload.map((data) => ({ type: "mcp_structured_content", data })),
      fc.constant({ type: "mcp_meta", data: { path: "/meta" } }),
      // What the adapter moves out of content: blocks, and embedded resources in its own shape.
      block,
      fc.tuple(refLike, mime).map(([uri, m]) => ({ type: "resource", resource: { uri, mimeType: m, blob: "AA==" } })),
    ),
    { maxLength: 3 },
  ),
);
/** String content that is JSON: of one block, of a list of blocks (handled or not), after JSON blanks. */
const jsonContent = fc
  .tuple(fc.constantFrom("", " ", "\n\t "), fc.oneof(block, fc.array(block, { maxLength: 4 })))
  .map(([blank, v]) => blank + (JSON.stringify(v) ?? ""));
/** A JSON object or array that is no block: what a tool returning an object gets as content (its keys may be references too). */
const jsonText = fc
  .tuple(
    fc.constantFrom("", " ", "\n"),
    fc.oneof(
      fc.dictionary(fc.oneof(fc.constantFrom("path", "out", "note", "n"), refPiece), fc.oneof(someText, fc.nat(), fc.array(someText, { maxLength: 3 }), fc.dictionary(fc.constantFrom("url", "x"), someText, { maxKeys: 2 }))),
      fc.array(fc.oneof(someText, fc.nat()), { minLength: 1, maxLength: 4 }),
    ),
    fc.constantFrom<[null, unknown]>([null, undefined], [null, 2]),
  )
  .map(([blank, value, [replacer, space]]) => blank + JSON.stringify(value, replacer, space as number));
const message = fc.record(
  {
    content: fc.oneof(
      { weight: 2, arbitrary: someText },
      { weight: 3, arbitrary: fc.array(block, { minLength: 1, maxLength: 6 }) },
      jsonContent,
      jsonText,
      jsonText.map((text) => [{ type: "text", text }]),
      fc.constant(null),
    ),
    tool_call_id: fc.oneof(fc.string({ maxLength: 8 }), fc.constant(undefined)),
    name: fc.constantFrom("render", "", undefined),
    status: fc.constantFrom(undefined, "success", "success", "success", "error"),
    id: fc.option(fc.string({ maxLength: 8 }), { nil: undefined }),
    artifact,
  },
  { requiredKeys: [] },
);
/**
 * A result whose text is the JSON of its structured payload (or of another
 * one), in some layout, as plain content, a text block, a string item or the
 * text of a block given as JSON string content.
 */
const scannablePayload = fc.tuple(refPiece, refLike, payload).map(([note, path, more]) => ({ note, path, more }));
const mirrorMessage = fc
  .tuple(
    fc.oneof(payload, scannablePayload),
    fc.oneof(payload, scannablePayload),
    fc.boolean(),
    fc.constantFrom<[unknown, unknown]>([undefined, undefined], [null, 2], [null, "\t"]),
    fc.constantFrom("content", "block", "item", "blockJson"),
    fc.constantFrom("python", "mcp", "block"),
  )
  .map(([p, other, same, [replacer, space], where, source]) => {
    const text = JSON.stringify(same ? p : other, replacer as null, space as number) ?? "";
    const structuredContent = source === "block" ? p : undefined;
    const artifact = source === "python" ? { structured_content: p } : source === "mcp" ? [{ type: "mcp_structured_content", data: p }] : undefined;
    const content =
      where === "content" ? text
      : where === "item" ? [text, { type: "text", text: "x", structuredContent }]
      : where === "block" ? [{ type: "text", text, structuredContent }]
      : JSON.stringify({ type: "text", text, structuredContent });
    return { tool_call_id: "c", name: "render", content, artifact } as ToolMessageLike;
  });
/**
 * A result giving references under spaced prefixes whole (payload, blocks,
 * artifact blocks) and naming them, whole, with punctuation or cut anywhere,
 * in texts of the content and the artifact, in any order.
 */
const spacedMessage = fc
  .tuple(
    fc.array(spacedRef, { minLength: 1, maxLength: 2 }),
    fc.array(fc.tuple(fc.constantFrom("payload", "file", "text", "artifact file", "artifact text"), fc.nat(1), fc.nat(40), fc.constantFrom("", ".", ", and")), { minLength: 2, maxLength: 5 }),
  )
  .map(([refs, sources]) => {
    const content: unknown[] = [];
    const artifact: unknown[] = [];
    const files: string[] = [];
    for (const [kind, i, cut, end] of sources) {
      const ref = refs[i % refs.length];
      const named = { type: "text", text: `saved ${cut < 20 ? ref : ref.slice(0, cut - 20)}${end}` };
      if (kind === "payload") files.push(ref);
      else (kind.startsWith("artifact") ? artifact : content).push(kind.endsWith("file") ? { type: "file", url: ref } : named);
    }
    if (files.length > 0) artifact.unshift({ type: "mcp_structured_content", data: { files } });
    return { tool_call_id: "c", content, artifact } as ToolMessageLike;
  });
const anyMessage = fc.oneof({ weight: 3, arbitrary: message }, mirrorMessage, { weight: 3, arbitrary: spacedMessage });

const options = fc.record({
  threadId: fc.string({ minLength: 1, maxLength: 8 }),
  callIndex: fc.option(fc.nat(5), { nil: undefined }),
  detectRefsInText: fc.constantFrom(undefined, true, false),
  sandboxPrefixes: fc.option(fc.oneof(fc.constantFrom(["/workspace/"], ["/mnt/user-data/", "/tmp/out/"], [] as string[]), { weight: 2, arbitrary: spacedPrefixes }), { nil: undefined }),
});

const withNow = (o: Omit<ExtractOptions, "now">): ExtractOptions => ({ ...o, now: () => NOW });
const run = (m: unknown, o: Omit<ExtractOptions, "now">) => extractArtifacts(m as ToolMessageLike, withNow(o));

function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The strings of a parsed JSON value, keys included (the JSON text rule scans both). */
function stringsIn(value: unknown, out: string[] = []): string[] {
  if (typeof value === "string") out.push(value);
  else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      out.push(k);
      stringsIn(v, out);
    }
  }
  return out;
}

/** The texts free-text scanning may see in this message under these options. */
function textsOf(m: ToolMessageLike, o: Omit<ExtractOptions, "now">): string[] {
  if (o.detectRefsInText === false) return [];
  // Down every level: string content may be a block's JSON, whose text is JSON text.
  const withJson = (text: string): string[] => [text, ...stringsIn(parseOrUndefined(text)).flatMap(withJson)];
  const blockTexts = (blocks: unknown[]) => blocks.flatMap((b) => (typeof b === "string" ? withJson(b) : (b as { type?: unknown })?.type === "text" && typeof (b as { text?: unknown }).text === "string" ? withJson((b as { text: string }).text) : []));
  // Text blocks in an artifact list are scanned too, after the content (README, "MCP blocks in the artifact").
  const inArtifact = Array.isArray(m.artifact) ? blockTexts(m.artifact.filter((b) => typeof b !== "string")) : [];
  if (typeof m.content === "string") return [...withJson(m.content), ...inArtifact];
  if (!Array.isArray(m.content)) return inArtifact;
  return [...blockTexts(m.content), ...inArtifact];
}

describe("extraction properties", () => {
  it("equals the RegExp + JSON.stringify oracle", () => {
    fc.assert(
      fc.property(anyMessage, options, (m, o) => {
        expect(run(m, o)).toEqual(baselineExtractArtifacts(m, withNow(o)));
      }),
      RUNS,
    );
  });

  it("takes and refuses the sandbox prefixes the oracle takes and refuses", () => {
    const refuses = (f: () => unknown) => {
      try {
        f();
        return false;
      } catch (error) {
        return error instanceof TypeError;
      }
    };
    for (const p of [undefined, [], ...SPACED_PREFIXES.map((x) => [x]), ["/😀/"], null, "/mnt/", [5], [""], ["/a", ""], ["/\ud800"], ["/\ufffd"]]) {
      const o = { threadId: "t", sandboxPrefixes: p as string[] };
      expect(refuses(() => run({ tool_call_id: "c", content: "x" }, o)), JSON.stringify(p)).toBe(refuses(() => baselineExtractArtifacts({ content: "x" }, withNow(o))));
    }
  });

  it("is total on arbitrary values", () => {
    fc.assert(
      fc.property(fc.anything({ withBigInt: true, withMap: true, withSet: true, withTypedArray: true, withNullPrototype: true }), (m) => {
        expect(Array.isArray(run(m, { threadId: "t" }))).toBe(true);
        expect(Array.isArray(run({ content: m, artifact: { structured_content: m } }, { threadId: "t" }))).toBe(true);
        expect(Array.isArray(run({ content: [m, { type: "text", text: "x", structuredContent: m }], artifact: [m] }, { threadId: "t" }))).toBe(true);
      }),
      RUNS,
    );
  });

  it("is deterministic", () => {
    fc.assert(
      fc.property(anyMessage, options, (m, o) => {
        expect(run(m, o)).toEqual(run(m, o));
      }),
      RUNS,
    );
  });

  it("gives unique handles and unique references within a result", () => {
    fc.assert(
      fc.property(anyMessage, options, (m, o) => {
        const entries = run(m, o);
        expect(new Set(entries.map((e) => e.handle)).size).toBe(entries.length);
        expect(new Set(entries.map((e) => e.real_ref)).size).toBe(entries.length);
      }),
      RUNS,
    );
  });

  it("keeps only references that pass the gates", () => {
    fc.assert(
      fc.property(anyMessage, options, (m, o) => {
        const scanned = new Set(textsOf(m, o).flatMap((t) => scanText(t, { sandboxPrefixes: o.sandboxPrefixes }).map((r) => r.ref)));
        for (const e of run(m, o)) {
          expect(Buffer.byteLength(e.real_ref, "utf8")).toBeLessThanOrEqual(4096);
          if (e.artifact_type === "task") expect(baselineIsTaskToken(e.real_ref)).toBe(true);
          else if (e.artifact_type === "data") expect(() => JSON.parse(e.real_ref)).not.toThrow();
          else {
            if (!scanned.has(e.real_ref)) expect(baselineIsReference(e.real_ref)).toBe(true);
            expect(e.real_ref).not.toMatch(/^(data|blob):/i);
          }
        }
      }),
      RUNS,
    );
  });

  it("the engine gates agree with the RegExp gates", () => {
    fc.assert(
      fc.property(refLike, (s) => {
        expect(isReference(s)).toBe(baselineIsReference(s));
        expect(isTaskToken(s)).toBe(baselineIsTaskToken(s));
      }),
      { numRuns: 1000 },
    );
  });
});
