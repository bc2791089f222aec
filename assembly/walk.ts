// Bounded JSON walk of DESIGN §4 over UTF-8 JSON bytes the host laid out in the arena.
//
// One forward pass, no recursion: a depth counter with one stack byte per open
// container, a node counter (every value counts, keys do not; the root is level
// 1), and the walk ends the moment either budget is exceeded. The bytes are
// validated as it goes (RFC 8259 grammar, UTF-8 inside strings: overlongs and
// encoded surrogates are invalid); anything malformed ends it as "invalid",
// never a trap. Values nobody asked for are skipped (strings 16 bytes at a time).
//
// Keys are matched on their decoded bytes, so "p\u0061th" is "path". String
// values, and the strings directly inside a list value, under file, files,
// file_path, path, url, urls go through the file gate; under task_id, job_id
// through the task-token gate. Other list items are walked like any value.
//
// Unescaping happens here, virtually: the gates see the decoded code points
// (so the 4096-byte bound is on the unescaped UTF-8, where a lone surrogate
// escape counts the 3 bytes of its replacement) but nothing is written back;
// records point at the raw string content and the host decodes it.
//
// Gates (the same rules as bench/baselines/extract-ts.ts):
//   file: no C0/C1 control, DEL, U+2028/2029; at most 4096 UTF-8 bytes; and one
//         of: "http://" / "https://" (case-insensitive) followed by an authority
//         that is not empty (first character not / ? #) and no Python
//         whitespace anywhere; "/" not followed by "/"; a drive letter, ":", and
//         "/" or "\". Everything else (relative paths, data:, blob:, file:,
//         javascript: ...) is rejected.
//   task: at least one and at most 256 code points, no Python whitespace.
//
// Output area at `out` (the host sizes it OUT_RECORDS + RECORD_BYTES * maxNodes,
// since every record is a distinct node):
//   +0  u32 status   0 ok, 1 over the node budget, 2 over the depth budget, 3 invalid
//   +4  u32 refs     number of accepted references
//   +8  u32 flags    1: some string sat under a known key; 2: the payload is not
//                    {}, [], null or ""
//   +12 u32 compact  lower bound of the JSON.stringify form's UTF-8 size: exact
//                    except numbers written other than as a plain integer of at
//                    most 15 digits, which count the 1 byte they need at least
//   +16 u32 nodes    values counted, up to the one that broke the budget
//   +32 records      u32 offset of the string content from `text`, u32 its raw
//                    (still escaped) byte length, u32 gate (1 file, 2 task),
//                    | 0x100 when the content holds escapes, | 0x200 when it
//                    is known to be printable ASCII (the host may skip UTF-8)

// ---- Byte constants -------------------------------------------------------
export const TAB: u32 = 0x09;
export const LF: u32 = 0x0a;
export const CR: u32 = 0x0d;
export const SPACE: u32 = 0x20;
export const DQUOTE: u32 = 0x22;
export const HASH: u32 = 0x23;
const PLUS: u32 = 0x2b;
export const COMMA: u32 = 0x2c;
export const MINUS: u32 = 0x2d;
const DOT: u32 = 0x2e;
export const SLASH: u32 = 0x2f;
export const ZERO: u32 = 0x30;
const ONE: u32 = 0x31;
export const COLON: u32 = 0x3a;
export const QUESTION: u32 = 0x3f;
const AT: u32 = 0x40;
const DEL: u32 = 0x7f;
export const LBRACKET: u32 = 0x5b;
export const BACKSLASH: u32 = 0x5c;
export const RBRACKET: u32 = 0x5d;
const LOW_E: u32 = 0x65;
export const LOW_F: u32 = 0x66;
export const LOW_N: u32 = 0x6e;
const LOW_S: u32 = 0x73;
export const LOW_T: u32 = 0x74;
const LOW_U: u32 = 0x75;
export const LBRACE: u32 = 0x7b;
const CLOSE_OFFSET: u32 = 2; // "]" is "[" + 2 and "}" is "{" + 2

