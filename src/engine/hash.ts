/**
 * Handles and ledger keys (DESIGN §2): SHA-256 in the engine, one export call
 * per hash, many hashes per call in the batch forms.
 *
 * Strings reach the engine as UTF-8 through `TextEncoder.encodeInto`, which
 * turns a lone surrogate (half of a broken UTF-16 pair) into U+FFFD. So an id
 * holding one hashes like the same id holding U+FFFD in its place, and two ids
 * that differ only in which lone surrogate they hold get the same handle.
 * (Python cannot encode lone surrogates to UTF-8 at all, so there is no
 * reference value to match.) Ledger keys are unaffected: their JSON is escaped
 * to ASCII first, and a lone surrogate becomes its own `\uXXXX` as in Python.
 */
import { describeValue, isIndex, misspeltField, sameKey } from "../types.js";
import { engine, memoryView, onRebuild, reserve, runEngine, type EngineExports } from "./wasm.js";

/** The sha256 kernel's exports (assembly/sha256.ts). */
interface HashExports extends EngineExports {
  sha256_head32(ptr: number, len: number): number;
  sha256_hex(ptr: number, len: number, out: number): void;
  sha256_batch_hex(table: number, count: number, out: number, chars: number, stride: number): void;
  sha256_batch_hex_scalar(table: number, count: number, out: number, chars: number, stride: number): void;
  sha256_counter_texts(prefix: number, prefixLen: number, suffix: number, suffixLen: number, count: number, dest: number, table: number): number;
  sha256_plain_quotes(ptr: number, len: number): number;
}

/** What `generateHandle` takes, one object per handle. */
export interface HandleSeed {
  threadId: string;
  toolCallId: string;
  callIndex: number;
  ordinal?: number | undefined;
  occurrenceId?: string | null | undefined;
}

/** What a ledger key records: a tool result read, or a tool call whose handles were counted. */
export type OccurrenceKind = "result" | "call";

/** What `occurrenceKey` takes, one object per key. */
export interface OccurrenceSeed {
  kind: OccurrenceKind;
  threadId: string;
  messageId?: string | null | undefined;
  toolCallId: string;
  index: number;
}

const HANDLE_PREFIX = "art_";
const HANDLE_PREFIX_CODES = Array.from(HANDLE_PREFIX, (ch) => ch.charCodeAt(0));
const HANDLE_HEX = 8;
const DIGEST_HEX = 64;
// Output slot of a ledger key: "result:" or "call:" right-aligned before the
// digest, so each key is one latin1 decode of flat bytes.
const KEY_PREFIX = "result:".length; // the longer of KEY_KIND_PREFIX
const KEY_SLOT = KEY_PREFIX + DIGEST_HEX;
// Single digests: the slot above, then the input.
const SINGLE_IN = KEY_SLOT + 1;
// Scratch reserved up front so that ordinary single calls never pay a second
// export call to grow the arena.
const MIN_SCRATCH = 64 * 1024;
// UTF-8 needs at most 3 bytes per UTF-16 code unit (astral: 4 bytes per 2).
const MAX_UTF8_PER_UNIT = 3;
// Batch input is encoded in chunks of about this many UTF-16 units (see encodeJoined).
const CHUNK_CHARS = 16 * 1024;
// sha256_counter_texts reads up to 15 bytes past its prefix and suffix and
// writes up to 15 past the texts; it writes ordinals as u32 (10 digits at most).
const COUNTER_SLACK = 16;
const MAX_COUNT = 2 ** 32 - 1;
const MAX_COUNT_DIGITS = 10;

const encoder = new TextEncoder();
/** What an occurrence key starts with, by kind (the hex digest follows). */
export const KEY_KIND_PREFIX: Readonly<Record<OccurrenceKind, string>> = { result: "result:", call: "call:" };
const KIND_BYTES: Record<OccurrenceKind, Uint8Array> = {
  result: encoder.encode(KEY_KIND_PREFIX.result),
  call: encoder.encode(KEY_KIND_PREFIX.call),
};

