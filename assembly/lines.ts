// Archive lines in the engine: the CLI's per-line work (DESIGN §11) for the
// common shapes, from the raw UTF-8 JSON line to its output JSON lines.
//
// Why here and not in TypeScript: the TypeScript path (JSON.parse,
// extractArtifacts, formatting) decodes each line to a string, builds objects
// and strings per entry and encodes them again, and every thread (a pool
// worker is a fresh V8 isolate) paid again to JIT-compile it. Here a line is
// read once from its bytes and its entries are written as bytes
// (bench/cli.bench.ts compares the two paths on one warm thread).
//
// Exactness: for every line it takes, the output must be byte for byte what
// the TypeScript path writes (test/lines-engine.test.ts holds the two side by
// side). So the kernel takes only lines whose meaning it can read without
// doubt, and leaves every other line to the host (status LINE), which runs
// the TypeScript path on it. It leaves, among others: lines that are not one
// JSON object, or not valid UTF-8; lines with threadId, call_index or
// callIndex, or with lc/kwargs other than in LangChain's exact serialized
// form; a missing or odd thread_id; keys with escapes, and read keys given
// twice (JSON.parse keeps the last); ids, names, types or URLs with escapes;
// string content that may be JSON (the JSON block rule); texts that may be
// JSON (the mirror and JSON text rules); blocks with structuredContent, and image_url
// blocks; messages whose additional_kwargs hold anything (a structured
// response's mark, src/types.ts); texts with lone surrogate escapes; payloads with escaped, duplicate
// or integer-like keys (JSON.parse reorders those), or, when they become a
// `data` entry, with escapes or numbers JSON.stringify would write differently;
// payload references with escapes; when texts are scanned, payload or block
// references that hold a blank (a text naming one gives its first word, which
// the host drops). And past the kernel's limits: nesting
// deeper than MAX_NEST in skipped values or KEY_LEVELS in a payload, a
// payload of more than KEY_STACK_CAP keys, a lookup past MAX_PROBES (crafted
// references), more than MAX_ENTRIES entries, more than MAX_LINE_OUTPUT or
// MAX_HANDLE_SCRATCH bytes for one line, or memory that cannot grow.
//
// The rules themselves are DESIGN §4's, as src/extract.ts applies them; the
// gates, the free-text scanner, the bounded walk and the handle hash are the
// engine's own kernels, called here directly.
import { arenaBase, copyOver, decimalLength, putDecimal, reserve } from "./memory";
import { HASH_MUL, MAX_PROBES, holdsSpace, scan_max_pairs, scan_text } from "./scan";
import { sha256_batch_hex, sha256_counter_texts } from "./sha256";
import {
  ALSE_LE, BACKSLASH, COLON, COMMA, CR, DQUOTE, FLAG_KNOWN, FLAG_NON_EMPTY, GATE_FILE, GATE_TASK, HASH, LBRACE, LBRACKET, LF, LOW_F, LOW_N, LOW_T,
  MAX_REF_BYTES, MINUS, NULL_LE, OUT_COMPACT, OUT_FLAGS, OUT_RECORDS, OUT_REFS, QUESTION, RBRACKET, RECORD_BYTES, REC_ESCAPED, SLASH, SPACE, TAB, TRUE_LE, ZERO,
  decodeEscape, decodeUtf8, lowOf, pack, plainRunEnd, posOf, scanNumber, skipSpace, walk_gate, walk_json,
} from "./walk";

// ---- Bytes ------------------------------------------------------------------
// walk.ts has the rest (imported above).
const VT: u32 = 0x0b;
const FF: u32 = 0x0c;
const RBRACE: u32 = 0x7d;

// ---- Words: keys read, values compared, output pieces ----------------------
// WORDS holds them back to back (UTF-8); word i is WORD_LEN[i] bytes at WORD_AT[i].
const WORDS = memory.data<u8>([
  116, 104, 114, 101, 97, 100, 95, 105, 100, 109, 101, 115, 115, 97, 103, 101, 116, 111, 111, 108, 95, 99, 97, 108,
  108, 95, 105, 100, 108, 99, 116, 104, 114, 101, 97, 100, 73, 100, 99, 97, 108, 108, 95, 105, 110, 100, 101, 120,
  99, 97, 108, 108, 73, 110, 100, 101, 120, 116, 121, 112, 101, 105, 100, 110, 97, 109, 101, 115, 116, 97, 116, 117,
  115, 99, 111, 110, 116, 101, 110, 116, 97, 114, 116, 105, 102, 97, 99, 116, 107, 119, 97, 114, 103, 115, 116, 101,
  120, 116, 117, 114, 108, 109, 105, 109, 101, 84, 121, 112, 101, 109, 105, 109, 101, 95, 116, 121, 112, 101, 115, 111,
  117, 114, 99, 101, 95, 116, 121, 112, 101, 115, 111, 117, 114, 99, 101, 105, 109, 97, 103, 101, 95, 117, 114, 108,
  115, 116, 114, 117, 99, 116, 117, 114, 101, 100, 67, 111, 110, 116, 101, 110, 116, 100, 97, 116, 97, 115, 116, 114,
  117, 99, 116, 117, 114, 101, 100, 95, 99, 111, 110, 116, 101, 110, 116, 116, 111, 111, 108, 101, 114, 114, 111, 114,
  102, 105, 108, 101, 105, 109, 97, 103, 101, 116, 97, 115, 107, 109, 99, 112, 95, 115, 116, 114, 117, 99, 116, 117,
  114, 101, 100, 95, 99, 111, 110, 116, 101, 110, 116, 117, 110, 107, 110, 111, 119, 110, 32, 115, 116, 114, 117, 99,
  116, 117, 114, 101, 100, 32, 114, 101, 115, 117, 108, 116, 123, 34, 116, 104, 114, 101, 97, 100, 95, 105, 100, 34,
  58, 34, 34, 44, 34, 104, 97, 110, 100, 108, 101, 34, 58, 34, 97, 114, 116, 95, 34, 44, 34, 116, 111, 111,
  108, 95, 110, 97, 109, 101, 34, 58, 34, 34, 44, 34, 116, 111, 111, 108, 95, 99, 97, 108, 108, 95, 105, 100,
  34, 58, 34, 34, 44, 34, 99, 97, 108, 108, 95, 105, 110, 100, 101, 120, 34, 58, 48, 44, 34, 97, 114, 116,
  105, 102, 97, 99, 116, 95, 116, 121, 112, 101, 34, 58, 34, 34, 44, 34, 100, 105, 115, 112, 108, 97, 121, 95,
  110, 97, 109, 101, 34, 58, 44, 34, 114, 101, 97, 108, 95, 114, 101, 102, 34, 58, 44, 34, 109, 105, 109, 101,
  95, 116, 121, 112, 101, 34, 58, 44, 34, 99, 114, 101, 97, 116, 101, 100, 95, 97, 116, 34, 58, 125, 10, 99,
  111, 110, 115, 116, 114, 117, 99, 116, 111, 114, 84, 111, 111, 108, 77, 101, 115, 115, 97, 103, 101, 84, 111, 111,
  108, 77, 101, 115, 115, 97, 103, 101, 67, 104, 117, 110, 107, 114, 101, 115, 111, 117, 114, 99, 101, 109, 101, 116,
  97, 100, 97, 116, 97, 97, 100, 100, 105, 116, 105, 111, 110, 97, 108, 95, 107, 119, 97, 114, 103, 115,
]);
const WORD_AT = memory.data<u16>([0, 9, 16, 28, 30, 38, 48, 57, 61, 63, 67, 73, 80, 88, 94, 98, 101, 109, 118, 129, 135, 144, 161, 165, 461, 183, 187, 192, 196, 201, 205, 227, 234, 252, 266, 282, 297, 315, 349, 366, 378, 391, 405, 407, 418, 429, 445, 453]);
const WORD_LEN = memory.data<u8>([9, 7, 12, 2, 8, 10, 9, 4, 2, 4, 6, 7, 8, 6, 4, 3, 8, 9, 11, 6, 9, 17, 4, 18, 17, 4, 5, 4, 5, 4, 22, 7, 18, 14, 16, 15, 18, 34, 17, 12, 13, 14, 2, 11, 11, 16, 8, 8]);

