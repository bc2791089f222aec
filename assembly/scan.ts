// Free-text scanner of DESIGN §3 over UTF-8 bytes the host laid out in the arena.
//
//   SANDBOX = <prefix>\S+   (prefixes in order, as one alternation)
//   URL     = https?://[^\s"'`<>]+\.(?:png|...|zip)(?:[?#][^\s"'`<>]*)?
//
// All SANDBOX matches, then all URL matches, each as Python's finditer finds
// them (leftmost, greedy, non-overlapping); trailing `.,;:)]}"'` and backtick
// stripped; empty results dropped (the host removes repeats, which needs strings).
// Output: (start, end) byte offsets as u32 pairs.
//
// Why it is linear: a URL match lies inside one maximal run of allowed bytes
// (everything but \s and "'`<>), starts at the run's leftmost "http(s)://" and,
// the body being greedy, ends at the run's LAST "."+extension; so each run is
// settled by one forward pass to its end and one backward pass to that dot,
// and yields at most one match. A SANDBOX match runs from the prefix to the end
// of its non-space run, where the search resumes.
//
// \s is Python's str.isspace() set; in UTF-8: 09-0D, 1C-1F, 20, C2 85, C2 A0,
// E1 9A 80, E2 80 80..8A, E2 80 A8/A9, E2 80 AF, E2 81 9F, E3 80 80. Spaces are
// recognised at any byte position, so invalid UTF-8 is scanned deterministically
// (and identically by both kernels), never rejected.
//
// Prefix table layout (host-written): `count` entries of (u32 ptr, u32 len),
// each pointing at the prefix's UTF-8 bytes elsewhere in the arena.
//
// Not reentrant (static first-byte table), which a single-threaded instance never needs.

// ---- Byte constants -------------------------------------------------------
const TAB: u8 = 0x09; // first of the ASCII spaces 09..0D
const CR: u8 = 0x0d;
const FS: u8 = 0x1c; // 1C..1F are spaces to Python, then SPACE
const SPACE: u8 = 0x20;
const DQUOTE: u8 = 0x22;
const HASH: u8 = 0x23;
const SQUOTE: u8 = 0x27;
const RPAREN: u8 = 0x29;
const COMMA: u8 = 0x2c;
const DOT: u8 = 0x2e;
const SLASH: u8 = 0x2f;
const COLON: u8 = 0x3a;
const SEMI: u8 = 0x3b;
const LT: u8 = 0x3c;
const GT: u8 = 0x3e;
const QUESTION: u8 = 0x3f;
const RBRACKET: u8 = 0x5d;
const BACKTICK: u8 = 0x60;
const RBRACE: u8 = 0x7d;
const LOW_S: u8 = 0x73; // the "s" of "https"
const CONT_MASK: u8 = 0xc0; // UTF-8 continuation bytes are 10xxxxxx
const CONT_TAG: u8 = 0x80;
const LEAD_C2: u8 = 0xc2; // U+0085, U+00A0
const LEAD_E1: u8 = 0xe1; // U+1680
const LEAD_E2: u8 = 0xe2; // U+2000..200A, 2028, 2029, 202F, 205F
const LEAD_E3: u8 = 0xe3; // U+3000
const LEAD_4BYTE: u8 = 0xf0; // astral: one code point, two UTF-16 units
const HTTP_LE: u32 = 0x70747468; // "http" as a little-endian u32

// The shortest URL match, "http://a.md", bounds how many can fit in a text.
const MIN_URL_BYTES: u32 = 11;

// ---- Byte classes -----------------------------------------------------------
// Classes for the scalar paths: one load instead of a chain of compares.
const C_SPACE_CAND: u8 = 1; // might start a space (00-20, C2, E1-E3): confirm with isSpaceAt
const C_URL_STOP: u8 = 2; // never inside a URL run: " ' ` < >
const C_TRAIL: u8 = 4; // stripped from the end of a match

const CLASS: usize = memory.data(256);
const FIRST: usize = memory.data(256); // per call: 1 where some prefix may start

