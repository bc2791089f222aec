/**
 * The extraction rules of DESIGN §4 written the obvious way: RegExp gates and
 * free-text scanning, `JSON.stringify` + `JSON.parse` of the whole structured
 * payload, a recursive walk that counts nodes and levels, node:crypto handles.
 *
 * Two jobs: the oracle `extractArtifacts` is property-tested against, and the
 * baseline the extraction benchmark measures. It is written independently of
 * src/extract.ts on purpose (an oracle that shares the code it checks proves
 * nothing). It serializes an oversized payload in full before rejecting it and
 * inherits the quadratic URL RegExp: never use it in the library.
 *
 * It follows extractArtifacts' three JSON rules (see src/extract.ts): string
 * content that is the JSON of a handled block (or a list of them) is read as
 * those blocks, and any other text that is a JSON object or array is read as
 * its data: the structured walk's references (no data entry), then its other
 * strings (keys and values) scanned as free text, one per line. A text that
 * is the JSON mirror of the structured payload is read so too: its
 * structured references repeat the payload's, and repeats are skipped.
 */
import { createHash } from "node:crypto";
import { type ArtifactEntry, type ArtifactType } from "../../src/types.js";
import { regexpDisplayName as displayName } from "./display-name.js";
import type { ExtractOptions } from "../../src/extract.js";
import { PY_WS, regexpScanText, TRAILING_CHARS } from "./regexp-scan.js";

/** The same options as extractArtifacts (a type only: no code shared with what it checks). */
export type BaselineOptions = ExtractOptions;

const MAX_REF_BYTES = 4096;
const MAX_NODES = 1024;
const MAX_LEVELS = 32;
const MAX_TASK_CHARS = 256;
const MAX_JSON_TEXT = 2 ** 20;
const BLOCK_TYPES = ["text", "file", "image", "image_url"];
const FILE_KEYS = new Set(["file", "files", "file_path", "path", "url", "urls"]);
const TASK_KEYS = new Set(["task_id", "job_id"]);

const WHITESPACE = new RegExp(`[${PY_WS}]`, "u");
// Prose marker for every reference: C0/C1 controls and the two Unicode line separators.
const CONTROL = /[\x00-\x1f\x7f-\x9f\u2028\u2029]/u;
const HTTP_AUTHORITY = /^https?:\/\/([^/?#]*)/i;
const UNIX_ABSOLUTE = /^\/(?!\/)/;
const DRIVE_ABSOLUTE = /^[A-Za-z]:[\\/]/;

const utf8Bytes = (s: string) => Buffer.byteLength(s, "utf8");

// What precedes a port: characters other than ':', and bracketed groups (an
// IPv6 literal's, whose ':' belong to it), closed or not.
const BEFORE_PORT = /^(?:[^:[\]]|\[[^\]]*\]?|\])*/;

/** The host of an authority without its brackets: after any user info, before any port. */
function hostOf(authority: string): string {
  const host = authority.slice(authority.lastIndexOf("@") + 1);
  return BEFORE_PORT.exec(host)![0].replace(/[[\]]/g, "");
}

export function baselineIsReference(value: unknown): value is string {
  if (typeof value !== "string" || utf8Bytes(value) > MAX_REF_BYTES || CONTROL.test(value)) return false;
  const authority = HTTP_AUTHORITY.exec(value)?.[1];
  if (authority !== undefined) return hostOf(authority) !== "" && !WHITESPACE.test(value);
  return UNIX_ABSOLUTE.test(value) || DRIVE_ABSOLUTE.test(value);
}

export function baselineIsTaskToken(value: unknown): value is string {
  return typeof value === "string" && value !== "" && !WHITESPACE.test(value) && [...value].length <= MAX_TASK_CHARS;
}

export function baselineHandle(threadId: string, toolCallId: string, callIndex: number, ordinal: number, occurrenceId?: string): string {
  const seed = `${threadId}:${toolCallId}:${callIndex}:${ordinal}` + (occurrenceId === undefined ? "" : `:${occurrenceId}`);
  return "art_" + createHash("sha256").update(seed, "utf8").digest("hex").slice(0, 8);
}

interface Found {
  type: ArtifactType;
  ref: string;
  /** Given by free text only so far (a match may be a cut of a reference another source gives whole). */
  free?: boolean;
  display?: string;
  mime?: string;
}

/** The walk helper's contract (src/engine/walk.ts StructuredWalk), written plainly. */
export type BaselineWalk =
  | { status: "ok"; refs: Array<{ type: "file" | "task"; ref: string }>; data?: string }
  | { status: "rejected"; reason: "nodes" | "depth" | "invalid"; refs: [] };

