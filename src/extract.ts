/**
 * Tool result → artifact entries (DESIGN §4).
 *
 * Sources, in order: one structured payload (the first present of
 * `artifact.structured_content`, an `artifact` item `{type:
 * "mcp_structured_content", data}`, `structuredContent` on a text block), then
 * the content blocks in order (url-carrying file/image blocks; free text when
 * `detectRefsInText`), then the content blocks and embedded resources of an
 * `artifact` list (see `artifactRefs`). Every kept reference takes the next ordinal; a reference
 * seen earlier in the same result is skipped. The gates, the bounded walk and
 * the free-text scanner live in the engine facades; this file only reads the
 * message shapes and numbers the results.
 *
 * Three rules go beyond DESIGN's letter, so that JSON is never scanned as
 * prose (which registers junk such as `/mnt/user-data/in/data.csv","size":1234`):
 *
 * - **JSON block content.** Plain-string content that is the JSON of one
 *   content block of a type read here (`text`, `file`, `image`, `image_url`),
 *   or of a non-empty list of such blocks, is read as those blocks: their text
 *   is scanned as text, their `structuredContent` is a structured source (in
 *   §4 order, after the artifact), their URLs are block references.
 *   @langchain/core stringifies a lone block that way: with
 *   @langchain/mcp-adapters 1.1.4, an MCP result of one text block plus
 *   `structuredContent` arrives as that block's JSON.
 * - **Structured mirror.** A text (plain-string content, a text block's text
 *   or a string item) that is the JSON of the result's structured payload (it
 *   parses to a value whose `JSON.stringify` equals the payload's) is read
 *   as JSON text, less everything under a structured key and less embedded
 *   content: the MCP spec asks servers to mirror `structuredContent` as such
 *   a text, and the payload's walk read those parts, while its other strings
 *   are free text there as anywhere. A payload the walk rejected (over budget) gave none,
 *   so its mirror is read like any other text (DESIGN §4: the other sources
 *   are still captured). A mirror of any other value is JSON text.
 * - **JSON text.** Any other text that is a JSON object or array is read as
 *   its data (see `jsonTextRefs`): its structured keys through the walk, its
 *   other strings as free text.
 *
 * All three parse only a text whose first non-blank character is `{` or `[` and
 * that is at most 1 MiB (2^20 UTF-16 units); a longer text is scanned as is.
 * Embedded resources and blocks in the artifact (`artifactRefs`, and the
 * `metadata.uri` of blocks with embedded data) are beyond the letter too.
 *
 * Total on the message's result: odd input (null content, numbers, cyclic
 * objects, throwing getters, revoked proxies, huge strings, lone surrogates)
 * yields fewer entries, never an exception. Caller bugs, not data, throw: bad
 * options, and a message that says it is no tool result (another kind of
 * message, `tool_call_id` spelt otherwise).
 */
import type { ToolMessage } from "@langchain/core/messages";
import { generateHandle, generateResultHandles } from "./engine/hash.js";
import { DEFAULT_SANDBOX_PREFIXES, scanTextWithin } from "./engine/scan.js";
import { KNOWN_KEYS } from "./engine/serialize.js";
import { isReference, MAX_REF_BYTES, walkStructured, walkStructuredWithJson, type WalkRejection } from "./engine/walk.js";
import { EngineError, releaseMemoryFor } from "./engine/wasm.js";
import { refuseMisspeltToolCallId, shapeOf } from "./messages.js";
import { arrayItems, describeValue, displayName, isIndex, prefixesSnapshot, read, scanOptionsProblem, timestampProblem, unknownOptionProblem, type ArtifactEntry, type ArtifactType } from "./types.js";

/** The fields of a LangChain.js `ToolMessage` extraction reads. */
export interface ToolMessageLike {
  content?: unknown;
  tool_call_id?: unknown;
  name?: unknown;
  status?: unknown;
  artifact?: unknown;
  id?: unknown;
}