// Keys (ids 0..24, one bit each in a key set).
const K_THREAD_ID: u32 = 0;
const K_MESSAGE: u32 = 1;
const K_TOOL_CALL_ID: u32 = 2;
const K_LC: u32 = 3;
const K_THREADID: u32 = 4;
const K_CALL_INDEX: u32 = 5;
const K_CALLINDEX: u32 = 6;
const K_TYPE: u32 = 7;
const K_ID: u32 = 8;
const K_NAME: u32 = 9;
const K_STATUS: u32 = 10;
const K_CONTENT: u32 = 11;
const K_ARTIFACT: u32 = 12;
const K_KWARGS: u32 = 13;
const K_TEXT: u32 = 14;
const K_URL: u32 = 15;
const K_MIMETYPE: u32 = 16;
const K_MIME_TYPE: u32 = 17;
const K_SOURCE_TYPE: u32 = 18;
const K_SOURCE: u32 = 19;
const K_IMAGE_URL: u32 = 20;
const K_STRUCTURED: u32 = 21; // structuredContent
const K_DATA: u32 = 22;
const K_STRUCTURED_CONTENT: u32 = 23;
const K_ADDITIONAL_KWARGS: u32 = 24;
const KEY_COUNT: u32 = 25;
// Values and output pieces.
const W_TOOL: u32 = 25;
const W_ERROR: u32 = 26;
const W_FILE: u32 = 27;
const W_IMAGE: u32 = 28;
const W_TASK: u32 = 29;
const W_MCP: u32 = 30;
const W_UNKNOWN: u32 = 31;
const W_STRUCTURED_RESULT: u32 = 32;
const W_HEAD: u32 = 33; // {"thread_id":"
const W_HANDLE: u32 = 34; // ","handle":"art_
const W_TOOL_NAME: u32 = 35;
const W_TOOL_CALL: u32 = 36;
const W_TYPE: u32 = 37; // ","call_index":0,"artifact_type":"
const W_DISPLAY: u32 = 38;
const W_REF: u32 = 39;
const W_MIME: u32 = 40;
const W_CREATED: u32 = 41;
const W_END: u32 = 42; // }\n
const W_CONSTRUCTOR: u32 = 43;
const W_TOOL_MESSAGE: u32 = 44;
const W_TOOL_MESSAGE_CHUNK: u32 = 45;
const W_RESOURCE: u32 = 46;
const W_METADATA: u32 = 47;

@inline function wordAt(w: u32): usize {
  return WORDS + <usize>load<u16>(WORD_AT + (<usize>w << 1));
}
@inline function wordLen(w: u32): usize {
  return <usize>load<u8>(WORD_LEN + <usize>w);
}

@inline function bit(k: u32): u32 {
  return <u32>1 << k;
}
// The keys read in each kind of object. The top level of a line may be the
// message itself, so it reads the message's keys too.
const MESSAGE_KEYS: u32 = bit(K_TYPE) | bit(K_ID) | bit(K_NAME) | bit(K_TOOL_CALL_ID) | bit(K_STATUS) | bit(K_CONTENT) | bit(K_ARTIFACT) | bit(K_LC) | bit(K_KWARGS) | bit(K_DATA) | bit(K_ADDITIONAL_KWARGS);
const TOP_KEYS: u32 = MESSAGE_KEYS | bit(K_THREAD_ID) | bit(K_MESSAGE) | bit(K_THREADID) | bit(K_CALL_INDEX) | bit(K_CALLINDEX);
const BLOCK_KEYS: u32 = bit(K_TYPE) | bit(K_TEXT) | bit(K_URL) | bit(K_MIMETYPE) | bit(K_MIME_TYPE) | bit(K_SOURCE_TYPE) | bit(K_SOURCE) | bit(K_IMAGE_URL) | bit(K_STRUCTURED);
const SOURCE_KEYS: u32 = bit(K_URL) | bit(K_MIMETYPE) | bit(K_MIME_TYPE);
const ITEM_KEYS: u32 = bit(K_TYPE) | bit(K_DATA);
const ARTIFACT_KEYS: u32 = bit(K_STRUCTURED_CONTENT);
const LEFT_TO_HOST: u32 = bit(K_THREADID) | bit(K_CALL_INDEX) | bit(K_CALLINDEX);
const NO_WORD: u32 = 0xffffffff;

// ---- ABI (mirrored in src/engine/lines.ts) -----------------------------------
// Why a call stopped: the end of the input, a line left to the host (it
// starts at the returned offset), or no room for the next line's output.
const STOP_END: u32 = 0;
const STOP_LINE: u32 = 1;
const STOP_FULL: u32 = 2;
// Counters at `stats`: u32 lines, entries, rejected, skipped, output bytes,
// stop reason, and with STOP_FULL the output bytes the next line needs.
const STAT_LINES: usize = 0;
const STAT_ENTRIES: usize = 4;
const STAT_REJECTED: usize = 8;
const STAT_SKIPPED: usize = 12;
const STAT_OUTPUT: usize = 16;
const STAT_STOP: usize = 20;
const STAT_NEEDED: usize = 24;
const FLAG_TEXT: u32 = 1; // scan texts for references

// DESIGN's walk budgets (src/engine/serialize.ts), and the room the walk's output needs.
const MAX_WALK_NODES: u32 = 1024;
const MAX_WALK_DEPTH: u32 = 32;
const WALK_OUT: usize = OUT_RECORDS + RECORD_BYTES * <usize>MAX_WALK_NODES;
// Readable room kept after texts and scratch: the scan kernel reads up to 80
// bytes past a text, and copyOver up to 15 past what it copies.
const SLACK: usize = 96;
const HANDLE_HEX: usize = 8;
// Output one line may need room for, at most (the u32 ABI's room is the limit).
const MAX_LINE_OUTPUT: u64 = 1 << 30;
// Handle-text scratch one line may need (as the host would size it), at most.
const MAX_HANDLE_SCRATCH: u64 = 1 << 30;

// ---- Line outcomes ------------------------------------------------------------
const L_DONE: u32 = 0; // entries (maybe none) written
const L_BLANK: u32 = 1;
const L_SKIPPED: u32 = 2; // another kind of message
const L_HOST: u32 = 3; // left to the host
const L_FULL: u32 = 4; // no room for its output

// ---- Tokens ------------------------------------------------------------------
const V_STRING: u32 = 1;
const V_OBJECT: u32 = 2;
const V_ARRAY: u32 = 3;
const V_NULL: u32 = 4;
const V_OTHER: u32 = 5; // number or boolean
const S_ESCAPED: u32 = 1;
const S_UNREAD: u32 = 2; // an object value `fields` could not read into its set

/** The letter of a two-byte JSON escape: " \\ / b f n r t. */
@inline function isShortEscape(e: u32): bool {
  return e == DQUOTE || e == BACKSLASH || e == SLASH || e == 0x62 || e == LOW_F || e == LOW_N || e == 0x72 || e == LOW_T;
}

/** The string whose content starts at p: (after its closing quote, S_ESCAPED if it has escapes), or 0 when malformed. */
function skipString(p: usize, end: usize): u64 {
  let flags: u32 = 0;
  while (true) {
    p = plainRunEnd(p, end, true);
    if (p >= end) return 0;
    const c = <u32>load<u8>(p);
    if (c == DQUOTE) return pack(p + 1, flags);
    if (c == BACKSLASH) {
      flags |= S_ESCAPED;
      // Two-byte escapes (\n, \", \\ ...) are most of them in tool output: no decoding needed.
      if (p + 1 < end && isShortEscape(load<u8>(p + 1))) {
        p += 2;
        continue;
      }
      const r = decodeEscape(p, end);
      if (r == 0) return 0;
      p = posOf(r);
    } else if (c < SPACE) {
      return 0;
    } else {
      const r = decodeUtf8(p, end);
      if (r == 0) return 0; // the host's decoder would turn it into U+FFFD: its call
      p = posOf(r);
    }
  }
}

// Open containers of a skipped value, one byte each ('{' or '['). JSON.parse
// nests deeper; such a line is left to the host.
const MAX_NEST: u32 = 512;
const NEST: usize = memory.data(<i32>MAX_NEST);

/** After a key ending at p: where its value starts, past the colon and blanks; 0 when no colon follows. */
@inline function afterColon(p: usize, end: usize): usize {
  p = skipSpace(p, end);
  if (p >= end || <u32>load<u8>(p) != COLON) return 0;
  return skipSpace(p + 1, end);
}

/** The key at p and its colon: where its value starts, blanks skipped; 0 when malformed. */
function afterKey(p: usize, end: usize): usize {
  if (p >= end || <u32>load<u8>(p) != DQUOTE) return 0;
  const r = skipString(p + 1, end);
  return r == 0 ? 0 : afterColon(posOf(r), end);
}

/** An array's first item: where it starts, blanks skipped; 0 when the array at start is empty. */
@inline function firstItem(start: usize, end: usize): usize {
  const p = skipSpace(start + 1, end);
  return <u32>load<u8>(p) == RBRACKET ? 0 : p;
}

/** After an array item ending at p: where the next one starts; 0 at the array's end. (Arrays read here were validated whole.) */
@inline function nextItem(p: usize, end: usize): usize {
  p = skipSpace(p, end);
  return <u32>load<u8>(p) == COMMA ? skipSpace(p + 1, end) : 0;
}

