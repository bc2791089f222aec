/**
 * What a batch item and an archive line may look like, reduced to the plain
 * tool-message fields extraction reads. Reducing first keeps the two batch
 * paths identical (the pool sees exactly what the calling thread would) and
 * keeps metadata nobody reads (additional_kwargs, response_metadata) off the
 * wire.
 */
import { MAX_WALK_NODES } from "../engine/serialize.js";
import { isOtherMessage, kindOf, readToolMessage, refuseMisspeltToolCallId, serializedClass, type Json, type PlainToolMessage } from "../messages.js";
import { isIndex, isRecord, misspeltField, sameKey } from "../types.js";

/** One tool result to scan. `message` is a LangChain.js ToolMessage, a plain
 * object with the same fields, its LangChain serialized form, or its stored
 * form (`{type: "tool", data}`). */
export interface BatchItem {
  threadId: string;
  message: unknown;
  callIndex?: number | null | undefined;
}

export interface NormalizedItem {
  threadId: string;
  callIndex: number | undefined;
  message: PlainToolMessage;
}

/** A call index, or none given. */
const isIndexOrNone = (value: unknown): value is number | undefined => value === undefined || isIndex(value);

const REQUIRED_ITEM_KEYS = ["threadId", "message"] as const;
const ITEM_KEYS: readonly string[] = [...REQUIRED_ITEM_KEYS, "callIndex"];

/**
 * Throws when a key of `item` looks like one of its keys that it lacks
 * (`thread_id`, as archive lines spell it; `call_index`): a misspelt
 * callIndex would give the item other handles without a word. Other keys
 * are the host's own and left alone.
 */
function misspeltKey(item: Json): void {
  // A missing required key: any near miss (the item fails anyway; this says
  // why). The optional callIndex: only itself in another case or with
  // separators, since a host's own keys come near it (cellIndex).
  const found =
    misspeltField(item, ITEM_KEYS, REQUIRED_ITEM_KEYS.filter((key) => item[key] === undefined)) ??
    misspeltField(item, ITEM_KEYS, item.callIndex == null ? ["callIndex"] : [], sameKey);
  if (found !== undefined) throw new TypeError(`unknown key ${JSON.stringify(found.key)}; did you mean ${found.meant}?`);
}

/**
 * Check a `scanBatch` item and reduce its message. Throws an Error saying what
 * is wrong; the caller attributes it to the item.
 */
export function normalizeItem(item: unknown): NormalizedItem {
  return checkedItem(item).normalized;
}

/** `normalizeItem`, and where its message's fields were read from. */
function checkedItem(item: unknown): { normalized: NormalizedItem; source: Json } {
  if (!isRecord(item)) throw new TypeError("an item must be an object {threadId, message, callIndex?}");
  misspeltKey(item);
  const { threadId, message } = item;
  const callIndex = item.callIndex ?? undefined; // null is none, as extractArtifacts and archive lines read it
  if (typeof threadId !== "string" || threadId === "") throw new TypeError("threadId must be a non-empty string");
  if (!isRecord(message)) throw new TypeError("message must be an object");
  if (!isIndexOrNone(callIndex)) throw new TypeError("callIndex must be a non-negative integer");
  const { fields, source } = readToolMessage(message);
  return { normalized: { threadId, callIndex, message: fields }, source };
}

/**
 * `normalizeItem` for `scanBatch`, which also refuses a tool result that
 * spells tool_call_id otherwise, as `extractArtifacts` does (another kind of
 * message is skipped, and an error result gives nothing, before that).
 * Archive lines are not checked: the engine's line path reads them as they
 * are, and the TypeScript path must read them alike.
 */
export function normalizeBatchItem(item: unknown): NormalizedItem {
  const { normalized, source } = checkedItem(item);
  if (!isOtherMessage(normalized.message) && normalized.message.status !== "error") refuseMisspeltToolCallId(source, "");
  return normalized;
}

/**
 * A line with a `message` key is a wrapper `{thread_id, message}`, unless it
 * is itself a tool message that happens to have a `message` field: it has
 * its own `tool_call_id` and a result (`content` or `artifact`), or its
 * `message` is no object. A wrapper that repeats the call id beside its
 * message is still a wrapper: read as a tool message with no result, its
 * result would be lost without a word.
 */
const isFlatWithMessageField = (value: Json): boolean =>
  "tool_call_id" in value && ("content" in value || "artifact" in value || !isRecord(value.message));

/**
 * A line's field under its archive spelling or its item spelling (null is
 * absent). Both, with different values, is refused: taking either would give
 * handles the writer may not have meant.
 */
function eitherSpelling(value: Json, snake: string, camel: string): unknown {
  const [a, b] = [value[snake], value[camel]];
  if (a != null && b != null && a !== b) throw new TypeError(`${snake} and ${camel} differ (give one)`);
  return a ?? b;
}

/**
 * Read one parsed archive line: `{thread_id, message, call_index?}`, a
 * tool-message-like object carrying `thread_id`, or a LangChain serialized
 * message carrying `thread_id`. Returns undefined for a well-formed line that
 * holds another kind of message (an archive of whole threads has those);
 * throws an Error with the reason for a line that cannot be read.
 */