/** The options of `extractArtifacts`; unknown keys are refused. */
export interface ExtractOptions {
  /** Seeds every handle; required, non-empty. */
  threadId: string;
  /** Per-tool_call_id occurrence index (0 when the message has a durable id). Default 0. */
  callIndex?: number | null | undefined;
  /** Scan plain-string content and `text` blocks for paths and URLs. Default true. */
  detectRefsInText?: boolean | undefined;
  /** Sandbox path prefixes for the free-text scan. Default `["/mnt/user-data/"]`. */
  sandboxPrefixes?: readonly string[] | undefined;
  /** Clock for `created_at` (ISO-8601 UTC); injectable for deterministic output. */
  now?: (() => string) | undefined;
  /** Told when the structured payload is rejected whole (over the node or depth budget, or not JSON); for statistics. */
  onRejectedPayload?: ((reason: WalkRejection) => void) | undefined;
  /**
   * Told when the engine fails on one source of the result (it trapped, or
   * its memory could not grow): that source adds no entries, and the others
   * are still read. Throw from it to fail the call instead; scanBatch and the
   * CLI do, so that an item or a line is reported rather than scanned short.
   */
  onEngineFailure?: ((error: Error) => void) | undefined;
}

/** The clock's last answer that passed: a batch's fixed created_at is checked once, not per result. */
let lastTime: string | undefined;

/** What the injected clock says; an entry's created_at is a string (ISO-8601), never anything else. */
function clockTime(now: () => string): string {
  const time: unknown = now();
  // Before any answer passed, lastTime is undefined: a clock answering that must still be refused.
  if (time === lastTime && lastTime !== undefined) return lastTime;
  const problem = timestampProblem(time);
  if (problem !== undefined) throw new TypeError(`extractArtifacts: options.now must return a string (ISO-8601), ${problem}`);
  lastTime = time as string;
  return lastTime;
}

/**
 * Longest MIME type an entry keeps, in UTF-16 units (RFC 6838 allows 127
 * characters each for type and subtype): a server's value is metadata for
 * the model, and a longer one (a data URI sent as the type, say) would sit
 * in durable state for good. The entry is kept without it.
 * assembly/lines.ts leaves a line with one longer in bytes to this path.
 */
const MAX_MIME_CHARS = 255;

/** Longest text (UTF-16 units) the JSON rules parse. */
const MAX_JSON_TEXT = 1 << 20;
/** The block types read here: the only ones a JSON string content is taken as. */
const BLOCK_TYPES: ReadonlySet<unknown> = new Set(["text", "file", "image", "image_url"]);
const NOT_JSON = Symbol("not JSON");

/** A snapshot of an array's items; undefined for non-arrays and for arrays
 * that cannot be read (revoked proxies, throwing traps, absurd lengths).
 * A long array's holes are left out: its content can claim billions. */
function items(value: unknown): unknown[] | undefined {
  try {
    return Array.isArray(value) ? arrayItems(value) : undefined;
  } catch {
    return undefined;
  }
}

const isObject = (v: unknown): v is object => v !== null && typeof v === "object";
const asString = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/**
 * A message's id as its occurrence id: any string, the empty one too (DESIGN
 * §2: only null and undefined are "not given"; the Python implementation
 * tests `id is not None`, and LangGraph's message reducers keep "" as an id),
 * so both implementations give a result the same handles and ledger key.
 * Extraction, capture and the CLI all read an id through this.
 */
export const occurrenceIdOf = (id: unknown): string | undefined => (typeof id === "string" ? id : undefined);

function withinRefBytes(ref: string): boolean {
  // A UTF-16 unit is at most 3 UTF-8 bytes; only long refs need counting.
  return ref.length * 3 <= MAX_REF_BYTES || Buffer.byteLength(ref, "utf8") <= MAX_REF_BYTES;
}

/** Whether the JSON rules parse `text`: at most MAX_JSON_TEXT units, `{` or `[` first. */
function mayBeJson(text: string): boolean {
  if (text.length > MAX_JSON_TEXT) return false;
  // JSON's own blanks; any other leading character fails JSON.parse anyway.
  let i = 0;
  let c = text.charCodeAt(0);
  while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = text.charCodeAt(++i);
  return c === 0x7b || c === 0x5b;
}

/** JSON.parse(text) for a text that may be a JSON object or array, NOT_JSON otherwise. */
function parseJsonText(text: string): object | typeof NOT_JSON {
  if (!mayBeJson(text)) return NOT_JSON;
  try {
    return JSON.parse(text);
  } catch {
    return NOT_JSON;
  }
}

/** Parsed JSON has no getters or proxies: plain property reads are safe. */
const isBlock = (v: unknown): boolean => isObject(v) && !Array.isArray(v) && BLOCK_TYPES.has((v as { type?: unknown }).type);