/** After the JSON value at p (validated, not read), or 0 when malformed or nested deeper than MAX_NEST. */
function skipValue(p: usize, end: usize): usize {
  let depth: u32 = 0;
  while (true) {
    if (p >= end) return 0;
    let c = <u32>load<u8>(p);
    let closed = false;
    if (c == LBRACE || c == LBRACKET) {
      if (depth == MAX_NEST) return 0;
      store<u8>(NEST + depth, <u8>c);
      depth++;
      p = skipSpace(p + 1, end);
      if (p >= end) return 0;
      if (<u32>load<u8>(p) == c + 2) {
        depth--;
        p++;
        closed = true;
      } else {
        if (c == LBRACE) {
          p = afterKey(p, end);
          if (p == 0) return 0;
        }
        continue;
      }
    }
    if (!closed) {
      if (c == DQUOTE) {
        const r = skipString(p + 1, end);
        if (r == 0) return 0;
        p = posOf(r);
      } else if (c == MINUS || c - ZERO < 10) {
        const r = scanNumber(p, end);
        if (r == 0) return 0;
        p = posOf(r);
      } else if (c == LOW_T || c == LOW_N) {
        if (p + 4 > end || load<u32>(p) != (c == LOW_T ? TRUE_LE : NULL_LE)) return 0;
        p += 4;
      } else if (c == LOW_F) {
        if (p + 5 > end || load<u32>(p + 1) != ALSE_LE) return 0;
        p += 5;
      } else return 0;
    }
    // After a value: the next one, or the ends of containers.
    while (true) {
      if (depth == 0) return p;
      p = skipSpace(p, end);
      if (p >= end) return 0;
      c = <u32>load<u8>(p);
      const open = <u32>load<u8>(NEST + depth - 1);
      if (c == COMMA) {
        p = skipSpace(p + 1, end);
        if (open == LBRACE) {
          p = afterKey(p, end);
          if (p == 0) return 0;
        }
        break;
      }
      if (c != open + 2) return 0;
      depth--;
      p++;
    }
  }
}

// Where the value of each key read by `fields` lies: u32 start, end, kind,
// string flags per key, then a bit per key found. One set per object that is
// read while another is open: the line, its message, the kwargs of either
// (read as they are met, so a wrapped or serialized message is read once, not
// skipped first and read again), and the blocks, items and sources read one
// after another. The accessors read the set `cur`.
const SET_SEEN: usize = <usize>KEY_COUNT << 4;
const SET_BYTES: usize = SET_SEEN + 16;
const SETS: usize = memory.data(5 * <i32>SET_BYTES, 16);
const SET_TOP: usize = SETS;
const SET_MESSAGE: usize = SETS + SET_BYTES;
const SET_TOP_KWARGS: usize = SETS + 2 * SET_BYTES;
const SET_MESSAGE_KWARGS: usize = SETS + 3 * SET_BYTES;
const SET_OTHER: usize = SETS + 4 * SET_BYTES;
let cur: usize = SET_TOP;

@inline function has(k: u32): bool {
  return (load<u32>(cur + SET_SEEN) & bit(k)) != 0;
}
@inline function slotStart(k: u32): usize {
  return <usize>load<u32>(cur + (<usize>k << 4));
}
@inline function slotEnd(k: u32): usize {
  return <usize>load<u32>(cur + (<usize>k << 4), 4);
}
@inline function slotKind(k: u32): u32 {
  return has(k) ? load<u32>(cur + (<usize>k << 4), 8) : 0;
}
@inline function slotFlags(k: u32): u32 {
  return load<u32>(cur + (<usize>k << 4), 12);
}

/** The set an object value of key k in `set` is read into as it is met (0: skipped). */
@inline function nestedSet(set: usize, k: u32): usize {
  if (k == K_MESSAGE) return set == SET_TOP ? SET_MESSAGE : 0;
  if (k == K_KWARGS) return set == SET_TOP ? SET_TOP_KWARGS : set == SET_MESSAGE ? SET_MESSAGE_KWARGS : 0;
  return 0;
}

/** The key among `keys` spelled by the n bytes at p, or NO_WORD. */
function keyId(p: usize, n: usize, keys: u32): u32 {
  while (keys != 0) {
    const k = <u32>ctz(keys);
    keys &= keys - 1;
    if (wordLen(k) == n && memory.compare(wordAt(k), p, n) == 0) return k;
  }
  return NO_WORD;
}

/**
 * Read the object at p ('{') into `set` (which becomes `cur`), noting where
 * the value of each key in `keys` lies; other values are skipped (validated).
 * Returns after its '}', or 0: malformed, a key with escapes (it may spell
 * one of `keys`), or one of `keys` given twice (JSON.parse keeps the last).
 */
function fields(p: usize, end: usize, keys: u32, set: usize): usize {
  let seen: u32 = 0;
  p = skipSpace(p + 1, end);
  if (p < end && <u32>load<u8>(p) == RBRACE) {
    store<u32>(set + SET_SEEN, 0);
    cur = set;
    return p + 1;
  }
  while (true) {
    if (p >= end || <u32>load<u8>(p) != DQUOTE) return 0;
    const r = skipString(p + 1, end);
    if (r == 0 || (lowOf(r) & S_ESCAPED) != 0) return 0;
    const k = keyId(p + 1, posOf(r) - 2 - p, keys);
    p = afterColon(posOf(r), end);
    if (p == 0 || p >= end) return 0;
    const start = p;
    const c = <u32>load<u8>(p);
    let kind = V_OTHER;
    let flags: u32 = 0;
    if (c == DQUOTE) {
      const s = skipString(p + 1, end);
      if (s == 0) return 0;
      p = posOf(s);
      kind = V_STRING;
      flags = lowOf(s);
    } else {
      const nested = c == LBRACE && k != NO_WORD ? nestedSet(set, k) : 0;
      let q: usize = nested != 0 ? fields(p, end, MESSAGE_KEYS, nested) : 0;
      if (q == 0) {
        // Skipped instead: not read (a key with escapes, a read key twice),
        // which matters only if the line turns out to need it.
        if (nested != 0) flags = S_UNREAD;
        q = skipValue(p, end);
      }
      p = q;
      if (p == 0) return 0;
      if (c == LBRACE) kind = V_OBJECT;
      else if (c == LBRACKET) kind = V_ARRAY;
      else if (c == LOW_N) kind = V_NULL;
    }
    if (k != NO_WORD) {
      if ((seen & bit(k)) != 0) return 0;
      seen |= bit(k);
      const slot = set + (<usize>k << 4);
      store<u32>(slot, <u32>start);
      store<u32>(slot, <u32>p, 4);
      store<u32>(slot, kind, 8);
      store<u32>(slot, flags, 12);
    }
    p = skipSpace(p, end);
    if (p >= end) return 0;
    const d = <u32>load<u8>(p);
    if (d == RBRACE) {
      store<u32>(set + SET_SEEN, seen);
      cur = set;
      return p + 1;
    }
    if (d != COMMA) return 0;
    p = skipSpace(p + 1, end);
  }
}

/** Whether the string token [start, end) is exactly word w (no escapes, so its bytes are its text). */
function tokenIs(start: usize, end: usize, w: u32): bool {
  const n = end - start - 2;
  return wordLen(w) == n && memory.compare(wordAt(w), start + 1, n) == 0;
}

/**
 * Whether the bytes [start, end) of a value hold word w as a JSON string,
 * quotes included: as a key or, harmlessly for a caller that then leaves the
 * line to the host, as a string value. Inside a string a quote is escaped,
 * so a longer string cannot hold the quoted word.
 */
function mentions(start: usize, end: usize, w: u32): bool {
  const n = wordLen(w);
  if (end - start < n + 2) return false;
  const last = end - n - 2;
  for (let p = start; p <= last; p++) {
    if (<u32>load<u8>(p) == DQUOTE && <u32>load<u8>(p + n + 1) == DQUOTE && memory.compare(wordAt(w), p + 1, n) == 0) return true;
  }
  return false;
}

// ---- Per-call and per-line state ---------------------------------------------
let outBase: usize = 0;
let outCap: usize = 0;
let outLen: usize = 0;
let needed: usize = 0;
let prefixTable: usize = 0;
let prefixCount: u32 = 0;
let scanTexts = true;
let createdAt: usize = 0;
let createdAtLen: usize = 0;

// The line's ids, as content bytes of string tokens without escapes.
let threadAt: usize = 0;
let threadLen: usize = 0;
let nameAt: usize = 0; // the name's bytes, or the word "unknown"
let nameLen: usize = 0;
let callAt: usize = 0;
let callLen: usize = 0;
let hasId = false; // the message's id is a string: the occurrence id
let idAt: usize = 0;
let idLen: usize = 0;
// The line's number in the archive, and whether it is its call index: a
// result with no id and no tool_call_id is told apart by where it sits
// (src/batch/scan.ts's lineIndexed).
let lineNumber: u64 = 0;
let anonymous = false;
let lineRejected: u32 = 0;

// Fixed scratch: the walk's output, a data entry's JSON text (a line has at
// most one payload, so at most one data entry), and the keys of the payload
// objects open at a time (u32 start, length, hash each).
const WALK_AREA: usize = memory.data(<i32>WALK_OUT, 16);
const COMPACT: usize = memory.data(<i32>MAX_REF_BYTES + <i32>SLACK, 16);
const KEY_STACK_CAP: u32 = 2048;
const KEY_STACK: usize = memory.data(<i32>KEY_STACK_CAP * 12, 4);
// Per open container of a payload: where its keys start on the key stack, and whether it is an object.
const KEY_LEVELS: u32 = 64;
const LEVELS: usize = memory.data(<i32>KEY_LEVELS * 4, 4);
const OBJECT_LEVELS: usize = memory.data(<i32>KEY_LEVELS);

