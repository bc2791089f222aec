/**
 * The bounded structured walk of DESIGN §4 and the reference gates.
 *
 * `walkStructured` writes the payload with the bounded serializer (an oversized
 * payload is rejected before it is written in full), copies those bytes into
 * the arena and runs the engine's walk (assembly/walk.ts); `walkJsonBytes` runs
 * the same walk over JSON bytes a caller already has. The engine validates,
 * counts, matches keys and applies the gates; it reports where each accepted
 * string sits in the bytes, and this facade decodes those back exactly: UTF-8
 * as is, JSON escapes (surrogate pairs included) through JSON.parse.
 *
 * Unescaping for the gates happens in the engine, on the fly: the 4096-byte
 * bound is on the unescaped UTF-8, where a lone surrogate counts the 3 bytes of
 * the U+FFFD that TextEncoder would write for it. Lone surrogate escapes are
 * valid JSON (JSON.stringify writes them); raw surrogate bytes are not UTF-8
 * and make the bytes invalid. A leading UTF-8 byte order mark is ignored.
 *
 * walkJsonBytes walks bytes, not a parsed object: with a duplicate key both
 * values are walked (JSON.parse would keep the last); its `data` is
 * JSON.stringify(JSON.parse(bytes)), the compact form, measured as such.
 */
import { engine, memoryView, onRebuild, reserve, runEngine, type EngineExports } from "./wasm.js";
import { MAX_REF_BYTES, MAX_WALK_DEPTH, MAX_WALK_NODES, releaseSerialized, serializeBounded, writeAsciiToken, MAX_ESCAPE_BYTES, type BoundedJson, type GatedStrings, type WalkRejection } from "./serialize.js";

export { MAX_REF_BYTES, MAX_WALK_DEPTH, MAX_WALK_NODES, type WalkRejection } from "./serialize.js";

/** The walk kernel's exports (assembly/walk.ts). */
interface WalkExports extends EngineExports {
  walk_json(text: number, len: number, out: number, maxNodes: number, maxDepth: number): number;
  walk_json_scalar(text: number, len: number, out: number, maxNodes: number, maxDepth: number): number;
  walk_gate(text: number, len: number, gate: number): number;
}

export interface WalkRef {
  type: "file" | "task";
  ref: string;
}

export type StructuredWalk =
  | { status: "ok"; refs: WalkRef[]; data?: string }
  | { status: "rejected"; reason: WalkRejection; refs: [] };

// ---- ABI (mirrors assembly/walk.ts) ------------------------------------------
const STATUS: readonly (WalkRejection | "ok")[] = ["ok", "nodes", "depth", "invalid"];
const GATE_FILE = 1;
const GATE_TASK = 2;
const REC_ESCAPED = 0x100;
const REC_ASCII = 0x200;
const FLAG_KNOWN = 1;
const FLAG_NON_EMPTY = 2;
const OUT_REFS = 4;
const OUT_FLAGS = 8;
const OUT_COMPACT = 12;
const OUT_RECORDS = 32;
const RECORD_BYTES = 12;
/** Output area first (every record is a distinct node), input bytes after it. */
const OUT_BYTES = OUT_RECORDS + RECORD_BYTES * MAX_WALK_NODES;
/** Task ids are at most 256 code points, so at most 512 UTF-16 units. */
const MAX_TASK_UNITS = 512;

// ignoreBOM: a U+FEFF at the start of a string value is part of it, not a mark to drop.
const decoder = new TextDecoder("utf-8", { ignoreBOM: true });

function u32(view: Uint8Array, at: number): number {
  return (view[at] | (view[at + 1] << 8) | (view[at + 2] << 16) | (view[at + 3] << 24)) >>> 0;
}

// The arena only grows and its base never moves, so a reservation holds for
// the instance it was made on; a rebuild (a trap anywhere, or memory given
// back by releaseMemoryFor) starts over.
let owner: EngineExports | undefined;
let reserved = 0;
let arena = 0;

function arenaFor(bytes: number, op: string): number {
  if (engine() !== owner || bytes > reserved) {
    arena = reserve(bytes, op);
    owner = engine();
    reserved = bytes;
  }
  return arena;
}