/** The JSON block content rule: the blocks a plain-string content is the JSON of (`value`: its parse), if any. */
function jsonBlocks(value: unknown): unknown[] | undefined {
  if (isBlock(value)) return [value];
  if (Array.isArray(value) && value.length > 0 && value.every(isBlock)) return value;
  return undefined;
}

const TOO_LONG = new Error("longer than the text it is compared with");

/**
 * JSON.stringify(payload) when it is at most `limit` characters long, else
 * undefined (also when it throws). The replacer returns each value unchanged,
 * so the text is JSON.stringify's; it counts a lower bound of what each value
 * writes and stops an oversized payload early (10^7 nodes, 100 MB strings).
 */
function stringifyAtMost(payload: unknown, limit: number): string | undefined {
  let left = limit;
  function replacer(this: unknown, key: string, value: unknown): unknown {
    const written = typeof value === "string" ? value.length : 1;
    if (Array.isArray(this)) left -= written; // an omitted item still writes null
    else if (value !== undefined && typeof value !== "function" && typeof value !== "symbol") left -= key.length + written;
    if (left < 0) throw TOO_LONG;
    return value;
  }
  try {
    return JSON.stringify(payload, replacer);
  } catch {
    return undefined;
  }
}

/**
 * The structured mirror rule: `text` (`value`: its parse) is the JSON of
 * `payload` (in any layout). `payloadJson` is JSON.stringify(payload) when
 * the walk had it at hand.
 */
function isMirror(text: string, value: object | typeof NOT_JSON, payload: unknown, payloadJson: string | undefined): boolean {
  if (text === payloadJson) return true; // the usual mirror: JSON.stringify's own text
  if (value === NOT_JSON) return false;
  let json: string;
  try {
    json = JSON.stringify(value);
  } catch {
    return false; // nested too deep for the stack: a payload within the walk's budget is not
  }
  return json === (payloadJson ?? stringifyAtMost(payload, json.length));
}

/**
 * The longest text of this result the mirror rule would parse, in UTF-16
 * units; 0 when there is none. Known before the walk, so that the walk keeps
 * the payload's JSON text only when some text may be compared with it.
 */
function mirrorCandidateUnits(content: unknown, blocks: unknown[] | undefined): number {
  if (!blocks) return typeof content === "string" && mayBeJson(content) ? content.length : 0;
  let longest = 0;
  for (const block of blocks) {
    const text = typeof block === "string" ? block : read(block, "type") === "text" ? read(block, "text") : undefined;
    if (typeof text === "string" && text.length > longest && mayBeJson(text)) longest = text.length;
  }
  return longest;
}

/** The first structured payload present, in DESIGN §4 source order. */
function structuredPayload(artifact: unknown, blocks: unknown[] | undefined): unknown {
  const artifactItems = items(artifact);
  if (artifactItems) {
    for (const item of artifactItems) {
      if (read(item, "type") !== "mcp_structured_content") continue;
      const data = read(item, "data");
      if (data != null) return data;
    }
  } else {
    const python = read(artifact, "structured_content");
    if (python != null) return python;
  }
  if (blocks) {
    for (const block of blocks) {
      if (read(block, "type") !== "text") continue;
      const structured = read(block, "structuredContent");
      if (structured != null) return structured;
    }
  }
  return undefined;
}

/** Up to this many entries, a linear search finds a repeated reference faster than a Set. */
const LINEAR_DEDUPE = 16;

/** One result's entries as they are found: each reference once, handles filled in at the end. */
class Entries {
  readonly list: ArtifactEntry[] = [];
  /** Every reference taken, once there are too many to search. */
  private seen: Set<string> | undefined;
  private createdAt: string | undefined;

  constructor(
    private readonly toolName: string,
    private readonly toolCallId: string,
    private readonly callIndex: number,
    private readonly now: ExtractOptions["now"],
    private readonly onEngineFailure: ExtractOptions["onEngineFailure"],
    /** Free-text options; `scan` false skips texts entirely. */
    readonly scan: boolean,
    readonly prefixes: readonly string[] | undefined,
  ) {}

  /**
   * The structured payload, once the walk took it (for the mirror rule): a
   * rejected one gave no references, so a mirror of it is no repeat and is
   * read as text.
   */
  payload: unknown = undefined;

  /** A source the engine could not take adds nothing; the caller is told, and may throw. */
  engineFailed(error: unknown): void {
    if (error instanceof EngineError) this.onEngineFailure?.(error);
  }