// Two hex digits per byte value: four lookups are several times cheaper than
// Number#toString(16) + padStart on a 32-bit value.
const HEX_PAIRS = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));

// The reservation belongs to one instance and the views to one memory buffer;
// a rebuild (a trap elsewhere, or releaseMemoryFor) or a grow (any kernel)
// invalidates them.
let owner: EngineExports | undefined;
let base = 0;
let capacity = 0;
let target: Uint8Array = new Uint8Array(0); // bytes[base, base + capacity), for encodeInto
// The same bytes for latin1 decoding (the engine writes only ASCII): one flat
// string per result, copied out, so a result neither shares nor keeps alive a
// larger string, and hashing it for a Set or Map needs no flattening first.
let latin1: Buffer = Buffer.alloc(0);
let table: Uint32Array = new Uint32Array(0); // the same bytes as u32, for batch tables at `base`
let singleIn = target; // input of a single digest, after its output slot
onRebuild(() => {
  owner = undefined;
  target = new Uint8Array(0);
  latin1 = Buffer.alloc(0);
  table = new Uint32Array(0);
  singleIn = target;
});

/** Make `need` bytes of arena available from `base`; returns the hash exports. */
function scratch(need: number, op: string): HashExports {
  const e = engine() as HashExports;
  // A grow detaches the old buffer, which empties every view on it.
  if (e === owner && need <= capacity && target.byteLength !== 0) return e;
  if (e !== owner || need > capacity) {
    const size = Math.max(need, MIN_SCRATCH);
    base = reserve(size, op);
    owner = e;
    capacity = size;
  }
  target = memoryView().subarray(base, base + capacity);
  latin1 = Buffer.from(target.buffer, target.byteOffset, target.byteLength);
  // `base` is 16-byte aligned (assembly/memory.ts).
  table = new Uint32Array(target.buffer, target.byteOffset, capacity >>> 2);
  singleIn = target.subarray(SINGLE_IN);
  return e;
}

function hex32(h: number): string {
  return (
    HEX_PAIRS[h >>> 24] + HEX_PAIRS[(h >>> 16) & 0xff] + HEX_PAIRS[(h >>> 8) & 0xff] + HEX_PAIRS[h & 0xff]
  );
}

// --- validation -------------------------------------------------------------
// `seed` is the position in a batch, or -1 for a single call; the argument's
// name is only spelled out when there is an error to report.

function fail(op: string, field: string, seed: number, expected: string, value: unknown): never {
  const name = seed < 0 ? field : `seeds[${seed}].${field}`;
  throw new TypeError(`${op}: ${name} must be ${expected}, got ${describeValue(value)}`);
}

function checkString(value: unknown, field: string, op: string, seed: number): string {
  if (typeof value !== "string") fail(op, field, seed, "a string", value);
  return value;
}

function checkIndex(value: unknown, field: string, op: string, seed: number): number {
  if (!isIndex(value)) fail(op, field, seed, "a non-negative integer", value);
  return value;
}

function checkOptionalString(value: unknown, field: string, op: string, seed: number): string | null {
  if (value === null || value === undefined) return null;
  return checkString(value, field, op, seed);
}

function checkKind(value: unknown, op: string, seed: number): OccurrenceKind {
  if (value !== "result" && value !== "call") fail(op, "kind", seed, '"result" or "call"', value);
  return value;
}

function checkSeeds(seeds: unknown, op: string): readonly unknown[] {
  if (!Array.isArray(seeds)) throw new TypeError(`${op}: seeds must be an array, got ${describeValue(seeds)}`);
  return seeds;
}

const HANDLE_SEED_KEYS = ["threadId", "toolCallId", "callIndex", "ordinal", "occurrenceId"] as const satisfies readonly (keyof HandleSeed)[];
const HANDLE_OPTIONAL_KEYS: readonly string[] = ["ordinal", "occurrenceId"];
const KEY_SEED_KEYS = ["kind", "threadId", "messageId", "toolCallId", "index"] as const satisfies readonly (keyof OccurrenceSeed)[];
const KEY_OPTIONAL_KEYS: readonly string[] = ["messageId"];