/** The structured walk of DESIGN §4 over the parsed JSON form of `payload`. */
export function baselineWalkStructured(payload: unknown): BaselineWalk {
  let json: string | undefined;
  try {
    json = JSON.stringify(payload);
  } catch {
    return { status: "rejected", reason: "invalid", refs: [] }; // cyclic or BigInt
  }
  if (json === undefined) return { status: "ok", refs: [] }; // undefined, a function, a symbol: nothing to walk
  const value: unknown = JSON.parse(json);
  const refs: Array<{ type: "file" | "task"; ref: string }> = [];
  let nodes = 0;
  let deepest = 0;
  let knownString = false;

  const count = (level: number) => {
    nodes++;
    if (level > deepest) deepest = level;
  };
  const known = (v: unknown, level: number, type: "file" | "task") => {
    const take = (s: string, at: number) => {
      count(at);
      knownString = true;
      if (type === "file" ? baselineIsReference(s) : baselineIsTaskToken(s)) refs.push({ type, ref: s });
    };
    if (typeof v === "string") take(v, level);
    else if (Array.isArray(v)) {
      count(level);
      for (const item of v) typeof item === "string" ? take(item, level + 1) : walk(item, level + 1);
    } else walk(v, level);
  };
  const walk = (v: unknown, level: number) => {
    count(level);
    if (Array.isArray(v)) for (const item of v) walk(item, level + 1);
    else if (v !== null && typeof v === "object") {
      for (const [k, child] of Object.entries(v)) {
        if (FILE_KEYS.has(k)) known(child, level + 1, "file");
        else if (TASK_KEYS.has(k)) known(child, level + 1, "task");
        else walk(child, level + 1);
      }
    }
  };
  walk(value, 1);

  if (nodes > MAX_NODES) return { status: "rejected", reason: "nodes", refs: [] };
  if (deepest > MAX_LEVELS) return { status: "rejected", reason: "depth", refs: [] };
  const empty = json === "{}" || json === "[]" || json === "null" || json === '""';
  if (knownString || empty || utf8Bytes(json) > MAX_REF_BYTES) return { status: "ok", refs };
  return { status: "ok", refs, data: json };
}

/** The payload's references, or undefined when the walk rejected it (its mirror is then any other text). */
function walkPayload(payload: unknown, toolName: string): Found[] | undefined {
  const walk = baselineWalkStructured(payload);
  if (walk.status !== "ok") return undefined;
  const found: Found[] = walk.refs.map((r) => ({ type: r.type, ref: r.ref }));
  if (walk.data !== undefined && !embedsContent(JSON.parse(walk.data))) found.push({ type: "data", ref: walk.data, display: `${toolName} structured result` });
  return found;
}

/**
 * Whether a data entry's JSON carries embedded content, which never becomes
 * a data entry: inline data beside a MIME type or that reads as base64
 * bytes, a resource's blob, LangChain's base64 source type, an embedded
 * resource's text, a data: URI in any string or key. Written apart from
 * src/extract.ts, as a recursive walk of the parsed JSON.
 */
function embedsContent(value: unknown): boolean {
  if (typeof value === "string") return DATA_URI_ANYWHERE.test(value);
  if (Array.isArray(value)) return value.some(embedsContent);
  if (!isObject(value)) return false;
  return embeddedNode(value) || Object.entries(value).some(([k, v]) => embedsContent(k) || embedsContent(v));
}

const DATA_URI_ANYWHERE = /\bdata:(?:[\w.+-]+\/[\w.+-]+[^\s,]*|[^\s,]*;base64),/i;

function base64Bytes(value: unknown): boolean {
  if (typeof value !== "string") return false;
  const v = value.split(/\r|\n/).join("");
  return v.length >= 16 && /^[\w+/-]+={0,2}$/.test(v) && /[A-Z]/.test(v) && /[a-z]/.test(v) && /[\d+/]/.test(v);
}

function embeddedNode(o: Record<string, unknown>): boolean {
  const mime = typeof o.mimeType === "string" || typeof o.mime_type === "string" || typeof o.media_type === "string";
  const inline = ["data", "base64", "bytes", "blob", "file_data"].some((k) => typeof o[k] === "string" && (mime || base64Bytes(o[k])));
  const resourceText = o.type === "resource" && isObject(o.resource) && typeof o.resource.text === "string";
  return inline || resourceText || (typeof o.uri === "string" && typeof o.blob === "string") || o.source_type === "base64";
}

/** `value`'s JSON, or undefined when JSON.stringify cannot write it (such a payload mirrors nothing). */
function jsonOf(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}