  /** JSON.stringify(payload), when the walk kept it. */
  payloadJson: string | undefined;

  private taken(ref: string): boolean {
    if (this.seen) return this.seen.has(ref);
    const list = this.list;
    for (let i = 0; i < list.length; i++) if (list[i].real_ref === ref) return true;
    if (list.length >= LINEAR_DEDUPE) this.seen = new Set(list.map((e) => e.real_ref));
    return false;
  }

  /**
   * The result's entries, less free-text matches that are a reference it
   * has whole, cut at a blank (`/mnt/user-data/my` of `/mnt/user-data/my
   * report.csv`, which structured content or a block gave whole): the
   * scanner stops at whitespace and strips the punctuation before it
   * (`Smith` of `Smith, John.pdf`), so a text that names such a reference
   * would register its first word as junk. Sorted out here, after every
   * source, so a text read before the block with the whole reference loses
   * its junk too. A match some other source gave as well stays.
   */
  finished(): ArtifactEntry[] {
    const spaced = this.spaced;
    const fromText = this.fromText;
    if (spaced === undefined || fromText === undefined) return this.list;
    const cuts = new Set<string>();
    // README's rule, whatever prefix a text's match started with (one listed
    // first may stop at a blank inside a longer one the reference is under).
    // A match is a sandbox prefix and a word, less the punctuation free text
    // strips at its end, which may reach into the prefix (a URL holds no
    // blank, so it is never a cut). So the cut of a reference under a prefix
    // is the reference up to the first blank past the prefix, less that
    // punctuation. A later match that merely reads like the start (`/a.pdf`
    // of `/a.pdfx /a.pdf`) is a reference of its own.
    const heads = (this.prefixes ?? DEFAULT_SANDBOX_PREFIXES).map(withoutStripped);
    for (const whole of spaced) {
      for (const head of heads) {
        if (!whole.startsWith(head)) continue;
        const blank = whole.slice(head.length).search(PY_SPACE);
        const cut = blank === -1 ? "" : withoutStripped(whole.slice(0, head.length + blank));
        if (cut !== "") cuts.add(cut);
      }
    }
    return cuts.size === 0 ? this.list : this.list.filter((e) => !(cuts.has(e.real_ref) && fromText.has(e.real_ref)));
  }

  /** The references structured content and blocks gave so far that hold whitespace, for finished. */
  private spaced: string[] | undefined;
  /** The references only free text gave so far, for finished. */
  private fromText: Set<string> | undefined;

  /** A reference a source gave whole: one holding a blank is kept for finished, when free text is scanned. */
  private givenWhole(type: ArtifactType, ref: string): void {
    if (type !== "data" && this.scan && PY_SPACE.test(ref)) (this.spaced ??= []).push(ref);
  }

  /** `freeText`: a free-text match (it holds whitespace only inside its sandbox prefix: the scanner stops at the next). */
  add(type: ArtifactType, ref: string, label: string | undefined, mime: string | undefined, freeText = false): void {
    if (this.taken(ref)) {
      // A free-text match given whole too: now a reference the result gives whole, whose cuts finished drops.
      if (!freeText && this.fromText?.delete(ref)) this.givenWhole(type, ref);
      return;
    }
    this.seen?.add(ref);
    if (freeText) (this.fromText ??= new Set()).add(ref);
    else this.givenWhole(type, ref);
    this.createdAt ??= this.now ? clockTime(this.now) : new Date().toISOString();
    // Keys in ArtifactEntry's order, so serialized entries read the same
    // everywhere; the handle is a placeholder until all ordinals are known.
    const entry = {
      handle: "",
      tool_name: this.toolName,
      tool_call_id: this.toolCallId,
      call_index: this.callIndex,
      artifact_type: type,
      display_name: label ?? displayName(ref),
      real_ref: ref,
    } as ArtifactEntry;
    if (mime && mime.length <= MAX_MIME_CHARS) entry.mime_type = mime;
    entry.created_at = this.createdAt;
    this.list.push(entry);
  }
}

