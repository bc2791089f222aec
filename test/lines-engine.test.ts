/**
 * scanLinesPacked (the CLI's chunk scanner, which may run lines in the
 * WebAssembly kernel) against scanLinesPackedJs (the reference: JSON.parse and
 * extractArtifacts per line). With `createdAt` fixed the two must pack the
 * same bytes: counters, failures and output, for any input, however odd.
 *
 * Three layers: seeded random chunks (mostly the common shapes, a good share
 * of odd ones), a table of named single shapes, and the path statistics. A
 * mismatch names the first input line that shows it, so a kernel bug is one
 * line to reproduce, not a 60-line chunk.
 */
import { assert, describe, expect, it, vi } from "vitest";
import { prng } from "../bench/corpus.js";
import { unpackLineResult } from "../src/batch/packing.js";
import { scanLinesPacked, scanLinesPackedJs, type LinePathStats, type LineScanOptions } from "../src/batch/scan.js";
import { generateHandle } from "../src/engine/hash.js";
import { engine } from "../src/engine/wasm.js";
import { STRUCTURED_RESPONSE_MARK } from "../src/types.js";

const CREATED_AT = "2025-01-02T03:04:05.000Z";
const SEEDS = 200;

// JSON-lines options only: the table format takes the TypeScript path whole,
// so a table row here would compare that path with itself.
const OPTION_SETS: [string, LineScanOptions][] = [
  ["default", { format: "jsonl" }],
  ["no text refs", { format: "jsonl", detectRefsInText: false }],
  ["two prefixes", { format: "jsonl", sandboxPrefixes: ["/data/", "/mnt/user-data/"] }],
  ["no prefixes", { format: "jsonl", sandboxPrefixes: [] }],
  // Prefixes that hold blanks, one a control no reference holds, and prefixes of each other, either way round.
  ["prefixes with blanks", { format: "jsonl", sandboxPrefixes: ["/mnt/my data/", "/mnt/", "/mnt/my\u3000data/", "/mnt/my\tdata/"] }],
  ["default thread", { format: "jsonl", defaultThreadId: "fallback-线程" }],
  // Past 2^32: the call index of a result with no id and no tool_call_id is its line number.
  ["far into an archive", { format: "jsonl", firstLine: 9_007_199_254 }],
].map(([name, o]) => [name as string, { ...(o as LineScanOptions), createdAt: CREATED_AT }]);

// ---- Running both and telling where they differ ------------------------------------------

type Outcome = ReturnType<typeof unpackLineResult> & { output: Buffer };
type Scan = typeof scanLinesPacked;

/** Pooled buffers in real use are larger than asked and hold old bytes: nothing may depend on zeroes. */
const dirtyAlloc = (bytes: number) => {
  const buffer = new ArrayBuffer(bytes + 64);
  new Uint8Array(buffer).fill(0xaa);
  return buffer;
};

function run(scan: Scan, bytes: Uint8Array, options: LineScanOptions, alloc?: (n: number) => ArrayBuffer): Outcome {
  const r = unpackLineResult(scan(bytes, options, { alloc }));
  return { ...r, output: Buffer.from(r.output) };
}

/** The first difference between two outcomes, in words; undefined when they agree exactly. */
function difference(got: Outcome, want: Outcome): string | undefined {
  for (const key of ["lines", "entries", "rejected", "skipped"] as const) {
    if (got[key] !== want[key]) return `${key}: engine ${got[key]}, reference ${want[key]}`;
  }
  const [gf, wf] = [JSON.stringify(got.failures), JSON.stringify(want.failures)];
  if (gf !== wf) return `failures:\n  engine    ${gf.slice(0, 600)}\n  reference ${wf.slice(0, 600)}`;
  if (Buffer.compare(got.output, want.output) === 0) return undefined;
  const [g, w] = [got.output.toString("utf8").split("\n"), want.output.toString("utf8").split("\n")];
  let i = 0;
  while (i < g.length && g[i] === w[i]) i++;
  const same = g.join("\n") === w.join("\n") ? " (the same text after UTF-8 decoding: the bytes differ)" : "";
  return `output line ${i + 1}${same}:\n  engine    ${JSON.stringify(g[i]?.slice(0, 600))}\n  reference ${JSON.stringify(w[i]?.slice(0, 600))}`;
}

/** The chunk's lines as the reference splits them (on LF; a CR stays in its line). */
function splitLines(bytes: Uint8Array): Uint8Array[] {
  const lines: Uint8Array[] = [];
  for (let start = 0; start < bytes.length; ) {
    let end = bytes.indexOf(0x0a, start);
    if (end === -1) end = bytes.length;
    lines.push(bytes.subarray(start, end));
    start = end + 1;
  }
  return lines;
}

const join = (lines: readonly Uint8Array[]) => new Uint8Array(Buffer.concat(lines.flatMap((l, i) => (i === 0 ? [l] : [Buffer.from("\n"), l]))));

/** A line, readable: its text, and its bytes in hex when it is not valid UTF-8 (the text shows U+FFFD there). */
function preview(line: Uint8Array): string {
  const text = Buffer.from(line).toString("utf8");
  let hex = "";
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(line);
  } catch {
    hex = `\n  hex: ${Buffer.from(line.subarray(0, 300)).toString("hex")}`;
  }
  return `${line.length} bytes: ${JSON.stringify(text.slice(0, 400))}${text.length > 400 ? "…" : ""}${hex}`;
}

/** Which input line shows a difference: first each line alone, then (state carried across lines) the shortest differing prefix. */
function locate(bytes: Uint8Array, options: LineScanOptions): string {
  const lines = splitLines(bytes);
  const differs = (part: Uint8Array) => difference(run(scanLinesPacked, part, options), run(scanLinesPackedJs, part, options));
  for (let i = 0; i < lines.length; i++) {
    const d = differs(lines[i]);
    if (d) return `input line ${i + 1} alone differs (${d})\n  line ${preview(lines[i])}`;
  }
  let [lo, hi] = [1, lines.length]; // the shortest prefix of lines that differs, if any does
  if (!differs(join(lines))) return "the chunk differs only as given (a view into a larger buffer, or a dirty buffer from alloc)";
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (differs(join(lines.slice(0, mid)))) hi = mid;
    else lo = mid + 1;
  }
  return `no line differs alone; lines 1..${lo} do, ending with line ${lo}: ${preview(lines[lo - 1])}`;
}

/** Both scans of `bytes` agree exactly; returns the reference's outcome. */
function expectSame(bytes: Uint8Array, options: LineScanOptions, label: string, alloc?: (n: number) => ArrayBuffer): Outcome {
  const before = Buffer.from(bytes);
  const engine = run(scanLinesPacked, bytes, options, alloc);
  assert(Buffer.compare(before, bytes) === 0, `${label}: scanLinesPacked modified its input`);
  const reference = run(scanLinesPackedJs, bytes, options);
  const d = difference(engine, reference);
  if (d) assert.fail(`${label}: ${d}\n${locate(Uint8Array.from(bytes), options)}`);
  return reference;
}

/** `bytes` as a view into a larger buffer, as the CLI passes chunks: a scan reading past either end finds a ghost line. */
function inBiggerBuffer(bytes: Uint8Array): Uint8Array {
  const ghost = Buffer.from('\n{"thread_id":"ghost","message":{"type":"tool","tool_call_id":"g","content":"/mnt/user-data/ghost.csv"}}\n');
  const all = Buffer.concat([ghost, bytes, ghost]);
  return new Uint8Array(all.buffer, all.byteOffset + ghost.length, bytes.length);
}

// ---- Writing JSON by hand: escapes, blanks, duplicate keys, odd numbers ------------------

/** Seeded random choices (bench/corpus.ts's mulberry32). */
function rng(seed: number) {
  const next = prng(seed);
  const int = (n: number) => Math.floor(next() * n);
  return { int, chance: (p: number) => next() < p, pick: <T>(xs: readonly T[]): T => xs[int(xs.length)] };
}
type Rng = ReturnType<typeof rng>;

/** JSON text written verbatim (numbers JSON.stringify never writes, broken syntax). */
class Raw {
  constructor(readonly text: string) {}
}
/** An object written pair by pair, so a key may repeat (JSON.parse keeps the last value, at the first position). */
class Pairs {
  constructor(readonly pairs: readonly [string, unknown][]) {}
}

/** How a line is written: how often a character becomes a \u escape, "/" as "\/", blanks between tokens. */
interface Style {
  escape: number;
  slash: boolean;
  blanks: boolean;
}
const PLAIN: Style = { escape: 0, slash: false, blanks: false };

/** Stands for an invalid UTF-8 sequence until the line is bytes (a JS string cannot hold one). */
const BAD = "\ue000";
const BAD_BYTES = [[0xff], [0xc3], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82], [0x80], [0xfe]];