// Latin-1 decoding of known-ASCII records skips UTF-8 validation; the Buffer
// follows the memory's ArrayBuffer, which a grow replaces.
let latin1View: Buffer = Buffer.alloc(0);
function latin1(view: Uint8Array, start: number, end: number): string {
  if (latin1View.buffer !== view.buffer) latin1View = Buffer.from(view.buffer, view.byteOffset, view.byteLength);
  return latin1View.toString("latin1", start, end);
}
// A replaced instance's exports and memory must not stay reachable from here (one huge input would pin them).
onRebuild(() => {
  owner = undefined;
  latin1View = Buffer.alloc(0);
});

interface EngineWalk {
  status: WalkRejection | "ok";
  refs: WalkRef[];
  flags: number;
  compact: number;
}

// Kernel arguments, so that runEngine gets the same function every call.
let callText = 0;
let callLen = 0;
let callOut = 0;
let callScalar = false;
function callWalk(e: EngineExports): number {
  const w = e as WalkExports;
  return (callScalar ? w.walk_json_scalar : w.walk_json)(callText, callLen, callOut, MAX_WALK_NODES, MAX_WALK_DEPTH);
}

/**
 * Run the engine's walk over `bytes`; `scalar` picks the kernel without SIMD.
 * `gated` (from the serializer that wrote the bytes) gives the strings behind
 * the records, so only records it does not cover are decoded.
 */
function engineWalk(op: string, bytes: Uint8Array, scalar = false, gated?: GatedStrings): EngineWalk {
  const len = bytes.length;
  const base = arenaFor(OUT_BYTES + len, op);
  const text = base + OUT_BYTES;
  // The kernels never grow memory, so this view outlives the call.
  const view = memoryView();
  view.set(bytes, text);
  callText = text;
  callLen = len;
  callOut = base;
  callScalar = scalar;
  const code = runEngine(op, len, callWalk);
  const status = STATUS[code] ?? "invalid";
  const refs: WalkRef[] = [];
  if (status === "ok") {
    const count = u32(view, base + OUT_REFS);
    const at = gated?.at ?? [];
    const strings = gated?.strings ?? [];
    let g = 0;
    for (let i = 0, rec = base + OUT_RECORDS; i < count; i++, rec += RECORD_BYTES) {
      const offset = u32(view, rec);
      const start = text + offset;
      const end = start + u32(view, rec + 4);
      const kind = u32(view, rec + 8);
      // Records and gated strings are both in document order.
      while (g < at.length && at[g] < offset) g++;
      let ref: string;
      if (g < at.length && at[g] === offset) ref = strings[g];
      else if (kind & REC_ASCII) ref = latin1(view, start, end);
      else if (kind & REC_ESCAPED) ref = JSON.parse(`"${decoder.decode(view.subarray(start, end))}"`) as string; // escapes validated by the engine
      else ref = decoder.decode(view.subarray(start, end));
      refs.push({ type: (kind & 0xff) === GATE_TASK ? "task" : "file", ref });
    }
  }
  return { status, refs, flags: u32(view, base + OUT_FLAGS), compact: u32(view, base + OUT_COMPACT) };
}

/** DESIGN §4's fallback applies: no string at all under a known key, and not {}, [], null, "". */
function fallbackApplies(walk: EngineWalk): boolean {
  return (walk.flags & FLAG_KNOWN) === 0 && (walk.flags & FLAG_NON_EMPTY) !== 0;
}

function rejected(reason: WalkRejection): StructuredWalk {
  return { status: "rejected", reason, refs: [] };
}

/**
 * Walk a structured tool result (DESIGN §4): gated references under the known
 * keys in document order, or the compact JSON as `data` when no string sits
 * under a known key and it fits 4096 bytes. Over budget or not JSON (cycles,
 * BigInt, throwing getters) → rejected. Never throws but for an engine failure.
 */
export function walkStructured(payload: unknown): StructuredWalk {
  return walkStructuredWithJson(payload, 0).walk;
}

/**
 * walkStructured, and the payload's JSON text (exactly JSON.stringify(payload))
 * when the walk wrote it in full within `jsonUpTo` UTF-8 bytes; undefined
 * otherwise. For callers that compare texts with the payload: the bytes were
 * written anyway, so this costs one decode, not a second serialization.
 */