// Little-endian words, compared in one load.
export const TRUE_LE: u32 = 0x65757274; // "true"
export const NULL_LE: u32 = 0x6c6c756e; // "null"
export const ALSE_LE: u32 = 0x65736c61; // "alse" of "false"
const HTTP_LE: u64 = 0x70747468; // "http"
const HTTP_SLASHES_LE: u64 = 0x2f2f3a70747468; // "http://"
const HTTPS_SLASHES_LE: u64 = 0x2f2f3a7370747468; // "https://"
const SEVEN_BYTES: u64 = 0x00ffffffffffffff;

// Known keys, as their bytes zero-padded into a little-endian u64.
const KEY_URL: u64 = 0x6c7275;
const KEY_FILE: u64 = 0x656c6966;
const KEY_PATH: u64 = 0x68746170;
const KEY_URLS: u64 = 0x736c7275;
const KEY_FILES: u64 = 0x73656c6966;
const KEY_JOB_ID: u64 = 0x64695f626f6a;
const KEY_TASK_ID: u64 = 0x64695f6b736174;
const KEY_FILE_PAT: u64 = 0x7461705f656c6966; // "file_path" is these 8 bytes and "h"
const LOW_H: u32 = 0x68;

// ---- ABI constants (mirrored in src/engine/walk.ts) -------------------------
const ST_OK: u32 = 0;
const ST_NODES: u32 = 1;
const ST_DEPTH: u32 = 2;
const ST_INVALID: u32 = 3;

const GATE_NONE: u32 = 0;
export const GATE_FILE: u32 = 1;
export const GATE_TASK: u32 = 2;
export const REC_ESCAPED: u32 = 0x100;
const REC_ASCII: u32 = 0x200;

export const FLAG_KNOWN: u32 = 1;
export const FLAG_NON_EMPTY: u32 = 2;

const OUT_STATUS: usize = 0;
export const OUT_REFS: usize = 4;
export const OUT_FLAGS: usize = 8;
export const OUT_COMPACT: usize = 12;
const OUT_NODES: usize = 16;
export const OUT_RECORDS: usize = 32;
export const RECORD_BYTES: usize = 12;

export const MAX_REF_BYTES: u32 = 4096;
const MAX_TASK_CHARS: u32 = 256;
// Integers up to 15 digits are exact doubles that JSON.stringify writes back digit for digit.
const PLAIN_INT_DIGITS: u32 = 15;

// One byte per open container: bit 0 object, bits 1..2 the gate its direct
// string items take (a list under a known key). Deeper budgets are clamped.
const STACK_CAP: u32 = 256;
const STACK: usize = memory.data(256);
const TOP_OBJECT: u32 = 1;

// Second return value of the string scanners (gate verdict or key gate), so
// they stay allocation- and global-free.
const SCRATCH: usize = memory.data(8, 8);
const SCAN_ACCEPTED: u32 = 1;
const SCAN_ESCAPED: u32 = 2;
const SCAN_ASCII: u32 = 4;

// Scanners return (position, value) packed in a u64; 0 means malformed, since
// no position in the arena is 0.
@inline export function pack(p: usize, low: u32): u64 {
  return (<u64>p << 32) | <u64>low;
}
@inline export function posOf(r: u64): usize {
  return <usize>(r >>> 32);
}
@inline export function lowOf(r: u64): u32 {
  return <u32>r;
}

// ---- Code points ------------------------------------------------------------
@inline function hexDigit(c: u32): i32 {
  const d = c - ZERO;
  if (d < 10) return <i32>d;
  const l = (c | 0x20) - 0x61;
  return l < 6 ? <i32>(l + 10) : -1;
}

/** The code unit of four hex digits at p, or -1. */
@inline function hex4(p: usize): i32 {
  const a = hexDigit(load<u8>(p));
  const b = hexDigit(load<u8>(p + 1));
  const c = hexDigit(load<u8>(p + 2));
  const d = hexDigit(load<u8>(p + 3));
  if ((a | b | c | d) < 0) return -1;
  return (a << 12) | (b << 8) | (c << 4) | d;
}

/** The escape whose backslash is at p: (its end, its code point). A surrogate
 * pair of escapes is one code point; a lone surrogate comes back as itself. */