function initClasses(): void {
  for (let b: u32 = 0; b <= SPACE; b++) store<u8>(CLASS + b, C_SPACE_CAND);
  store<u8>(CLASS + LEAD_C2, C_SPACE_CAND);
  for (let b: u32 = LEAD_E1; b <= LEAD_E3; b++) store<u8>(CLASS + b, C_SPACE_CAND);
  store<u8>(CLASS + DQUOTE, C_URL_STOP | C_TRAIL);
  store<u8>(CLASS + SQUOTE, C_URL_STOP | C_TRAIL);
  store<u8>(CLASS + BACKTICK, C_URL_STOP | C_TRAIL);
  store<u8>(CLASS + LT, C_URL_STOP);
  store<u8>(CLASS + GT, C_URL_STOP);
  store<u8>(CLASS + DOT, C_TRAIL);
  store<u8>(CLASS + COMMA, C_TRAIL);
  store<u8>(CLASS + SEMI, C_TRAIL);
  store<u8>(CLASS + COLON, C_TRAIL);
  store<u8>(CLASS + RPAREN, C_TRAIL);
  store<u8>(CLASS + RBRACKET, C_TRAIL);
  store<u8>(CLASS + RBRACE, C_TRAIL);
}
initClasses();

// The same classes for SIMD, as a nibble lookup (the simdjson trick): a byte is
// in a class when LO[low nibble] & HI[high nibble] shares a bit with the class
// mask. Bits: 01 bytes 00-1F, 02 space, 04 " and ', 08 < and >, 10 backtick,
// 20 C2, 40 E1-E3.
const NIB_SPACE: u8 = 0x63; // 00-1F, 20, C2, E1-E3: the space candidates
const NIB_URL_STOP: u8 = 0x7f; // space candidates plus " ' ` < >

@inline function nibbleClass(v: v128, mask: u8): i32 {
  const lo = i8x16(0x13, 0x41, 0x65, 0x41, 0x01, 0x01, 0x01, 0x05, 0x01, 0x01, 0x01, 0x01, 0x09, 0x01, 0x09, 0x01);
  const hi = i8x16(0x01, 0x01, 0x06, 0x08, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x40, 0x00);
  const cls = v128.and(
    i8x16.swizzle(lo, v128.and(v, i8x16.splat(0x0f))),
    i8x16.swizzle(hi, i8x16.shr_u(v, 4)),
  );
  // eq-zero then invert: bitmask reads only the top bit of each lane
  return ~i8x16.bitmask(i8x16.eq(v128.and(cls, i8x16.splat(<i8>mask)), i8x16.splat(0))) & 0xffff;
}

// ---- Shared predicates ------------------------------------------------------

/** Is there a Python space starting at byte `p` (p < end)? */
@inline function isSpaceAt(p: usize, end: usize): bool {
  const b = load<u8>(p);
  if (b <= SPACE) return (b >= TAB && b <= CR) || b >= FS;
  if (b == LEAD_C2) {
    if (p + 1 >= end) return false;
    const b1 = load<u8>(p + 1);
    return b1 == 0x85 || b1 == 0xa0;
  }
  if (b < LEAD_E1 || b > LEAD_E3 || p + 2 >= end) return false;
  const b1 = load<u8>(p + 1);
  const b2 = load<u8>(p + 2);
  if (b == LEAD_E1) return b1 == 0x9a && b2 == 0x80;
  if (b == LEAD_E3) return b1 == 0x80 && b2 == 0x80;
  if (b1 == 0x80) return (b2 >= 0x80 && b2 <= 0x8a) || b2 == 0xa8 || b2 == 0xa9 || b2 == 0xaf;
  return b1 == 0x81 && b2 == 0x9f;
}

/** May byte `p` not be part of a URL run (p < end)? */
@inline function isUrlStopAt(p: usize, end: usize): bool {
  const c = load<u8>(CLASS + load<u8>(p));
  return (c & C_URL_STOP) != 0 || ((c & C_SPACE_CAND) != 0 && isSpaceAt(p, end));
}