/** `mirrorUnits`: the longest text that may be the payload's mirror (0: none). */
function structuredRefs(
  payload: unknown,
  out: Entries,
  toolName: string,
  mirrorUnits: number,
  onRejected: ExtractOptions["onRejectedPayload"],
): void {
  let walk;
  let json: string | undefined;
  try {
    // A text's UTF-8 has at most 3 bytes per unit: a longer JSON cannot be
    // that text verbatim (the general check then serializes on its own).
    if (mirrorUnits === 0) walk = walkStructured(payload);
    else ({ walk, json } = walkStructuredWithJson(payload, 3 * mirrorUnits));
  } catch (error) {
    out.engineFailed(error); // this source only, like a rejected payload
    return;
  }
  if (walk.status !== "ok") {
    onRejected?.(walk.reason);
    return;
  }
  out.payload = payload;
  out.payloadJson = json;
  for (const r of walk.refs) out.add(r.type, r.ref, undefined, undefined);
  if (walk.data !== undefined && !holdsEmbeddedContent(walk.data)) out.add("data", walk.data, `${toolName} structured result`, undefined);
}

/** What free text strips from a match's end (DESIGN §3). */
const STRIPPED_AT_END = ".,;:)]}\"'`";
/** `text` less what free text strips from a match's end. */
function withoutStripped(text: string): string {
  let end = text.length;
  while (end > 0 && STRIPPED_AT_END.includes(text[end - 1])) end--;
  return end === text.length ? text : text.slice(0, end);
}

/** A character of Python's `str.isspace()` set (DESIGN §3), where a free-text match ends. */
const PY_SPACE = /[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/;

/** Keys whose string value is content itself when it looks like base64 (`file_data`: OpenAI's file block). */
const INLINE_DATA_KEYS = ["data", "base64", "bytes", "blob", "file_data"] as const;
/** Words every payload with embedded content holds: `data`, `blob`, `resource`, `base64`, `bytes`. */
const EMBEDDED_WORDS = /data|blob|reso|base|byte/i;
/**
 * A `data:` URI anywhere in a string (prose and markdown embed them too): a
 * media type (`type/subtype`) or `;base64`, then the comma before the data.
 * So `data: 5 rows` and `DATA:col1,col2` are no such URI.
 */
const DATA_URI = /\bdata:(?:[\w.+-]+\/[\w.+-]+[^\s,]*|[^\s,]*;base64),/i;
/** Keys that name a MIME type beside inline data. */
const MIME_KEYS = ["mimeType", "mime_type", "media_type"] as const;
/**
 * Whether a string looks like base64 content without a MIME type beside it:
 * at least 16 characters of the alphabet (line breaks aside), both letter
 * cases and a digit or `+`/`/`, as encoded bytes have; so neither a word
 * ("queued", "internationalization") nor a hex digest is content.
 */
function looksBase64(value: unknown): boolean {
  if (typeof value !== "string") return false;
  const v = value.replace(/[\r\n]/g, "");
  return /^[A-Za-z0-9+/_-]{16,}={0,2}$/.test(v) && /[A-Z]/.test(v) && /[a-z]/.test(v) && /[0-9+/]/.test(v);
}

/**
 * Whether one object of a payload is embedded content: a string under one of
 * INLINE_DATA_KEYS beside a MIME type (an MCP image or audio block, an
 * Anthropic or Gemini source, a resource's blob) or that looks like base64
 * (OpenAI's input_audio, Bedrock's bytes); a resource's blob (`{uri, blob}`);
 * LangChain's `source_type: "base64"`; an embedded resource's text (`{type:
 * "resource", resource: {text}}`).
 */
function isEmbeddedNode(o: Record<string, unknown>): boolean {
  if (o.source_type === "base64") return true;
  if (o.type === "resource" && typeof read(o.resource, "text") === "string") return true;
  if (typeof o.uri === "string" && typeof o.blob === "string") return true;
  const typed = MIME_KEYS.some((key) => typeof o[key] === "string");
  return INLINE_DATA_KEYS.some((key) => typeof o[key] === "string" && (typed || looksBase64(o[key])));
}

/**
 * Whether parsed JSON carries embedded content: an object that is (see
 * isEmbeddedNode), or a `data:` URI in any string, key or value.
 */
function embedsContent(root: unknown): boolean {
  const pending = [root];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === "string") {
      if (DATA_URI.test(value)) return true;
    } else if (Array.isArray(value)) pending.push(...value);
    else if (isObject(value)) {
      const o = value as Record<string, unknown>;
      if (isEmbeddedNode(o)) return true;
      for (const key of Object.keys(o)) pending.push(key, o[key]);
    }
  }
  return false;
}