function writeString(s: string, r: Rng, st: Style): string {
  if (st.escape === 0 && !st.slash) return JSON.stringify(s);
  let out = "";
  for (const ch of s) {
    if (ch === "/" && st.slash && r.chance(0.5)) out += "\\/";
    else if (ch !== BAD && r.chance(st.escape)) {
      for (let i = 0; i < ch.length; i++) {
        const hex = ch.charCodeAt(i).toString(16).padStart(4, "0");
        out += "\\u" + (r.chance(0.5) ? hex.toUpperCase() : hex);
      }
    } else out += JSON.stringify(ch).slice(1, -1);
  }
  return `"${out}"`;
}

function write(v: unknown, r: Rng, st: Style): string {
  const gap = () => (st.blanks && r.chance(0.3) ? r.pick([" ", "\t", "\r", "  \t "]) : "");
  const pair = (k: string, x: unknown) => `${gap()}${writeString(k, r, st)}${gap()}:${gap()}${write(x, r, st)}${gap()}`;
  if (v instanceof Raw) return v.text;
  if (v instanceof Pairs) return `{${v.pairs.map(([k, x]) => pair(k, x)).join(",")}}`;
  if (typeof v === "string") return writeString(v, r, st);
  if (Array.isArray(v)) return `[${v.map((x) => gap() + write(x, r, st) + gap()).join(",")}]`;
  if (v !== null && typeof v === "object") {
    return `{${Object.entries(v).filter(([, x]) => x !== undefined).map(([k, x]) => pair(k, x)).join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}

// ---- The pieces of a tool result -------------------------------------------------------

const EXTS = ["png", "csv", "pdf", "json", "txt", "jpg", "jpeg", "md", "xlsx", "zip", "log", "html", "exe", "PNG", "tar.gz"];
const TRAIL = ["", "", "", ".", ",", ";", ":", ")", "]", "}", '"', "'", "`", "...", ")."];
const NAMES = ["report", "out/data", "图表", "résumé", "a-b_c", "x", "part 2", "with'quote", "数据/𝄞", "e\u0301"];

function sandboxPath(r: Rng, happy = false): string {
  const prefix = happy ? "/mnt/user-data/" : r.pick(["/mnt/user-data/", "/mnt/user-data/", "/data/", "/tmp/", "/mnt/user-data", "/MNT/user-data/", "/mnt/my data/", "/mnt/my\u3000data/", "/mnt/my\tdata/"]);
  const name = happy ? `out/file_${r.int(50)}` : r.chance(0.02) ? "n".repeat(4100) : r.pick(NAMES);
  return `${prefix}${name}.${r.pick(happy ? EXTS.slice(0, 6) : EXTS)}`;
}

function url(r: Rng, happy = false, ext?: string): string {
  const scheme = happy ? "https" : r.pick(["https", "http", "HTTPS", "hTTp", "ftp"]);
  const host = happy ? "cdn.example.com" : r.pick(["cdn.example.com", "example.org:8080", "例子.测试", "", "/x", "a.b"]);
  const query = !happy && r.chance(0.2) ? r.pick(["?v=1", "#top", "?a=1&b=é", "?"]) : "";
  return `${scheme}://${host}/${r.pick(happy ? ["img", "files/2025"] : NAMES)}/${r.int(1000)}.${ext ?? r.pick(happy ? EXTS.slice(0, 6) : EXTS)}${query}`;
}

const WORDS = ["wrote", "saved", "see", "the", "file", "at", "and", "done", "(ok)", "résumé", "中文", "𝄞", "😀", "café"];
const ODD_WORDS = ["tab\there", "line\nbreak", 'say "hi"', "back\\slash", "\u2028", "\u00a0", "\u0001", "\ud800", "x\udc00", "\ud83d\ude00", "a/b", "//not", "https://", "file:///etc/x.txt", "data:image/png;base64,AAAA.png", "\u0085", "\u3000", "é\u200b"];

/** Prose with sandbox paths and file URLs among the words, some with trailing punctuation. */
function prose(r: Rng, happy: boolean, words = 4 + r.int(30)): string {
  const out: string[] = [];
  for (let i = 0; i < words; i++) {
    const k = r.int(10);
    if (k === 0) out.push((r.chance(0.2) ? "(" : "") + sandboxPath(r, happy) + (happy ? r.pick(["", ".", ","]) : r.pick(TRAIL)));
    else if (k === 1) out.push(url(r, happy) + (happy ? r.pick(["", ".", ")"]) : r.pick(TRAIL)));
    else if (!happy && k === 2) out.push(r.chance(0.1) ? BAD : r.pick(ODD_WORDS));
    else out.push(happy && r.chance(0.1) ? "line\nbreak\t" : r.pick(WORDS));
  }
  return out.join(r.pick([" ", " ", "\n", happy ? " " : "\t"]));
}

/** Strings under a known key: mostly references, some the gates reject. */
function refValue(r: Rng, happy: boolean, key: string): unknown {
  if (key === "task_id" || key === "job_id") {
    return happy ? `job-${r.int(1e6)}` : r.pick(["task-7", "job_9f", "", "with space", "t".repeat(256), "t".repeat(257), "é".repeat(200), "a\u00a0b", 42, null]);
  }
  if (!happy && r.chance(0.25)) return r.pick(["out/rel.csv", "//host/x.png", "data:text/plain,hi", "C:\\x\\y.txt", "d:/z.pdf", "/a\u2028b.png", "/a\u0001.png", "https:///x.png", "http://h/ x.png", "/ok\ud800.png", 5, { path: "/inner.csv" }]);
  const one = () => (r.chance(0.5) ? sandboxPath(r, happy) : url(r, happy));
  return key === "files" || key === "urls" || (!happy && r.chance(0.2)) ? Array.from({ length: 1 + r.int(4) }, one) : one();
}

const KNOWN = ["path", "file", "files", "file_path", "url", "urls", "task_id", "job_id"];

/** A structured payload of one of many kinds; the result is written as is (Raw, Pairs allowed). */
function payload(r: Rng, happy: boolean, depth = 0): unknown {
  if (happy) return { path: refValue(r, true, "path"), url: refValue(r, true, "url"), rows: r.int(100) };
  const small = () => r.pick<unknown>([1, -2.5, "text", true, null, [], {}, "é"]);
  switch (r.int(depth > 2 ? 3 : 14)) {
    case 0: return Object.fromEntries(Array.from({ length: 1 + r.int(4) }, () => { const k = r.pick(KNOWN); return [k, refValue(r, false, k)]; }));
    case 1: return { city: r.pick(["Lisbon", "Zürich", "東京"]), temp: small(), ok: r.chance(0.5) }; // no known key: a data entry
    case 2: return r.pick<unknown>([{}, [], "", "just a string", 42, true, [sandboxPath(r)]]);
    case 3: return { nested: payload(r, false, depth + 1), list: [payload(r, false, depth + 1), { file: refValue(r, false, "file") }] };
    case 4: return new Pairs([["n", new Raw(r.pick(["1e3", "-0", "1.50", "12345678901234567890", "-2.5E-3", "0.1", "1E+2", "-0.0", "9007199254740993"]))], ["m", new Raw("[1.0,2e0,-0]")]]);
    case 5: return { files: Array.from({ length: 1000 + r.int(60) }, (_, i) => `/mnt/user-data/f${i}.csv`) }; // about the node budget
    case 6: { let v: unknown = { path: sandboxPath(r) }; for (let d = 30 + r.int(4); d > 0; d--) v = r.chance(0.5) ? { a: v } : [v]; return v; } // about the depth budget
    case 7: return { b: { path: sandboxPath(r) }, 7: { url: url(r) }, "0": [sandboxPath(r)], a: 1 }; // integer-like keys come first in JS
    case 8: return new Pairs([["path", sandboxPath(r)], ["x", { url: url(r) }], ["path", sandboxPath(r)], ["data", 1], ["data", 2]]);
    case 9: return new Raw(`{"p\\u0061th":${JSON.stringify(sandboxPath(r))},"\\u0075rls":[${JSON.stringify(url(r))}],"url":"https:\\/\\/cdn.example.com\\/\\u00e9.png","ta\\\\sk":"x"}`); // escaped keys
    case 10: return { note: "x".repeat(4000 + r.int(200)), k: 1 }; // a data fallback about its 4096-byte bound
    case 11: return { files: [sandboxPath(r), sandboxPath(r), sandboxPath(r)], path: sandboxPath(r), url: "https://cdn.example.com/img/1.png" };
    case 12: return [{ url: url(r) }, { task_id: refValue(r, false, "task_id") }, "loose", 3];
    default: return { text: prose(r, false, 5), path: "/mnt/user-data/out/file_1.csv" };
  }
}

/** A content block: the url-carrying shapes, text, and shapes that must give nothing. */
function block(r: Rng, happy: boolean, mirror: string | undefined, structured?: string): unknown {
  const text = (t: string) => (structured !== undefined ? { type: "text", text: t, structuredContent: new Raw(structured) } : { type: "text", text: t });
  const k = r.int(happy ? 4 : 16);
  switch (k) {
    case 0: return text(mirror !== undefined && r.chance(0.5) ? mirror : prose(r, happy));
    case 1: return { type: "image", url: url(r, happy, "png"), mimeType: "image/png" };
    case 2: return { type: "file", source_type: "url", url: url(r, happy, "pdf"), mime_type: "application/pdf" };
    case 3: return { type: "image", source: { url: url(r, happy, "jpg"), mime_type: "image/jpeg" } };
    case 4: return { type: "image_url", image_url: r.chance(0.7) ? { url: url(r) } : url(r) };
    case 5: return prose(r, false);
    case 6: return { type: "image", source_type: "base64", data: "iVBORw0KGgo=", mime_type: "image/png" };
    case 7: return { type: "file", source_type: r.pick(["base64", "id", "text", "URL"]), url: url(r), id: "file-1" };
    case 8: return { type: r.pick(["audio", "video", "Text", "tool_use"]), url: url(r), text: prose(r, false) };
    case 9: return r.pick<unknown>([null, 5, ["nested", sandboxPath(r)], {}, true]);
    case 10: return { type: "text", text: r.pick<unknown>([5, null, [prose(r, false)]]) };
    case 11: return { type: "image", url: r.pick(["data:image/png;base64,AAAA", "relative.png", "", "/abs/x.png"]), mimeType: 7, mime_type: "image/x" };
    case 12: return { type: "image", source: { url: url(r), mimeType: "image/gif" }, mimeType: "ignored" };
    case 13: return { type: "file", url: 17, source: { url: sandboxPath(r) } };
    default: return mirror ?? prose(r, false); // a plain string item, maybe the mirror
  }
}

/** The message fields of a tool result. */
function toolMessage(r: Rng, happy: boolean, n: number): Record<string, unknown> {
  const m: Record<string, unknown> = { type: "tool" };
  if (r.chance(0.5)) m.id = `msg-${n}`;
  m.name = happy ? r.pick(["writer", "fetch_report"]) : r.pick<unknown>(["writer", "图表", "", 5, undefined, "a\nb"]);
  m.tool_call_id = happy || r.chance(0.9) ? `call_${n % 17}` : r.pick<unknown>([undefined, 7, ""]);
  if (!happy && r.chance(0.1)) m.status = r.pick(["error", "success", "ERROR"]);
  // The structured payload, written once so the mirror text is exactly its JSON.
  const kind = r.int(happy ? 6 : 8);
  const st: Style = happy ? PLAIN : { escape: r.chance(0.5) ? 0.02 : 0, slash: r.chance(0.3), blanks: r.chance(0.3) };
  const hasPayload = happy ? kind >= 3 : r.chance(0.45);
  const p = hasPayload ? write(payload(r, happy), r, st) : undefined;
  let mirror: string | undefined;
  if (p !== undefined && r.chance(happy ? 0 : 0.5)) {
    const parsed: unknown = JSON.parse(p);
    mirror = r.pick([JSON.stringify(parsed), JSON.stringify(parsed, null, 2), "\n " + JSON.stringify(parsed), JSON.stringify([parsed])]);
  }
  const where = p === undefined ? -1 : happy ? 0 : r.int(4);
  if (where === 0) m.artifact = [...(r.chance(0.2) ? [{ type: "other", data: 1 }] : []), { type: "mcp_structured_content", data: new Raw(p!) }];
  if (where === 1) m.artifact = { structured_content: new Raw(p!) };
  const blocks = (structured?: string) => Array.from({ length: 1 + r.int(4) }, (_, i) => block(r, happy, mirror, i === 0 ? structured : undefined));
  const c = happy ? r.int(2) : r.int(10);
  if (c === 0) m.content = mirror !== undefined && r.chance(0.5) ? mirror : prose(r, happy);
  else if (c === 1 || c === 2) m.content = blocks(where === 2 ? p : undefined);
  else if (c === 3) m.content = JSON.stringify(r.chance(0.5) ? block(r, false, mirror) : JSON.parse(write(blocks(where === 2 ? p : undefined), r, PLAIN)));
  else if (c === 4) m.content = r.pick<unknown>([null, 0, 3.5, { text: sandboxPath(r) }, [], true, ""]);
  else if (c === 5) m.content = `[${prose(r, false)}]`; // looks like JSON, is not
  else m.content = prose(r, false);
  if (where === 3) m.artifact = r.pick<unknown>([[], [{ type: "mcp_structured_content", data: null }], { structured_content: null }, "artifact", 5]);
  // Empty as LangChain serializes them (the engine reads on), or holding a
  // structured response's mark or anything else (left to the TypeScript path).
  if (r.chance(0.3)) m.additional_kwargs = happy ? {} : r.pick<unknown>([{}, { [STRUCTURED_RESPONSE_MARK]: true }, { [STRUCTURED_RESPONSE_MARK]: "true" }, { other: 1 }, null, "x"]);
  return m;
}

// ---- Lines and chunks ------------------------------------------------------------------

const SERIALIZED_TOOL = ["langchain_core", "messages", "ToolMessage"];

/** One happy-shape line: wrapped, direct or LangChain-serialized (alone or wrapped), as archives hold them. */
function happyLine(r: Rng, n: number): string {
  const m = toolMessage(r, true, n);
  const thread = `thread-${r.int(20)}`;
  const { type: _type, ...kwargs } = m;
  const serialized = { lc: 1, type: "constructor", id: SERIALIZED_TOOL, kwargs };
  const forms = [{ thread_id: thread, message: m }, { ...m, thread_id: thread }, { ...serialized, thread_id: thread }, { thread_id: thread, message: serialized }];
  return write(r.pick(forms), r, PLAIN);
}

/** One line of any shape, as a string or (invalid UTF-8, a BOM) as bytes. */
function anyLine(r: Rng, n: number): string | Uint8Array {
  if (r.chance(0.55)) return happyLine(r, n);
  const st: Style = { escape: r.chance(0.3) ? 0.05 : 0, slash: r.chance(0.3), blanks: r.chance(0.3) };
  const thread = r.chance(0.85) ? `thread-${r.int(20)}` : r.pick<unknown>([undefined, "", 7, null, ["t"], "线程-é\u2028"]);
  const extra: Record<string, unknown> = {};
  if (r.chance(0.15)) extra[r.pick(["call_index", "callIndex"])] = r.pick<unknown>([0, 3, -1, 1.5, "2", null, 2 ** 53, 1e3]);
  if (r.chance(0.05)) extra.threadId = `alt-${r.int(3)}`;
  const m = toolMessage(r, false, n);
  let value: unknown;
  switch (r.int(12)) {
    case 0: case 1: value = { thread_id: thread, message: m, ...extra }; break;
    case 2: case 3: value = { ...m, thread_id: thread, ...extra }; break;
    case 4: { const { type, ...kwargs } = m; value = { lc: 1, type: "constructor", id: r.chance(0.9) ? SERIALIZED_TOOL : ["x", "ToolMessageChunk"], kwargs: r.chance(0.8) ? kwargs : { ...kwargs, type }, thread_id: thread, ...extra }; break; }
    case 5: value = r.chance(0.5) ? { thread_id: thread, message: { ...m, type: r.pick(["ai", "human", "system"]) } } : { lc: 1, type: "constructor", id: ["langchain_core", "messages", "AIMessage"], kwargs: { content: prose(r, false) }, thread_id: thread }; break;
    case 6: value = new Pairs([["thread_id", thread], ["type", r.pick(["ai", "tool"])], ...Object.entries(m), ["type", r.pick(["tool", "ai"])], ["content", prose(r, false)]]); break;
    case 7: { const { type: _t, ...rest } = m; value = { ...rest, thread_id: thread, ...(r.chance(0.3) ? { message: "hi" } : {}) }; break; } // no type: tool_call_id decides
    case 8: return r.pick(["{", "not json", "{'a': 1}", '{"a":1,}', "[1,2]", "null", "42", '"str"', "true", "{}", '{"thread_id":"t"}', '{"thread_id":"t","message":5}', '{"a":1} x', "\u00a0{}", "\ufeff{}"]);
    default: value = { thread_id: thread, message: m, ...extra };
  }
  const text = write(value, r, st);
  let bytes = Buffer.from(text, "utf8");
  // Swap each placeholder for an invalid UTF-8 sequence; sometimes break the JSON outside strings too.
  const mark = Buffer.from(BAD, "utf8");
  for (let at = bytes.indexOf(mark); at !== -1; at = bytes.indexOf(mark)) bytes = Buffer.concat([bytes.subarray(0, at), Buffer.from(r.pick(BAD_BYTES)), bytes.subarray(at + 3)]);
  if (r.chance(0.03)) { const at = r.int(bytes.length); bytes = Buffer.concat([bytes.subarray(0, at), Buffer.from([0xff]), bytes.subarray(at)]); }
  if (r.chance(0.03)) bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes]);
  if (r.chance(0.03)) bytes = bytes.subarray(0, r.int(bytes.length)); // truncated: invalid JSON
  return new Uint8Array(bytes);
}