@inline function bytesEqual(a: usize, b: usize, n: usize): bool {
  if (n >= 8) {
    // u64 steps, then one overlapping u64 for the rest: "/mnt/user-data/" is two compares
    while (n > 8) {
      if (load<u64>(a) != load<u64>(b)) return false;
      a += 8;
      b += 8;
      n -= 8;
    }
    return load<u64>(a + n - 8) == load<u64>(b + n - 8);
  }
  if (n >= 4) return load<u32>(a) == load<u32>(b) && load<u32>(a + n - 4) == load<u32>(b + n - 4);
  while (n > 0) {
    if (load<u8>(a) != load<u8>(b)) return false;
    a++;
    b++;
    n--;
  }
  return true;
}

// Extensions as little-endian words, to compare 2, 3 or 4 letters at once.
const EXT_MD: u32 = 0x646d;
const EXT_PNG: u32 = 0x676e70;
const EXT_JPG: u32 = 0x67706a;
const EXT_GIF: u32 = 0x666967;
const EXT_PDF: u32 = 0x666470;
const EXT_CSV: u32 = 0x767363;
const EXT_TXT: u32 = 0x747874;
const EXT_LOG: u32 = 0x676f6c;
const EXT_ZIP: u32 = 0x70697a;
const EXT_XLS: u32 = 0x736c78;
const EXT_DOC: u32 = 0x636f64;
const EXT_JPEG: u32 = 0x6765706a;
const EXT_JSON: u32 = 0x6e6f736a;
const EXT_HTML: u32 = 0x6c6d7468;
const EXT_XLSX: u32 = 0x78736c78;
const EXT_DOCX: u32 = 0x78636f64;

/**
 * Length of the extension alternative matching at s, or 0. The run ends at re;
 * extension letters are never stops, so a match cannot straddle re. No two
 * alternatives match at one place except xls/xlsx and doc/docx, where the
 * greedy x? takes four: so the longest hit is the regex's choice.
 * Reads 4 bytes at s (inside the host's slack near the end), masked to re.
 * Branch-free: this runs at every dot a URL run ends on, in unpredictable text.
 */
@inline function extLenAt(s: usize, re: usize): usize {
  const avail = re - s;
  let w = load<u32>(s);
  if (avail < 4) w &= (<u32>1 << (<u32>avail << 3)) - 1;
  const w3 = w & 0xffffff;
  const four = <u32>(w == EXT_JPEG) | <u32>(w == EXT_JSON) | <u32>(w == EXT_HTML) | <u32>(w == EXT_XLSX) | <u32>(w == EXT_DOCX);
  const three = <u32>(w3 == EXT_PNG) | <u32>(w3 == EXT_JPG) | <u32>(w3 == EXT_GIF) | <u32>(w3 == EXT_PDF) | <u32>(w3 == EXT_CSV) |
    <u32>(w3 == EXT_TXT) | <u32>(w3 == EXT_LOG) | <u32>(w3 == EXT_ZIP) | <u32>(w3 == EXT_XLS) | <u32>(w3 == EXT_DOC);
  const two = <u32>((w & 0xffff) == EXT_MD);
  return four != 0 ? 4 : three != 0 ? 3 : two != 0 ? 2 : 0;
}

/** Start of "http://" / "https://" whose ':' is at c, or -1. Caller checked "//". */
@inline function schemeStart(text: usize, c: usize): isize {
  if (c < 4) return -1;
  if (load<u8>(text + c - 1) == LOW_S) {
    return c >= 5 && load<u32>(text + c - 5) == HTTP_LE ? <isize>(c - 5) : -1;
  }
  return load<u32>(text + c - 4) == HTTP_LE ? <isize>(c - 4) : -1;
}

/** Upper bound on the SANDBOX pairs in `len` bytes: matches do not overlap
 * and each is a prefix plus >= 1 byte. */
function sandboxBound(len: usize, table: usize, count: u32): usize {
  if (count == 0) return 0;
  let minPrefix: usize = usize.MAX_VALUE;
  for (let k: u32 = 0; k < count; k++) minPrefix = min(minPrefix, <usize>load<u32>(table + (<usize>k << 3) + 4));
  return len / (minPrefix + 1);
}

/** Upper bound on the URL pairs in `len` bytes: at least MIN_URL_BYTES each, no overlap. */
@inline function urlBound(len: usize): usize {
  return len / <usize>MIN_URL_BYTES;
}