/**
 * `seed` as an object. An own key that spells an optional field the seed
 * does not give (undefined or null: DESIGN §2) in another case or with
 * separators (`occurrence_id`, `messageID`) is refused: read as not given,
 * it would give another handle or ledger key without a word. Nearer
 * spellings only, as for a batch item's callIndex: a host's own keys come
 * near the names (`original`, `message`). A required field spelt otherwise
 * fails as missing.
 */
function checkSeed(seed: unknown, op: string, i: number, known: readonly string[], optional: readonly string[]): Record<string, unknown> {
  if (typeof seed !== "object" || seed === null) {
    throw new TypeError(`${op}: seeds[${i}] must be an object, got ${describeValue(seed)}`);
  }
  const fields = seed as Record<string, unknown>;
  // Capture's seeds give every field: no key is looked at.
  const found = misspeltField(fields, known, optional.filter((field) => fields[field] == null), sameKey);
  if (found !== undefined) throw new TypeError(`${op}: seeds[${i}] has ${JSON.stringify(found.key)}; did you mean ${found.meant}?`);
  return fields;
}

// --- message texts ----------------------------------------------------------

// A handle's seed text (DESIGN §2), validated, in the two parts around its
// ordinal: `threadId:toolCallId:callIndex:` before it, `:occurrenceId` (or
// nothing) after it.

function handlePrefix(threadId: unknown, toolCallId: unknown, callIndex: unknown, op: string, seed: number): string {
  const t = checkString(threadId, "threadId", op, seed);
  const c = checkString(toolCallId, "toolCallId", op, seed);
  return `${t}:${c}:${checkIndex(callIndex, "callIndex", op, seed)}:`;
}

function handleSuffix(occurrenceId: unknown, op: string, seed: number): string {
  const occ = checkOptionalString(occurrenceId, "occurrenceId", op, seed);
  return occ === null ? "" : `:${occ}`;
}

function handleText(
  threadId: unknown,
  toolCallId: unknown,
  callIndex: unknown,
  ordinal: unknown,
  occurrenceId: unknown,
  op: string,
  seed: number,
): string {
  const prefix = handlePrefix(threadId, toolCallId, callIndex, op, seed);
  return prefix + checkIndex(ordinal, "ordinal", op, seed) + handleSuffix(occurrenceId, op, seed);
}

// Characters Python's json.dumps (ensure_ascii) writes as themselves.
const JSON_PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
// The letter of each short escape (`\n` …), by code; 0 where there is none.
const JSON_SHORT = new Uint8Array(0x60);
for (const [c, letter] of [[0x22, '"'], [0x5c, "\\"], [0x0a, "n"], [0x0d, "r"], [0x09, "t"], [0x08, "b"], [0x0c, "f"]] as const) JSON_SHORT[c] = letter.charCodeAt(0);
const HEX_DIGITS = Buffer.from("0123456789abcdef", "latin1");

/**
 * The inside of a JSON string literal exactly as Python's `json.dumps` writes
 * it by default: printable ASCII as is, the short escapes, everything else
 * `\uXXXX` per UTF-16 code unit (so astral characters come out as surrogate
 * pairs, as in Python). Returns `s` itself when nothing needs escaping.
 * Written as bytes: built piece by piece, an id of a few million escaped
 * characters took seconds.
 */