/** A mirror's free text: every string, keys included, but nothing under a known key and nothing of embedded content. */
function mirrorWords(value: unknown, out: string[] = []): string[] {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) for (const v of value) mirrorWords(v, out);
  else if (isObject(value) && !embeddedNode(value)) {
    for (const [k, v] of Object.entries(value)) {
      out.push(k);
      if (!FILE_KEYS.has(k) && !TASK_KEYS.has(k)) mirrorWords(v, out);
    }
  }
  return out;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object";
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/** JSON.parse(text) when the trimmed text starts like an object or array and is at most 1 MiB; else undefined. */
function parseObjectOrArray(text: string): { value: unknown } | undefined {
  if (text.length > MAX_JSON_TEXT) return undefined;
  const trimmed = text.trim();
  if (!trimmed.startsWith("{") && !trimmed.startsWith("[")) return undefined;
  try {
    return { value: JSON.parse(text) };
  } catch {
    return undefined;
  }
}

/**
 * Every string of a parsed JSON value, each key before its value, but with
 * `skipKnown` not the strings the walk reads under a known key (recursive:
 * the oracle's inputs are shallow).
 */
function jsonWords(value: unknown, skipKnown: boolean, out: string[] = []): string[] {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) for (const v of value) jsonWords(v, skipKnown, out);
  else if (isObject(value)) {
    for (const [k, v] of Object.entries(value)) {
      out.push(k);
      const walked = skipKnown && (FILE_KEYS.has(k) || TASK_KEYS.has(k));
      if (!walked) {
        jsonWords(v, skipKnown, out);
      } else if (Array.isArray(v)) {
        for (const item of v) if (typeof item !== "string") jsonWords(item, skipKnown, out);
      } else if (typeof v !== "string") {
        jsonWords(v, skipKnown, out);
      }
    }
  }
  return out;
}

const isHandledBlock = (v: unknown) => isObject(v) && !Array.isArray(v) && typeof v.type === "string" && BLOCK_TYPES.includes(v.type);

/** String content that is the JSON of one handled block, or of a non-empty list of them, as those blocks. */
function contentBlocks(content: unknown): unknown {
  if (typeof content !== "string") return content;
  const parsed = parseObjectOrArray(content);
  if (parsed === undefined) return content;
  if (isHandledBlock(parsed.value)) return [parsed.value];
  if (Array.isArray(parsed.value) && parsed.value.length > 0 && parsed.value.every(isHandledBlock)) return parsed.value;
  return content;
}

function structuredPayload(artifact: unknown, content: unknown): unknown {
  if (isObject(artifact) && !Array.isArray(artifact) && artifact.structured_content != null) return artifact.structured_content;
  if (Array.isArray(artifact)) {
    const item = artifact.find((a) => isObject(a) && a.type === "mcp_structured_content" && a.data != null);
    if (item) return item.data;
  }
  if (Array.isArray(content)) {
    const block = content.find((b) => isObject(b) && b.type === "text" && b.structuredContent != null);
    if (block) return block.structuredContent;
  }
  return undefined;
}

/** A url-carrying file/image block in any shape DESIGN §4 lists. */
function blockRef(block: Record<string, unknown>): Found | undefined {
  if (block.type === "image_url") {
    const ref = typeof block.image_url === "string" ? block.image_url : isObject(block.image_url) ? str(block.image_url.url) : undefined;
    return ref === undefined ? undefined : { type: "image", ref };
  }
  if (block.type !== "file" && block.type !== "image") return undefined;
  const type: ArtifactType = block.type === "image" ? "image" : "file";
  if (block.source_type !== undefined && block.source_type !== "url") {
    // Embedded data: only the uri an embedded resource keeps in its metadata.
    const uri = isObject(block.metadata) ? block.metadata.uri : undefined;
    return typeof uri === "string" ? { type, ref: uri, mime: str(block.mime_type) ?? str(block.mimeType) } : undefined;
  }
  if (typeof block.url === "string") return { type, ref: block.url, mime: str(block.mimeType) ?? str(block.mime_type) };
  if (isObject(block.source) && typeof block.source.url === "string") {
    return { type, ref: block.source.url, mime: str(block.source.mime_type) ?? str(block.source.mimeType) };
  }
  return undefined;
}