export function itemFromLine(value: unknown, defaultThreadId?: string): BatchItem | undefined {
  if (!isRecord(value)) throw new TypeError(`expected a JSON object, got ${Array.isArray(value) ? "an array" : value === null ? "null" : typeof value}`);
  const wrapped = "message" in value && serializedClass(value) === undefined && !isFlatWithMessageField(value);
  const message = wrapped ? value.message : value;
  if (!isRecord(message)) throw new TypeError("message is not an object");
  const threadId = eitherSpelling(value, "thread_id", "threadId") ?? defaultThreadId;
  if (threadId === undefined) throw new TypeError("no thread_id (give the line one, or run the CLI with --thread-id)");
  if (typeof threadId !== "string" || threadId === "") throw new TypeError("thread_id must be a non-empty string");
  if (kindOf(message, false) !== "tool") return undefined;
  // A null call_index counts as absent, as it always has.
  const key = value.call_index != null ? "call_index" : "callIndex";
  const callIndex = eitherSpelling(value, "call_index", "callIndex");
  // Checked here to name the field as the line spells it (normalizeItem says callIndex).
  if (!isIndexOrNone(callIndex)) throw new TypeError(`${key} must be a non-negative integer`);
  return { threadId, message, callIndex };
}

/**
 * Most values (objects, array items, scalars) an item's content and artifact
 * may hold to go to a worker. Past it JSON.stringify would write them all,
 * where the calling thread reads only what extraction looks at (its walk of
 * a structured payload stops at MAX_WALK_NODES); a cycle ends here too. A
 * result of thousands of content blocks, which would fit, is rare.
 */
const MAX_WIRE_VALUES = 4 * MAX_WALK_NODES;

/** A plain object (`Object.prototype` or none) or array, without toJSON. */
function plainKind(value: object, array: boolean): boolean {
  const proto = Object.getPrototypeOf(value);
  return (array ? proto === Array.prototype : proto === Object.prototype || proto === null) && !("toJSON" in value);
}

/**
 * Whether `message` reads back from its JSON as extraction reads it: its
 * fields are primitives, and its content and artifact plain data all the way
 * down, within MAX_WIRE_VALUES. Anything else (a URL, a boxed string, a
 * Date, a typed array, a class's getters, a key JSON leaves out) would
 * become something else, or megabytes of values nobody reads: such an item
 * is scanned on the calling thread, the reference behaviour.
 */
function readsAsWritten(message: PlainToolMessage): boolean {
  const { content, artifact, ...fields } = message;
  if (Object.values(fields).some((field) => (field !== null && typeof field === "object") || typeof field === "function")) return false;
  const pending: unknown[] = [content, artifact];
  let budget = MAX_WIRE_VALUES;
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === "function") return false;
    if (value === null || typeof value !== "object") continue;
    const array = Array.isArray(value);
    if (!plainKind(value, array)) return false;
    if (array) {
      // Charged before anything is listed: a million numbers stay here at once.
      if ((budget -= value.length) < 0) return false;
      // Own keys come as indexes, then length, then named ones, which JSON
      // leaves out and a property read does not.
      const names = Object.getOwnPropertyNames(value);
      if (names[names.length - 1] !== "length") return false;
      for (let i = 0; i < value.length; i++) pending.push(value[i]);
    } else {
      let keys = 0;
      for (const key in value) {
        if (--budget < 0) return false;
        keys++;
        pending.push((value as Json)[key]);
      }
      // An own key that is not enumerable: for...in and JSON leave it out, a property read does not.
      if (Object.getOwnPropertyNames(value).length !== keys) return false;
    }
  }
  return true;
}

/**
 * Wire form of an item: a JSON record of everything but the text of its
 * content, then that text raw, one record per string (the content string, or
 * each text block's text). Text is nearly all of a tool result's bytes, and a
 * raw record is a copy where JSON.stringify and JSON.parse would scan and
 * escape it. Throws when the rest is not JSON (a cycle, a BigInt) or would
 * not read back as extraction reads it (see readsAsWritten).
 */
export function writeItem(item: NormalizedItem, out: string[]): void {
  if (!readsAsWritten(item.message)) throw new TypeError("not plain data");
  const { content, ...message } = item.message;
  const texts: string[] = [];
  let blocks: unknown = content;
  let raw: "content" | number[] | undefined;
  if (typeof content === "string") {
    texts.push(content);
    blocks = undefined;
    raw = "content";
  } else if (Array.isArray(content)) {
    const at: number[] = [];
    blocks = content.map((block: unknown, i) => {
      if (!isRecord(block) || block.type !== "text" || typeof block.text !== "string") return block;
      at.push(i);
      texts.push(block.text);
      return { ...block, text: undefined };
    });
    if (at.length > 0) raw = at;
  }
  out.push(JSON.stringify({ threadId: item.threadId, callIndex: item.callIndex, message, content: blocks, raw }));
  for (const text of texts) out.push(text);
}

/** Read back one item written by `writeItem` from `records[at]` on; returns it and where the next begins. */
export function readItem(records: readonly string[], at: number): { item: NormalizedItem; next: number } {
  const head = JSON.parse(records[at]) as NormalizedItem & { content?: unknown; raw?: "content" | number[] };
  let next = at + 1;
  if (head.raw === "content") head.message.content = records[next++];
  else {
    if (head.raw !== undefined) for (const i of head.raw) (head.content as Json[])[i].text = records[next++];
    if (head.content !== undefined) head.message.content = head.content;
  }
  return { item: { threadId: head.threadId, callIndex: head.callIndex, message: head.message }, next };
}