function pyJsonBody(s: string): string {
  if (JSON_PLAIN.test(s)) return s;
  const out = Buffer.allocUnsafe(s.length * 6);
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c <= 0x7e && c !== 0x22 && c !== 0x5c) {
      out[n++] = c;
    } else if (c < 0x60 && JSON_SHORT[c] !== 0) {
      out[n++] = 0x5c;
      out[n++] = JSON_SHORT[c]!;
    } else {
      out[n++] = 0x5c;
      out[n++] = 0x75; // u
      out[n++] = HEX_DIGITS[c >> 12]!;
      out[n++] = HEX_DIGITS[(c >> 8) & 15]!;
      out[n++] = HEX_DIGITS[(c >> 4) & 15]!;
      out[n++] = HEX_DIGITS[c & 15]!;
    }
  }
  return out.toString("latin1", 0, n);
}

/**
 * The JSON array `[threadId, messageId, toolCallId, i]` with `", "` separators
 * around string bodies the caller has escaped (or knows need no escaping).
 */
function keyJson(t: string, m: string | null, c: string, i: number): string {
  return m === null ? `["${t}", null, "${c}", ${i}]` : `["${t}", "${m}", "${c}", ${i}]`;
}
// Double quotes in keyJson's structure: only an id can add more.
const keyQuotes = (m: string | null) => (m === null ? 4 : 6);

/** The fields of a ledger key, validated, with `i` already chosen by kind. */
interface KeyFields {
  t: string;
  m: string | null;
  c: string;
  i: number;
}

function keyFields(
  kind: OccurrenceKind,
  threadId: unknown,
  messageId: unknown,
  toolCallId: unknown,
  index: unknown,
  op: string,
  seed: number,
): KeyFields {
  const t = checkString(threadId, "threadId", op, seed);
  const m = checkOptionalString(messageId, "messageId", op, seed);
  const c = checkString(toolCallId, "toolCallId", op, seed);
  const n = checkIndex(index, "index", op, seed);
  // A result with a durable message id is identified by it; the index only
  // tells apart id-less results and the calls of one message.
  return { t, m, c, i: m === null || kind === "call" ? n : 0 };
}

function escapedKeyJson(f: KeyFields): string {
  return keyJson(pyJsonBody(f.t), f.m === null ? null : pyJsonBody(f.m), pyJsonBody(f.c), f.i);
}

// --- engine calls -----------------------------------------------------------

/** Hash `text` into the single-digest slot, hex digits at KEY_PREFIX..KEY_SLOT. */
function hashSingle(text: string, op: string): void {
  const e = scratch(SINGLE_IN + text.length * MAX_UTF8_PER_UNIT, op);
  const { written } = encoder.encodeInto(text, singleIn);
  runEngine(op, written, () => e.sha256_hex(base + SINGLE_IN, written, base + KEY_PREFIX));
}

/**
 * Write each of `texts` followed by `separator` as UTF-8 from `at` (an offset
 * from `base`) and return how many bytes that took. Encoded a chunk at a time:
 * one string of a whole batch would be allocated among V8's large objects past
 * 128 KiB, which made a 10k-key batch several times slower than the same keys
 * in chunks.
 */
function encodeJoined(texts: readonly string[], separator: string, at: number): number {
  let end = at;
  let chunk = "";
  for (let i = 0; i < texts.length; i++) {
    chunk += texts[i];
    chunk += separator;
    if (chunk.length >= CHUNK_CHARS || i === texts.length - 1) {
      end += encoder.encodeInto(chunk, target.subarray(end)).written;
      chunk = "";
    }
  }
  return end - at;
}

/**
 * Lay a batch out from `base`: the (pointer, length) table, `count` output
 * slots of `slot` bytes (from `8 * count`), then the UTF-8 of each text
 * followed by `separator`. Returns how many input bytes were written, or -1
 * when `asciiOnly` and some text is not ASCII (the table is not filled then).
 */