/** A line hundreds of KB long holding thousands of references, some repeated. */
function longLine(r: Rng, n: number): string {
  const parts: string[] = [];
  for (let i = 0; i < 3000; i++) parts.push(`step ${i}: wrote /mnt/user-data/out/part_${i % 1500}.csv, see https://cdn.example.com/r/${i % 700}.png; ` + "filler text ".repeat(r.int(12)));
  return write({ thread_id: "long", message: { type: "tool", tool_call_id: `c${n}`, name: "bulk", content: r.chance(0.5) ? parts.join("\n") : [{ type: "text", text: parts.join("") }] } }, r, PLAIN);
}

const BLANKS = ["", " ", "\t", "\r", " \t \r", "\u00a0", "\u2028", "\ufeff", "\u3000", "\v\f"];

/** A chunk: lines joined by LF or CRLF, blank and whitespace-only lines among them, maybe a trailing newline. */
function chunk(seed: number, happyOnly = false): Uint8Array {
  const r = rng(seed);
  const parts: Uint8Array[] = [];
  const crlf = r.int(3); // 0: LF, 1: CRLF, 2: mixed
  const count = happyOnly ? 200 : 1 + r.int(60);
  for (let i = 0; i < count; i++) {
    let line: string | Uint8Array;
    if (happyOnly) line = happyLine(r, i);
    else if (r.chance(0.08)) line = r.pick(BLANKS);
    else if (seed % 40 === 7 && i === 0) line = longLine(r, i);
    else line = anyLine(r, i);
    parts.push(typeof line === "string" ? Buffer.from(line, "utf8") : line);
    if (i < count - 1 || r.chance(0.4)) parts.push(Buffer.from(crlf === 1 || (crlf === 2 && r.chance(0.5)) ? "\r\n" : "\n"));
  }
  return new Uint8Array(Buffer.concat(parts));
}