export function decodeEscape(p: usize, end: usize): u64 {
  if (p + 1 >= end) return 0;
  const e = <u32>load<u8>(p + 1);
  let cp: u32 = 0;
  if (e == DQUOTE || e == BACKSLASH || e == SLASH) cp = e;
  else if (e == 0x62) cp = 0x08; // \b
  else if (e == LOW_F) cp = 0x0c;
  else if (e == LOW_N) cp = LF;
  else if (e == 0x72) cp = CR; // \r
  else if (e == LOW_T) cp = TAB;
  else if (e == LOW_U) {
    if (p + 6 > end) return 0;
    const u = hex4(p + 2);
    if (u < 0) return 0;
    if ((u & 0xfc00) == 0xd800 && p + 12 <= end && load<u8>(p + 6) == BACKSLASH && load<u8>(p + 7) == LOW_U) {
      const lo = hex4(p + 8);
      if ((lo & 0xfc00) == 0xdc00) return pack(p + 12, 0x10000 + ((<u32>u - 0xd800) << 10) + (<u32>lo - 0xdc00));
    }
    return pack(p + 6, <u32>u);
  } else return 0;
  return pack(p + 2, cp);
}

/** The UTF-8 sequence whose lead byte (>= 0x80) is at p: (its end, its code
 * point); 0 for anything RFC 3629 forbids (overlongs, surrogates, > U+10FFFF). */
export function decodeUtf8(p: usize, end: usize): u64 {
  const b0 = <u32>load<u8>(p);
  if (b0 < 0xc2) return 0; // a continuation byte, or the lead of an overlong pair
  if (b0 < 0xe0) {
    if (p + 2 > end) return 0;
    const b1 = <u32>load<u8>(p + 1) ^ 0x80;
    if (b1 > 0x3f) return 0;
    return pack(p + 2, ((b0 & 0x1f) << 6) | b1);
  }
  if (b0 < 0xf0) {
    if (p + 3 > end) return 0;
    const b1 = <u32>load<u8>(p + 1) ^ 0x80;
    const b2 = <u32>load<u8>(p + 2) ^ 0x80;
    if ((b1 | b2) > 0x3f) return 0;
    const cp = ((b0 & 0x0f) << 12) | (b1 << 6) | b2;
    if (cp < 0x800 || (cp & 0xf800) == 0xd800) return 0;
    return pack(p + 3, cp);
  }
  if (b0 < 0xf5) {
    if (p + 4 > end) return 0;
    const b1 = <u32>load<u8>(p + 1) ^ 0x80;
    const b2 = <u32>load<u8>(p + 2) ^ 0x80;
    const b3 = <u32>load<u8>(p + 3) ^ 0x80;
    if ((b1 | b2 | b3) > 0x3f) return 0;
    const cp = ((b0 & 0x07) << 18) | (b1 << 12) | (b2 << 6) | b3;
    if (cp < 0x10000 || cp > 0x10ffff) return 0;
    return pack(p + 4, cp);
  }
  return 0;
}