function layOut(texts: readonly string[], separator: string, slot: number, asciiOnly: boolean, op: string): number {
  const n = texts.length;
  let chars = separator.length * n;
  for (let i = 0; i < n; i++) chars += texts[i].length;
  const inAt = (8 + slot) * n;
  scratch(inAt + chars * MAX_UTF8_PER_UNIT, op);
  const written = encodeJoined(texts, separator, inAt);
  const ascii = written === chars;
  if (!ascii && asciiOnly) return -1;
  let ptr = base + inAt;
  for (let i = 0, w = 0; i < n; i++, w += 2) {
    const len = ascii ? texts[i].length : utf8Length(texts[i]);
    table[w] = ptr;
    table[w + 1] = len;
    ptr += len + separator.length;
  }
  return written;
}

/** UTF-8 length as TextEncoder writes it (a lone surrogate becomes U+FFFD). */
function utf8Length(s: string): number {
  let len = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) len += 1;
    else if (c < 0x800) len += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      len += 4;
      i++;
    } else len += 3;
  }
  return len;
}

// --- public API -------------------------------------------------------------

/**
 * The handle of one artifact: `"art_"` + the first 8 hex digits of SHA-256 over
 * `threadId:toolCallId:callIndex:ordinal`, with `:occurrenceId` appended when
 * an occurrence id is given (null/undefined = not given). Ids reach SHA-256
 * as UTF-8, where a lone surrogate becomes U+FFFD: two ids that differ only
 * in their lone surrogates give the same handle.
 *
 * @throws TypeError when an id is not a string or an index is not a
 *   non-negative integer.
 */
export function generateHandle(
  threadId: string,
  toolCallId: string,
  callIndex: number,
  ordinal = 0,
  occurrenceId?: string | null,
): string {
  const op = "generateHandle";
  const text = handleText(threadId, toolCallId, callIndex, ordinal, occurrenceId, op, -1);
  const e = scratch(text.length * MAX_UTF8_PER_UNIT, op);
  const { written } = encoder.encodeInto(text, target);
  // The kernel only reads validated, in-bounds bytes: it cannot trap, so the
  // fast path skips runEngine's closure.
  return HANDLE_PREFIX + hex32(e.sha256_head32(base, written));
}

/** `generateHandle` for many seeds in one engine call; same order, same results. */
export function generateHandles(seeds: readonly HandleSeed[]): string[] {
  const op = "generateHandles";
  const list = checkSeeds(seeds, op);
  const n = list.length;
  if (n === 0) return [];
  // Index loops rather than map: a hole in a sparse array is a bad seed too.
  const texts = new Array<string>(n);
  for (let i = 0; i < n; i++) {
    const s = checkSeed(list[i], op, i, HANDLE_SEED_KEYS, HANDLE_OPTIONAL_KEYS);
    const ordinal = s.ordinal === undefined ? 0 : s.ordinal;
    texts[i] = handleText(s.threadId, s.toolCallId, s.callIndex, ordinal, s.occurrenceId, op, i);
  }
  const written = layOutHandleTexts(texts, op);
  runEngine(op, written, () => hashLaidOutHandles(n));
  return readLaidOutHandles(n);
}

/**
 * LOW-LEVEL (benchmarks): lay out handle seed texts for the batch kernels as
 * generateHandles does; returns the input bytes written.
 */
export function layOutHandleTexts(texts: readonly string[], op = "layOutHandleTexts"): number {
  // A separator keeps a trailing lone high surrogate of one text from pairing
  // with a leading lone low surrogate of the next in the joined string.
  return layOut(texts, "\n", HANDLE_HEX, false, op);
}

/**
 * LOW-LEVEL (benchmarks): hash the `count` texts laid out last by
 * layOutHandleTexts, on the four-lane SIMD tier or the scalar one; the heads
 * stay in engine memory (readLaidOutHandles reads them).
 */
export function hashLaidOutHandles(count: number, tier: "simd" | "scalar" = "simd"): void {
  const e = engine() as HashExports;
  const kernel = tier === "simd" ? e.sha256_batch_hex : e.sha256_batch_hex_scalar;
  kernel(base, count, base + 8 * count, HANDLE_HEX, HANDLE_HEX);
}