// ---- Tests -----------------------------------------------------------------------------

describe("scanLinesPacked agrees with scanLinesPackedJs on random chunks", () => {
  it.each(OPTION_SETS)("options: %s", (name, options) => {
    for (let seed = 1; seed <= SEEDS; seed++) {
      const bytes = chunk(seed);
      // Odd seeds: a view into a larger buffer and a dirty result buffer, as the CLI and the pool give.
      const odd = seed % 2 === 1;
      expectSame(odd ? inBiggerBuffer(bytes) : bytes, options, `seed ${seed}, options ${name}`, odd ? dirtyAlloc : undefined);
    }
  });
});

/** Named inputs, one shape each; `want` pins what the reference does with it under default options, so the case stays meaningful. */
type Case = [name: string, input: string | number[], want?: Partial<Record<"entries" | "failures" | "skipped" | "rejected" | "lines", number>>];
const M = (fields: string) => `{"thread_id":"t","message":{"type":"tool","tool_call_id":"c1","name":"w",${fields}}}`;
/** A payload whose deepest value (the path string) sits at level `d`, the root being level 1. */
const deep = (d: number) => "[".repeat(d - 2) + '{"path":"/mnt/user-data/deep.csv"}' + "]".repeat(d - 2);
const nodes = (n: number) => `{"files":[${Array.from({ length: n - 2 }, (_, i) => `"/mnt/user-data/n${i}.csv"`).join(",")}]}`;
const bytesOf = (...parts: (string | number[])[]) => parts.flatMap((p) => (typeof p === "string" ? [...Buffer.from(p, "utf8")] : p));
const MANY = Array.from({ length: 400 }, (_, i) => `/mnt/user-data/m/${i % 250}.csv`);

