/**
 * JSON.stringify's text as UTF-8 bytes, under the walk's node and depth budget.
 *
 * The structured walk (DESIGN §4) runs over JSON bytes, but a tool may hand back
 * a payload of 10^7 nodes or a 100 MB string: serializing that in full just to
 * reject it would cost what the budget is there to save. This writer follows
 * JSON.stringify step for step (toJSON with its key, boxed primitives unwrapped,
 * undefined / functions / symbols omitted in objects and null in arrays,
 * non-finite numbers as null, lone surrogates escaped) into one reusable buffer,
 * counts every value it writes (containers and scalars; keys are not values)
 * and its level (the root is level 1), and stops at the first value over budget.
 *
 * Strings are copied only while their text can matter. A string longer than
 * MAX_REF_BYTES UTF-16 units has more UTF-8 bytes than that, so it can be
 * neither a reference nor part of a `data` fallback; and once MAX_REF_BYTES
 * have been written no `data` fallback is possible, so only strings the gates
 * will read (under a known key, or directly in a list under one) still matter.
 * Any other string is written as STAND_IN and the result marked incomplete
 * (never a `data` entry). STAND_IN is a one-node string every gate rejects (a
 * line break is prose to the file gate and whitespace to the task gate): under
 * a known key it still counts as "a string under a known key" and yields
 * nothing, and the walk's counts, levels and references are those of the real
 * payload. Keys follow the same rule (a known key is always short). So 10^5
 * strings of 1 KB cost a few KB of copying before the node budget stops them.
 *
 * One cost is not bounded by the budget: an object's keys are listed
 * (Object.keys, as JSON.stringify does) before its first value is counted, so
 * a single object with millions of keys costs that listing.
 *
 * Never throws: a cycle, a BigInt, a throwing getter, toJSON or proxy trap
 * reject the payload as "invalid", as JSON.stringify would have thrown. Nothing
 * is ever assigned to an object it reads, so `__proto__` keys are plain keys.
 */
import { types } from "node:util";

/** Node budget of one structured walk: every value counts, keys do not. */
export const MAX_WALK_NODES = 1024;
/** Level budget of one structured walk: the root value is level 1. */
export const MAX_WALK_DEPTH = 32;
/** Longest reference, and longest `data` fallback, in UTF-8 bytes (the engine's gate bound). */
export const MAX_REF_BYTES = 4096;

/** The JSON text of a string that cannot matter: one line break. */
const STAND_IN = '"\\n"';

/** Keys whose values the engine's gates read (assembly/walk.ts matches the
 * same list on bytes; a test checks that the two agree). */
export const KNOWN_KEYS: ReadonlySet<string> = new Set(["file", "files", "file_path", "path", "url", "urls", "task_id", "job_id"]);

// Where a value sits, for the gates: only these strings are read for references.
const PLAIN = 0;
const UNDER_KEY = 1; // the value of a known key
const LIST_ITEM = 2; // directly inside a list that is the value of a known key
type Place = typeof PLAIN | typeof UNDER_KEY | typeof LIST_ITEM;

/** Why a structured payload was rejected whole: over the node budget, over the depth budget, or not JSON (a cycle, a BigInt). */
export type WalkRejection = "nodes" | "depth" | "invalid";

export type BoundedJson =
  | {
      ok: true;
      /** JSON.stringify(payload) as UTF-8 (empty when that is undefined). A view
       * into a reused buffer: valid until the next call. */
      bytes: Uint8Array;
      /** false when an oversized string was written as the stand-in: the bytes are
       * then not the payload's JSON and must never become a `data` entry. */
      complete: boolean;
      /** The strings written where the gates read them (values of a known key,
       * items of a list that is one), in order, each with the offset of its
       * content (just past the opening quote) in `bytes`: where the walk's
       * records point, so the facade can take the string itself instead of
       * decoding its bytes. */
      gated: GatedStrings;
    }
  | { ok: false; reason: WalkRejection };

export interface GatedStrings {
  at: number[];
  strings: string[];
}
const IDLE: GatedStrings = { at: [], strings: [] };

const INITIAL_BYTES = 16 * 1024;
/** A buffer grown past this by one big payload is dropped once its bytes are used (releaseSerialized), or before the next call. */
const RETAINED_BYTES = 1 << 20;

const SKIP = Symbol("omitted");

/** Budget stops and invalid values unwind the (at most budget-deep) recursion in one throw. */
class Stop {
  constructor(readonly reason: WalkRejection) {}
}
const OVER_NODES = new Stop("nodes");
const OVER_DEPTH = new Stop("depth");
const NOT_JSON = new Stop("invalid");