/** Fill FIRST with the bytes a prefix can start with; an empty prefix starts anywhere. */
function markFirstBytes(table: usize, count: u32): void {
  memory.fill(FIRST, 0, 256);
  for (let k: u32 = 0; k < count; k++) {
    const ptr = <usize>load<u32>(table + (<usize>k << 3));
    const plen = load<u32>(table + (<usize>k << 3) + 4);
    if (plen == 0) {
      memory.fill(FIRST, 1, 256);
      return;
    }
    store<u8>(FIRST + load<u8>(ptr), 1);
  }
}

// ---- Output -----------------------------------------------------------------

/** Strip trailing noise and write (start, end) unless empty; returns the new count. */
@inline function emit(text: usize, out: usize, n: usize, cap: usize, start: usize, end: usize): usize {
  while (end > start && (load<u8>(CLASS + load<u8>(text + end - 1)) & C_TRAIL) != 0) end--;
  if (end == start) return n;
  if (n >= cap) unreachable(); // the bounds are proven, so this is a bug: trap loudly
  store<u32>(out + (n << 3), <u32>start);
  store<u32>(out + (n << 3) + 4, <u32>end);
  return n + 1;
}

// ---- Run ends: scalar and SIMD tiers ----------------------------------------

function spaceRunEndScalar(text: usize, len: usize, p: usize): usize {
  const end = text + len;
  while (p < len) {
    if ((load<u8>(CLASS + load<u8>(text + p)) & C_SPACE_CAND) != 0 && isSpaceAt(text + p, end)) return p;
    p++;
  }
  return len;
}

/** A mask of the first `n` lanes of a 16-lane bitmask (all of them when n >= 16). */
@inline function lanes(n: usize): i32 {
  return n >= 16 ? 0xffff : (1 << <i32>n) - 1;
}

/** The same for a 32-lane mask (two blocks). */
@inline function lanes32(n: usize): i32 {
  return n >= 32 ? -1 : (1 << <i32>n) - 1;
}

function spaceRunEndSimd(text: usize, len: usize, p: usize): usize {
  const end = text + len;
  while (p < len) {
    // the last block reads into the slack after the input; its extra lanes are masked off
    let bits = nibbleClass(v128.load(text + p), NIB_SPACE) & lanes(len - p);
    while (bits != 0) {
      const q = p + <usize>ctz(bits);
      if (isSpaceAt(text + q, end)) return q;
      bits &= bits - 1;
    }
    p += 16;
  }
  return len;
}

function urlRunEndScalar(text: usize, len: usize, p: usize): usize {
  const end = text + len;
  while (p < len && !isUrlStopAt(text + p, end)) p++;
  return p;
}

/** End of the last "."+extension with its dot in [lo, re), or 0: where the
 * greedy body backtracks to. Extension letters never reach past re (they are
 * not stops), so no bound beyond the run is needed. */
function lastExtEndScalar(text: usize, lo: usize, re: usize): usize {
  let b = re;
  while (b > lo) {
    b--;
    if (load<u8>(text + b) == DOT) {
      const k = extLenAt(text + b + 1, text + re);
      if (k != 0) return b + 1 + k;
    }
  }
  return 0;
}

/** lastExtEndScalar's SIMD tier, for dots in [lo, hi) of a run ending at re. */
function lastExtEndSimd(text: usize, lo: usize, hi: usize, re: usize): usize {
  const dot = i8x16.splat(DOT);
  while (hi > lo) {
    // the block ending at hi may start before lo (even before text): mask those lanes
    let bits = i8x16.bitmask(i8x16.eq(v128.load(text + hi - 16), dot));
    if (hi - lo < 16) bits &= ~lanes(16 - (hi - lo));
    const e = highestExtEnd(text, hi - 16, bits, re);
    if (e != 0) return e;
    hi = hi > 16 ? hi - 16 : 0;
  }
  return 0;
}

/** End of the extension at the highest dot of `dots` (lanes of the block at
 * base) that starts one, or 0. */
@inline function highestExtEnd(text: usize, base: usize, dots: i32, re: usize): usize {
  while (dots != 0) {
    const i = 31 - clz(dots);
    const k = extLenAt(text + base + <usize>i + 1, text + re);
    if (k != 0) return base + <usize>i + 1 + k;
    dots ^= 1 << i;
  }
  return 0;
}