// Per-line scratch, taken from `work` on as the line needs it (so memory
// grows to what the largest line used, not to a worst case) and given back
// whole when the next line starts.
let bump: usize = 0;
let lineLen: usize = 0;
let unescaped: usize = 0; // texts with escapes, decoded one after another (0: none yet)
let unescapedUsed: usize = 0;
let entries: usize = 0;
let entryCount: u32 = 0;
let entryCap: u32 = 0;
let table: usize = 0; // open addressing: entry index + 1 per slot
let tableMask: u32 = 0;
let pairs: usize = 0; // the scanner's output for the current text
let pairsCap: usize = 0;

/** The longest MIME type an entry keeps, as src/extract.ts's MAX_MIME_CHARS. */
const MAX_MIME_BYTES: usize = 255;
const ENTRY: usize = 24; // u32 ref, length, type word, mime (token start, 0: none), mime token length, hash
const FIRST_ENTRIES: u32 = 64;
const MAX_ENTRIES: u32 = 1 << 24;

@inline function align16(p: usize): usize {
  return (p + 15) & ~(<usize>15);
}

/** Room from the arena base to `end`; false when memory cannot grow. */
@inline function room(end: usize): bool {
  return reserve(end - arenaBase()) != 0;
}

// The end of a wasm32 memory (4 GiB), less room for the last region's slack.
const MEMORY_LIMIT: u64 = (<u64>1 << 32) - 4096;

/** n bytes of line scratch, 16-aligned, with 16 bytes before and SLACK after it readable; 0 without memory. */
function take(n: u64): usize {
  const p = align16(bump) + 16;
  // In u64: a size near the 4 GiB of a wasm32 memory must fail, not wrap.
  const next = <u64>p + n + <u64>SLACK;
  if (next >= MEMORY_LIMIT || !room(<usize>next)) return 0;
  bump = <usize>next;
  return p;
}

/** Start a line of `len` bytes, its scratch from `work` on; false without memory. */
function startLine(work: usize, len: usize): bool {
  bump = work;
  lineLen = len;
  unescaped = 0;
  unescapedUsed = 0;
  pairs = 0;
  pairsCap = 0;
  entryCap = FIRST_ENTRIES;
  entries = take(<usize>FIRST_ENTRIES * ENTRY);
  tableMask = FIRST_ENTRIES * 4 - 1;
  table = take((<usize>tableMask + 1) << 2);
  if (entries == 0 || table == 0) return false;
  memory.fill(table, 0, (<usize>tableMask + 1) << 2);
  return true;
}

// ---- Entries -----------------------------------------------------------------
// Hashed as scan.ts's repeat filter hashes; a lookup past MAX_PROBES leaves
// the line to the host (its Set has no quadratic case).

/** A hash of n bytes at p, every input bit mixed into the low bits the table uses. */
function hashBytes(p: usize, n: usize): u32 {
  let h = <u64>n * HASH_MUL;
  let r = n;
  while (r >= 8) {
    h = (h ^ load<u64>(p)) * HASH_MUL;
    p += 8;
    r -= 8;
  }
  for (let i: usize = 0; i < r; i++) h = (h ^ <u64>load<u8>(p + i)) * HASH_MUL;
  // MurmurHash3's finalizer
  h ^= h >>> 33;
  h *= 0xff51afd7ed558ccd;
  h ^= h >>> 33;
  h *= 0xc4ceb9fe1a85ec53;
  h ^= h >>> 33;
  return <u32>h;
}

function insert(index: u32, h: u32): void {
  let slot = h & tableMask;
  while (load<u32>(table + (<usize>slot << 2)) != 0) slot = (slot + 1) & tableMask;
  store<u32>(table + (<usize>slot << 2), index + 1);
}

/** Twice the entry room (copied over) and a table of twice the slots; false without memory or past MAX_ENTRIES. */
function growEntries(): bool {
  if (entryCap >= MAX_ENTRIES) return false;
  const more = take(<usize>entryCap * 2 * ENTRY);
  if (more == 0) return false;
  memory.copy(more, entries, <usize>entryCount * ENTRY);
  entries = more;
  entryCap *= 2;
  return true;
}

/**
 * Take a reference unless the line has it already (src/extract.ts's Entries:
 * the first occurrence keeps its place). `mime` is a string token (0: none).
 * False: the line is left to the host (no memory, or a crafted cluster).
 */
function add(type: u32, ref: usize, n: usize, mime: usize, mimeLen: usize): bool {
  const h = hashBytes(ref, n);
  let slot = h & tableMask;
  for (let probes: u32 = 0; ; probes++) {
    const v = load<u32>(table + (<usize>slot << 2));
    if (v == 0) break;
    if (probes == MAX_PROBES) return false;
    const e = entries + <usize>(v - 1) * ENTRY;
    if (load<u32>(e, 20) == h && <usize>load<u32>(e, 4) == n && memory.compare(<usize>load<u32>(e), ref, n) == 0) return true;
    slot = (slot + 1) & tableMask;
  }
  if (entryCount == entryCap && !growEntries()) return false;
  const e = entries + <usize>entryCount * ENTRY;
  store<u32>(e, <u32>ref);
  store<u32>(e, <u32>n, 4);
  store<u32>(e, type, 8);
  store<u32>(e, <u32>mime, 12);
  store<u32>(e, <u32>mimeLen, 16);
  store<u32>(e, h, 20);
  store<u32>(table + (<usize>slot << 2), entryCount + 1);
  entryCount++;
  if (entryCount * 4 > tableMask + 1) {
    // Grow at a quarter load (a doubled table, everything inserted again):
    // at half load, runs past MAX_PROBES turn up by chance once a line has
    // tens of thousands of references.
    const slots = (<usize>tableMask + 1) << 1;
    const bigger = take(slots << 2);
    if (bigger == 0) return false;
    memory.fill(bigger, 0, slots << 2);
    table = bigger;
    tableMask = <u32>slots - 1;
    for (let i: u32 = 0; i < entryCount; i++) insert(i, load<u32>(entries + <usize>i * ENTRY, 20));
  }
  return true;
}

/**
 * Take a reference a payload or a block gives whole. One that holds a blank
 * is left to the host when texts are scanned: a text naming it gives its
 * first word, which extract.ts's Entries.finished drops, in any order.
 */
function addWhole(type: u32, ref: usize, n: usize, mime: usize, mimeLen: usize): bool {
  return !(scanTexts && holdsSpace(ref, n)) && add(type, ref, n, mime, mimeLen);
}

// ---- Texts -------------------------------------------------------------------
/** Write code point cp as UTF-8 at d; returns the end. */
function putUtf8(d: usize, cp: u32): usize {
  if (cp < 0x80) {
    store<u8>(d, <u8>cp);
    return d + 1;
  }
  if (cp < 0x800) {
    store<u8>(d, <u8>(0xc0 | (cp >> 6)));
    store<u8>(d + 1, <u8>(0x80 | (cp & 0x3f)));
    return d + 2;
  }
  if (cp < 0x10000) {
    store<u8>(d, <u8>(0xe0 | (cp >> 12)));
    store<u8>(d + 1, <u8>(0x80 | ((cp >> 6) & 0x3f)));
    store<u8>(d + 2, <u8>(0x80 | (cp & 0x3f)));
    return d + 3;
  }
  store<u8>(d, <u8>(0xf0 | (cp >> 18)));
  store<u8>(d + 1, <u8>(0x80 | ((cp >> 12) & 0x3f)));
  store<u8>(d + 2, <u8>(0x80 | ((cp >> 6) & 0x3f)));
  store<u8>(d + 3, <u8>(0x80 | (cp & 0x3f)));
  return d + 4;
}

/** The first `byte` in [p, end), or end. */
@inline function findByte(p: usize, end: usize, byte: u32): usize {
  const needle = i8x16.splat(<i8>byte);
  while (p + 16 <= end) {
    const m = i8x16.bitmask(i8x16.eq(v128.load(p), needle));
    if (m != 0) return p + <usize>ctz(m);
    p += 16;
  }
  while (p < end && <u32>load<u8>(p) != byte) p++;
  return p;
}

/**
 * Decode the string content [p, end) (validated by skipString) to UTF-8 at d:
 * the text the host's JSON.parse and TextEncoder would give. Returns the end,
 * or 0 for a lone surrogate (the host's TextEncoder writes U+FFFD for it, while
 * its references keep the surrogate: not for this kernel).
 */
function unescapeTo(p: usize, end: usize, d: usize): usize {
  while (p < end) {
    const q = findByte(p, end, BACKSLASH);
    memory.copy(d, p, q - p);
    d += q - p;
    if (q == end) break;
    const r = decodeEscape(q, end);
    const cp = lowOf(r);
    if ((cp & 0xfffff800) == 0xd800) return 0;
    d = putUtf8(d, cp);
    p = posOf(r);
  }
  return d;
}