const encoder = new TextEncoder();
// Short strings are copied by a JS loop; from this length on a native scan for
// characters JSON escapes (or surrogates, which a well-formed pair also hits)
// and one encodeInto are cheaper when that scan finds none.
const LONG_STRING = 48;
const NEEDS_JSON_STRINGIFY = /[\u0000-\u001f"\\\ud800-\udfff]/;

/** ToLength, as JSON.stringify reads an array's length (a BigInt or Symbol throws). */
function toLength(length: unknown): number {
  const n = Math.trunc(+(length as number));
  return n > 0 ? Math.min(n, Number.MAX_SAFE_INTEGER) : 0;
}

class BoundedWriter {
  buf = new Uint8Array(INITIAL_BYTES);
  pos = 0;
  nodes = 0;
  complete = true;
  maxNodes = MAX_WALK_NODES;
  maxDepth = MAX_WALK_DEPTH;
  busy = false;
  private readonly ancestors: object[] = [];
  /** This run's gated strings; between runs an empty stand-in, so no payload string is kept. */
  private gated: GatedStrings = IDLE;

  /** Let a buffer one big payload grew go. */
  shrink(): void {
    if (this.buf.length > RETAINED_BYTES) this.buf = new Uint8Array(INITIAL_BYTES);
  }

  run(payload: unknown, maxNodes: number, maxDepth: number): BoundedJson {
    this.shrink();
    this.pos = 0;
    this.nodes = 0;
    this.complete = true;
    this.maxNodes = maxNodes;
    this.maxDepth = maxDepth;
    this.busy = true;
    const gated: GatedStrings = (this.gated = { at: [], strings: [] });
    try {
      const value = this.resolve(payload, "");
      if (value !== SKIP) this.value(value, 1, PLAIN);
      return { ok: true, bytes: this.buf.subarray(0, this.pos), complete: this.complete, gated };
    } catch (err) {
      // Identity, not instanceof: a thrown proxy could trap the prototype walk.
      return { ok: false, reason: err === OVER_NODES || err === OVER_DEPTH ? (err as Stop).reason : "invalid" };
    } finally {
      this.ancestors.length = 0;
      this.gated = IDLE;
      this.busy = false;
    }
  }

  /** SerializeJSONProperty up to the type switch: toJSON, then boxed primitives. */
  private resolve(value: unknown, key: string | number): unknown {
    if ((typeof value === "object" && value !== null) || typeof value === "bigint") {
      const toJSON = (value as { toJSON?: unknown }).toJSON;
      if (typeof toJSON === "function") value = toJSON.call(value, String(key));
    }
    switch (typeof value) {
      case "string":
      case "number":
      case "boolean":
        return value;
      case "object":
        // An array is never a box; the check costs a native call per object.
        return value !== null && !Array.isArray(value) && types.isBoxedPrimitive(value) ? unbox(value) : value;
      case "bigint":
        throw NOT_JSON;
      default:
        return SKIP; // undefined, functions, symbols
    }
  }

  private value(value: unknown, level: number, place: Place): void {
    if (++this.nodes > this.maxNodes) throw OVER_NODES;
    if (level > this.maxDepth) throw OVER_DEPTH;
    switch (typeof value) {
      case "string":
        if (place === PLAIN) return this.string(value, false);
        // Longer strings are written as the stand-in, which no gate accepts.
        if (value.length <= MAX_REF_BYTES) {
          this.gated.at.push(this.pos + 1);
          this.gated.strings.push(value);
        }
        return this.string(value, true);
      case "number":
        return this.ascii(Number.isFinite(value) ? String(value) : "null");
      case "boolean":
        return this.ascii(value ? "true" : "false");
    }
    if (value === null) return this.ascii("null");
    const obj = value as object;
    // Ancestors are at most maxDepth deep, so a linear search is the cheap check.
    if (this.ancestors.includes(obj)) throw NOT_JSON;
    this.ancestors.push(obj);
    if (Array.isArray(obj)) this.array(obj, level + 1, place === UNDER_KEY ? LIST_ITEM : PLAIN);
    else this.object(obj as Record<string, unknown>, level + 1);
    this.ancestors.pop();
  }

  private array(arr: unknown[], level: number, place: Place): void {
    this.byte(0x5b);
    const length = toLength(arr.length);
    for (let i = 0; i < length; i++) {
      if (i > 0) this.byte(0x2c);
      const item = this.resolve(arr[i], i);
      this.value(item === SKIP ? null : item, level, place);
    }
    this.byte(0x5d);
  }

  private object(obj: Record<string, unknown>, level: number): void {
    this.byte(0x7b);
    const keys = Object.keys(obj);
    let first = true;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      const item = this.resolve(obj[key], key);
      if (item === SKIP) continue;
      if (!first) this.byte(0x2c);
      first = false;
      const known = KNOWN_KEYS.has(key);
      this.string(key, known);
      this.byte(0x3a);
      this.value(item, level, known ? UNDER_KEY : PLAIN);
    }
    this.byte(0x7d);
  }

  /** `gated`: the engine reads this string's text (a known key, or a value the gates see). */
  private string(s: string, gated: boolean): void {
    const n = s.length;
    if (n > MAX_REF_BYTES || (!gated && this.pos > MAX_REF_BYTES && n > STAND_IN.length)) {
      this.complete = false;
      return this.ascii(STAND_IN);
    }
    if (n >= LONG_STRING && !NEEDS_JSON_STRINGIFY.test(s)) {
      this.ensure(n * 3 + 2);
      this.buf[this.pos++] = 0x22;
      this.pos += encoder.encodeInto(s, this.buf.subarray(this.pos)).written;
      this.buf[this.pos++] = 0x22;
      return;
    }
    // Short strings, and ASCII prose with line breaks or quotes, are cheaper
    // in one loop than through JSON.stringify and the encoder.
    this.ensure(n * MAX_ESCAPE_BYTES + 2);
    const written = writeAsciiToken(this.buf, this.pos, s);
    if (written < 0) return this.encoded(JSON.stringify(s));
    this.pos += written;
  }

  /** Well-formed UTF-16 (JSON.stringify escapes lone surrogates), so encodeInto is exact. */
  private encoded(text: string): void {
    this.ensure(text.length * 3);
    this.pos += encoder.encodeInto(text, this.buf.subarray(this.pos)).written;
  }

  private ascii(text: string): void {
    this.ensure(text.length);
    const buf = this.buf;
    let p = this.pos;
    for (let i = 0; i < text.length; i++) buf[p++] = text.charCodeAt(i);
    this.pos = p;
  }

  private byte(b: number): void {
    if (this.pos === this.buf.length) this.ensure(1);
    this.buf[this.pos++] = b;
  }

  private ensure(extra: number): void {
    const need = this.pos + extra;
    if (need <= this.buf.length) return;
    const grown = new Uint8Array(Math.max(need, this.buf.length * 2));
    grown.set(this.buf.subarray(0, this.pos));
    this.buf = grown;
  }
}