/**
 * SIMD tier of a URL run after the "://" at c: one forward sweep finds the run
 * end and, in the same blocks, the dots; the last "."+extension is looked for
 * in the final block, then the one before, and only then further back (long
 * runs). Returns the run end and the URL end before any query (0: no match),
 * packed as (re << 32) | end.
 */
function urlRunSimd(text: usize, len: usize, c: usize): u64 {
  const end = text + len;
  const dot = i8x16.splat(DOT);
  const lo = c + 4; // >= 1 body byte between "://" and the dot
  let p = c + 3;
  let prevBase = p;
  let prevDots = 0;
  while (true) {
    const v = v128.load(text + p);
    const live = lanes(len - p); // the last block reads into the slack: mask it
    let stops = nibbleClass(v, NIB_URL_STOP) & live;
    const dots = i8x16.bitmask(i8x16.eq(v, dot)) & live & (p < lo ? ~1 : -1);
    let stop = 16;
    while (stops != 0) {
      const i = ctz(stops);
      if (isUrlStopAt(text + p + <usize>i, end)) {
        stop = i;
        break;
      }
      stops &= stops - 1;
    }
    if (stop < 16 || p + 16 >= len) {
      const re = stop < 16 ? p + <usize>stop : len;
      let e = highestExtEnd(text, p, dots & lanes(<usize>stop), re);
      if (e == 0) e = highestExtEnd(text, prevBase, prevDots, re);
      if (e == 0) e = lastExtEndSimd(text, lo, prevBase, re);
      return (<u64>re << 32) | <u64>e;
    }
    prevBase = p;
    prevDots = dots;
    p += 16;
  }
  return 0;
}

// ---- Matchers at a candidate ------------------------------------------------

// The running pair count of the URL pass, kept in memory so urlRunAt can both
// emit and return the run end.
const URL_COUNT: usize = memory.data(8, 8);

/** End of the SANDBOX match starting at q, or -1: the first prefix (in order)
 * found at q and followed by a non-space byte wins, as the alternation does. */
@inline function sandboxEndAt(text: usize, len: usize, q: usize, table: usize, count: u32, simd: bool): isize {
  for (let k: u32 = 0; k < count; k++) {
    const ptr = <usize>load<u32>(table + (<usize>k << 3));
    const plen = <usize>load<u32>(table + (<usize>k << 3) + 4);
    const body = q + plen;
    if (body >= len) continue;
    // an empty prefix may only start at a character, not inside one
    if (plen == 0 && (load<u8>(text + q) & CONT_MASK) == CONT_TAG) continue;
    if (!bytesEqual(text + q, ptr, plen) || isSpaceAt(text + body, text + len)) continue;
    return <isize>(simd ? spaceRunEndSimd(text, len, body + 1) : spaceRunEndScalar(text, len, body + 1));
  }
  return -1;
}

/**
 * Settle the URL run holding the "://" at c (c >= the previous run's end, so
 * this scheme is the run's leftmost). Emits its match if any. Returns the run
 * end (where the search resumes) or 0 when no scheme ends at c.
 */
@inline function urlRunAt(text: usize, len: usize, c: usize, out: usize, cap: usize, simd: bool): usize {
  const p = schemeStart(text, c);
  if (p < 0) return 0;
  let re: usize, e: usize;
  if (simd) {
    const both = urlRunSimd(text, len, c);
    re = <usize>(both >>> 32);
    e = <usize>(both & 0xffffffff);
  } else {
    re = urlRunEndScalar(text, len, c + 3);
    e = lastExtEndScalar(text, c + 4, re); // >= 1 body byte between "://" and the dot
  }
  if (e != 0) {
    // an optional [?#] query takes the rest of the run
    const q = e < re ? load<u8>(text + e) : 0;
    store<usize>(URL_COUNT, emit(text, out, load<usize>(URL_COUNT), cap, <usize>p, q == QUESTION || q == HASH ? re : e));
  }
  return re;
}

// ---- Passes -----------------------------------------------------------------