/**
 * Whether a `data` entry's JSON (at most MAX_REF_BYTES) carries embedded
 * content (see embedsContent). DESIGN §4 keeps embedded payloads out of
 * state and tool arguments, and a `data` entry is both: a server that copies
 * its content blocks into `structuredContent` (MCP's filesystem server's
 * `read_media_file` does) must not get an image in through it. The engine's
 * line path leaves every payload that may hold such content to this
 * function (mayEmbed in assembly/lines.ts asks for the same words).
 */
function holdsEmbeddedContent(json: string): boolean {
  // Without one of these words none of the shapes can be there, and most payloads are not parsed.
  if (!EMBEDDED_WORDS.test(json)) return false;
  try {
    return embedsContent(JSON.parse(json));
  } catch {
    return false;
  }
}

/**
 * Which strings of parsed JSON are free text: `"all"`; `"unwalked"`, not the
 * strings the structured walk reads (values of KNOWN_KEYS, and string items
 * of a list under one); `"mirror"`, nothing under a known key at all (the
 * payload's walk read all of it, its plain parts into the `data` entry) and
 * nothing of embedded content (whose text is no reference of this result).
 */
type FreeStrings = "all" | "unwalked" | "mirror";

/**
 * The free-text strings of parsed JSON (see FreeStrings), keys included, one
 * per line, each key before its value. `known`: whether a string under a
 * known key was left out. Iterative: parsed JSON may nest deeper than the stack.
 */
function jsonStrings(root: object, free: FreeStrings): { text: string; known: boolean } {
  const words: string[] = [];
  const stack: unknown[] = [root];
  let known = false;
  const walked = (key: string, value: unknown): boolean => {
    if (free === "all" || !KNOWN_KEYS.has(key) || (free === "unwalked" && typeof value !== "string" && !Array.isArray(value))) return false;
    known = true;
    return true;
  };
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value === "string") words.push(value);
    else if (Array.isArray(value)) for (let i = value.length - 1; i >= 0; i--) stack.push(value[i]);
    else if (isObject(value)) {
      if (free === "mirror" && isEmbeddedNode(value as Record<string, unknown>)) continue;
      const keys = Object.keys(value);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i];
        let member = (value as Record<string, unknown>)[key];
        // A list under a known key keeps its non-string items: the walk reads only its strings.
        if (walked(key, member)) member = free === "unwalked" && Array.isArray(member) ? member.filter((item) => typeof item !== "string") : undefined;
        // Pushed value first, so that each key is read before its value.
        stack.push(member, key);
      }
    }
  }
  return { text: words.join("\n"), known };
}

/**
 * The JSON text rule: a text that is a JSON object or array (a tool that
 * returns an object gets its JSON as content) is read as its data, not as
 * written. Scanned as written, `{"path":"/mnt/user-data/my report.csv","size":1}`
 * would give `/mnt/user-data/my` (a path runs to the next blank) or, without
 * the space, `…","size":1`. So the values of the structured keys go through
 * the structured walk and its gates, whole (no `data` entry: the text is not
 * a structured payload), and every other string is free text. Over the walk's
 * budgets, every string is free text. Returns the free text.
 */
function jsonTextRefs(value: object, out: Entries): string {
  const free = jsonStrings(value, "unwalked");
  // No string under a structured key: the walk would find nothing, and every string is free text already.
  if (!free.known) return free.text;
  let walk;
  try {
    walk = walkStructured(value);
  } catch (error) {
    out.engineFailed(error);
    // Nothing from this text: its structured values scanned as free text would be the junk this rule exists to avoid.
    return "";
  }
  if (walk.status !== "ok") return jsonStrings(value, "all").text;
  for (const r of walk.refs) out.add(r.type, r.ref, undefined, undefined);
  return free.text;
}

/** `parsed`: parseJsonText(text), when the caller has it. */
function textRefs(text: string, out: Entries, parsed?: object | typeof NOT_JSON): void {
  if (!out.scan) return;
  const value = parsed ?? parseJsonText(text);
  let free: string;
  if (value === NOT_JSON) free = text;
  // A mirror's structured parts are the payload's, which the walk read:
  // only its other strings are free text (a memory server's observations).
  else if (out.payload !== undefined && isMirror(text, value, out.payload, out.payloadJson)) free = jsonStrings(value, "mirror").text;
  else free = jsonTextRefs(value, out);
  let refs;
  try {
    refs = scanTextWithin(free, out.prefixes === undefined ? undefined : { sandboxPrefixes: out.prefixes });
  } catch (error) {
    if (error instanceof TypeError) throw error; // a bad sandbox prefix: the caller's bug, not odd data
    out.engineFailed(error); // the engine could not take this text: it adds nothing
    return;
  }
  for (const r of refs) if (withinRefBytes(r.ref)) out.add("file", r.ref, r.display, undefined, true);
}