/** extract.ts's mayBeJson: the first byte after JSON blanks is '{' or '['. */
function mayBeJson(p: usize, n: usize): bool {
  const end = p + n;
  p = skipSpace(p, end);
  if (p >= end) return false;
  const c = <u32>load<u8>(p);
  return c == LBRACE || c == LBRACKET;
}

/**
 * A text to scan: the string token [start, end) with its flags. `content`: the
 * message's string content (the JSON block rule reads it). False: left to the
 * host.
 */
function text(start: usize, end: usize, flags: u32, content: bool): bool {
  // Without text scanning only the content's JSON block rule reads a text.
  if (!scanTexts && !content) return true;
  let p = start + 1;
  let n = end - 1 - p;
  if (flags & S_ESCAPED) {
    // Decoded texts are no longer than their tokens, all of which fit the line.
    if (unescaped == 0) unescaped = take(lineLen);
    if (unescaped == 0) return false;
    const d = unescaped + unescapedUsed;
    const e = unescapeTo(p, end - 1, d);
    if (e == 0) return false;
    p = d;
    n = e - d;
    unescapedUsed += n;
  }
  if (content && mayBeJson(p, n)) return false;
  if (!scanTexts || n == 0) return true;
  // The mirror rule and the JSON text rule (only its strings are scanned) parse such texts.
  if (mayBeJson(p, n)) return false;
  const cap = scan_max_pairs(n, prefixTable, prefixCount);
  if (cap > pairsCap) {
    pairsCap = max(cap, pairsCap << 1); // doubling: a line's texts take at most twice the largest
    pairs = take(<u64>pairsCap << 3);
    if (pairs == 0) return false;
  }
  const found = <u32>scan_text(p, n, prefixTable, prefixCount, pairs);
  for (let i: u32 = 0; i < found; i++) {
    const a = <usize>load<u32>(pairs + (<usize>i << 3));
    const b = <usize>load<u32>(pairs + (<usize>i << 3), 4);
    if (b - a > MAX_REF_BYTES) continue; // extract.ts's withinRefBytes
    if (!add(W_FILE, p + a, b - a, 0, 0)) return false;
  }
  return true;
}

// ---- Blocks ------------------------------------------------------------------
/** A string slot without escapes, or not a string: usable. A string with escapes: the host's. */
@inline function plainOrAbsent(k: u32): bool {
  return slotKind(k) != V_STRING || (slotFlags(k) & S_ESCAPED) == 0;
}

/** One content block [start, end) whose fields were just read. False: left to the host. */
function block(start: usize, end: usize): bool {
  if (has(K_STRUCTURED)) return false; // a payload source of its own
  if (slotKind(K_TYPE) != V_STRING) return true;
  if (!plainOrAbsent(K_TYPE)) return false;
  const ts = slotStart(K_TYPE);
  const te = slotEnd(K_TYPE);
  if (tokenIs(ts, te, K_TEXT)) {
    return slotKind(K_TEXT) == V_STRING ? text(slotStart(K_TEXT), slotEnd(K_TEXT), slotFlags(K_TEXT), false) : true;
  }
  if (tokenIs(ts, te, K_IMAGE_URL)) return false;
  const isFile = tokenIs(ts, te, W_FILE);
  if (!isFile && !tokenIs(ts, te, W_IMAGE)) return true;
  if (has(K_SOURCE_TYPE)) {
    if (!plainOrAbsent(K_SOURCE_TYPE)) return false;
    // Embedded data gives nothing, but an embedded resource's metadata.uri
    // does (extract.ts's blockRef): the host reads a block that has one.
    if (slotKind(K_SOURCE_TYPE) != V_STRING || !tokenIs(slotStart(K_SOURCE_TYPE), slotEnd(K_SOURCE_TYPE), K_URL)) return !mentions(start, end, W_METADATA);
  }
  // The url and its mime type: the block's own (mimeType before mime_type),
  // or else its source object's (mime_type before mimeType).
  let first = K_MIMETYPE;
  let second = K_MIME_TYPE;
  if (slotKind(K_URL) != V_STRING) {
    if (slotKind(K_SOURCE) != V_OBJECT) return true;
    if (fields(slotStart(K_SOURCE), slotEnd(K_SOURCE), SOURCE_KEYS, SET_OTHER) == 0) return false;
    if (slotKind(K_URL) != V_STRING) return true;
    first = K_MIME_TYPE;
    second = K_MIMETYPE;
  }
  if (!plainOrAbsent(K_URL)) return false;
  // An empty mime type is none.
  const m = slotKind(first) == V_STRING ? first : slotKind(second) == V_STRING ? second : NO_WORD;
  let mime: usize = 0;
  let mimeLen: usize = 0;
  if (m != NO_WORD) {
    // One longer than MAX_MIME_CHARS (src/extract.ts) in bytes may be within
    // it in characters: the host decides.
    if (!plainOrAbsent(m) || slotEnd(m) - slotStart(m) - 2 > MAX_MIME_BYTES) return false;
    if (slotEnd(m) - slotStart(m) > 2) {
      mime = slotStart(m);
      mimeLen = slotEnd(m) - mime;
    }
  }
  const us = slotStart(K_URL);
  const ue = slotEnd(K_URL);
  if (walk_gate(us, ue - us, GATE_FILE) != 1) return true;
  return addWhole(isFile ? W_FILE : W_IMAGE, us + 1, ue - us - 2, mime, mimeLen);
}

/** The content list [start, end): its blocks in order. False: left to the host. */
function blocks(start: usize, end: usize): bool {
  for (let p = firstItem(start, end); p != 0; ) {
    const c = <u32>load<u8>(p);
    if (c == DQUOTE) {
      const r = skipString(p + 1, end);
      if (!text(p, posOf(r), lowOf(r), false)) return false;
      p = posOf(r);
    } else if (c == LBRACE) {
      const q = fields(p, end, BLOCK_KEYS, SET_OTHER);
      if (q == 0 || !block(p, q)) return false;
      p = q;
    } else {
      p = skipValue(p, end);
    }
    p = nextItem(p, end);
  }
  return true;
}

// ---- The structured payload ------------------------------------------------------
/**
 * The payload [start, end) of the result's artifact, in extract.ts's order:
 * the first mcp_structured_content item's non-null data, or a Python-style
 * artifact's non-null structured_content. Packed (start, end); 0: none;
 * 1: left to the host (also for an artifact list holding a content block or
 * an embedded resource).
 */
function payloadOf(start: usize, end: usize, kind: u32): u64 {
  if (kind == V_OBJECT) {
    if (fields(start, end, ARTIFACT_KEYS, SET_OTHER) == 0) return 1;
    const k = slotKind(K_STRUCTURED_CONTENT);
    return k == 0 || k == V_NULL ? 0 : pack(slotStart(K_STRUCTURED_CONTENT), <u32>slotEnd(K_STRUCTURED_CONTENT));
  }
  if (kind != V_ARRAY) return 0;
  let found: u64 = 0;
  for (let p = firstItem(start, end); p != 0; ) {
    if (<u32>load<u8>(p) == LBRACE) {
      const q = fields(p, end, ITEM_KEYS, SET_OTHER);
      if (q == 0) return 1;
      if (slotKind(K_TYPE) == V_STRING) {
        if (!plainOrAbsent(K_TYPE)) return 1;
        const ts = slotStart(K_TYPE);
        const te = slotEnd(K_TYPE);
        // A content block or an embedded resource the adapter moved here
        // (extract.ts's artifactRefs): the host reads those.
        if (tokenIs(ts, te, W_FILE) || tokenIs(ts, te, W_IMAGE) || tokenIs(ts, te, K_IMAGE_URL) || tokenIs(ts, te, K_TEXT) || tokenIs(ts, te, W_RESOURCE)) return 1;
        const k = slotKind(K_DATA);
        if (found == 0 && tokenIs(ts, te, W_MCP) && k != 0 && k != V_NULL) found = pack(slotStart(K_DATA), <u32>slotEnd(K_DATA));
      }
      p = q;
    } else p = skipValue(p, end);
    p = nextItem(p, end);
  }
  return found;
}

const P_HOST: u32 = 1; // escaped, duplicate or integer-like keys, or nested past KEY_LEVELS
const P_ESCAPES: u32 = 2; // some string has an escape
const P_ODD_NUMBER: u32 = 4; // a number JSON.stringify writes differently

/** An array index as JSON.parse sees it ("0", or digits without a leading zero): such keys come first in an object. */
function indexLike(p: usize, n: usize): bool {
  if (n == 0 || n > 10) return false;
  if (<u32>load<u8>(p) == ZERO) return n == 1;
  for (let i: usize = 0; i < n; i++) if (<u32>load<u8>(p + i) - ZERO >= 10) return false;
  return true;
}

/**
 * Check the payload [start, end) (valid JSON) for what would make the walk of
 * its raw bytes differ from the walk of JSON.parse's value, and copy its
 * compact form (blanks dropped) to COMPACT while it fits MAX_REF_BYTES + 1,
 * when `copy` asks for it.
 * Returns P_* flags, and the compact length in the high word.
 */