/** LOW-LEVEL (benchmarks): the handles hashLaidOutHandles left in engine memory. */
export function readLaidOutHandles(count: number): string[] {
  return handleStrings(8 * count, count);
}

/**
 * The handles of one tool result's `count` artifacts: `generateHandle` with
 * ordinals 0 .. count-1 and the other arguments shared, in one engine call.
 * This is the batch extraction makes; the ids are encoded once and the engine
 * writes the ordinals itself. Same results as `generateHandle` per ordinal.
 *
 * @throws TypeError when an id is not a string or `callIndex`/`count` is not
 *   a non-negative integer (`count` below 2^32).
 */
export function generateResultHandles(
  threadId: string,
  toolCallId: string,
  callIndex: number,
  count: number,
  occurrenceId?: string | null,
): string[] {
  const op = "generateResultHandles";
  // Prefix and suffix around the ordinal; each begins or ends with ":", so
  // encoding them joined cannot pair surrogates across the seam.
  const prefix = handlePrefix(threadId, toolCallId, callIndex, op, -1);
  const n = checkIndex(count, "count", op, -1);
  if (n > MAX_COUNT) fail(op, "count", -1, `at most ${MAX_COUNT}`, count);
  const suffix = handleSuffix(occurrenceId, op, -1);
  if (n === 0) return [];
  const chars = prefix.length + suffix.length;
  // Arena: prefix and suffix, then the (pointer, length) table, hex out, texts.
  const tableAt = (chars * MAX_UTF8_PER_UNIT + COUNTER_SLACK + 15) & ~15;
  const out = tableAt + 8 * n;
  const textAt = out + HANDLE_HEX * n;
  const e = scratch(textAt + n * (chars * MAX_UTF8_PER_UNIT + MAX_COUNT_DIGITS) + COUNTER_SLACK, op);
  const { written } = encoder.encodeInto(suffix === "" ? prefix : prefix + suffix, target);
  const prefixBytes = written === chars ? prefix.length : encoder.encodeInto(prefix, target).written;
  runEngine(op, written, () => {
    e.sha256_counter_texts(base, prefixBytes, base + prefixBytes, written - prefixBytes, n, base + textAt, base + tableAt);
    e.sha256_batch_hex(base + tableAt, n, base + out, HANDLE_HEX, HANDLE_HEX);
  });
  return handleStrings(out, n);
}

/** `n` handles from the hex heads at `out`, one flat 12-character string each. */
function handleStrings(out: number, n: number): string[] {
  const t = target;
  const [p0, p1, p2, p3] = HANDLE_PREFIX_CODES;
  const handles = new Array<string>(n);
  for (let i = 0, p = out; i < n; i++, p += HANDLE_HEX) {
    handles[i] = String.fromCharCode(p0, p1, p2, p3, t[p], t[p + 1], t[p + 2], t[p + 3], t[p + 4], t[p + 5], t[p + 6], t[p + 7]);
  }
  return handles;
}

/**
 * The ledger key of one tool call or result: `kind + ":"` + hex SHA-256 of the
 * JSON array `[threadId, messageId, toolCallId, i]` as Python's `json.dumps`
 * writes it by default, where `i = index` if `messageId` is null/undefined or
 * `kind` is `"call"`, else `0`.
 *
 * @throws TypeError when `kind` is neither "result" nor "call", an id is not a
 *   string (messageId: string, null or undefined), or `index` is not a
 *   non-negative integer.
 */
export function occurrenceKey(
  kind: OccurrenceKind,
  threadId: string,
  messageId: string | null | undefined,
  toolCallId: string,
  index: number,
): string {
  const op = "occurrenceKey";
  const k = checkKind(kind, op, -1);
  hashSingle(escapedKeyJson(keyFields(k, threadId, messageId, toolCallId, index, op, -1)), op);
  return latin1.toString("latin1", putKind(k, KEY_PREFIX), KEY_SLOT);
}