/** UTF-8 length; a lone surrogate counts the 3 bytes of U+FFFD that replaces it. */
@inline function utf8Len(cp: u32): u32 {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/** Bytes JSON.stringify writes for a code point that arrived as an escape. */
@inline function compactLen(cp: u32): u32 {
  if (cp == DQUOTE || cp == BACKSLASH) return 2;
  if (cp < SPACE) return cp == 0x08 || cp == TAB || cp == LF || cp == 0x0c || cp == CR ? 2 : 6;
  if ((cp & 0xfffff800) == 0xd800) return 6; // a lone surrogate stays escaped
  return utf8Len(cp);
}

/** Python's str.isspace() set, the "whitespace" of DESIGN §3 and §4. */
@inline function isPySpace(cp: u32): bool {
  if (cp <= SPACE) return cp == SPACE || (cp >= TAB && cp <= CR) || cp >= 0x1c;
  if (cp < 0x85) return false;
  return cp == 0x85 || cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) ||
    cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

/** Prose marker for references: C0/C1 controls, DEL and the two line separators. */
@inline function isControl(cp: u32): bool {
  return cp < SPACE || (cp >= 0x7f && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029;
}

/** ASCII lower-cased for the shape test; every non-ASCII code point is 0xff. */
@inline function shapeByte(cp: u32): u64 {
  if (cp >= 0x80) return 0xff;
  return <u64>(cp - 0x41 < 26 ? cp | 0x20 : cp);
}

// ---- String tokens ------------------------------------------------------------
/** The first byte at or after p that needs a look (quote, backslash, control,
 * and non-ASCII unless `nonAscii` is false: a writer of JSON.stringify's form
 * copies those as they are), or end. With SIMD, 16 bytes at a time: those
 * bytes are exactly the ones below 0x20 as signed (unsigned) bytes, plus the
 * two. */
@inline export function plainRunEnd(p: usize, end: usize, simd: bool, nonAscii: bool = true): usize {
  if (simd) {
    const quote = i8x16.splat(<i8>DQUOTE);
    const bslash = i8x16.splat(<i8>BACKSLASH);
    const ctl = i8x16.splat(<i8>SPACE);
    while (p + 16 <= end) {
      const v = v128.load(p);
      const low = nonAscii ? i8x16.lt_s(v, ctl) : i8x16.lt_u(v, ctl);
      const m = i8x16.bitmask(v128.or(low, v128.or(i8x16.eq(v, quote), i8x16.eq(v, bslash))));
      if (m != 0) return p + <usize>ctz(m);
      p += 16;
    }
  }
  while (p < end) {
    const c = <u32>load<u8>(p);
    if (c < SPACE || (nonAscii && c >= 0x80) || c == DQUOTE || c == BACKSLASH) break;
    p++;
  }
  return p;
}

/** Whether the n bytes at p hold `a` (bit 0) or `b` (bit 1). */
@inline function holds(p: usize, n: usize, a: u32, b: u32): u32 {
  const va = i8x16.splat(<i8>a);
  const vb = i8x16.splat(<i8>b);
  let i: usize = 0;
  let found: u32 = 0;
  for (; i + 16 <= n; i += 16) {
    const v = v128.load(p + i);
    if (v128.any_true(i8x16.eq(v, va))) found |= 1;
    if (v128.any_true(i8x16.eq(v, vb))) found |= 2;
  }
  for (; i < n; i++) {
    const c = <u32>load<u8>(p + i);
    if (c == a) found |= 1;
    if (c == b) found |= 2;
  }
  return found;
}

/**
 * Skip the string whose content starts at p: (after its closing quote, its
 * compact size including quotes). No gate, nothing decoded but escapes and
 * UTF-8 (both validated).
 */
function scanPlain(p: usize, end: usize, simd: bool): u64 {
  const start = p;
  let saved: u32 = 0; // raw bytes the compact form writes shorter (escapes)
  while (true) {
    p = plainRunEnd(p, end, simd);
    if (p >= end) return 0;
    const c = <u32>load<u8>(p);
    if (c == DQUOTE) return pack(p + 1, <u32>(p - start) - saved + 2);
    if (c == BACKSLASH) {
      const r = decodeEscape(p, end);
      if (r == 0) return 0;
      saved += <u32>(posOf(r) - p) - compactLen(lowOf(r));
      p = posOf(r);
    } else if (c < SPACE) {
      return 0; // raw control bytes are not JSON
    } else {
      const r = decodeUtf8(p, end);
      if (r == 0) return 0;
      p = posOf(r);
    }
  }
}

/** Where an http(s) authority starts (7 or 8) given the first five shape bytes, or 0. */
@inline function authorityStart(head: u64): u32 {
  if ((head & 0xffffffff) != HTTP_LE) return 0;
  const c4 = <u32>((head >> 32) & 0xff);
  return c4 == COLON ? 7 : c4 == LOW_S ? 8 : 0;
}

// An http(s) authority read code point by code point: [user info@]host[:port].
// DESIGN §4 asks for a non-empty host, so user info and a port do not count
// (`https://:80/x`, `https://@/x` have none), nor an IPv6 literal's brackets,
// inside which a ':' is the host's. Bits: a host character since the last
// '@', a port begun, inside brackets, authority over.
const AUTH_HOST: u32 = 1;
const AUTH_PORT: u32 = 2;
const AUTH_BRACKET: u32 = 4;
const AUTH_DONE: u32 = 8;

@inline function authorityStep(state: u32, cp: u32): u32 {
  if (state & AUTH_DONE) return state;
  if (isAuthorityEnd(cp)) return state | AUTH_DONE;
  if (cp == AT) return 0; // what came before was user info
  if (state & AUTH_PORT) return state;
  if (cp == LBRACKET) return state | AUTH_BRACKET;
  if (cp == RBRACKET) return state & ~AUTH_BRACKET;
  if (cp == COLON && (state & AUTH_BRACKET) == 0) return state | AUTH_PORT;
  return state | AUTH_HOST;
}

/** The file gate's shape test on the first 8 shape bytes. */
@inline function fileShape(head: u64, authority: u32, hostSeen: bool, space: bool): bool {
  const c0 = <u32>(head & 0xff);
  const c1 = <u32>((head >> 8) & 0xff);
  const c2 = <u32>((head >> 16) & 0xff);
  if (c0 == SLASH) return c1 != SLASH; // Unix-absolute, not "//host/share"
  if (c0 - 0x61 < 26 && c1 == COLON) return c2 == SLASH || c2 == BACKSLASH; // drive-absolute
  if (authority == 7) return (head & SEVEN_BYTES) == HTTP_SLASHES_LE && hostSeen && !space;
  if (authority == 8) return head == HTTPS_SLASHES_LE && hostSeen && !space;
  return false;
}

/** The gate on n bytes of printable ASCII (no quote, backslash or escape). */
@inline function gateAscii(p: usize, n: usize, gate: u32): bool {
  if (gate == GATE_TASK) return n > 0 && n <= MAX_TASK_CHARS && holds(p, n, SPACE, SPACE) == 0;
  if (n > MAX_REF_BYTES) return false;
  const found = holds(p, n, SPACE, DEL); // the only space and the only control in this range
  if (found & 2) return false;
  let head: u64 = 0;
  const k = n < 8 ? n : 8;
  for (let i: usize = 0; i < k; i++) head |= shapeByte(load<u8>(p + i)) << (<u64>i << 3);
  const authority = authorityStart(head);
  let auth: u32 = 0;
  if (authority != 0) {
    for (let i = <usize>authority; i < n && (auth & AUTH_DONE) == 0; i++) auth = authorityStep(auth, load<u8>(p + i));
  }
  return fileShape(head, authority, (auth & AUTH_HOST) != 0, (found & 1) != 0);
}

@inline function isAuthorityEnd(cp: u32): bool {
  return cp == SLASH || cp == QUESTION || cp == HASH;
}

/**
 * The string whose content starts at p, through `gate` (file or task): (after
 * its closing quote, its compact size); SCRATCH gets SCAN_ACCEPTED,
 * SCAN_ESCAPED and SCAN_ASCII. Printable ASCII without escapes is settled on the raw bytes
 * (SIMD kernel only, so the scalar kernel checks it); otherwise code point by
 * code point, and once the gate has failed the rest is skipped with scanPlain.
 */
function scanGated(p: usize, end: usize, gate: u32, simd: bool): u64 {
  if (simd) {
    const q = plainRunEnd(p, end, true);
    if (q < end && load<u8>(q) == DQUOTE) {
      store<u32>(SCRATCH, gateAscii(p, q - p, gate) ? SCAN_ACCEPTED | SCAN_ASCII : 0);
      return pack(q + 1, <u32>(q - p) + 2);
    }
  }
  let compact: u32 = 2;
  let bytes: u32 = 0; // unescaped UTF-8
  let chars: u32 = 0;
  let escaped = false;
  let head: u64 = 0; // first 8 code points as shape bytes: the shape is decided on them
  let authority: u32 = 0; // code point index where an http(s) authority starts, 0 if none
  let auth: u32 = 0; // authorityStep's state
  let space = false;
  let ok = true;
  while (true) {
    if (p >= end) return 0;
    const c = <u32>load<u8>(p);
    if (c == DQUOTE) break;
    let cp: u32;
    if (c == BACKSLASH) {
      const r = decodeEscape(p, end);
      if (r == 0) return 0;
      cp = lowOf(r);
      compact += compactLen(cp);
      p = posOf(r);
      escaped = true;
    } else if (c < SPACE) {
      return 0;
    } else if (c < 0x80) {
      cp = c;
      compact++;
      p++;
    } else {
      const r = decodeUtf8(p, end);
      if (r == 0) return 0;
      cp = lowOf(r);
      compact += <u32>(posOf(r) - p);
      p = posOf(r);
    }
    bytes += utf8Len(cp);
    const i = chars++;
    if (gate == GATE_TASK) {
      if (isPySpace(cp) || chars > MAX_TASK_CHARS) ok = false;
    } else {
      if (isControl(cp) || bytes > MAX_REF_BYTES) ok = false;
      if (isPySpace(cp)) space = true;
      if (i < 8) head |= shapeByte(cp) << (<u64>i << 3);
      if (i == 4) authority = authorityStart(head);
      else if (i >= authority && authority != 0) auth = authorityStep(auth, cp);
    }
    if (!ok) {
      const r = scanPlain(p, end, simd);
      if (r == 0) return 0;
      store<u32>(SCRATCH, 0);
      return pack(posOf(r), compact + lowOf(r) - 2);
    }
  }
  const accepted = gate == GATE_TASK ? chars > 0 : fileShape(head, authority, (auth & AUTH_HOST) != 0, space);
  store<u32>(SCRATCH, (accepted ? SCAN_ACCEPTED : 0) | (escaped ? SCAN_ESCAPED : 0));
  return pack(p + 1, compact);
}

@inline function keyGate(chars: u32, lo: u64, ninth: u32): u32 {
  if (chars == 3) return lo == KEY_URL ? GATE_FILE : GATE_NONE;
  if (chars == 4) return lo == KEY_FILE || lo == KEY_PATH || lo == KEY_URLS ? GATE_FILE : GATE_NONE;
  if (chars == 5) return lo == KEY_FILES ? GATE_FILE : GATE_NONE;
  if (chars == 6) return lo == KEY_JOB_ID ? GATE_TASK : GATE_NONE;
  if (chars == 7) return lo == KEY_TASK_ID ? GATE_TASK : GATE_NONE;
  if (chars == 9) return lo == KEY_FILE_PAT && ninth == LOW_H ? GATE_FILE : GATE_NONE;
  return GATE_NONE;
}

/** Longest known key, in code points. */
const MAX_KEY_CHARS: u32 = 9;

/**
 * The key whose content starts at p: (after its closing quote, its compact
 * size); SCRATCH gets the gate its value takes. Matched on decoded bytes, so
 * escapes in a key do not hide it; past 9 code points no key can match.
 */
function scanKey(p: usize, end: usize, simd: bool): u64 {
  if (simd) {
    // Printable ASCII without escapes: compare the raw bytes.
    const q = plainRunEnd(p, end, true);
    if (q < end && load<u8>(q) == DQUOTE) {
      const n = <u32>(q - p);
      let gate = GATE_NONE;
      if (n <= MAX_KEY_CHARS) {
        let lo: u64 = 0;
        for (let i: u32 = 0; i < n && i < 8; i++) lo |= <u64>load<u8>(p + i) << (<u64>i << 3);
        gate = keyGate(n, lo, n == MAX_KEY_CHARS ? <u32>load<u8>(p + 8) : 0);
      }
      store<u32>(SCRATCH, gate);
      return pack(q + 1, n + 2);
    }
  }
  let compact: u32 = 2;
  let lo: u64 = 0;
  let ninth: u32 = 0;
  let chars: u32 = 0;
  while (true) {
    if (p >= end) return 0;
    const c = <u32>load<u8>(p);
    if (c == DQUOTE) break;
    const at = p;
    let cp: u32 = 0xff; // no known key is non-ASCII
    let next = p;
    let size: u32 = 0;
    if (c == BACKSLASH) {
      const r = decodeEscape(p, end);
      if (r == 0) return 0;
      cp = lowOf(r);
      next = posOf(r);
      size = compactLen(cp);
    } else if (c < 0x80) {
      if (c < SPACE) return 0;
      cp = c;
      next = p + 1;
      size = 1;
    }
    if (cp >= 0x80 || chars == MAX_KEY_CHARS) {
      const r = scanPlain(at, end, simd);
      if (r == 0) return 0;
      store<u32>(SCRATCH, GATE_NONE);
      return pack(posOf(r), compact + lowOf(r) - 2);
    }
    compact += size;
    p = next;
    if (chars < 8) lo |= <u64>cp << (<u64>chars << 3);
    else ninth = cp;
    chars++;
  }
  store<u32>(SCRATCH, keyGate(chars, lo, ninth));
  return pack(p + 1, compact);
}

// ---- The walk -------------------------------------------------------------------
@inline export function skipSpace(p: usize, end: usize): usize {
  while (p < end) {
    const c = <u32>load<u8>(p);
    if (c != SPACE && c != LF && c != CR && c != TAB) break;
    p++;
  }
  return p;
}

@inline function isDigit(c: u32): bool {
  return c - ZERO < 10;
}

/** The number token at p: (its end, its compact size at least), or 0. */
export function scanNumber(p: usize, end: usize): u64 {
  const start = p;
  const neg = load<u8>(p) == MINUS;
  if (neg) p++;
  if (p >= end) return 0;
  const d = <u32>load<u8>(p);
  if (d == ZERO) p++;
  else if (d - ONE < 9) {
    p++;
    while (p < end && isDigit(load<u8>(p))) p++;
  } else return 0;
  const intEnd = p;
  if (p < end && load<u8>(p) == DOT) {
    const f = ++p;
    while (p < end && isDigit(load<u8>(p))) p++;
    if (p == f) return 0;
  }
  if (p < end && (<u32>load<u8>(p) | 0x20) == LOW_E) {
    p++;
    if (p < end && (load<u8>(p) == PLUS || load<u8>(p) == MINUS)) p++;
    const f = p;
    while (p < end && isDigit(load<u8>(p))) p++;
    if (p == f) return 0;
  }
  const n = <u32>(p - start);
  const plain = p == intEnd && n - <u32>neg <= PLAIN_INT_DIGITS && !(neg && d == ZERO); // "-0" prints "0"
  return pack(p, plain ? n : 1);
}

const S_VALUE: u32 = 0;
const S_KEY: u32 = 1;
const S_AFTER: u32 = 2;

function walk(text: usize, len: usize, out: usize, maxNodes: u32, maxDepth: u32, simd: bool): u32 {
  if (maxDepth > STACK_CAP) maxDepth = STACK_CAP;
  const end = text + len;
  let p = text;
  let depth: u32 = 0; // open containers: the next value sits at level depth + 1
  let nodes: u32 = 0;
  let refs: u32 = 0;
  let flags: u32 = FLAG_NON_EMPTY;
  let gate = GATE_NONE; // the gate the next value's strings take
  let listItem = false; // the next value is directly inside a list under a known key
  let state = S_VALUE;
  let status = ST_OK;
  let compact: u32 = 0;
  while (true) {
    p = skipSpace(p, end);
    if (state == S_KEY) {
      if (p >= end || load<u8>(p) != DQUOTE) { status = ST_INVALID; break; }
      const r = scanKey(p + 1, end, simd);
      if (r == 0) { status = ST_INVALID; break; }
      p = skipSpace(posOf(r), end);
      if (p >= end || load<u8>(p) != COLON) { status = ST_INVALID; break; }
      p++;
      compact += lowOf(r) + 1;
      gate = load<u32>(SCRATCH);
      listItem = false;
      state = S_VALUE;
      continue;
    }
    if (state == S_VALUE) {
      if (p >= end) { status = ST_INVALID; break; }
      if (++nodes > maxNodes) { status = ST_NODES; break; }
      if (depth >= maxDepth) { status = ST_DEPTH; break; }
      const c = <u32>load<u8>(p);
      if (c == LBRACE || c == LBRACKET) {
        const q = skipSpace(p + 1, end);
        if (q < end && load<u8>(q) == c + CLOSE_OFFSET) {
          if (depth == 0) flags &= ~FLAG_NON_EMPTY;
          compact += 2;
          p = q + 1;
          state = S_AFTER;
          continue;
        }
        compact += 1;
        p = q;
        // Only a list directly under a known key passes its gate to its items.
        const listGate = c == LBRACKET && !listItem ? gate : GATE_NONE;
        store<u8>(STACK + depth, (c == LBRACE ? TOP_OBJECT : 0) | (listGate << 1));
        depth++;
        if (c == LBRACE) state = S_KEY;
        else {
          gate = listGate;
          listItem = true;
        }
        continue;
      }
      if (c == DQUOTE) {
        let r: u64;
        if (gate != GATE_NONE) {
          flags |= FLAG_KNOWN;
          r = scanGated(p + 1, end, gate, simd);
          if (r != 0) {
            const verdict = load<u32>(SCRATCH);
            if (verdict & SCAN_ACCEPTED) {
              const rec = out + OUT_RECORDS + <usize>refs * RECORD_BYTES;
              store<u32>(rec, <u32>(p + 1 - text));
              store<u32>(rec, <u32>(posOf(r) - p - 2), 4);
              store<u32>(rec, gate | (verdict & SCAN_ESCAPED ? REC_ESCAPED : 0) | (verdict & SCAN_ASCII ? REC_ASCII : 0), 8);
              refs++;
            }
          }
        } else {
          r = scanPlain(p + 1, end, simd);
        }
        if (r == 0) { status = ST_INVALID; break; }
        if (depth == 0 && posOf(r) == p + 2) flags &= ~FLAG_NON_EMPTY;
        compact += lowOf(r);
        p = posOf(r);
      } else if (c == MINUS || isDigit(c)) {
        const r = scanNumber(p, end);
        if (r == 0) { status = ST_INVALID; break; }
        compact += lowOf(r);
        p = posOf(r);
      } else if (c == LOW_T || c == LOW_N) {
        if (p + 4 > end || load<u32>(p) != (c == LOW_T ? TRUE_LE : NULL_LE)) { status = ST_INVALID; break; }
        if (depth == 0 && c == LOW_N) flags &= ~FLAG_NON_EMPTY;
        compact += 4;
        p += 4;
      } else if (c == LOW_F) {
        if (p + 5 > end || load<u32>(p + 1) != ALSE_LE) { status = ST_INVALID; break; }
        compact += 5;
        p += 5;
      } else {
        status = ST_INVALID;
        break;
      }
      state = S_AFTER;
      continue;
    }
    // S_AFTER: a value just ended.
    if (depth == 0) {
      if (p != end) status = ST_INVALID;
      break;
    }
    if (p >= end) { status = ST_INVALID; break; }
    const c = <u32>load<u8>(p);
    const top = <u32>load<u8>(STACK + depth - 1);
    const isObject = (top & TOP_OBJECT) != 0;
    if (c == COMMA) {
      p++;
      compact += 1;
      if (isObject) state = S_KEY;
      else {
        gate = top >> 1;
        listItem = true;
        state = S_VALUE;
      }
      continue;
    }
    if (c == (isObject ? LBRACE : LBRACKET) + CLOSE_OFFSET) {
      p++;
      compact += 1;
      depth--;
      continue;
    }
    status = ST_INVALID;
    break;
  }
  store<u32>(out + OUT_STATUS, status);
  store<u32>(out + OUT_REFS, refs);
  store<u32>(out + OUT_FLAGS, flags);
  store<u32>(out + OUT_COMPACT, compact);
  store<u32>(out + OUT_NODES, nodes);
  return status;
}

/** Walk `len` JSON bytes at `text`; results at `out` (layout above). Returns the status. */
export function walk_json(text: usize, len: usize, out: usize, maxNodes: u32, maxDepth: u32): u32 {
  return walk(text, len, out, maxNodes, maxDepth, true);
}

/** walk_json without SIMD: the reference the SIMD string skip is tested against. */
export function walk_json_scalar(text: usize, len: usize, out: usize, maxNodes: u32, maxDepth: u32): u32 {
  return walk(text, len, out, maxNodes, maxDepth, false);
}

/**
 * One string through a gate (1 file, 2 task): `text` holds it as a JSON string
 * token, quotes included (the host writes JSON.stringify's form, so lone
 * surrogates arrive escaped). 1 when accepted; 0 otherwise, and for malformed input.
 */
export function walk_gate(text: usize, len: usize, gate: u32): u32 {
  if (len < 2 || load<u8>(text) != DQUOTE || (gate != GATE_FILE && gate != GATE_TASK)) return 0;
  const r = scanGated(text + 1, text + len, gate, true);
  return r != 0 && posOf(r) == text + len ? load<u32>(SCRATCH) & SCAN_ACCEPTED : 0;
}
