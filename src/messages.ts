/**
 * The shapes a tool message comes in, and what each says it is: a LangChain.js
 * ToolMessage, a plain object with its fields, its serialized
 * (`JSON.stringify`) and stored (`{type, data}`) forms, Python's dumps, and
 * OpenAI's `{role}`. Extraction, batch items and archive lines all read
 * messages through these, so the three take the same messages.
 */
import { isRecord, isStructuredResponseMessage, misspeltField, read, sameKey } from "./types.js";

/** The fields of a tool message that extraction reads. */
export interface PlainToolMessage {
  type?: string;
  id?: string;
  name?: string;
  tool_call_id?: string;
  status?: string;
  content?: unknown;
  artifact?: unknown;
  /** The marked answer to a structured-response call (see STRUCTURED_RESPONSE_MARK): no tool's result. */
  structuredResponse?: true;
}

export type Json = Record<string, unknown>;

/** `{lc: 1, type: "constructor", id: [..., "ToolMessage"], kwargs}`: what JSON.stringify makes of a LangChain message. */
export function serializedClass(value: Json): string | undefined {
  if (value.lc !== 1 || value.type !== "constructor" || !Array.isArray(value.id) || !isRecord(value.kwargs)) return undefined;
  const name = value.id[value.id.length - 1];
  return typeof name === "string" ? name : undefined;
}

const TOOL_CLASSES: ReadonlySet<string> = new Set(["ToolMessage", "ToolMessageChunk"]);
/** A tool message's `type`: JS writes "tool" for either class, Python a chunk's class name. */
export const TOOL_MESSAGE_TYPES: ReadonlySet<string> = new Set(["tool", "ToolMessageChunk"]);

/**
 * `{type: "tool", data: {content, tool_call_id, …}}`: LangChain's stored form
 * (`mapChatMessagesToStoredMessages`, Python's `message_to_dict`), which chat
 * history stores keep. A message with its own result fields is not one.
 */
function storedData(value: Json): Json | undefined {
  if (typeof value.type !== "string" || !isRecord(value.data)) return undefined;
  return "content" in value || "artifact" in value || "tool_call_id" in value ? undefined : value.data;
}

/**
 * What a message (any accepted shape) says it is: "tool" for a tool result,
 * another word (its class, type or role) for another kind of message,
 * undefined when it says nothing. A serialized message's class decides
 * whatever its kwargs hold; a plain message with no type but a string
 * tool_call_id is a result. Archive lines and batch items are both told
 * apart by this; only items (OpenAI's {role, content}) read a role.
 */
export function kindOf(message: Json, readRole: boolean, cls = serializedClass(message), stored = cls === undefined ? storedData(message) : undefined): string | undefined {
  if (cls !== undefined) return TOOL_CLASSES.has(cls) ? "tool" : cls;
  if (stored !== undefined) return TOOL_MESSAGE_TYPES.has(message.type as string) ? "tool" : (message.type as string);
  const type = read(message, "type");
  if (typeof type === "string") return TOOL_MESSAGE_TYPES.has(type) ? "tool" : type;
  if (typeof read(message, "tool_call_id") === "string") return "tool";
  const role = readRole ? read(message, "role") : undefined;
  return typeof role === "string" ? role : undefined;
}

/**
 * What `message` says it is (role read too), where its own fields are (a
 * serialized message's kwargs, a stored one's data, else the message), and
 * whether that is the message itself. May throw (a revoked proxy).
 */
function partsOf(message: Json): { kind: string | undefined; source: Json; itself: boolean } {
  const cls = serializedClass(message);
  const stored = cls === undefined ? storedData(message) : undefined;
  const source = cls !== undefined ? (message.kwargs as Json) : (stored ?? message);
  return { kind: kindOf(message, true, cls, stored), source, itself: cls === undefined && stored === undefined };
}

/** A message's shape, worked out once for all that is read of it. */
export interface MessageShape {
  /** What it says it is (`kindOf`, role read too). */
  kind: string | undefined;
  /** Its fields as extraction reads them: a serialized or stored message's as plain fields; any other object as it is (a ToolMessage's fields are read where they are). */
  fields: object;
  /** What those fields were read from (the message, its kwargs or its data): where a misspelt key would be. */
  source: object;
}

/** The shape of `message`. Never throws: a message that cannot be read (a revoked proxy, a throwing getter) says nothing and is read field by field as it is. */
export function shapeOf(message: object): MessageShape {
  try {
    const { kind, source, itself } = partsOf(message as Json);
    return { kind, fields: itself ? message : plainFrom(source, kind), source };
  } catch {
    return { kind: undefined, fields: message, source: message };
  }
}

/**
 * The key of a message's fields (`source`, see MessageShape) that spells
 * tool_call_id otherwise (`toolCallId`), when they give no tool_call_id: a
 * caller's mistake, which would seed every such result's handles alike.
 * Never throws.
 */
function misspeltToolCallId(source: object): string | undefined {
  try {
    if (typeof read(source, "tool_call_id") === "string") return undefined;
    return misspeltField(source, ["tool_call_id"], ["tool_call_id"], sameKey)?.key;
  } catch {
    return undefined; // a revoked proxy: odd data, read as giving no id
  }
}

/** Throws, as `op` (`extractArtifacts: `), when a message's fields (`source`) spell tool_call_id otherwise. */
export function refuseMisspeltToolCallId(source: object, op: string): void {
  const meant = misspeltToolCallId(source);
  if (meant !== undefined) throw new TypeError(`${op}the message has ${JSON.stringify(meant)}; did you mean tool_call_id?`);
}

/**
 * The tool-message fields of `message`, in any of the accepted shapes, with
 * its kind as `type`, and what they were read from (the message, its kwargs
 * or its data: where a misspelt key would be).
 */
export function readToolMessage(message: Json): { fields: PlainToolMessage; source: Json } {
  const { kind, source } = partsOf(message);
  return { fields: plainFrom(source, kind), source };
}

/** The fields extraction reads, taken from `source`, with `type` the message's kind. */
function plainFrom(source: Json, type: string | undefined): PlainToolMessage {
  const plain: PlainToolMessage = {};
  if (type !== undefined) plain.type = type;
  // Getters of a ToolMessage instance are read too, which Object spread would
  // miss; one that throws is a field not given, as extraction reads it.
  for (const key of ["id", "name", "tool_call_id", "status", "content", "artifact"] as const) {
    const value = read(source, key);
    if (value !== undefined) (plain as Json)[key] = value;
  }
  if (isStructuredResponseMessage(source)) plain.structuredResponse = true;
  return plain;
}

/** A message's tool_call_id in any accepted shape, for error messages: never throws (a getter of junk input may). */
export function toolCallIdOf(message: object): unknown {
  try {
    return readToolMessage(message as Json).fields.tool_call_id;
  } catch {
    return undefined;
  }
}

/**
 * Whether a reduced message says it is another kind of message (AI, human,
 * system, …), not a tool result, or is the marked answer to a structured
 * response, which capture does not read either. One that says nothing (no
 * type) is taken as a tool result, as extractArtifacts takes it.
 */
export const isOtherMessage = (message: PlainToolMessage): boolean =>
  (typeof message.type === "string" && message.type !== "tool") || message.structuredResponse === true;
