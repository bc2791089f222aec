/**
 * Tool result → artifact entries (DESIGN §4).
 *
 * Sources, in order: one structured payload (the first present of
 * `artifact.structured_content`, an `artifact` item `{type:
 * "mcp_structured_content", data}`, `structuredContent` on a text block), then
 * the content blocks in order (url-carrying file/image blocks; free text when
 * `detectRefsInText`). Every kept reference takes the next ordinal; a reference
 * seen earlier in the same result is skipped. The gates, the bounded walk and
 * the free-text scanner live in the engine facades; this file only reads the
 * message shapes and numbers the results.
 *
 * Total on the message: odd input (null content, numbers, cyclic objects,
 * throwing getters, revoked proxies, huge strings, lone surrogates) yields
 * fewer entries, never an exception. Only a bad `threadId`/`callIndex` (a
 * caller bug, not data) throws.
 */
import type { ToolMessage } from "@langchain/core/messages";
import { generateHandle, generateHandles, type HandleSeed } from "./engine/hash.js";
import { scanText } from "./engine/scan.js";
import { isReference, walkStructured } from "./engine/walk.js";
import { displayName, type ArtifactEntry, type ArtifactType } from "./types.js";

/** The fields of a LangChain.js `ToolMessage` extraction reads. */
export interface ToolMessageLike {
  content?: unknown;
  tool_call_id?: unknown;
  name?: unknown;
  status?: unknown;
  artifact?: unknown;
  id?: unknown;
}

export interface ExtractOptions {
  /** Seeds every handle; required, non-empty. */
  threadId: string;
  /** Per-tool_call_id occurrence index (0 when the message has a durable id). Default 0. */
  callIndex?: number;
  /** Scan plain-string content and `text` blocks for paths and URLs. Default true. */
  detectRefsInText?: boolean;
  /** Sandbox path prefixes for the free-text scan. Default `["/mnt/user-data/"]`. */
  sandboxPrefixes?: readonly string[];
  /** Clock for `created_at` (ISO-8601 UTC); injectable for deterministic output. */
  now?: () => string;
}

const MAX_REF_BYTES = 4096;

interface Found {
  type: ArtifactType;
  ref: string;
  display?: string;
  mime?: string;
}