/** SANDBOX pass, scalar, from byte p; returns the new pair count. */
function sandboxScalarFrom(text: usize, len: usize, p: usize, table: usize, count: u32, out: usize, n: usize, cap: usize, simd: bool): usize {
  while (p < len) {
    if (load<u8>(FIRST + load<u8>(text + p)) != 0) {
      const end = sandboxEndAt(text, len, p, table, count, simd);
      if (end >= 0) {
        n = emit(text, out, n, cap, p, <usize>end);
        p = <usize>end;
        continue;
      }
    }
    p++;
  }
  return n;
}

function urlScalarFrom(text: usize, len: usize, p: usize, out: usize, n: usize, cap: usize, simd: bool): usize {
  store<usize>(URL_COUNT, n);
  while (p + 2 < len) {
    if (load<u8>(text + p) == COLON && load<u8>(text + p + 1) == SLASH && load<u8>(text + p + 2) == SLASH) {
      const re = urlRunAt(text, len, p, out, cap, simd);
      if (re != 0) {
        p = re;
        continue;
      }
    }
    p++;
  }
  return load<usize>(URL_COUNT);
}

@inline function pairMask(v0: v128, v1: v128, first: v128, second: v128, noSecond: v128): v128 {
  return v128.and(i8x16.eq(v0, first), v128.or(i8x16.eq(v1, second), noSecond));
}

/**
 * Both passes in one SIMD sweep. Each 16-byte block (two per step) is compared with "://"
 * (URL candidates) and with the first two bytes of up to four prefixes
 * (SANDBOX candidates; a one-byte prefix matches on its first byte alone).
 * Candidates are settled in position order; each pass keeps its own cursor,
 * so the passes stay independent. SANDBOX pairs go to `out`, URL pairs to the
 * region after the SANDBOX bound and are moved down at the end.
 * More than four prefixes, or an empty one, leave SANDBOX to the scalar pass.
 * Reads up to 16 bytes before text and 48 after text + len (see scan_text).
 * Inlined twice: `single` is a constant at each site, so the common one-prefix
 * case gets a sweep with nothing for prefixes 2-4 (fewer live vectors to spill
 * around calls).
 */