function checkPayload(start: usize, end: usize, copy: bool): u64 {
  let flags: u32 = 0;
  let depth: u32 = 0;
  let keys: u32 = 0; // keys on the stack
  let allKeys: u32 = 0;
  let out = COMPACT;
  const outEnd = COMPACT + MAX_REF_BYTES + 1;
  let p = start;
  let expectKey = false;
  while (p < end) {
    const c = <u32>load<u8>(p);
    if (c == SPACE || c == LF || c == CR || c == TAB) {
      p++;
      continue;
    }
    let q = p + 1;
    if (c == DQUOTE) {
      const r = skipString(p + 1, end);
      q = posOf(r);
      if (lowOf(r) & S_ESCAPED) flags |= P_ESCAPES;
      if (expectKey) {
        const k = p + 1;
        const n = q - 1 - k;
        // Past KEY_STACK_CAP keys (twice the walk's node budget) JSON.parse
        // keeps more values than the walk takes unless most keys repeat: the
        // host's call either way, and the pairwise check below stays bounded.
        if (lowOf(r) & S_ESCAPED || indexLike(k, n) || ++allKeys > KEY_STACK_CAP) return P_HOST;
        const h = hashBytes(k, n);
        for (let i = load<u32>(LEVELS + (<usize>(depth - 1) << 2)); i < keys; i++) {
          const e = KEY_STACK + <usize>i * 12;
          if (load<u32>(e, 8) == h && <usize>load<u32>(e, 4) == n && memory.compare(<usize>load<u32>(e), k, n) == 0) return P_HOST;
        }
        const e = KEY_STACK + <usize>keys * 12;
        store<u32>(e, <u32>k);
        store<u32>(e, <u32>n, 4);
        store<u32>(e, h, 8);
        keys++;
        expectKey = false;
      }
    } else if (c == MINUS || c - ZERO < 10) {
      // scanNumber's second value is the token's length exactly when
      // JSON.stringify writes it back unchanged (an integer of at most 15
      // digits, not -0), else 1; a token that is not is at least 2 bytes.
      const r = scanNumber(p, end);
      q = posOf(r);
      if (<usize>lowOf(r) != q - p) flags |= P_ODD_NUMBER;
    } else if (c == LBRACE || c == LBRACKET) {
      if (depth == KEY_LEVELS) return P_HOST;
      store<u32>(LEVELS + (<usize>depth << 2), keys);
      store<u8>(OBJECT_LEVELS + <usize>depth, <u8>(c == LBRACE));
      depth++;
      expectKey = c == LBRACE;
    } else if (c == RBRACE || c == RBRACKET) {
      depth--;
      keys = load<u32>(LEVELS + (<usize>depth << 2));
    } else if (c == COMMA) {
      // A comma inside an object is followed by a key.
      expectKey = depth > 0 && load<u8>(OBJECT_LEVELS + <usize>(depth - 1)) != 0;
    } else if (c == LOW_T || c == LOW_N) {
      q = p + 4;
    } else if (c == LOW_F) {
      q = p + 5;
    }
    if (!copy) {
      // nothing to write
    } else if (out + (q - p) <= outEnd) {
      memory.copy(out, p, q - p);
      out += q - p;
    } else out = outEnd + 1; // too long for a data entry: stop copying
    p = q;
  }
  return pack(out - COMPACT, flags);
}


/** The payload [start, end): its references, or its data entry. False: left to the host. */
function payload(start: usize, end: usize): bool {
  // The walk first: only a payload that may become a data entry needs its
  // compact copy. Its verdict counts only once the checks have passed.
  const status = walk_json(start, end - start, WALK_AREA, MAX_WALK_NODES, MAX_WALK_DEPTH);
  const walkFlags = load<u32>(WALK_AREA + OUT_FLAGS);
  const data = status == 0 && (walkFlags & FLAG_KNOWN) == 0 && (walkFlags & FLAG_NON_EMPTY) != 0 && <usize>load<u32>(WALK_AREA + OUT_COMPACT) <= MAX_REF_BYTES;
  const checked = checkPayload(start, end, data);
  const flags = lowOf(checked);
  if (flags & P_HOST) return false;
  if (status != 0) {
    lineRejected++;
    return true;
  }
  const refs = load<u32>(WALK_AREA + OUT_REFS);
  for (let i: u32 = 0; i < refs; i++) {
    const rec = WALK_AREA + OUT_RECORDS + <usize>i * RECORD_BYTES;
    const kind = load<u32>(rec, 8);
    if (kind & REC_ESCAPED) return false;
    if (!addWhole((kind & 0xff) == GATE_TASK ? W_TASK : W_FILE, start + <usize>load<u32>(rec), <usize>load<u32>(rec, 4), 0, 0)) return false;
  }
  if (data) {
    // The data entry is JSON.stringify's text: the compact copy when nothing in it would be written differently.
    if (flags & (P_ESCAPES | P_ODD_NUMBER)) return false;
    const n = posOf(checked);
    if (n <= MAX_REF_BYTES) {
      // Whether it carries embedded content is the host's to say (holdsEmbeddedContent in src/extract.ts).
      if (mayEmbed(COMPACT, n) || !add(K_DATA, COMPACT, n, 0, 0)) return false;
    }
  }
  return true;
}

// Four-letter words, little-endian, in lower case.
const DATA_LE: u32 = 0x61746164; // "data": inline data, a data: URI
const BLOB_LE: u32 = 0x626f6c62; // "blob": an embedded resource's blob
const RESO_LE: u32 = 0x6f736572; // "reso" of "resource": an embedded resource's text
const BASE_LE: u32 = 0x65736162; // "base" of "base64"
const BYTE_LE: u32 = 0x65747962; // "byte" of "bytes"

/**
 * Whether the n bytes at p hold a word every payload with embedded content
 * holds, in any letter case (setting bit 5 of each byte lower-cases a letter
 * and can make no other byte one of these). Such a data entry is left to the
 * host, which reads the JSON; the rest, nearly every payload, stays here.
 */
function mayEmbed(p: usize, n: usize): bool {
  for (let i: usize = 0; i + 4 <= n; i++) {
    const w = load<u32>(p + i) | 0x20202020;
    if (w == DATA_LE || w == BLOB_LE || w == RESO_LE || w == BASE_LE || w == BYTE_LE) return true;
  }
  return false;
}

// ---- Output --------------------------------------------------------------------
/** A control character's short escape letter (\b \t \n \f \r), or 0: written \u00XX. */
@inline function shortEscape(c: u32): u32 {
  if (c == 0x08) return 0x62;
  if (c == TAB) return LOW_T;
  if (c == LF) return LOW_N;
  if (c == FF) return LOW_F;
  if (c == CR) return 0x72;
  return 0;
}

/** Write the n UTF-8 bytes at p (valid, no lone surrogates) at d as JSON.stringify writes them, quotes included; returns the end. */
function putJson(d: usize, p: usize, n: usize): usize {
  const end = p + n;
  store<u8>(d++, <u8>DQUOTE);
  while (true) {
    const q = plainRunEnd(p, end, true, false); // the first byte JSON.stringify escapes
    d = copyOver(d, p, q - p);
    if (q >= end) break;
    const c = <u32>load<u8>(q);
    store<u8>(d++, <u8>BACKSLASH);
    const e = c >= SPACE ? c : shortEscape(c);
    if (e != 0) store<u8>(d++, <u8>e);
    else {
      // \u00XX, lower-case hex as JSON.stringify writes it
      store<u32>(d, 0x30303075); // "u00" then a placeholder
      store<u8>(d + 3, <u8>(c < 0x10 ? ZERO : ZERO + 1));
      const low = c & 0xf;
      store<u8>(d + 4, <u8>(low < 10 ? ZERO + low : 0x61 + low - 10));
      d += 5;
    }
    p = q + 1;
  }
  store<u8>(d++, <u8>DQUOTE);
  return d;
}

/** types.ts's displayName on UTF-8 bytes (its delimiters are all ASCII): (start, length) packed. */
function displayOf(p: usize, n: usize): u64 {
  let end = n;
  if (isUrlStart(p, n)) {
    for (let i: usize = 0; i < n; i++) {
      const c = <u32>load<u8>(p + i);
      if (c == QUESTION || c == HASH) {
        end = i;
        break;
      }
    }
  }
  // `\` separates only in a drive path (C:\dir\a.txt).
  const other = n >= 3 && (<u32>load<u8>(p) | 0x20) - 0x61 < 26 && <u32>load<u8>(p + 1) == COLON && (<u32>load<u8>(p + 2) == SLASH || <u32>load<u8>(p + 2) == BACKSLASH) ? BACKSLASH : SLASH;
  while (end > 0 && (<u32>load<u8>(p + end - 1) == SLASH || <u32>load<u8>(p + end - 1) == other)) end--;
  let start = end;
  while (start > 0 && <u32>load<u8>(p + start - 1) != SLASH && <u32>load<u8>(p + start - 1) != other) start--;
  if (start == end || (<u32>load<u8>(p + end - 1) == COLON && isScheme(p + start, end - start))) return pack(p, <u32>n);
  return pack(p + start, <u32>(end - start));
}