const CASES: Case[] = [
  ["empty chunk", "", { lines: 0 }],
  ["a lone newline", "\n", { lines: 1, entries: 0 }],
  ["blank and whitespace-only lines", "\n \n\t\r\n\r\n\u00a0\n\u2028\n\ufeff\n\u3000\n", { lines: 8, failures: 0 }],
  ["CRLF endings", M('"content":"/mnt/user-data/a.csv"') + "\r\n" + M('"content":"/mnt/user-data/b.csv"') + "\r\n", { entries: 2 }],
  ["a BOM before a line", bytesOf([0xef, 0xbb, 0xbf], M('"content":"/mnt/user-data/a.csv"')), { failures: 1 }],
  ["a line of just a BOM", bytesOf([0xef, 0xbb, 0xbf], "\n", M('"content":"x"')), { failures: 0 }],
  ["wrapped, call_index 3", '{"thread_id":"t","call_index":3,"message":{"type":"tool","tool_call_id":"c","content":"/mnt/user-data/a.csv"}}', { entries: 1 }],
  ["callIndex and threadId spellings", '{"threadId":"t","callIndex":2,"message":{"type":"tool","tool_call_id":"c","content":"/mnt/user-data/a.csv"}}', { entries: 1 }],
  ["call_index null falls back to callIndex", '{"thread_id":"t","call_index":null,"callIndex":4,"message":{"type":"tool","tool_call_id":"c","content":"/mnt/user-data/a.csv"}}', { entries: 1 }],
  ["call_index negative, fractional, string", ["-1", "1.5", '"2"', "1e400"].map((c) => `{"thread_id":"t","call_index":${c},"message":{"type":"tool","tool_call_id":"c","content":"/mnt/user-data/a.csv"}}`).join("\n"), { failures: 4 }],
  ["call_index as 3.0 and 1e1", ["3.0", "1e1"].map((c) => `{"thread_id":"t","call_index":${c},"message":{"type":"tool","tool_call_id":"c","content":"/mnt/user-data/a.csv"}}`).join("\n"), { entries: 2 }],
  ["thread_id missing, empty, numeric, null", ["", '"thread_id":"",', '"thread_id":5,', '"thread_id":null,'].map((t) => `{${t}"message":{"type":"tool","tool_call_id":"c","content":"/mnt/user-data/a.csv"}}`).join("\n"), { failures: 4 }],
  ["thread_id on a direct message", '{"type":"tool","tool_call_id":"c","name":"n","id":"m1","content":"see /mnt/user-data/a.csv","thread_id":"t"}', { entries: 1 }],
  ["LangChain serialized ToolMessage", '{"lc":1,"type":"constructor","id":["langchain_core","messages","ToolMessage"],"kwargs":{"tool_call_id":"c","name":"n","content":"/mnt/user-data/a.csv","artifact":{"structured_content":{"url":"https://x.io/a.png"}}},"thread_id":"t"}', { entries: 2 }],
  // LangChain's stored form (mapChatMessagesToStoredMessages, Python's message_to_dict): read by the TypeScript path.
  ["stored ToolMessage, wrapped and direct, and a chunk as Python stores it", '{"thread_id":"t","message":{"type":"tool","data":{"content":"/mnt/user-data/a.csv","tool_call_id":"c","name":"n","id":"m1"}}}\n{"thread_id":"t","type":"tool","data":{"content":[{"type":"image","url":"https://x.io/b.png"}],"tool_call_id":"c2"}}\n{"thread_id":"t","message":{"type":"ToolMessageChunk","data":{"type":"ToolMessageChunk","content":"/mnt/user-data/c.csv","tool_call_id":"c3"}}}', { entries: 3 }],
  ["stored AIMessage is skipped", '{"thread_id":"t","message":{"type":"ai","data":{"content":"/mnt/user-data/a.csv"}}}', { skipped: 1 }],
  ["a tool message with a data field of its own is no stored form", M('"content":"/mnt/user-data/a.csv","data":{"content":"/mnt/user-data/b.csv"}'), { entries: 1 }],
  ["serialized AIMessage is skipped", '{"lc":1,"type":"constructor","id":["langchain_core","messages","AIMessage"],"kwargs":{"content":"/mnt/user-data/a.csv"},"thread_id":"t"}', { skipped: 1 }],
  ["serialized with a non-string class name", '{"lc":1,"type":"constructor","id":[5],"kwargs":{"tool_call_id":"c","content":"/mnt/user-data/a.csv"},"thread_id":"t"}'],
  ["ai and human messages are skipped", '{"thread_id":"t","message":{"type":"ai","content":"/mnt/user-data/a.csv"}}\n{"type":"human","content":"x","thread_id":"t"}', { skipped: 2 }],
  ["no type: tool_call_id decides", '{"tool_call_id":"c","content":"/mnt/user-data/a.csv","thread_id":"t"}\n{"content":"/mnt/user-data/a.csv","thread_id":"t"}', { entries: 1, skipped: 1 }],
  ["a wrapper that repeats the call id beside its message", '{"thread_id":"t","tool_call_id":"c","message":{"type":"tool","tool_call_id":"c","content":"/mnt/user-data/a.csv"}}\n{"thread_id":"t","tool_call_id":"c","message":{"lc":1,"type":"constructor","id":["ToolMessage"],"kwargs":{"tool_call_id":"c","content":"/mnt/user-data/b.csv"}}}', { entries: 2 }],
  ["a direct message with a call id, a result and a message field", '{"thread_id":"t","type":"tool","tool_call_id":"c","message":{"type":"tool","tool_call_id":"c","content":"/mnt/user-data/no.csv"},"content":"/mnt/user-data/a.csv"}\n{"thread_id":"t","tool_call_id":"c","message":{},"artifact":{"structured_content":{"path":"/mnt/user-data/b.csv"}}}\n{"thread_id":"t","tool_call_id":"c","message":"hi"}', { entries: 2, failures: 0 }],
  ["direct message with a message field", '{"type":"tool","message":"hi","content":"/mnt/user-data/a.csv","thread_id":"t"}', { failures: 1 }],
  ["invalid JSON of several kinds", ["{", "not json", "{'a':1}", '{"a":1,}', '{"a":1} x', "\u00a0{}", '{"a":"\u0001"}', '{"a":01}'].join("\n"), { failures: 8 }],
  ["JSON that is not an object", ["[1,2]", "null", "42", '"s"', "true"].join("\n"), { failures: 5 }],
  ["message that is not an object", '{"thread_id":"t","message":[{"type":"tool"}]}', { failures: 1 }],
  ["status error gives nothing", M('"status":"error","content":"/mnt/user-data/a.csv"'), { entries: 0, failures: 0 }],
  ["name missing, empty, numeric", ['"content":"/mnt/user-data/a.csv"', '"name":"","content":"/mnt/user-data/a.csv"', '"name":5,"content":"/mnt/user-data/a.csv"'].map((f) => `{"thread_id":"t","message":{"type":"tool","tool_call_id":"c",${f}}}`).join("\n"), { entries: 3 }],
  ["tool_call_id missing or numeric", '{"thread_id":"t","message":{"type":"tool","content":"/mnt/user-data/a.csv"}}\n{"thread_id":"t","message":{"type":"tool","tool_call_id":5,"id":"m","content":"/mnt/user-data/a.csv"}}', { entries: 2 }],
  ["no id and no tool_call_id: the line number is the call index", '\n{"thread_id":"t","message":{"type":"tool","content":"/mnt/user-data/a.csv"}}\n{"thread_id":"t","message":{"type":"tool","tool_call_id":"","content":"/mnt/user-data/a.csv"}}\n{"lc":1,"type":"constructor","id":["ToolMessage"],"kwargs":{"tool_call_id":"","content":"/mnt/user-data/a.csv"},"thread_id":"t"}', { entries: 3 }],
  // Python's model_dump of a ToolMessageChunk says its class as type: a result (the engine leaves it to TypeScript).
  ["a plain type ToolMessageChunk", '{"thread_id":"t","type":"ToolMessageChunk","tool_call_id":"c","content":"/mnt/user-data/a.csv"}\n{"thread_id":"t","type":"ToolMessage","tool_call_id":"c","content":"/mnt/user-data/b.csv"}', { entries: 1, skipped: 1 }],
  ["type twice: the last wins", '{"thread_id":"t","type":"tool","tool_call_id":"c","content":"/mnt/user-data/a.csv","type":"ai"}\n{"thread_id":"t","type":"ai","tool_call_id":"c","content":"/mnt/user-data/b.csv","type":"tool"}', { entries: 1, skipped: 1 }],
  ["content twice: the last wins", M('"content":"/mnt/user-data/first.csv","content":"/mnt/user-data/second.csv"'), { entries: 1 }],
  ["thread_id twice", '{"thread_id":"a","thread_id":"b","type":"tool","tool_call_id":"c","content":"/mnt/user-data/a.csv"}', { entries: 1 }],
  ["prose with paths and URLs and trailing punctuation", M(JSON.stringify("content") + ":" + JSON.stringify("Saved /mnt/user-data/out/r.csv, and (/mnt/user-data/x.pdf). See https://cdn.example.com/a/b.png; http://x.org/y.CSV) and https://h/c.pdf?x=1#y.\n`/mnt/user-data/q.json` '/mnt/user-data/z.txt'")), { entries: 6 }],
  ["every escape in content", M('"content":"\\n\\t\\"\\\\\\/ \\u00e9 \\u2028 \\ud83d\\ude00 \\ud800 \\u0001 \\/mnt\\/user-data\\/\\u00e9.csv \\u002fmnt/user-data/\\u0061.png https:\\/\\/x.io\\/\\ud83d\\ude00.png"'), { entries: 3 }],
  ["lone surrogates in refs", M('"content":"/mnt/user-data/\\ud800.csv /mnt/user-data/\\udfff\\ud800x.png https://x.io/\\udc00.png","artifact":{"structured_content":{"path":"/mnt/user-data/\\ud800.txt"}}'), { entries: 4 }],
  ["raw non-ASCII", M('"content":"é 中 𝄞 /mnt/user-data/数据/𝄞.csv https://例子.测试/é.png\u2028/mnt/user-data/x\u00a0y.txt"'), { entries: 3 }],
  // Decoded, each invalid byte would be U+FFFD: references nothing can open, so the line is bad.
  ["invalid UTF-8 inside strings", bytesOf('{"thread_id":"t","message":{"type":"tool","tool_call_id":"c","content":"/mnt/user-data/', [0xff], "a.csv /mnt/user-data/", [0xc3], ".csv /mnt/user-data/", [0xed, 0xa0, 0x80], ".png /mnt/user-data/", [0xc0, 0xaf], 'x.txt"}}'), { entries: 0, failures: 1 }],
  ["invalid UTF-8 outside strings", bytesOf('{"thread_id":"t",', [0xff], '"message":{}}'), { failures: 1 }],
  ["invalid UTF-8 in a key and in a payload", bytesOf('{"thread_id":"t","message":{"type":"tool","tool_call_id":"c","artifact":{"structured_content":{"pa', [0xff], 'th":"/a.csv","path":"/b', [0xe2, 0x82], '.csv"}},"content":"x"}}'), { entries: 0, failures: 1 }],
  ["content as a JSON string of blocks", M('"content":' + JSON.stringify(JSON.stringify([{ type: "text", text: "see /mnt/user-data/a.csv" }, { type: "image", url: "https://x.io/i.png" }]))), { entries: 2 }],
  ["content as the JSON of one text block with structuredContent", M('"content":' + JSON.stringify(JSON.stringify({ type: "text", text: '{"path":"/mnt/user-data/a.csv"}', structuredContent: { path: "/mnt/user-data/a.csv", job_id: "j1" } }))), { entries: 2 }],
  ["content as JSON of an unknown block type is prose", M('"content":' + JSON.stringify(JSON.stringify([{ type: "audio", url: "/mnt/user-data/a.csv" }]))), { entries: 1 }],
  ["content null, number, object, true, empty", ["null", "5", '{"text":"/mnt/user-data/a.csv"}', "true", '""', "[]"].map((c) => M(`"content":${c}`)).join("\n"), { entries: 0, failures: 0 }],
  ["every block shape", M('"content":[{"type":"text","text":"/mnt/user-data/t.csv"},"/mnt/user-data/s.csv",{"type":"image","url":"https://x.io/1.png","mimeType":"image/png"},{"type":"file","source_type":"url","url":"https://x.io/2.pdf","mime_type":"application/pdf"},{"type":"image","source":{"url":"https://x.io/3.jpg","mime_type":"image/jpeg"}},{"type":"image_url","image_url":{"url":"https://x.io/4.png"}},{"type":"image_url","image_url":"https://x.io/5.gif"},{"type":"image","source_type":"base64","data":"AAAA"},{"type":"file","source_type":"base64","url":"https://x.io/6.pdf"},{"type":"audio","url":"https://x.io/7.mp3"},null,7,["/mnt/user-data/n.csv"]]'), { entries: 7 }],
  ["mcp_structured_content artifact with every known key", M('"content":"ok","artifact":[{"type":"other"},{"type":"mcp_structured_content","data":null},{"type":"mcp_structured_content","data":{"path":"/mnt/user-data/p.csv","file":"/f.txt","files":["/a.png","https://x.io/b.csv"],"file_path":"C:\\\\x.txt","url":"https://x.io/u","urls":["http://y.io/v"],"task_id":"task-1","job_id":"job 2","nested":{"path":"/n.csv","list":[{"url":"https://z.io/w"}]}}}]'), { entries: 10 }],
  ["structured_content artifact, small payload without known keys", M('"content":"ok","artifact":{"structured_content":{"city":"Zürich","temp":-0,"n":1e3,"f":1.50,"big":12345678901234567890,"e":-2.5E-3,"x":[1.0,{}]}}'), { entries: 1 }],
  ["structuredContent on a text block, and the source order", M('"content":[{"type":"text","text":"/mnt/user-data/b.csv","structuredContent":{"path":"/mnt/user-data/a.csv"}},{"type":"text","text":"x","structuredContent":{"path":"/mnt/user-data/ignored.csv"}}]'), { entries: 2 }],
  ["artifact payload before a block's structuredContent", M('"content":[{"type":"text","text":"t","structuredContent":{"path":"/mnt/user-data/block.csv"}}],"artifact":{"structured_content":{"path":"/mnt/user-data/art.csv"}}'), { entries: 1 }],
  ["payload of exactly 1024 nodes", M(`"content":"ok","artifact":{"structured_content":${nodes(1024)}}`), { rejected: 0 }],
  ["payload of 1025 nodes is rejected", M(`"content":"ok","artifact":{"structured_content":${nodes(1025)}}`), { rejected: 1 }],
  ["payload of depth 32", M(`"content":"ok","artifact":{"structured_content":${deep(32)}}`), { rejected: 0, entries: 1 }],
  ["payload of depth 33 is rejected", M(`"content":"ok","artifact":{"structured_content":${deep(33)}}`), { rejected: 1 }],
  ["integer-like keys come first", M('"content":"ok","artifact":{"structured_content":{"b":{"path":"/b.csv"},"7":{"path":"/7.csv"},"0":{"path":"/0.csv"},"10":1,"x":{"9":"v"}}}'), { entries: 3 }],
  ["duplicate keys in a payload", M('"content":"ok","artifact":{"structured_content":{"path":"/first.csv","x":{"url":"https://x.io/1.png"},"path":"/second.csv","k":1,"k":2}}'), { entries: 2 }],
  ["duplicate keys in a data payload", M('"content":"ok","artifact":{"structured_content":{"k":1,"j":[],"k":2}}'), { entries: 1 }],
  ["escaped keys", M('"content":"ok","artifact":{"structured_content":{"p\\u0061th":"/a.csv","\\u0075rls":["/b.csv"],"ta\\u0073k_id":"t-1","fi\\/le":"/no.csv"}}'), { entries: 3 }],
  ["JSON text: a text block, a string item and string content that are JSON give their strings' references", [
    M('"content":[{"type":"text","text":"{\\"path\\":\\"/mnt/user-data/a.csv\\",\\"size\\":12}"},"[\\"/mnt/user-data/b.csv\\", 1]"]'),
    M('"content":' + JSON.stringify(JSON.stringify({ path: "/mnt/user-data/c.csv", size: 12, files: ["/mnt/user-data/d.csv"] }))),
  ].join("\n"), { entries: 4 }],
  ["blocks and embedded resources the adapter moved to the artifact", [
    M('"content":"","artifact":[{"type":"file","source_type":"url","url":"https://x.io/moved.pdf","mime_type":"application/pdf"},{"type":"text","text":"see /mnt/user-data/moved.txt"},{"type":"mcp_structured_content","data":{"path":"/mnt/user-data/p.csv"}}]'),
    M('"content":"ok","artifact":[{"type":"resource","resource":{"uri":"https://x.io/blob.zip","blob":"UEsDBA==","mimeType":"application/zip"}},{"type":"mcp_meta","data":{"path":"/meta"}}]'),
    M('"content":[{"type":"file","source_type":"base64","data":"UEsDBA==","mime_type":"application/zip","metadata":{"uri":"https://x.io/embedded.zip"}},{"type":"image","source_type":"base64","data":"AAAA","mime_type":"image/png"}]'),
  ].join("\n"), { entries: 5 }],
  ["text mirroring the payload is not scanned", M('"content":[{"type":"text","text":"{\\"path\\":\\"/mnt/user-data/a.csv\\",\\"n\\":1}"}],"artifact":{"structured_content":{"path":"/mnt/user-data/a.csv","n":1.0}}'), { entries: 1 }],
  ["pretty-printed mirror, and a near miss that is scanned", M('"content":["{\\n  \\"path\\": \\"/mnt/user-data/a.csv\\"\\n}","{\\"path\\":\\"/mnt/user-data/b.csv\\",\\"x\\":1}"],"artifact":{"structured_content":{"path":"/mnt/user-data/a.csv"}}'), { entries: 2 }],
  // The payload gave nothing, so its mirror is read as text: past the budgets, every string is free text.
  ["mirror of a rejected payload", M(`"content":${JSON.stringify(JSON.stringify(JSON.parse(nodes(1030))))},"artifact":{"structured_content":${nodes(1030)}}`), { rejected: 1, entries: 1028 }],
  ["repeated refs within and across sources", M('"content":[{"type":"text","text":"/mnt/user-data/a.csv /mnt/user-data/a.csv https://x.io/i.png"},{"type":"image","url":"https://x.io/i.png"},"/mnt/user-data/a.csv"],"artifact":{"structured_content":{"files":["/mnt/user-data/a.csv","/mnt/user-data/a.csv"]}}'), { entries: 2 }],
  ["hundreds of refs in one line", M(`"content":${JSON.stringify(MANY.join(" ") + " " + MANY.map((_, i) => `https://x.io/${i}.png`).join(" "))},"artifact":{"structured_content":{"files":${JSON.stringify(MANY)}}}`), { entries: 650 }],
  ["free-text refs of exactly 4096 bytes (kept) and 4097 (dropped)", [4077, 4078].map((n) => M(`"content":"see /mnt/user-data/${"n".repeat(n)}.csv now"`)).join("\n"), { entries: 1 }],
  ["a ref over 4096 bytes, task ids about 256 code points", M(`"content":"/mnt/user-data/${"n".repeat(4100)}.csv","artifact":{"structured_content":{"path":"/${"é".repeat(2047)}","task_id":"${"t".repeat(256)}","job_id":"${"t".repeat(257)}"}}`), { entries: 2 }],
  ["a data fallback about 4096 bytes", [4087, 4088, 4089].map((n) => M(`"content":"ok","artifact":{"structured_content":{"n":"${"x".repeat(n)}"}}`)).join("\n"), { entries: 2 }],
  ["a text over 1 MiB that starts like JSON is prose", M(`"content":"[ /mnt/user-data/big.csv ${"y".repeat(1 << 20)}"`), { entries: 1 }],
  ["__proto__ keys are plain keys", [M('"content":"x","artifact":{"structured_content":{"__proto__":{"path":"/mnt/user-data/p.csv"}}}'), '{"__proto__":{"thread_id":"t"},"message":{"type":"tool","tool_call_id":"c","content":"/mnt/user-data/a.csv"}}', '{"thread_id":"t","message":{"__proto__":{"type":"tool"},"tool_call_id":"c","content":"/mnt/user-data/a.csv"}}'].join("\n"), { entries: 2, failures: 1 }],
  ["numbers JSON.parse makes Infinity become null in data", M('"content":"x","artifact":{"structured_content":{"n":1e999,"m":-1e400,"t":5e-400}}'), { entries: 1 }],
  ["nesting far past the budgets", [`[${"[".repeat(100000)}${"]".repeat(100000)}]`, M(`"content":${"[".repeat(50000)}${"]".repeat(50000)}`), M(`"content":"x","artifact":{"structured_content":${"[".repeat(50000)}${"]".repeat(50000)}}`), M(`"content":${JSON.stringify("[".repeat(50000) + "]".repeat(50000))},"artifact":{"structured_content":{"a":1}}`)].join("\n"), { failures: 1, rejected: 1, entries: 1 }],
  // types.ts's displayName: `?`, `#` and `\\` end a name only in a URL (and `\\` separates in a drive path).
  ["names with ? # and backslashes", [
    M('"content":"/mnt/user-data/report#1.csv /mnt/user-data/what?.txt /mnt/user-data/?x https://x.io/p/a.png?x=/y#z"'),
    M('"content":"/mnt/user-data/a\\\\b.txt","artifact":{"structured_content":{"files":["C:/d/q.csv","HTTPS://X.IO/dir/#f","/q?.csv"]}}'),
  ].join("\n"), { entries: 8 }],
  // A text naming a whole reference that holds a blank gives its first word, which extract.ts drops: the host's lines.
  ["whole references with blanks, and texts naming them", [
    M('"content":"Saved /mnt/user-data/my report.csv","artifact":{"structured_content":{"path":"/mnt/user-data/my report.csv"}}'),
    M('"content":[{"type":"file","url":"/mnt/user-data/my report.csv"},{"type":"text","text":"Saved /mnt/user-data/my report.csv"}]'),
    M('"content":[{"type":"text","text":"Saved /mnt/user-data/my\u00a0report.csv"},{"type":"image","url":"/mnt/user-data/my\u00a0report.csv"}]'),
    M('"content":"Saved /mnt/user-data/Smith, John.pdf","artifact":[{"type":"mcp_structured_content","data":{"files":["/mnt/user-data/Smith, John.pdf"]}}]'),
    M('"content":"no text names it","artifact":{"structured_content":{"path":"/mnt/user-data/a b.csv"}}'),
  ].join("\n"), { entries: 5 }],
  ["control characters and U+2028 in refs", M('"content":"ok","artifact":{"structured_content":{"files":["/a\\u0001.csv","/a\\u2028.csv","/a\\u007f.csv","/a\\u0085.csv","/ok.csv"]}}'), { entries: 1 }],
];

describe("scanLinesPacked agrees with scanLinesPackedJs on each odd shape", () => {
  it.each(CASES)("%s", (name, input, want) => {
    const bytes = new Uint8Array(typeof input === "string" ? Buffer.from(input, "utf8") : input);
    for (const [optionsName, options] of OPTION_SETS) {
      const reference = expectSame(bytes, options, `${name}, options ${optionsName}`);
      if (optionsName === "default" && want) {
        const got = { ...reference, failures: reference.failures.length };
        expect(Object.fromEntries(Object.keys(want).map((k) => [k, got[k as keyof typeof want]]))).toEqual(want);
      }
    }
  });
});

describe("a result with no id and no tool_call_id", () => {
  it("is numbered by its line in the archive, in the engine itself, on both paths alike", () => {
    const anonymous = (ref: string, extra = "") => `{"thread_id":"t","message":{"type":"tool",${extra}"content":"/mnt/user-data/${ref}"}}`;
    const lines = ["", anonymous("a.csv"), anonymous("b.csv", '"tool_call_id":"",'), anonymous("c.csv", '"id":"",'), anonymous("d.csv", '"tool_call_id":"c",'), anonymous("e.csv", '"id":"m",')];
    const bytes = Buffer.from(lines.join("\n"));
    for (const firstLine of [undefined, 40, 2 ** 40]) {
      const options: LineScanOptions = { format: "jsonl", createdAt: CREATED_AT, firstLine };
      const stats = { engineLines: 0, jsLines: 0 };
      const engine = unpackLineResult(scanLinesPacked(bytes, options, { stats }));
      expectSame(bytes, options, `firstLine ${firstLine}`);
      expect(stats).toEqual({ engineLines: 6, jsLines: 0 });
      const base = (firstLine ?? 1) - 1;
      const rows = Buffer.from(engine.output).toString().trimEnd().split("\n").map((l) => JSON.parse(l) as { call_index: number; handle: string });
      // Lines 2 and 3 (an empty call id tells nothing apart); a call id or an id, the empty one too, keeps index 0.
      expect(rows.map((r) => r.call_index)).toEqual([base + 2, base + 3, 0, 0, 0]);
      expect(new Set(rows.map((r) => r.handle)).size).toBe(5);
      // The empty id is an occurrence id (DESIGN §2: only null and undefined are none).
      expect(rows[2]!.handle).toBe(generateHandle("t", "", 0, 0, ""));
    }
  });
});

describe("odd options and probes", () => {
  // Caller bugs in the options surface as per-line failures, not exceptions: both paths must report them alike.
  it.each<[string, Record<string, unknown>]>([
    ["a prefix with a lone surrogate", { sandboxPrefixes: ["/\ud800"] }],
    ["a non-string prefix", { sandboxPrefixes: [5] }],
    ["an empty prefix", { sandboxPrefixes: [""] }],
    ["an empty default thread", { defaultThreadId: "" }],
    ["a truthy non-boolean detectRefsInText", { detectRefsInText: "no" }],
  ])("%s", (name, odd) => {
    for (let seed = 1; seed <= 20; seed++) {
      const options = { format: "jsonl", createdAt: CREATED_AT, ...odd } as LineScanOptions;
      expectSame(chunk(seed), options, `seed ${seed}, ${name}`);
    }
  });

  // The pool's fault injection (exit on reaching a thread) needs the probe
  // called for every item, in order: a probe takes the chunk to the
  // TypeScript path, which calls it per item.
  it("with a probe, takes the TypeScript path whole, which calls it for every item in order", () => {
    for (let seed = 1; seed <= 40; seed++) {
      const bytes = chunk(seed);
      const calls: string[][] = [[], []];
      const probe = (i: number) => (threadId: string) => {
        calls[i].push(threadId);
        if (threadId === "thread-3") throw new Error(`probe refused ${threadId}`);
      };
      const options: LineScanOptions = { format: "jsonl", createdAt: CREATED_AT };
      const stats: LinePathStats = { engineLines: 0, jsLines: 0 };
      const got = unpackLineResult(scanLinesPacked(bytes, options, { probe: probe(0), stats }));
      const want = unpackLineResult(scanLinesPackedJs(bytes, options, { probe: probe(1) }));
      expect(stats.engineLines, `seed ${seed}`).toBe(0);
      const d = difference({ ...got, output: Buffer.from(got.output) }, { ...want, output: Buffer.from(want.output) });
      assert(d === undefined, `seed ${seed}: ${d}`);
      expect(calls[0], `seed ${seed}`).toEqual(calls[1]);
    }
  });
});

/** Lines the reference takes as blank: whitespace by String.prototype.trim once decoded. */
const nonBlankLines = (bytes: Uint8Array) => splitLines(bytes).filter((l) => Buffer.from(l).toString("utf8").trim() !== "").length;

describe("path statistics", () => {
  it("every scanned line is counted once, by one path, added to what the stats held", () => {
    for (let seed = 1; seed <= 60; seed++) {
      const bytes = chunk(seed);
      for (const [name, options] of OPTION_SETS) {
        const stats: LinePathStats = { engineLines: 5, jsLines: 7 };
        const { lines } = unpackLineResult(scanLinesPacked(bytes, options, { stats }));
        const counted = stats.engineLines - 5 + stats.jsLines - 7;
        const where = `seed ${seed}, options ${name}: engine ${stats.engineLines - 5} + js ${stats.jsLines - 7} of ${lines} lines`;
        expect(stats.engineLines >= 5 && stats.jsLines >= 7, where).toBe(true);
        // Every line, blank ones too, is counted by exactly one path.
        expect(counted, where).toBe(lines);
        expect(counted, where).toBeGreaterThanOrEqual(nonBlankLines(bytes));
      }
    }
  });
});

/** How many of the chunk's lines each path scanned. */
function pathsOf(bytes: Uint8Array, options: LineScanOptions): LinePathStats {
  const stats: LinePathStats = { engineLines: 0, jsLines: 0 };
  scanLinesPacked(bytes, options, { stats });
  return stats;
}

describe("engine path", () => {
  // Multimodal archives: a block of embedded data is megabytes the engine
  // skips; only one with metadata (an embedded resource's uri) needs the host.
  it("takes a block of embedded data without metadata, and leaves one with metadata to the host", () => {
    const data = "iVBORw0KGgo".repeat(100_000);
    // The caption's escaped quotes keep "metadata" from reading as a key.
    const image = { type: "image", source_type: "base64", data, mime_type: "image/png", caption: 'say "metadata"' };
    const withUri = { type: "file", source_type: "base64", data, mime_type: "application/zip", metadata: { uri: "https://x.io/a.zip" } };
    for (const [block, engineLines, entries] of [[image, 1, 0], [withUri, 0, 1]] as const) {
      const bytes = new Uint8Array(Buffer.from(JSON.stringify({ thread_id: "t", type: "tool", tool_call_id: "c", content: [block] }) + "\n"));
      const stats: LinePathStats = { engineLines: 0, jsLines: 0 };
      const got = unpackLineResult(scanLinesPacked(bytes, { format: "jsonl", createdAt: CREATED_AT }, { stats }));
      expect([stats.engineLines, got.entries]).toEqual([engineLines, entries]);
      expectSame(bytes, { format: "jsonl", createdAt: CREATED_AT }, `embedded data, ${engineLines ? "no " : ""}metadata`);
    }
  });

  // Ids are copied into the engine's handle texts: ones far longer than any
  // other line's scratch must get room of their own (they once overran it,
  // which trapped and sent the whole chunk to the TypeScript path).
  it("takes lines with very long thread, call and message ids", () => {
    const long = "T".repeat(200_000);
    const lines = [
      { thread_id: long, type: "tool", tool_call_id: "c", content: "/mnt/user-data/a.csv" },
      { thread_id: "t", type: "tool", tool_call_id: long, content: "/mnt/user-data/b.csv" },
      { thread_id: "t", message: { type: "tool", id: long, tool_call_id: "c", content: "/mnt/user-data/c.csv /mnt/user-data/d.csv" } },
    ].map((l) => JSON.stringify(l));
    const bytes = new Uint8Array(Buffer.from(lines.join("\n")));
    const options: LineScanOptions = { format: "jsonl", createdAt: CREATED_AT };
    expect(pathsOf(bytes, options)).toEqual({ engineLines: 3, jsLines: 0 });
    expect(expectSame(bytes, options, "long ids").entries).toBe(4);
  });

  // 40,000 distinct references in one line: the dedupe table grows many
  // times, and chance probe runs must not send the line to the host.
  it("takes a line with tens of thousands of distinct references", () => {
    const content = Array.from({ length: 40_000 }, (_, k) => `/mnt/user-data/0_${k}.csv`).join(" ");
    const bytes = new Uint8Array(Buffer.from(JSON.stringify({ thread_id: "t", type: "tool", tool_call_id: "c", content })));
    const options: LineScanOptions = { format: "jsonl", createdAt: CREATED_AT };
    expect(pathsOf(bytes, options)).toEqual({ engineLines: 1, jsLines: 0 });
    expect(expectSame(bytes, options, "many refs").entries).toBe(40_000);
  });

  // The TypeScript path fails such a line (its handle scratch would pass 4 GiB):
  // the engine must leave it to that path, not succeed where it fails.
  it("leaves a line of a huge message id times thousands of references to the host", () => {
    const content = Array.from({ length: 8_200 }, (_, k) => `/mnt/user-data/${k}.csv`).join(" ");
    const line = JSON.stringify({ thread_id: "t", message: { type: "tool", tool_call_id: "c", id: "m".repeat(180_000), content } });
    const bytes = new Uint8Array(Buffer.from(`${line}\n{"thread_id":"t","type":"tool","tool_call_id":"d","content":"/mnt/user-data/x.csv"}`));
    const options: LineScanOptions = { format: "jsonl", createdAt: CREATED_AT };
    expect(pathsOf(bytes, options)).toEqual({ engineLines: 1, jsLines: 1 });
    expect(expectSame(bytes, options, "huge id").failures).toHaveLength(1);
  });

  // A direct-form line (tool_call_id at the top) ignores its `message` field,
  // so a message object the engine cannot read must not cost the line.
  it("takes a direct-form line whose unused message field has a repeated key", () => {
    const bytes = new Uint8Array(Buffer.from('{"thread_id":"t","type":"tool","tool_call_id":"c","message":{"content":1,"content":2},"content":"/mnt/user-data/a.csv"}'));
    const options: LineScanOptions = { format: "jsonl", createdAt: CREATED_AT };
    expect(pathsOf(bytes, options)).toEqual({ engineLines: 1, jsLines: 0 });
    expect(expectSame(bytes, options, "unread message").entries).toBe(1);
  });

  // Without a createdAt option the chunk's scan time is every entry's
  // created_at, on either path: the engine's lines and those it leaves.
  it("gives every entry of a chunk one created_at when none is set", () => {
    let calls = 0;
    const clock = vi.spyOn(Date.prototype, "toISOString").mockImplementation(() => `2025-01-01T00:00:00.${String(++calls).padStart(3, "0")}Z`);
    try {
      const lines = [
        { thread_id: "t", type: "tool", tool_call_id: "a", content: "/mnt/user-data/a.csv /mnt/user-data/b.csv" },
        { thread_id: "t", type: "tool", tool_call_id: "b", call_index: 2, content: "/mnt/user-data/c.csv" }, // left to TypeScript
        { thread_id: "t", type: "tool", tool_call_id: "c", content: "/mnt/user-data/d.csv" },
      ].map((l) => JSON.stringify(l));
      const bytes = new Uint8Array(Buffer.from(lines.join("\n")));
      const stats: LinePathStats = { engineLines: 0, jsLines: 0 };
      const { output } = unpackLineResult(scanLinesPacked(bytes, { format: "jsonl" }, { stats }));
      expect(stats).toEqual({ engineLines: 2, jsLines: 1 });
      const times = Buffer.from(output).toString("utf8").trim().split("\n").map((l) => (JSON.parse(l) as { created_at: string }).created_at);
      expect(times).toHaveLength(4);
      expect(new Set(times).size).toBe(1);
    } finally {
      clock.mockRestore();
    }
  });

  // 40 lines of 3000 two-byte refs: 21 MB of output from 0.7 MB of input, so
  // the engine's output room fills mid-chunk, is emptied, and must grow for
  // a single line.
  it("output far larger than the input: the output room fills and grows", () => {
    const refs = Array.from({ length: 3000 }, (_, i) => `/${i}`).join(" ");
    const lines = Array.from({ length: 40 }, (_, i) => JSON.stringify({ thread_id: "t", message: { type: "tool", tool_call_id: `c${i}`, content: refs } }));
    const bytes = new Uint8Array(Buffer.from(lines.join("\n")));
    const options: LineScanOptions = { format: "jsonl", createdAt: CREATED_AT, sandboxPrefixes: ["/"] };
    expect(pathsOf(bytes, options)).toEqual({ engineLines: 40, jsLines: 0 });
    const reference = expectSame(bytes, options, "output room");
    expect(reference.entries).toBe(120_000);
    expect(reference.output.byteLength).toBeGreaterThan(30 * bytes.byteLength);
  });

  // The engine's output of a chunk is copied out before a line it left to
  // the TypeScript path is scanned: that scan uses the same engine memory
  // from its base, and a long text reaches past the input into the output.
  it("a long line left to TypeScript does not overwrite the engine's output before it", () => {
    const engineLine = (i: number) => JSON.stringify({ thread_id: "t", message: { type: "tool", tool_call_id: `c${i}`, content: Array.from({ length: 50 }, (_, k) => `/mnt/user-data/${i}/f${k}.csv`).join(" ") } });
    // call_index is one of the shapes the kernel leaves to the host.
    const hostLine = JSON.stringify({ thread_id: "t", message: { type: "tool", tool_call_id: "host", content: "word ".repeat(60_000) + "/mnt/user-data/last.csv" }, call_index: 2 });
    const bytes = new Uint8Array(Buffer.from([engineLine(0), engineLine(1), hostLine, engineLine(2)].join("\n")));
    const options: LineScanOptions = { format: "jsonl", createdAt: CREATED_AT };
    expect(pathsOf(bytes, options)).toEqual({ engineLines: 3, jsLines: 1 });
    expect(expectSame(bytes, options, "host line after engine lines").entries).toBe(151);
  });

  // WebAssembly memory only grows: after a huge line, the next ordinary
  // chunk starts on a fresh instance instead of keeping ~3x that line for good.
  it("gives back the memory a huge line grew at the next ordinary chunk", () => {
    const options: LineScanOptions = { format: "jsonl", createdAt: CREATED_AT };
    const line = (content: string) => JSON.stringify({ thread_id: "t", message: { type: "tool", tool_call_id: "c", content } });
    const huge = new Uint8Array(Buffer.from(line("x ".repeat(20_000_000) + "/mnt/user-data/huge.csv")));
    const stats: LinePathStats = { engineLines: 0, jsLines: 0 };
    const { entries } = unpackLineResult(scanLinesPacked(huge, options, { stats }));
    expect([entries, stats.engineLines]).toEqual([1, 1]);
    const grown = engine().memory.buffer.byteLength;
    expect(grown).toBeGreaterThan(64 << 20);
    const small = new Uint8Array(Buffer.from(line("/mnt/user-data/a.csv /mnt/user-data/b.csv")));
    expectSame(small, options, "after a huge line");
    expect(engine().memory.buffer.byteLength).toBeLessThan(4 << 20);
  });

  // Happy-shape chunks: the engine must take nearly every line, or the CLI
  // silently runs at the TypeScript path's speed.
  it("the engine takes the common shapes", () => {
    for (let seed = 1; seed <= 10; seed++) {
      const bytes = chunk(seed, true);
      const stats: LinePathStats = { engineLines: 0, jsLines: 0 };
      const { lines } = unpackLineResult(scanLinesPacked(bytes, { format: "jsonl", createdAt: CREATED_AT }, { stats }));
      // The chunk must be happy for the reference too (nothing failed, skipped or rejected), or falling back would be fair.
      const reference = expectSame(bytes, { format: "jsonl", createdAt: CREATED_AT }, `happy seed ${seed}`);
      expect([reference.failures.length, reference.skipped, reference.rejected, reference.lines]).toEqual([0, 0, 0, 200]);
      expect(stats.engineLines, `seed ${seed}: engine ${stats.engineLines}, js ${stats.jsLines} of ${lines}`).toBeGreaterThan(0.9 * lines);
    }
  });
});