@inline function scanSimd(text: usize, len: usize, table: usize, count: u32, out: usize, single: bool): usize {
  const sBound = sandboxBound(len, table, count);
  const uBound = urlBound(len);
  const uOut = out + (sBound << 3);
  let simdPrefixes = count >= 1 && count <= 4;
  for (let k: u32 = 0; k < count; k++) if (load<u32>(table + (<usize>k << 3) + 4) == 0) simdPrefixes = false;
  let ns: usize = simdPrefixes ? 0 : sandboxScalarFrom(text, len, 0, table, count, out, 0, sBound, true);

  // Unused prefix slots stay zero; they are never OR-ed in (count checks below).
  let f0 = i8x16.splat(0), f1 = f0, f2 = f0, f3 = f0;
  let s0 = f0, s1 = f0, s2 = f0, s3 = f0;
  let w0 = f0, w1 = f0, w2 = f0, w3 = f0; // all ones: "no second byte to check"
  for (let k: u32 = 0; k < min(count, 4); k++) {
    const e = table + (<usize>k << 3);
    const ptr = <usize>load<u32>(e);
    const one = load<u32>(e + 4) == 1;
    const f = i8x16.splat(load<i8>(ptr));
    const s = i8x16.splat(one ? 0 : load<i8>(ptr + 1));
    const w = i8x16.splat(one ? -1 : 0);
    if (k == 0) { f0 = f; s0 = s; w0 = w; }
    else if (k == 1) { f1 = f; s1 = s; w1 = w; }
    else if (k == 2) { f2 = f; s2 = s; w2 = w; }
    else { f3 = f; s3 = s; w3 = w; }
  }
  const colon = i8x16.splat(COLON);
  const slash = i8x16.splat(SLASH);

  store<usize>(URL_COUNT, 0);
  let sCur: usize = simdPrefixes ? 0 : len; // len: no SANDBOX candidate is ever taken
  let uCur: usize = 0;
  let p: usize = 0;
  while (p < len) {
    // two blocks per step; v2 reads up to 34 bytes on: the last steps read into the slack, masked below
    const a0 = v128.load(text + p);
    const a1 = v128.load(text + p + 1);
    const a2 = v128.load(text + p + 2);
    const b0 = v128.load(text + p + 16);
    const b1 = v128.load(text + p + 17);
    const b2 = v128.load(text + p + 18);
    let uBits = i8x16.bitmask(v128.and(i8x16.eq(a0, colon), v128.and(i8x16.eq(a1, slash), i8x16.eq(a2, slash)))) |
      (i8x16.bitmask(v128.and(i8x16.eq(b0, colon), v128.and(i8x16.eq(b1, slash), i8x16.eq(b2, slash)))) << 16);
    let sBits = 0;
    if (simdPrefixes) {
      let ma = pairMask(a0, a1, f0, s0, w0);
      let mb = pairMask(b0, b1, f0, s0, w0);
      if (!single) {
        if (count > 1) { ma = v128.or(ma, pairMask(a0, a1, f1, s1, w1)); mb = v128.or(mb, pairMask(b0, b1, f1, s1, w1)); }
        if (count > 2) { ma = v128.or(ma, pairMask(a0, a1, f2, s2, w2)); mb = v128.or(mb, pairMask(b0, b1, f2, s2, w2)); }
        if (count > 3) { ma = v128.or(ma, pairMask(a0, a1, f3, s3, w3)); mb = v128.or(mb, pairMask(b0, b1, f3, s3, w3)); }
      }
      sBits = i8x16.bitmask(ma) | (i8x16.bitmask(mb) << 16);
    }
    if (p + 34 > len) {
      // "://" needs q + 2 < len; a SANDBOX match needs q + 1 < len
      const rest = len - p;
      uBits &= lanes32(rest > 2 ? rest - 2 : 0);
      sBits &= lanes32(rest - 1);
    }
    // The passes are independent: settle each one's candidates in order.
    while (sBits != 0) {
      const q = p + <usize>ctz(sBits);
      sBits &= sBits - 1;
      if (q < sCur) continue;
      const end = sandboxEndAt(text, len, q, table, count, true);
      if (end >= 0) {
        ns = emit(text, out, ns, sBound, q, <usize>end);
        sCur = <usize>end;
      }
    }
    while (uBits != 0) {
      const q = p + <usize>ctz(uBits);
      uBits &= uBits - 1;
      if (q < uCur) continue;
      const re = urlRunAt(text, len, q, uOut, uBound, true);
      if (re != 0) uCur = re; // the rest of this run can hold no other match
    }
    // both passes are past this point already: skip what their matches covered
    p = max(p + 32, min(sCur, uCur));
  }
  const nu = load<usize>(URL_COUNT);
  memory.copy(out + (ns << 3), uOut, nu << 3);
  return ns + nu;
}

// ---- Exports ----------------------------------------------------------------

/**
 * Pairs the host must make room for at `out` (8 bytes each) before scanning
 * `len` bytes with these prefixes. Preconditions: the prefix table is readable.
 */
export function scan_max_pairs(len: usize, table: usize, count: u32): usize {
  return sandboxBound(len, table, count) + urlBound(len);
}

/**
 * Scan `len` UTF-8 bytes at `text` (SIMD candidate search). Writes SANDBOX
 * pairs then URL pairs at `out`; returns the number of pairs.
 * Preconditions: text, the prefix table and its bytes, and
 * scan_max_pairs(len, table, count) * 8 bytes at `out` (4-aligned) lie in
 * reserved memory and do not overlap; 16 bytes before `text` (text >= 16) and
 * 48 after `text + len` are readable (their values are ignored: SIMD blocks
 * that straddle the ends are masked). No alignment needed for `text`.
 * More than four prefixes, or an empty one, use the scalar SANDBOX pass.
 */
export function scan_text(text: usize, len: usize, table: usize, count: u32, out: usize): usize {
  markFirstBytes(table, count);
  return count == 1 ? scanSimd(text, len, table, count, out, true) : scanSimd(text, len, table, count, out, false);
}

/**
 * The same scan, one byte at a time: the reference the SIMD kernel is tested
 * against. Same signature and preconditions as scan_text.
 */
export function scan_text_scalar(text: usize, len: usize, table: usize, count: u32, out: usize): usize {
  const cap = scan_max_pairs(len, table, count);
  markFirstBytes(table, count);
  const n = sandboxScalarFrom(text, len, 0, table, count, out, 0, cap, false);
  return urlScalarFrom(text, len, 0, out, n, cap, false);
}