/** /^[a-z][a-z0-9+.-]*:\/\//i: a URL, whose query and fragment are no part of its name. */
function isUrlStart(p: usize, n: usize): bool {
  for (let i: usize = 1; i + 2 < n; i++) {
    if (<u32>load<u8>(p + i) == COLON) return <u32>load<u8>(p + i + 1) == SLASH && <u32>load<u8>(p + i + 2) == SLASH && isScheme(p, i + 1);
  }
  return false;
}

/** /^[a-z][a-z0-9+.-]*:$/i */
function isScheme(p: usize, n: usize): bool {
  if (<u32>(load<u8>(p) | 0x20) - 0x61 >= 26) return false;
  for (let i: usize = 1; i + 1 < n; i++) {
    const c = <u32>load<u8>(p + i);
    const alnum = (c | 0x20) - 0x61 < 26 || c - ZERO < 10;
    if (!alnum && c != 0x2b && c != MINUS && c != 0x2e) return false;
  }
  return true;
}

@inline function putWord(d: usize, w: u32): usize {
  return copyOver(d, wordAt(w), wordLen(w));
}

/** Where W_TYPE's call index (0) is. */
const TYPE_INDEX_AT: usize = 15;

/** The line's call index in decimal at `d` (0, or its line number); returns the end. */
@inline function putIndex(d: usize): usize {
  return putDecimal(d, anonymous ? lineNumber : 0);
}

/**
 * Hash the line's handles and write its entries, as src/batch/format.ts's
 * jsonLines writes them. L_FULL (and `needed`) when the output room is
 * short; L_HOST when the line needs more handle scratch or output than the
 * host would, or memory cannot grow.
 */
function emit(): u32 {
  const n = entryCount;
  if (n == 0) return L_DONE;
  // Handle texts (hash.ts's handleText): thread:call:<call index>:<ordinal>[:<message id>],
  // the call index 0, or the line number of an anonymous result.
  const indexLen = anonymous ? decimalLength(lineNumber) : 1;
  const preLen = threadLen + callLen + 3 + indexLen;
  const sufLen = hasId ? idLen + 1 : 0;
  // The host's generateResultHandles reserves 3 bytes per UTF-16 unit of each
  // text and fails past 4 GiB; a line near that (megabytes of ids times
  // thousands of references) is left to it, which also keeps every size
  // below well inside u32.
  if (<u64>n * (3 * <u64>(preLen + sufLen) + 32) >= MAX_HANDLE_SCRATCH) return L_HOST;
  const pre = take(preLen);
  const suf = take(sufLen);
  const handleTable = take(<usize>n << 3);
  const hex = take(<usize>n * HANDLE_HEX);
  const texts = take(<usize>n * (preLen + sufLen + 10));
  if (pre == 0 || suf == 0 || handleTable == 0 || hex == 0 || texts == 0) return L_HOST;
  let d = pre;
  memory.copy(d, threadAt, threadLen);
  d += threadLen;
  store<u8>(d++, <u8>COLON);
  memory.copy(d, callAt, callLen);
  d += callLen;
  store<u8>(d++, <u8>COLON);
  d = putIndex(d);
  store<u8>(d, <u8>COLON);
  if (hasId) {
    store<u8>(suf, <u8>COLON);
    memory.copy(suf + 1, idAt, idLen);
  }
  sha256_counter_texts(pre, preLen, suf, sufLen, n, texts, handleTable);
  sha256_batch_hex(handleTable, n, hex, HANDLE_HEX, HANDLE_HEX);

  // The bytes every entry of the line shares, laid out once: before the
  // handle's hex, between it and the type, and from created_at to the end.
  const headLen = wordLen(W_HEAD) + threadLen + wordLen(W_HANDLE);
  const midLen = wordLen(W_TOOL_NAME) + nameLen + wordLen(W_TOOL_CALL) + callLen + wordLen(W_TYPE) - 1 + indexLen;
  const tailLen = wordLen(W_CREATED) + createdAtLen + wordLen(W_END);
  const head = take(headLen);
  const mid = take(midLen);
  const tail = take(tailLen);
  if (head == 0 || mid == 0 || tail == 0) return L_HOST;
  putWord(copyOver(putWord(head, W_HEAD), threadAt, threadLen), W_HANDLE);
  // W_TYPE is ","call_index":0,"artifact_type":" with the call index in place of its 0.
  const typeAt = wordAt(W_TYPE);
  const afterCall = copyOver(putWord(copyOver(putWord(mid, W_TOOL_NAME), nameAt, nameLen), W_TOOL_CALL), callAt, callLen);
  copyOver(putIndex(copyOver(afterCall, typeAt, TYPE_INDEX_AT)), typeAt + TYPE_INDEX_AT + 1, wordLen(W_TYPE) - TYPE_INDEX_AT - 1);
  putWord(copyOver(putWord(tail, W_CREATED), createdAt, createdAtLen), W_END);

  // Written straight into the room; an entry starts only when its largest
  // possible form fits (every byte of display name and reference escaped as
  // \u00XX, plus what copyOver may write past the end), otherwise the line
  // is dropped whole (outLen is not moved) and `needed` says how much room
  // all of it may take.
  const fixed =
    headLen + HANDLE_HEX + midLen + wordLen(W_IMAGE) + wordLen(W_DISPLAY) + wordLen(W_STRUCTURED_RESULT) + nameLen + wordLen(W_REF) + wordLen(W_MIME) + tailLen + 4 + 16;
  const roomEnd = outBase + outCap;
  let o = outBase + outLen;
  for (let i: u32 = 0; i < n; i++) {
    const e = entries + <usize>i * ENTRY;
    const ref = <usize>load<u32>(e);
    const refLen = <usize>load<u32>(e, 4);
    const type = load<u32>(e, 8);
    if (<u64>o + <u64>fixed + 12 * <u64>refLen + <u64>load<u32>(e, 16) > <u64>roomEnd) {
      let all: u64 = 0;
      for (let k: u32 = 0; k < n; k++) {
        const f = entries + <usize>k * ENTRY;
        all += <u64>fixed + 12 * <u64>load<u32>(f, 4) + <u64>load<u32>(f, 16);
      }
      if (all > MAX_LINE_OUTPUT) return L_HOST;
      needed = <usize>all;
      return L_FULL;
    }
    o = copyOver(o, head, headLen);
    store<u64>(o, load<u64>(hex + <usize>i * HANDLE_HEX));
    o = copyOver(o + HANDLE_HEX, mid, midLen);
    o = putWord(o, type);
    o = putWord(o, W_DISPLAY);
    if (type == K_DATA) {
      store<u8>(o++, <u8>DQUOTE);
      o = putWord(copyOver(o, nameAt, nameLen), W_STRUCTURED_RESULT);
      store<u8>(o++, <u8>DQUOTE);
    } else {
      const dn = displayOf(ref, refLen);
      o = putJson(o, posOf(dn), <usize>lowOf(dn));
    }
    o = putWord(o, W_REF);
    o = putJson(o, ref, refLen);
    const mime = <usize>load<u32>(e, 12);
    if (mime != 0) o = copyOver(putWord(o, W_MIME), mime, <usize>load<u32>(e, 16));
    o = copyOver(o, tail, tailLen);
  }
  outLen = o - outBase;
  return L_DONE;
}

// ---- Lines -------------------------------------------------------------------

// What the object whose fields were just read is (messages.ts's serializedClass):
const F_PLAIN: u32 = 0; // no lc, no kwargs: a plain message (or a wrapper)
const F_TOOL_CLASS: u32 = 1; // {lc: 1, type: "constructor", id: [..., "ToolMessage"], kwargs: {...}}
const F_OTHER_CLASS: u32 = 2; // the same for another class: not a tool result
const F_HOST: u32 = 3; // lc or kwargs, but not that exact form

function serializedForm(): u32 {
  if (!has(K_LC) && !has(K_KWARGS)) return F_PLAIN;
  // lc is the number 1 written as "1" (JSON.parse reads 1.0 as 1 too: the host's call).
  if (slotKind(K_LC) != V_OTHER || slotEnd(K_LC) - slotStart(K_LC) != 1 || <u32>load<u8>(slotStart(K_LC)) != ZERO + 1) return F_HOST;
  if (slotKind(K_TYPE) != V_STRING || !plainOrAbsent(K_TYPE) || !tokenIs(slotStart(K_TYPE), slotEnd(K_TYPE), W_CONSTRUCTOR)) return F_HOST;
  if (slotKind(K_ID) != V_ARRAY || slotKind(K_KWARGS) != V_OBJECT) return F_HOST;
  // The class is the id list's last item.
  const end = slotEnd(K_ID);
  let last: usize = 0;
  let lastEnd: usize = 0;
  for (let p = firstItem(slotStart(K_ID), end); p != 0; ) {
    last = p;
    if (<u32>load<u8>(p) == DQUOTE) {
      const r = skipString(p + 1, end);
      if (lowOf(r) & S_ESCAPED) return F_HOST;
      lastEnd = posOf(r);
    } else lastEnd = 0;
    p = nextItem(lastEnd != 0 ? lastEnd : skipValue(p, end), end);
  }
  if (lastEnd == 0) return F_HOST; // empty, or not a string: not the serialized form
  return tokenIs(last, lastEnd, W_TOOL_MESSAGE) || tokenIs(last, lastEnd, W_TOOL_MESSAGE_CHUNK) ? F_TOOL_CLASS : F_OTHER_CLASS;
}