export function walkStructuredWithJson(payload: unknown, jsonUpTo: number): { walk: StructuredWalk; json?: string } {
  const json = serializeBounded(payload);
  try {
    const walk = walkSerialized(json);
    if (!json.ok || !json.complete || json.bytes.length === 0 || json.bytes.length > jsonUpTo) return { walk };
    // The bytes stay valid: nothing has serialized since.
    return { walk, json: walk.status === "ok" && walk.data !== undefined ? walk.data : decoder.decode(json.bytes) };
  } finally {
    releaseSerialized();
  }
}

function walkSerialized(json: BoundedJson): StructuredWalk {
  if (!json.ok) return rejected(json.reason);
  // JSON.stringify gives undefined for undefined, functions and symbols: nothing to walk.
  if (json.bytes.length === 0) return { status: "ok", refs: [] };
  const walk = engineWalk("walkStructured", json.bytes, false, json.gated);
  if (walk.status !== "ok") return rejected(walk.status);
  if (json.complete && json.bytes.length <= MAX_REF_BYTES && fallbackApplies(walk)) {
    return { status: "ok", refs: walk.refs, data: decoder.decode(json.bytes) };
  }
  return { status: "ok", refs: walk.refs };
}

/** The same walk over UTF-8 JSON bytes; anything but one valid JSON text is rejected "invalid". */
export function walkJsonBytes(bytes: Uint8Array): StructuredWalk {
  return walkBytes(bytes, false);
}

/** walkJsonBytes on the engine's scalar kernel: the reference its SIMD string skip is tested against. */
export function walkJsonBytesScalar(bytes: Uint8Array): StructuredWalk {
  return walkBytes(bytes, true);
}

function walkBytes(bytes: Uint8Array, scalar: boolean): StructuredWalk {
  if (bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
  const walk = engineWalk("walkJsonBytes", bytes, scalar);
  if (walk.status !== "ok") return rejected(walk.status);
  // The engine's compact size is a lower bound, so only a payload that may fit is parsed.
  if (fallbackApplies(walk) && walk.compact <= MAX_REF_BYTES) {
    const data = JSON.stringify(JSON.parse(decoder.decode(bytes)));
    if (Buffer.byteLength(data, "utf8") <= MAX_REF_BYTES) return { status: "ok", refs: walk.refs, data };
  }
  return { status: "ok", refs: walk.refs };
}

const tokenEncoder = new TextEncoder();

// Gate arguments, for the same reason as the walk's.
let gateText = 0;
let gateLen = 0;
let gateKind = 0;
function callGate(e: EngineExports): number {
  return (e as WalkExports).walk_gate(gateText, gateLen, gateKind);
}

/** One string through an engine gate, written as its JSON token. */
function gate(value: unknown, kind: number, maxUnits: number, op: string): boolean {
  if (typeof value !== "string" || value.length === 0 || value.length > maxUnits) return false;
  // Most references are ASCII: their token goes straight into the arena.
  const ptr = arenaFor(value.length * MAX_ESCAPE_BYTES + 2, op);
  let len = writeAsciiToken(memoryView(), ptr, value);
  // Otherwise its JSON text as UTF-8: at most 3 bytes per unit, within the room
  // reserved for the escaped ASCII form.
  if (len < 0) len = tokenEncoder.encodeInto(JSON.stringify(value), memoryView().subarray(ptr)).written;
  gateText = ptr;
  gateLen = len;
  gateKind = kind;
  return runEngine(op, len, callGate) === 1;
}

/**
 * The file/URL gate of DESIGN §4: an http(s) URL with an authority and no
 * whitespace, a Unix-absolute path ("/…", not "//…") or a drive-absolute path
 * ("C:\…", "C:/…"); no control characters or line separators; at most 4096
 * UTF-8 bytes. Relative paths and every other scheme (data:, blob:, file: …) fail.
 */
export function isReference(value: unknown): boolean {
  // More UTF-16 units than MAX_REF_BYTES means more UTF-8 bytes too.
  return gate(value, GATE_FILE, MAX_REF_BYTES, "isReference");
}

/** The task-id gate of DESIGN §4: non-empty, no whitespace, at most 256 code points. */
export function isTaskToken(value: unknown): boolean {
  return gate(value, GATE_TASK, MAX_TASK_UNITS, "isTaskToken");
}