/**
 * Turn `count` u32 byte offsets at `offsets` (into the `len` UTF-8 bytes at
 * `text`) into UTF-16 offsets, in place. Each UTF-8 character is one UTF-16
 * unit except 4-byte ones (two). Preconditions: text is valid UTF-8 (as
 * TextEncoder writes it) and every offset is a character boundary <= len.
 * scan_text's output is two ascending runs (SANDBOX pairs, then URL pairs):
 * they are merged on the fly, so the text is counted once. Any other order is
 * still converted correctly, restarting the count from byte 0 when it must.
 */
export function scan_utf16_offsets(text: usize, len: usize, offsets: usize, count: u32): void {
  const notCont = i8x16.splat(-65); // signed: continuation bytes are -128..-65
  const astral = i8x16.splat(<i8>LEAD_4BYTE);
  let split: u32 = min(count, 1);
  while (split < count && load<u32>(offsets + (<usize>split << 2)) >= load<u32>(offsets + (<usize>(split - 1) << 2))) split++;
  let i: u32 = 0;
  let j = split;
  let pos: usize = 0;
  let units: usize = 0;
  while (i < split || j < count) {
    const a = i < split ? load<u32>(offsets + (<usize>i << 2)) : u32.MAX_VALUE;
    const b = j < count ? load<u32>(offsets + (<usize>j << 2)) : u32.MAX_VALUE;
    const at = offsets + (<usize>(a <= b ? i++ : j++) << 2);
    const o = <usize>min(a, b);
    if (o < pos) {
      pos = 0;
      units = 0;
    }
    while (pos + 16 <= o) {
      const v = v128.load(text + pos);
      units += <usize>popcnt(i8x16.bitmask(i8x16.gt_s(v, notCont))) + <usize>popcnt(i8x16.bitmask(i8x16.ge_u(v, astral)));
      pos += 16;
    }
    while (pos < o) {
      const c = load<u8>(text + pos);
      units += <usize>((c & CONT_MASK) != CONT_TAG) + <usize>(c >= LEAD_4BYTE);
      pos++;
    }
    store<u32>(at, <u32>units);
  }
}

/**
 * Count occurrences of `byte` in `len` bytes at `ptr`: one compare and one
 * subtract per 16 bytes, the floor under any scan of the same bytes (the
 * benchmark's "memory speed" reference). Precondition: the range is reserved.
 */
export function scan_count_byte(ptr: usize, len: usize, byte: u32): usize {
  const needle = i8x16.splat(<i8>byte);
  const end = ptr + len;
  let total: usize = 0;
  let p = ptr;
  while (p + 64 <= end) {
    // four u8 lane counters (independent chains), flushed before any can pass 255
    let a0 = i8x16.splat(0), a1 = a0, a2 = a0, a3 = a0;
    const stop = min(end, p + 255 * 64);
    while (p + 64 <= stop) {
      // eq gives -1 per hit, so subtracting counts up
      a0 = i8x16.sub(a0, i8x16.eq(v128.load(p), needle));
      a1 = i8x16.sub(a1, i8x16.eq(v128.load(p, 16), needle));
      a2 = i8x16.sub(a2, i8x16.eq(v128.load(p, 32), needle));
      a3 = i8x16.sub(a3, i8x16.eq(v128.load(p, 48), needle));
      p += 64;
    }
    const wide = i16x8.add(
      i16x8.add(i16x8.extadd_pairwise_i8x16_u(a0), i16x8.extadd_pairwise_i8x16_u(a1)),
      i16x8.add(i16x8.extadd_pairwise_i8x16_u(a2), i16x8.extadd_pairwise_i8x16_u(a3)),
    );
    const q = i32x4.extadd_pairwise_i16x8_u(wide);
    total += <usize>(i32x4.extract_lane(q, 0) + i32x4.extract_lane(q, 1) + i32x4.extract_lane(q, 2) + i32x4.extract_lane(q, 3));
  }
  while (p < end) {
    total += <usize>(load<u8>(p) == <u8>byte);
    p++;
  }
  return total;
}