/** Write `kind`'s key prefix to end at `digestAt` (a key slot's digest); returns where it starts. */
function putKind(kind: OccurrenceKind, digestAt: number): number {
  const prefix = KIND_BYTES[kind];
  const start = digestAt - prefix.length;
  // A byte loop: target.set costs more than these at most 7 bytes.
  for (let j = 0; j < prefix.length; j++) target[start + j] = prefix[j];
  return start;
}

// Seeds per engine call. Larger batches grow the engine's memory and hold
// every text at once, and took about twice as long per seed past 50k
// (commit 24fd133 has the side-by-side figures).
const KEY_CHUNK = 4096;

/** `occurrenceKey` for many seeds, in engine calls of up to KEY_CHUNK seeds; same order, same results. */
export function occurrenceKeys(seeds: readonly OccurrenceSeed[]): string[] {
  const list = checkSeeds(seeds, "occurrenceKeys");
  if (list.length <= KEY_CHUNK) return keyChunk(list, 0, list.length);
  const keys: string[] = [];
  for (let from = 0; from < list.length; from += KEY_CHUNK) {
    for (const key of keyChunk(list, from, Math.min(list.length, from + KEY_CHUNK))) keys.push(key);
  }
  return keys;
}

/** The keys of `list[from..to)`, in one engine call; errors name seeds by their index in `list`. */
function keyChunk(list: readonly unknown[], from: number, to: number): string[] {
  const op = "occurrenceKeys";
  const n = to - from;
  if (n === 0) return [];
  const kinds = new Array<OccurrenceKind>(n);
  // Each seed is read once, here, before the engine is used: a getter is the
  // host's code, and one that ran between two engine calls could rebuild the
  // instance under them (or answer otherwise the second time).
  const fields = new Array<KeyFields>(n);
  const texts = new Array<string>(n);
  let quotes = 0;
  for (let i = 0; i < n; i++) {
    const s = checkSeed(list[from + i], op, from + i, KEY_SEED_KEYS, KEY_OPTIONAL_KEYS);
    kinds[i] = checkKind(s.kind, op, from + i);
    const f = (fields[i] = keyFields(kinds[i], s.threadId, s.messageId, s.toolCallId, s.index, op, from + i));
    // Optimistic: ids written as they are, checked below in one engine pass.
    texts[i] = keyJson(f.t, f.m, f.c, f.i);
    quotes += keyQuotes(f.m);
  }
  // Every text starts with "[" and ends with "]": no separator is needed.
  let written = layOut(texts, "", KEY_SLOT, true, op);
  const e = engine() as HashExports;
  if (written < 0 || e.sha256_plain_quotes(base + (8 + KEY_SLOT) * n, written) !== quotes) {
    // Some id needs escaping (rare: quotes, backslashes, controls, non-ASCII).
    for (let i = 0; i < n; i++) texts[i] = escapedKeyJson(fields[i]);
    written = layOut(texts, "", KEY_SLOT, true, op);
  }
  const out = 8 * n;
  for (let i = 0, p = out + KEY_PREFIX; i < n; i++, p += KEY_SLOT) putKind(kinds[i], p);
  runEngine(op, written, () => e.sha256_batch_hex(base, n, base + out + KEY_PREFIX, DIGEST_HEX, KEY_SLOT));
  const keys = new Array<string>(n);
  for (let i = 0, p = out + KEY_PREFIX; i < n; i++, p += KEY_SLOT) {
    keys[i] = latin1.toString("latin1", p - KIND_BYTES[kinds[i]].length, p + DIGEST_HEX);
  }
  return keys;
}

/**
 * Lowercase hex SHA-256 of the UTF-8 of `text` (a lone surrogate hashes as
 * U+FFFD, as `TextEncoder` writes it).
 *
 * @throws TypeError when `text` is not a string.
 */
export function sha256Hex(text: string): string {
  const op = "sha256Hex";
  hashSingle(checkString(text, "text", op, -1), op);
  return latin1.toString("latin1", KEY_PREFIX, KEY_SLOT);
}