/** A url-carrying file/image block in any shape DESIGN §4 lists; base64/text/id blocks give none. */
function blockRef(block: object, type: unknown, out: Entries): void {
  let kind: ArtifactType = "image";
  let ref: unknown;
  let mime: string | undefined;
  if (type === "image_url") {
    const inner = read(block, "image_url");
    ref = typeof inner === "string" ? inner : read(inner, "url");
  } else {
    if (type === "file") kind = "file";
    const sourceType = read(block, "source_type");
    if (sourceType !== undefined && sourceType !== "url") {
      // Embedded data (base64, text) is never captured; an embedded
      // resource's uri (mcp-adapters keeps it as metadata.uri) names it.
      ref = read(read(block, "metadata"), "uri");
      mime = asString(read(block, "mime_type")) ?? asString(read(block, "mimeType"));
    } else {
      ref = read(block, "url");
      if (typeof ref === "string") mime = asString(read(block, "mimeType")) ?? asString(read(block, "mime_type"));
      else {
        const source = read(block, "source");
        ref = read(source, "url");
        mime = asString(read(source, "mime_type")) ?? asString(read(source, "mimeType"));
      }
    }
  }
  if (typeof ref === "string" && isReference(ref)) out.add(kind, ref, undefined, mime);
}

/** One content block (or string item): its text scanned, or its url-carrying reference. */
function oneBlockRefs(block: unknown, out: Entries): void {
  if (typeof block === "string") return textRefs(block, out);
  if (!isObject(block)) return;
  const type = read(block, "type");
  if (type === "text") {
    const text = read(block, "text");
    if (typeof text === "string") textRefs(text, out);
  } else if (type === "file" || type === "image" || type === "image_url") {
    blockRef(block, type, out);
  }
}

function blockRefs(blocks: unknown[], out: Entries): void {
  for (const block of blocks) oneBlockRefs(block, out);
}

/**
 * Content blocks `@langchain/mcp-adapters` moved to the artifact array (its
 * `outputHandling: "artifact"`; embedded resources go there by default), read
 * after the content by the same rules. An embedded resource in the adapter's
 * own shape, `{type: "resource", resource: {uri, mimeType, text | blob}}`,
 * gives its uri, never its data.
 */
function artifactRefs(artifact: unknown, out: Entries): void {
  const list = items(artifact);
  if (!list) return;
  for (const item of list) {
    const type = read(item, "type");
    if (type === "resource") {
      const resource = read(item, "resource");
      const uri = read(resource, "uri");
      if (typeof uri === "string" && isReference(uri)) out.add("file", uri, undefined, asString(read(resource, "mimeType")));
    } else if (BLOCK_TYPES.has(type)) {
      oneBlockRefs(item, out);
    }
  }
}

const EXTRACT_OPTIONS = ["threadId", "callIndex", "detectRefsInText", "sandboxPrefixes", "now", "onRejectedPayload", "onEngineFailure"] as const satisfies readonly (keyof ExtractOptions)[];

/** The options as checked, each read once: a getter (the host's code) is not asked again and cannot answer otherwise later. */
type CheckedOptions = Pick<ExtractOptions, "threadId" | "sandboxPrefixes" | "now" | "onRejectedPayload" | "onEngineFailure"> & { callIndex: number; detectRefsInText: boolean };