/** One line [start, end), newline excluded: its outcome (L_*). */
function line(start: usize, end: usize, work: usize): u32 {
  entryCount = 0;
  lineRejected = 0;
  // Blank as String.prototype.trim sees it (other Unicode blanks go to the host).
  let p = start;
  while (p < end) {
    const c = <u32>load<u8>(p);
    if (c != SPACE && c != TAB && c != CR && c != VT && c != FF) break;
    p++;
  }
  if (p == end) return L_BLANK;
  // JSON's own blanks only: a VT or FF at an edge of a line that is not blank
  // leaves it to the host, whose JSON.parse refuses it.
  p = skipSpace(start, end);
  let q = end;
  while (q > p) {
    const c = <u32>load<u8>(q - 1);
    if (c != SPACE && c != TAB && c != CR) break;
    q--;
  }
  if (<u32>load<u8>(p) != LBRACE || fields(p, q, TOP_KEYS, SET_TOP) != q || (load<u32>(SET_TOP + SET_SEEN) & LEFT_TO_HOST) != 0) return L_HOST;
  // items.ts's itemFromLine: a thread id, then the message: the line itself,
  // its `message`, or either in LangChain's serialized form.
  if (slotKind(K_THREAD_ID) != V_STRING || !plainOrAbsent(K_THREAD_ID)) return L_HOST;
  threadAt = slotStart(K_THREAD_ID) + 1;
  threadLen = slotEnd(K_THREAD_ID) - threadAt - 1;
  if (threadLen == 0) return L_HOST;
  // Object values of message and kwargs were read into their sets as they were met.
  let form = serializedForm();
  let kwargs = SET_TOP_KWARGS;
  // A wrapper, unless a tool message with a message field (items.ts's isFlatWithMessageField).
  const flat = has(K_TOOL_CALL_ID) && (has(K_CONTENT) || has(K_ARTIFACT) || slotKind(K_MESSAGE) != V_OBJECT);
  if (form == F_PLAIN && has(K_MESSAGE) && !flat) {
    if (slotKind(K_MESSAGE) != V_OBJECT || (slotFlags(K_MESSAGE) & S_UNREAD) != 0) return L_HOST;
    cur = SET_MESSAGE;
    form = serializedForm();
    kwargs = SET_MESSAGE_KWARGS;
  }
  if (form == F_HOST) return L_HOST;
  // Maybe LangChain's stored form, {type, data: {...}}: messages.ts's storedData reads it.
  if (form == F_PLAIN && has(K_DATA)) return L_HOST;
  if (form == F_OTHER_CLASS) return L_SKIPPED;
  if (form == F_TOOL_CLASS) {
    if (slotFlags(K_KWARGS) & S_UNREAD) return L_HOST;
    cur = kwargs; // the message's fields are its kwargs (messages.ts's readToolMessage)
  } else if (has(K_TYPE)) {
    // messages.ts's kindOf (no role read)
    if (slotKind(K_TYPE) != V_STRING || !plainOrAbsent(K_TYPE)) return L_HOST;
    if (!tokenIs(slotStart(K_TYPE), slotEnd(K_TYPE), W_TOOL)) {
      // Python's dump of a chunk says its class: a tool result, rare enough for the host's path.
      return tokenIs(slotStart(K_TYPE), slotEnd(K_TYPE), W_TOOL_MESSAGE_CHUNK) ? L_HOST : L_SKIPPED;
    }
  } else if (slotKind(K_TOOL_CALL_ID) != V_STRING) return L_SKIPPED;
  // The answer to a structured response is marked in additional_kwargs
  // (src/types.ts's STRUCTURED_RESPONSE_MARK) and is no tool's result: a
  // message whose additional_kwargs hold anything is left to the host.
  if (slotKind(K_ADDITIONAL_KWARGS) == V_OBJECT && skipSpace(slotStart(K_ADDITIONAL_KWARGS) + 1, slotEnd(K_ADDITIONAL_KWARGS)) != slotEnd(K_ADDITIONAL_KWARGS) - 1) return L_HOST;
  // extractArtifacts
  if (!plainOrAbsent(K_STATUS) || !plainOrAbsent(K_NAME) || !plainOrAbsent(K_TOOL_CALL_ID) || !plainOrAbsent(K_ID)) return L_HOST;
  if (slotKind(K_STATUS) == V_STRING && tokenIs(slotStart(K_STATUS), slotEnd(K_STATUS), W_ERROR)) return L_DONE;
  if (slotKind(K_NAME) == V_STRING && slotEnd(K_NAME) - slotStart(K_NAME) > 2) {
    nameAt = slotStart(K_NAME) + 1;
    nameLen = slotEnd(K_NAME) - nameAt - 1;
  } else {
    nameAt = wordAt(W_UNKNOWN);
    nameLen = wordLen(W_UNKNOWN);
  }
  callLen = 0;
  callAt = nameAt; // any readable address: nothing is copied from it
  if (slotKind(K_TOOL_CALL_ID) == V_STRING) {
    callAt = slotStart(K_TOOL_CALL_ID) + 1;
    callLen = slotEnd(K_TOOL_CALL_ID) - callAt - 1;
  }
  hasId = false;
  if (slotKind(K_ID) == V_STRING) {
    idAt = slotStart(K_ID) + 1;
    idLen = slotEnd(K_ID) - idAt - 1;
    hasId = true; // the empty one too (extract.ts's occurrenceIdOf)
  }
  // No id and no tool_call_id: its line number is its call index (scan.ts's lineIndexed).
  anonymous = !hasId && callLen == 0;
  const contentKind = slotKind(K_CONTENT);
  const contentStart = slotStart(K_CONTENT);
  const contentEnd = slotEnd(K_CONTENT);
  const contentFlags = slotFlags(K_CONTENT);
  const artifactKind = slotKind(K_ARTIFACT);
  const artifactStart = slotStart(K_ARTIFACT);
  const artifactEnd = slotEnd(K_ARTIFACT);
  if (!startLine(work, end - start)) return L_HOST;
  if (artifactKind == V_OBJECT || artifactKind == V_ARRAY) {
    const found = payloadOf(artifactStart, artifactEnd, artifactKind);
    if (found == 1) return L_HOST;
    if (found != 0 && !payload(posOf(found), <usize>lowOf(found))) return L_HOST;
  }
  if (contentKind == V_STRING) {
    if (!text(contentStart, contentEnd, contentFlags, true)) return L_HOST;
  } else if (contentKind == V_ARRAY) {
    if (!blocks(contentStart, contentEnd)) return L_HOST;
  }
  return emit();
}

/**
 * Scan the JSON lines in `len` bytes at `input` (80 readable bytes after
 * them) until the end, a line left to the host, or a line whose output does
 * not fit: entries as JSON lines at `out` (room: `cap` bytes), scratch from
 * `work` on (grown as needed). `prefixes`: the scanner's prefix table of
 * `count` entries; `flags`: FLAG_TEXT; `created`: the created_at JSON string
 * token. Counters and the stop reason go to `stats` (layout above). Returns
 * the bytes consumed: the start of the line it stopped at.
 */
export function lines_scan(input: usize, len: usize, out: usize, cap: usize, work: usize, prefixes: usize, count: u32, flags: u32, created: usize, createdLen: usize, stats: usize, firstLine: f64): usize {
  outBase = out;
  outCap = cap;
  outLen = 0;
  needed = 0;
  prefixTable = prefixes;
  prefixCount = count;
  scanTexts = (flags & FLAG_TEXT) != 0;
  createdAt = created;
  createdAtLen = createdLen;
  let lines: u32 = 0;
  let found: u32 = 0;
  let rejected: u32 = 0;
  let skipped: u32 = 0;
  let stop = STOP_END;
  const end = input + len;
  let p = input;
  while (p < end) {
    const nl = findByte(p, end, LF);
    lineNumber = <u64>firstLine + <u64>lines;
    const r = line(p, nl, work);
    if (r == L_HOST) {
      stop = STOP_LINE;
      break;
    }
    if (r == L_FULL) {
      stop = STOP_FULL;
      break;
    }
    lines++;
    if (r == L_SKIPPED) skipped++;
    else if (r == L_DONE) {
      found += entryCount;
      rejected += lineRejected;
    }
    p = nl < end ? nl + 1 : end;
  }
  store<u32>(stats + STAT_LINES, lines);
  store<u32>(stats + STAT_ENTRIES, found);
  store<u32>(stats + STAT_REJECTED, rejected);
  store<u32>(stats + STAT_SKIPPED, skipped);
  store<u32>(stats + STAT_OUTPUT, <u32>outLen);
  store<u32>(stats + STAT_STOP, stop);
  store<u32>(stats + STAT_NEEDED, <u32>needed);
  return p - input;
}