/** Property read that survives throwing getters and revoked proxies. */
function read(value: unknown, key: string): unknown {
  if (value === null || typeof value !== "object") return undefined;
  try {
    return (value as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}

/** A snapshot of an array's items; undefined for non-arrays and for arrays
 * that cannot be read (revoked proxies, throwing traps, absurd lengths). */
function items(value: unknown): unknown[] | undefined {
  try {
    return Array.isArray(value) ? Array.prototype.slice.call(value) : undefined;
  } catch {
    return undefined;
  }
}

const isObject = (v: unknown): v is object => v !== null && typeof v === "object";
const asString = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

function withinRefBytes(ref: string): boolean {
  // A UTF-16 unit is at most 3 UTF-8 bytes; only long refs need counting.
  return ref.length * 3 <= MAX_REF_BYTES || Buffer.byteLength(ref, "utf8") <= MAX_REF_BYTES;
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

function structuredRefs(payload: unknown, toolName: string, out: Found[]): void {
  let walk;
  try {
    walk = walkStructured(payload);
  } catch {
    return; // an engine failure drops this source only, like a rejected payload
  }
  if (walk.status !== "ok") return;
  for (const r of walk.refs) out.push({ type: r.type, ref: r.ref });
  if (walk.data !== undefined) out.push({ type: "data", ref: walk.data, display: `${toolName} structured result` });
}

function textRefs(text: string, prefixes: readonly string[] | undefined, out: Found[]): void {
  let refs;
  try {
    refs = scanText(text, prefixes === undefined ? undefined : { sandboxPrefixes: prefixes });
  } catch (error) {
    if (error instanceof TypeError) throw error; // a bad sandbox prefix: the caller's bug, not odd data
    return; // the engine could not take this text (memory): it adds nothing
  }
  for (const r of refs) if (withinRefBytes(r.ref)) out.push({ type: "file", ref: r.ref, display: r.display });
}

/** A url-carrying file/image block in any shape DESIGN §4 lists; base64/text/id blocks give none. */
function blockRef(block: object, type: unknown): Found | undefined {
  if (type === "image_url") {
    const inner = read(block, "image_url");
    const ref = typeof inner === "string" ? inner : asString(read(inner, "url"));
    return ref === undefined ? undefined : { type: "image", ref };
  }
  const sourceType = read(block, "source_type");
  if (sourceType !== undefined && sourceType !== "url") return undefined;
  const kind: ArtifactType = type === "image" ? "image" : "file";
  const url = read(block, "url");
  if (typeof url === "string") {
    return { type: kind, ref: url, mime: asString(read(block, "mimeType")) ?? asString(read(block, "mime_type")) };
  }
  const source = read(block, "source");
  const sourceUrl = read(source, "url");
  if (typeof sourceUrl === "string") {
    return { type: kind, ref: sourceUrl, mime: asString(read(source, "mime_type")) ?? asString(read(source, "mimeType")) };
  }
  return undefined;
}

function blockRefs(blocks: unknown[], scan: boolean, prefixes: readonly string[] | undefined, out: Found[]): void {
  for (const block of blocks) {
    if (typeof block === "string") {
      if (scan) textRefs(block, prefixes, out);
      continue;
    }
    if (!isObject(block)) continue;
    const type = read(block, "type");
    if (type === "text") {
      const text = read(block, "text");
      if (scan && typeof text === "string") textRefs(text, prefixes, out);
    } else if (type === "file" || type === "image" || type === "image_url") {
      const found = blockRef(block, type);
      if (found && isReference(found.ref)) out.push(found);
    }
  }
}

function checkOptions(options: ExtractOptions): number {
  const threadId = read(options, "threadId");
  if (typeof threadId !== "string" || threadId === "") {
    throw new TypeError(`extractArtifacts: options.threadId must be a non-empty string (got ${threadId === "" ? '""' : typeof threadId})`);
  }
  const callIndex = read(options, "callIndex") ?? 0;
  if (!Number.isSafeInteger(callIndex) || (callIndex as number) < 0) {
    throw new TypeError(`extractArtifacts: options.callIndex must be a non-negative integer (got ${String(callIndex)})`);
  }
  const prefixes = read(options, "sandboxPrefixes");
  if (prefixes !== undefined && !(Array.isArray(prefixes) && prefixes.every((p) => typeof p === "string"))) {
    throw new TypeError("extractArtifacts: options.sandboxPrefixes must be an array of strings");
  }
  return callIndex as number;
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
export function extractArtifacts(message: ToolMessage | ToolMessageLike, options: ExtractOptions): ArtifactEntry[] {
  const callIndex = checkOptions(options);
  if (!isObject(message) || read(message, "status") === "error") return [];
  const toolName = asString(read(message, "name")) || "unknown";
  const toolCallId = asString(read(message, "tool_call_id")) ?? "";
  const occurrenceId = asString(read(message, "id"));
  const content = read(message, "content");

  const blocks = items(content);
  const scan = options.detectRefsInText ?? true;

  const found: Found[] = [];
  const payload = structuredPayload(read(message, "artifact"), blocks);
  if (payload !== undefined) structuredRefs(payload, toolName, found);
  if (typeof content === "string") {
    if (scan) textRefs(content, options.sandboxPrefixes, found);
  } else if (blocks) blockRefs(blocks, scan, options.sandboxPrefixes, found);
  if (found.length === 0) return [];

  const kept: Found[] = [];
  const seen = new Set<string>();
  for (const f of found) {
    if (seen.has(f.ref)) continue;
    seen.add(f.ref);
    kept.push(f);
  }
  // One entry (the common case) takes the engine's single-hash fast path; more go in one batch.
  const handles =
    kept.length === 1
      ? [generateHandle(options.threadId, toolCallId, callIndex, 0, occurrenceId)]
      : generateHandles(kept.map((_, ordinal): HandleSeed => ({ threadId: options.threadId, toolCallId, callIndex, ordinal, occurrenceId })));
  const createdAt = options.now ? options.now() : new Date().toISOString();
  // Keys in ArtifactEntry's order, so serialized entries read the same everywhere.
  return kept.map((f, i) => ({
    handle: handles[i],
    tool_name: toolName,
    tool_call_id: toolCallId,
    call_index: callIndex,
    artifact_type: f.type,
    display_name: f.display ?? displayName(f.ref),
    real_ref: f.ref,
    ...(f.mime ? { mime_type: f.mime } : {}),
    created_at: createdAt,
  }));
}