export function baselineExtractArtifacts(message: unknown, options: BaselineOptions): ArtifactEntry[] {
  if (typeof options?.threadId !== "string" || options.threadId === "") throw new TypeError("threadId must be a non-empty string");
  if (!isObject(message) || message.status === "error") return [];
  const toolName = str(message.name) || "unknown";
  const toolCallId = str(message.tool_call_id) ?? "";
  const occurrenceId = str(message.id); // the empty one too (extract.ts's occurrenceIdOf)
  const callIndex = options.callIndex ?? 0;
  const scanText = options.detectRefsInText ?? true;
  const given: unknown = options.sandboxPrefixes;
  // An empty prefix would make every word a sandbox path; a lone surrogate or U+FFFD would match the other in text.
  if (given !== undefined && (!Array.isArray(given) || given.some((p) => typeof p !== "string" || p === "" || /[\p{Cs}\ufffd]/u.test(p)))) {
    throw new TypeError("sandboxPrefixes must be an array of non-empty strings without lone surrogates or U+FFFD");
  }
  const prefixes = (given as string[] | undefined) ?? ["/mnt/user-data/"];
  const content = contentBlocks(message.content);

  const found: Found[] = [];
  const payload = structuredPayload(message.artifact, content);
  // Walked and written once: its references, and the JSON a mirror text of it has.
  const fromPayload = payload === undefined ? undefined : walkPayload(payload, toolName);
  if (fromPayload !== undefined) found.push(...fromPayload);
  const mirrored = fromPayload === undefined ? undefined : jsonOf(payload);
  const text = (t: unknown) => {
    if (!scanText || typeof t !== "string") return;
    const parsed = parseObjectOrArray(t);
    let scanned = t;
    if (parsed !== undefined && mirrored !== undefined && JSON.stringify(parsed.value) === mirrored) {
      scanned = mirrorWords(parsed.value).join("\n");
    } else if (parsed !== undefined) {
      const walk = baselineWalkStructured(parsed.value);
      if (walk.status === "ok") found.push(...walk.refs);
      scanned = jsonWords(parsed.value, walk.status === "ok").join("\n");
    }
    for (const r of regexpScanText(scanned, prefixes)) if (utf8Bytes(r.ref) <= MAX_REF_BYTES) found.push({ type: "file", ref: r.ref, free: true });
  };
  const blocks = (list: unknown[]) => {
    for (const block of list) {
      if (typeof block === "string") text(block);
      else if (isObject(block) && block.type === "text") text(block.text);
      else if (isObject(block)) {
        const ref = blockRef(block);
        if (ref && baselineIsReference(ref.ref)) found.push(ref);
      }
    }
  };
  if (typeof content === "string") text(content);
  else if (Array.isArray(content)) blocks(content);
  // What the MCP adapter moved to the artifact: content blocks, and embedded resources by their uri.
  if (Array.isArray(message.artifact)) {
    for (const item of message.artifact) {
      if (!isObject(item)) continue;
      if (item.type === "resource") {
        const uri = isObject(item.resource) ? item.resource.uri : undefined;
        if (baselineIsReference(uri)) found.push({ type: "file", ref: uri, mime: isObject(item.resource) ? str(item.resource.mimeType) : undefined });
      } else if (typeof item.type === "string" && BLOCK_TYPES.includes(item.type)) {
        blocks([item]);
      }
    }
  }

  // A free-text match that a reference some other source gives whole starts
  // with, up to a blank past the punctuation free text strips, is that
  // reference cut short (README), whichever source came first, unless
  // another source gives the match itself.
  const wholes = found.filter((f) => f.type !== "data" && !f.free).map((f) => f.ref);
  const givenWhole = new Set(wholes);
  const isCut = (ref: string, whole: string) => {
    if (whole.length <= ref.length || !whole.startsWith(ref)) return false;
    let i = ref.length;
    while (i < whole.length && TRAILING_CHARS.includes(whole[i]!)) i++;
    return i < whole.length && WHITESPACE.test(whole[i]!);
  };
  const kept = found.filter((f) => !(f.free && !givenWhole.has(f.ref) && wholes.some((whole) => isCut(f.ref, whole))));

  const createdAt = options.now ? options.now() : new Date().toISOString();
  const seen = new Set<string>();
  const entries: ArtifactEntry[] = [];
  for (const f of kept) {
    if (seen.has(f.ref)) continue;
    seen.add(f.ref);
    entries.push({
      handle: baselineHandle(options.threadId, toolCallId, callIndex, entries.length, occurrenceId),
      tool_name: toolName,
      tool_call_id: toolCallId,
      call_index: callIndex,
      artifact_type: f.type,
      display_name: f.display ?? displayName(f.ref),
      real_ref: f.ref,
      ...(f.mime ? { mime_type: f.mime } : {}),
      created_at: createdAt,
    });
  }
  return entries;
}