function checkOptions(options: ExtractOptions): CheckedOptions {
  if (!isObject(options)) throw new TypeError(`extractArtifacts: options must be an object with threadId (got ${options === null ? "null" : typeof options})`);
  const unknown = unknownOptionProblem(options, EXTRACT_OPTIONS);
  if (unknown !== undefined) throw new TypeError(`extractArtifacts: ${unknown}`);
  // Read plainly, not with `read`: a getter that throws is the caller's error and reaches them (a message's odd data is not).
  const threadId: unknown = options.threadId;
  if (typeof threadId !== "string" || threadId === "") {
    throw new TypeError(`extractArtifacts: options.threadId must be a non-empty string (got ${threadId === "" ? '""' : typeof threadId})`);
  }
  const callIndex: unknown = options.callIndex ?? 0;
  if (!isIndex(callIndex)) {
    throw new TypeError(`extractArtifacts: options.callIndex must be a non-negative integer (got ${typeof callIndex === "string" ? JSON.stringify(callIndex) : String(callIndex)})`);
  }
  // Refused whether or not this result has text to scan.
  const detectRefsInText: unknown = options.detectRefsInText;
  // The list's items read once too: it is checked and scanned as this copy.
  const given: unknown = options.sandboxPrefixes;
  const sandboxPrefixes = prefixesSnapshot(given);
  const problem = scanOptionsProblem(detectRefsInText, sandboxPrefixes);
  if (problem !== undefined) throw new TypeError(`extractArtifacts: ${problem}`);
  return {
    threadId,
    // -0 as 0: the pool's wire and durable state (JSON) write it so.
    callIndex: callIndex || 0,
    detectRefsInText: (detectRefsInText as boolean | undefined) ?? true,
    sandboxPrefixes: sandboxPrefixes as readonly string[] | undefined,
    now: hook(options, "now"),
    onRejectedPayload: hook(options, "onRejectedPayload"),
    onEngineFailure: hook(options, "onEngineFailure"),
  };
}

/** A callback option, or none. */
function hook<K extends "now" | "onRejectedPayload" | "onEngineFailure">(options: ExtractOptions, name: K): ExtractOptions[K] {
  const fn: unknown = options[name];
  if (fn !== undefined && typeof fn !== "function") throw new TypeError(`extractArtifacts: options.${name} must be a function (got ${typeof fn})`);
  return fn as ExtractOptions[K];
}

/**
 * The artifact entries one tool result yields, in source order, with
 * sequential ordinals and handles seeded by (threadId, tool_call_id,
 * callIndex, ordinal, message id). Error results yield none.
 *
 * @example
 * const entries = extractArtifacts(toolMessage, { threadId: "thread-1" });
 * // [{ handle: "art_…", artifact_type: "file", real_ref: "/mnt/user-data/report.pdf", … }]
 */
export function extractArtifacts(given: ToolMessage | ToolMessageLike, options: ExtractOptions): ArtifactEntry[] {
  const checked = checkOptions(options);
  const { threadId, callIndex } = checked;
  if (!isObject(given)) return [];
  // What the message says it is (its class, type or role, as scanBatch reads it) and where its fields are.
  const { kind, fields: message, source } = shapeOf(given);
  if (kind !== undefined && kind !== "tool") throw new TypeError(`extractArtifacts: message is not a tool result (it says ${describeValue(kind)})`);
  if (read(message, "status") === "error") return [];
  refuseMisspeltToolCallId(source, "extractArtifacts: ");
  // None given: the empty string (DESIGN §2); id-less callers tell results apart by callIndex.
  const toolCallId = asString(read(message, "tool_call_id")) ?? "";
  const toolName = asString(read(message, "name")) || "unknown";
  const occurrenceId = occurrenceIdOf(read(message, "id"));
  const content = read(message, "content");
  // No engine data is in use between extractions: memory a huge earlier
  // result grew is given back before an ordinary one (the estimate is what a
  // text content needs; blocks count as small).
  releaseMemoryFor(typeof content === "string" ? 3 * content.length : 0);

  const parsed = typeof content === "string" ? parseJsonText(content) : NOT_JSON;
  const blocks = typeof content === "string" ? jsonBlocks(parsed) : items(content);
  const artifact = read(message, "artifact");
  const payload = structuredPayload(artifact, blocks);
  const out = new Entries(toolName, toolCallId, callIndex, checked.now, checked.onEngineFailure, checked.detectRefsInText, checked.sandboxPrefixes);
  if (payload !== undefined) structuredRefs(payload, out, toolName, out.scan ? mirrorCandidateUnits(content, blocks) : 0, checked.onRejectedPayload);
  if (blocks) blockRefs(blocks, out);
  else if (typeof content === "string") textRefs(content, out, parsed);
  artifactRefs(artifact, out);

  const entries = out.finished();
  // One entry (the common case) takes the engine's single-hash fast path; more go in one batch.
  if (entries.length === 1) entries[0].handle = generateHandle(threadId, toolCallId, callIndex, 0, occurrenceId);
  else if (entries.length > 1) {
    const handles = generateResultHandles(threadId, toolCallId, callIndex, entries.length, occurrenceId);
    for (let i = 0; i < entries.length; i++) entries[i].handle = handles[i];
  }
  return entries;
}