/** Most bytes JSON.stringify writes for one ASCII character (`\u001f`). */
export const MAX_ESCAPE_BYTES = 6;
/** JSON.stringify's escape of each ASCII character that needs one ("" for the rest). */
const ASCII_ESCAPES: readonly string[] = Array.from({ length: 0x80 }, (_, c) =>
  c < 0x20 || c === 0x22 || c === 0x5c ? JSON.stringify(String.fromCharCode(c)).slice(1, -1) : "",
);

/**
 * Write an ASCII `s` as JSON.stringify's token at `at` (quotes, escapes);
 * returns the token's byte length, or -1 for a string with any non-ASCII unit
 * (then the bytes written are garbage: it takes JSON.stringify and an encoder).
 * `target` needs room for s.length * MAX_ESCAPE_BYTES + 2 bytes.
 */
export function writeAsciiToken(target: Uint8Array, at: number, s: string): number {
  const n = s.length;
  let p = at;
  target[p++] = 0x22;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c !== 0x22 && c !== 0x5c) {
      if (c > 0x7f) return -1;
      target[p++] = c;
    } else {
      const escape = ASCII_ESCAPES[c];
      for (let k = 0; k < escape.length; k++) target[p++] = escape.charCodeAt(k);
    }
  }
  target[p++] = 0x22;
  return p - at;
}

/** The [[...Data]] slot of a boxed primitive, read the way JSON.stringify does. */
function unbox(value: object): unknown {
  if (types.isNumberObject(value)) return Number(value);
  if (types.isStringObject(value)) return String(value);
  if (types.isBooleanObject(value)) return Boolean.prototype.valueOf.call(value);
  if (types.isBigIntObject(value)) throw NOT_JSON;
  return value; // a boxed Symbol is an ordinary object to JSON
}

const shared = new BoundedWriter();

/**
 * Write JSON.stringify(payload) as UTF-8 under a node and depth budget. Stops
 * at the first value over budget; never throws. The bytes are valid until the
 * next call (a toJSON that serializes re-entrantly gets a writer of its own).
 */
export function serializeBounded(
  payload: unknown,
  maxNodes: number = MAX_WALK_NODES,
  maxDepth: number = MAX_WALK_DEPTH,
): BoundedJson {
  const writer = shared.busy ? new BoundedWriter() : shared;
  return writer.run(payload, maxNodes, maxDepth);
}

/**
 * The caller is done with the last call's bytes: a buffer one big payload
 * grew goes now, not at the next structured payload, which a thread may not
 * see for a long time.
 */
export function releaseSerialized(): void {
  if (!shared.busy) shared.shrink();
}

/** How many bytes the writer holds between calls (tests). */
export const serializerHeldBytes = (): number => shared.buf.byteLength;
