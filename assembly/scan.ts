// Free-text scanner of DESIGN §3 over UTF-8 bytes the host laid out in the arena.
//
//   SANDBOX = <prefix>\S+   (prefixes in order, as one alternation)
//   URL     = https?://[^\s"'`<>]+\.(?:png|...|zip)(?:[?#][^\s"'`<>]*)?
//
// All SANDBOX matches, then all URL matches, each as Python's finditer finds
// them (leftmost, greedy, non-overlapping); trailing `.,;:)]}"'` and backtick
// stripped; empty results dropped. Output: (start, end) byte offsets as u32
// pairs; scan_dedup then drops repeats (by bytes, flagging where only the
// host's strings can tell), scan_utf16_offsets maps the rest to the host's
// string offsets, and scan_utf16_to_utf8 writes the host's text in the first place.
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
// SIMD tier: a sweep of 32-byte windows finds candidates ("://" and the first
// three bytes of each prefix) and each candidate's run is settled by 64-byte
// steps from it (nearly always one), so typical text takes few data-dependent
// branches beyond one per candidate. The scalar tier does the same one byte at a time and is the reference.
//
// Not reentrant (static tables, the URL pass count), which a single-threaded instance never needs.

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
const LEAD_E3: u8 = 0xe3; // U+3000
const LEAD_4BYTE: u8 = 0xf0; // astral: one code point, two UTF-16 units
const HTTP_LE: u32 = 0x70747468; // "http" as a little-endian u32
const SLASH2: u16 = 0x2f2f; // "//"

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

// The same classes for SIMD, as a nibble lookup (the simdjson trick): byte b
// has class LO[b & 15] & HI[b >> 4]. Each bit is one (high nibbles) x (low
// nibbles) product, so for ASCII the classes are exact and a run end needs no
// scalar check; only the multi-byte space leads must be confirmed.
//   01: 09-0D   02: 1C-1F   04: 20   08: " '   10: < >   20: `   40: C2   80: E1-E3
const NIB_SPACE: u8 = 0xc7; // ASCII spaces, and the leads of the others
const NIB_URL_STOP: u8 = 0xff; // that plus " ' ` < >

/** One bit per byte of the 16 at `v` whose class meets `mask`. */
@inline function classBits(v: v128, mask: u8): i32 {
  // LO: 0 -> 20 `, 1 -> E1, 2 -> " C2 E2, 3 -> E3, 7 -> ', 9-B -> 09-0B, C -> 0C 1C <, D -> 0D 1D, E -> 1E >, F -> 1F
  const lo = i8x16(0x24, -128, -56, -128, 0, 0, 0, 0x08, 0, 0x01, 0x01, 0x01, 0x13, 0x03, 0x12, 0x02);
  const hi = i8x16(0x01, 0x02, 0x0c, 0x10, 0, 0, 0x20, 0, 0, 0, 0, 0, 0x40, 0, -128, 0);
  const nibble = i8x16.splat(0x0f);
  // a 16-bit shift and the same mask: i8x16.shr_u would rebuild its own mask at every use
  let cls = v128.and(i8x16.swizzle(lo, v128.and(v, nibble)), i8x16.swizzle(hi, v128.and(i16x8.shr_u(v, 4), nibble)));
  if (mask != 0xff) cls = v128.and(cls, i8x16.splat(<i8>mask));
  // a saturating +0x7f sets the top bit of exactly the non-zero lanes, which bitmask reads
  return i8x16.bitmask(i8x16.add_sat_u(cls, i8x16.splat(0x7f)));
}

@inline function bits64(a: i32, b: i32, c: i32, d: i32): u64 {
  return <u64><u32>a | (<u64><u32>b << 16) | (<u64><u32>c << 32) | (<u64><u32>d << 48);
}

/** classBits over the 64 bytes at p. */
@inline function classBits64(p: usize, mask: u8): u64 {
  return bits64(classBits(v128.load(p), mask), classBits(v128.load(p, 16), mask), classBits(v128.load(p, 32), mask), classBits(v128.load(p, 48), mask));
}

/** One bit per byte equal to `byte` among the 64 at p. */
@inline function eqBits64(p: usize, byte: u8): u64 {
  const b = i8x16.splat(<i8>byte);
  return bits64(
    i8x16.bitmask(i8x16.eq(v128.load(p), b)),
    i8x16.bitmask(i8x16.eq(v128.load(p, 16), b)),
    i8x16.bitmask(i8x16.eq(v128.load(p, 32), b)),
    i8x16.bitmask(i8x16.eq(v128.load(p, 48), b)),
  );
}

/** Bits [0, n) of a 64-lane mask (all of them when n >= 64). */
@inline function lanes64(n: usize): u64 {
  return n >= 64 ? u64.MAX_VALUE : (<u64>1 << <u64>n) - 1;
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
  // E2: U+2000..200A, 2028, 2029, 202F, 205F
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

// Extensions by their first three letters as a little-endian word (the two
// 4-letter-only ones too: jpe(g), jso(n), htm(l)), perfectly hashed into 16
// slots: one multiply, one load and a few compares replace a compare per
// extension. Entry: bits 0-31 the word to match (with its 4th letter when a
// 4-letter extension starts so), bits 32-39 the length when the 3 letters are
// an extension themselves, bit 40 set when a 4-letter one exists.
const EXT_MD: u32 = 0x646d; // "md", the one 2-letter extension
const EXT_HASH_MUL: u32 = 0x4c431fc5; // found by search: no two entries share a slot
const EXT_TABLE: usize = memory.data<u64>([
  0x300676f6c /* log */, 0x0, 0x10378636f64 /* doc(x) */, 0x300666470 /* pdf */,
  0x300767363 /* csv */, 0x10378736c78 /* xls(x) */, 0x300747874 /* txt */, 0x1006765706a /* jpe(g) */,
  0x1006e6f736a /* jso(n) */, 0x0, 0x0, 0x30067706a /* jpg */,
  0x30070697a /* zip */, 0x300666967 /* gif */, 0x1006c6d7468 /* htm(l) */, 0x300676e70 /* png */,
], 8);

/**
 * Length of the extension alternative matching at s, or 0. The run ends at re;
 * extension letters are never stops, so a match cannot straddle re. No two
 * alternatives match at one place except xls/xlsx and doc/docx, where the
 * greedy x? takes four: so the longest hit is the regex's choice.
 * Reads 4 bytes at s (inside the host's slack near the end), masked to re.
 * Branch-free: this runs at every dot a URL run ends on, in unpredictable text.
 */
@inline function extLenAt(s: usize, re: usize): usize {
  // only bytes before re count (past the input's end lies slack); masked without a branch
  const w = load<u32>(s) & <u32>((<u64>1 << (<u64>min(re - s, 4) << 3)) - 1);
  const w3 = w & 0xffffff;
  const e = load<u64>(EXT_TABLE + (<usize>((w3 * EXT_HASH_MUL) >>> 28) << 3));
  const key = <u32>e;
  const hit3 = (key & 0xffffff) == w3;
  const four = hit3 & ((<u32>(e >>> 40) & 1) != 0) & (key == w);
  const three = <usize>(<u32>(e >>> 32) & 0xff);
  return select<usize>(4, select<usize>(three, select<usize>(2, 0, (w & 0xffff) == EXT_MD), hit3), four);
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

/** Is the byte before `end` trailing noise, with end > start? (0 or 1) */
@inline function trailAt(text: usize, start: usize, end: usize): usize {
  return <usize>((load<u8>(CLASS + load<u8>(text + end - 1)) & C_TRAIL) != 0) & <usize>(end > start);
}

/** `end` with trailing noise stripped back to `start`. The first two steps
 * have no branch: whether a match ends in "." or "')" is data. Reads the
 * byte before start when end == start (the host keeps 16 bytes before text). */
@inline function stripEnd(text: usize, start: usize, end: usize): usize {
  let t = trailAt(text, start, end);
  end -= t;
  t &= trailAt(text, start, end);
  end -= t;
  if (t != 0) while (trailAt(text, start, end) != 0) end--;
  return end;
}

/** Strip trailing noise and write (start, end) unless empty; returns the new count. */
@inline function emit(text: usize, out: usize, n: usize, cap: usize, start: usize, end: usize): usize {
  end = stripEnd(text, start, end);
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

/** Whether the n bytes at p hold a Python space (lines.ts leaves a line with such a whole reference to the host). */
export function holdsSpace(p: usize, n: usize): bool {
  return spaceRunEndScalar(p, n, 0) < n;
}

/** A mask of the first `n` lanes of a 16-lane bitmask (all of them when n >= 16). */
@inline function lanes(n: usize): i32 {
  return n >= 16 ? 0xffff : (1 << <i32>n) - 1;
}

/**
 * First Python space at or after p (p <= len), or len: 64 bytes per step,
 * so a typical path is settled by one step and one predictable branch.
 * Reads up to 64 bytes past len (slack); lanes past len count as the end.
 */
function spaceRunEndSimd(text: usize, len: usize, p: usize): usize {
  const end = text + len;
  while (true) {
    let m = classBits64(text + p, NIB_SPACE) | ~lanes64(len - p);
    while (m != 0) {
      const q = p + <usize>ctz(m);
      // ASCII lanes are exact; a multi-byte lead is a space only with the right tail
      if (q >= len) return len;
      if (load<u8>(text + q) < 0x80 || isSpaceAt(text + q, end)) return q;
      m &= m - 1;
    }
    p += 64;
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

/** lastExtEndScalar's SIMD tier, for dots in [lo, hi) of a run ending at re:
 * only long runs get here, so 16 bytes per step is enough. */
function lastExtEndSimd(text: usize, lo: usize, hi: usize, re: usize): usize {
  const dot = i8x16.splat(DOT);
  while (hi > lo) {
    // the block ending at hi may start before lo (even before text): mask those lanes
    let bits = i8x16.bitmask(i8x16.eq(v128.load(text + hi - 16), dot));
    if (hi - lo < 16) bits &= ~lanes(16 - (hi - lo));
    const e = highestExtEnd(text, hi - 16, <u64><u32>bits, re);
    if (e != 0) return e;
    hi = hi > 16 ? hi - 16 : 0;
  }
  return 0;
}

/** End of the extension at the highest dot of `dots` (lanes of the window at
 * base) that starts one, or 0. */
@inline function highestExtEnd(text: usize, base: usize, dots: u64, re: usize): usize {
  while (dots != 0) {
    const i = <usize>(63 - clz(dots));
    const k = extLenAt(text + base + i + 1, text + re);
    if (k != 0) return base + i + 1 + k;
    dots ^= <u64>1 << <u64>i;
  }
  return 0;
}

/**
 * highestExtEnd for the common case, without data-dependent branches: the
 * extension is nearly always at the highest or second-highest dot (file name,
 * or host when there is none), so both are checked unconditionally and the
 * loop only sees runs with more dots and neither an extension.
 */
@inline function lastExtEndIn(text: usize, base: usize, dots: u64, re: usize): usize {
  const top = <usize>(63 - clz(dots | 1)); // lane 0 when there is no dot: checked, then discarded
  const rest = dots & ~(<u64>1 << <u64>top);
  const next = <usize>(63 - clz(rest | 1));
  const k1 = select<usize>(extLenAt(text + base + top + 1, text + re), 0, dots != 0);
  const k2 = select<usize>(extLenAt(text + base + next + 1, text + re), 0, rest != 0);
  const e = select<usize>(base + top + 1 + k1, select<usize>(base + next + 1 + k2, 0, k2 != 0), k1 != 0);
  const more = rest & ~(<u64>1 << <u64>next);
  return (e == 0) & (more != 0) ? highestExtEnd(text, base, more, re) : e;
}

/**
 * SIMD tier of a URL run after the "://" at c: 64 bytes per step give the
 * run end and, from the same loads, the dots; nearly every URL is settled
 * by one step. The last "."+extension is looked for in the final window,
 * then the one before, and only then further back (long runs). Returns the
 * run end and the URL end before any query (0: no match), packed as
 * (re << 32) | end. Reads up to 64 bytes past len (slack, masked).
 */
function urlRunSimd(text: usize, len: usize, c: usize): u64 {
  const end = text + len;
  const s = c + 3;
  let p = s;
  let prevP = s;
  let prevDots: u64 = 0;
  while (true) {
    const live = lanes64(len - p);
    let stops = classBits64(text + p, NIB_URL_STOP) | ~live;
    // >= 1 body byte between "://" and the dot: not the window's first lane on the first step
    const dots = eqBits64(text + p, DOT) & live & (p == s ? ~(<u64>1) : u64.MAX_VALUE);
    while (stops != 0) {
      const i = <usize>ctz(stops);
      const q = p + i;
      if (q >= len || load<u8>(text + q) < 0x80 || isSpaceAt(text + q, end)) {
        const re = min(q, len);
        let e = lastExtEndIn(text, p, dots & lanes64(i), re);
        // runs longer than one window are rare: one branch, seldom taken
        if ((e == 0) & (p != s)) {
          e = highestExtEnd(text, prevP, prevDots, re);
          if (e == 0 && prevP > s) e = lastExtEndSimd(text, s + 1, prevP, re);
        }
        return (<u64>re << 32) | <u64>e;
      }
      stops &= stops - 1;
    }
    prevP = p;
    prevDots = dots;
    p += 64;
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
  if (!simd) {
    const re = urlRunEndScalar(text, len, c + 3);
    const e = lastExtEndScalar(text, c + 4, re); // >= 1 body byte between "://" and the dot
    if (e != 0) {
      // an optional [?#] query takes the rest of the run
      const q = e < re ? load<u8>(text + e) : 0;
      store<usize>(URL_COUNT, emit(text, out, load<usize>(URL_COUNT), cap, <usize>p, q == QUESTION || q == HASH ? re : e));
    }
    return re;
  }
  const both = urlRunSimd(text, len, c);
  const re = <usize>(both >>> 32);
  const e = <usize>(both & 0xffffffff);
  // Whether a run holds a match is data: write the pair regardless and count
  // it only if real (scan_max_pairs leaves room for that one extra write).
  const q = load<u8>(text + e);
  let end = select<usize>(e, <usize>p, e != 0);
  // A query takes the rest of the run, which may end in noise; an extension
  // ends in a letter, which never is.
  if ((e != 0) & (e < re) & ((q == QUESTION) | (q == HASH))) end = stripEnd(text, <usize>p, re);
  const n = load<usize>(URL_COUNT);
  if (n > cap) unreachable(); // the bounds are proven, so this is a bug: trap loudly
  store<u32>(out + (n << 3), <u32>p);
  store<u32>(out + (n << 3) + 4, <u32>end);
  store<usize>(URL_COUNT, n + <usize>(end > <usize>p));
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

/** Lanes where a prefix may start: its first byte at a0, its second at a1
 * (unless w: none) and its third at a2 (unless x: none). */
@inline function prefixMask(a0: v128, a1: v128, a2: v128, f: v128, s: v128, t: v128, w: v128, x: v128): v128 {
  return v128.and(i8x16.eq(a0, f), v128.and(v128.or(i8x16.eq(a1, s), w), v128.or(i8x16.eq(a2, t), x)));
}

/**
 * Candidates among the 16 bytes at `at`, one bit per lane: "://" (URL) or
 * the first three bytes of a prefix (SANDBOX; `n` prefixes, a constant at
 * the call sites that can fold it). One mask for both passes halves the
 * bitmask work of a sweep that mostly finds nothing; the byte at a
 * candidate tells the passes apart. `short`: some prefix has < 3 bytes.
 */
@inline function candidateBits(
  at: usize, n: u32, short: bool,
  f0: v128, s0: v128, t0: v128, w0: v128, x0: v128,
  f1: v128, s1: v128, t1: v128, w1: v128, x1: v128,
  f2: v128, s2: v128, t2: v128, w2: v128, x2: v128,
  f3: v128, s3: v128, t3: v128, w3: v128, x3: v128,
): i32 {
  const a0 = v128.load(at);
  const a1 = v128.load(at + 1);
  const a2 = v128.load(at + 2);
  const slash = i8x16.splat(SLASH);
  let m = v128.and(i8x16.eq(a0, i8x16.splat(COLON)), v128.and(i8x16.eq(a1, slash), i8x16.eq(a2, slash)));
  if (n > 0) {
    m = v128.or(m, short
      ? prefixMask(a0, a1, a2, f0, s0, t0, w0, x0)
      : v128.and(i8x16.eq(a0, f0), v128.and(i8x16.eq(a1, s0), i8x16.eq(a2, t0))));
  }
  if (n > 1) m = v128.or(m, prefixMask(a0, a1, a2, f1, s1, t1, w1, x1));
  if (n > 2) m = v128.or(m, prefixMask(a0, a1, a2, f2, s2, t2, w2, x2));
  if (n > 3) m = v128.or(m, prefixMask(a0, a1, a2, f3, s3, t3, w3, x3));
  return i8x16.bitmask(m);
}

/**
 * Both passes in one SIMD sweep, 32 bytes per step (64 keep more vectors live
 * than x64 has registers, and the spills cost more than the saved steps):
 * each block is compared with "://" (URL candidates) and with the first three
 * bytes of up to four prefixes (SANDBOX candidates). Candidates are settled in position order;
 * each pass keeps its own cursor, so the passes stay independent. SANDBOX
 * pairs go to `out`, URL pairs to the region after the SANDBOX bound and are
 * moved down at the end.
 * `n` is how many prefixes the sweep compares (0 when the scalar SANDBOX
 * pass ran instead, or there are none): a constant at each inlined call
 * site, as is `short`, so the common one-long-prefix sweep carries nothing
 * for the others (fewer live vectors to spill around calls).
 * Reads up to 16 bytes before text; after text + len, the sweep reads up to
 * 34 bytes and a run's step up to 64 (all masked; see scan_text).
 */
@inline function scanSimd(text: usize, len: usize, table: usize, count: u32, out: usize, n: u32, short: bool): usize {
  const sBound = sandboxBound(len, table, count);
  const uBound = urlBound(len);
  const uOut = out + (sBound << 3);
  let ns: usize = n == 0 && count > 0 ? sandboxScalarFrom(text, len, 0, table, count, out, 0, sBound, true) : 0;

  // Per prefix: first, second and third byte, and all-ones "no such byte" masks.
  const zero = i8x16.splat(0);
  let f0 = zero, s0 = zero, t0 = zero, w0 = zero, x0 = zero;
  let f1 = zero, s1 = zero, t1 = zero, w1 = zero, x1 = zero;
  let f2 = zero, s2 = zero, t2 = zero, w2 = zero, x2 = zero;
  let f3 = zero, s3 = zero, t3 = zero, w3 = zero, x3 = zero;
  for (let k: u32 = 0; k < n; k++) {
    const e = table + (<usize>k << 3);
    const ptr = <usize>load<u32>(e);
    const plen = load<u32>(e + 4);
    const f = i8x16.splat(load<i8>(ptr));
    const s = i8x16.splat(plen > 1 ? load<i8>(ptr + 1) : 0);
    const t = i8x16.splat(plen > 2 ? load<i8>(ptr + 2) : 0);
    const w = i8x16.splat(plen > 1 ? 0 : -1);
    const x = i8x16.splat(plen > 2 ? 0 : -1);
    if (k == 0) { f0 = f; s0 = s; t0 = t; w0 = w; x0 = x; }
    else if (k == 1) { f1 = f; s1 = s; t1 = t; w1 = w; x1 = x; }
    else if (k == 2) { f2 = f; s2 = s; t2 = t; w2 = w; x2 = x; }
    else { f3 = f; s3 = s; t3 = t; w3 = w; x3 = x; }
  }

  store<usize>(URL_COUNT, 0);
  let sCur: usize = n > 0 ? 0 : len; // len: no SANDBOX candidate is ever taken
  let uCur: usize = 0;
  let p: usize = 0;
  while (p < len) {
    // the last steps read up to 34 bytes on, into the slack: masked below
    const at = text + p;
    let cand = <u32>candidateBits(at, n, short, f0, s0, t0, w0, x0, f1, s1, t1, w1, x1, f2, s2, t2, w2, x2, f3, s3, t3, w3, x3) |
      (<u32>candidateBits(at + 16, n, short, f0, s0, t0, w0, x0, f1, s1, t1, w1, x1, f2, s2, t2, w2, x2, f3, s3, t3, w3, x3) << 16);
    // a SANDBOX match needs q + 1 < len ("://" needs q + 2 < len: checked below)
    if (p + 34 > len) cand &= <u32>lanes64(len - p - 1);
    // The passes are independent: each takes the candidates at or past its cursor.
    while (cand != 0) {
      const q = p + <usize>ctz(cand);
      cand &= cand - 1;
      const b = load<u8>(text + q);
      // a candidate may be both (a prefix may start with "://")
      if (b == COLON && q >= uCur && q + 2 < len && load<u16>(text + q + 1) == SLASH2) {
        const re = urlRunAt(text, len, q, uOut, uBound, true);
        if (re != 0) uCur = re; // the rest of this run can hold no other match
      }
      if (q >= sCur && load<u8>(FIRST + b) != 0) {
        // n == count here (n > 0): a constant where the call site fixes it
        const end = sandboxEndAt(text, len, q, table, n, true);
        if (end >= 0) {
          ns = emit(text, out, ns, sBound, q, <usize>end);
          sCur = <usize>end;
        }
      }
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
  // + 1: the SIMD URL pass writes one pair past its count when a run has no match
  return sandboxBound(len, table, count) + urlBound(len) + 1;
}

/**
 * Scan `len` UTF-8 bytes at `text` (SIMD candidate search). Writes SANDBOX
 * pairs then URL pairs at `out`; returns the number of pairs.
 * Preconditions: text, the prefix table and its bytes, and
 * scan_max_pairs(len, table, count) * 8 bytes at `out` (4-aligned) lie in
 * reserved memory and do not overlap; 16 bytes before `text` (text >= 16) and
 * 80 after `text + len` are readable (their values are ignored: SIMD steps
 * that straddle the ends are masked). No alignment needed for `text`.
 * More than four prefixes, or an empty one, use the scalar SANDBOX pass.
 */
export function scan_text(text: usize, len: usize, table: usize, count: u32, out: usize): usize {
  markFirstBytes(table, count);
  // The sweep compares up to four non-empty prefixes; otherwise the scalar SANDBOX pass runs.
  let simdPrefixes = count <= 4;
  let short = false;
  for (let k: u32 = 0; k < count; k++) {
    const plen = load<u32>(table + (<usize>k << 3) + 4);
    if (plen == 0) simdPrefixes = false;
    if (plen < 3) short = true;
  }
  if (!simdPrefixes || count == 0) return scanNoPrefix(text, len, table, count, out);
  if (count == 1 && !short) return scanOnePrefix(text, len, table, count, out);
  return scanPrefixes(text, len, table, count, out);
}

// One function per sweep, each with its own constant `n`: inlined side by side
// into scan_text, identical code around different constants gets merged by the
// optimizer, and the merged sweep tests `n` at run time in its hot loop.
function scanNoPrefix(text: usize, len: usize, table: usize, count: u32, out: usize): usize {
  return scanSimd(text, len, table, count, out, 0, false);
}
function scanOnePrefix(text: usize, len: usize, table: usize, count: u32, out: usize): usize {
  return scanSimd(text, len, table, count, out, 1, false);
}
function scanPrefixes(text: usize, len: usize, table: usize, count: u32, out: usize): usize {
  return scanSimd(text, len, table, count, out, count, true);
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

/** UTF-16 units the `live` lanes of the 16 UTF-8 bytes in v make: their
 * non-continuation bytes, plus one more per 4-byte lead. */
@inline function unitsIn(v: v128, live: i32, notCont: v128, astral: v128): usize {
  return <usize>popcnt(i8x16.bitmask(i8x16.gt_s(v, notCont)) & live) + <usize>popcnt(i8x16.bitmask(i8x16.ge_u(v, astral)) & live);
}

/**
 * Turn `count` u32 byte offsets at `offsets` (into the `len` UTF-8 bytes at
 * `text`) into UTF-16 offsets, in place. Each UTF-8 character is one UTF-16
 * unit except 4-byte ones (two). Preconditions: text is valid UTF-8 (as
 * TextEncoder writes it), every offset is a character boundary <= len, and
 * 64 bytes after text + len are readable (masked steps end each count).
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
    // which run is next is data: selects, not branches (the loads past a run are discarded)
    const a = select<u32>(load<u32>(offsets + (<usize>i << 2)), u32.MAX_VALUE, i < split);
    const b = select<u32>(load<u32>(offsets + (<usize>j << 2)), u32.MAX_VALUE, j < count);
    const takeA = a <= b;
    const at = offsets + (<usize>select<u32>(i, j, takeA) << 2);
    i += <u32>takeA;
    j += <u32>!takeA;
    const o = <usize>min(a, b);
    if (o < pos) {
      pos = 0;
      units = 0;
    }
    // one loop per offset (its exit is the one unpredictable branch), 64 bytes
    // per step, the last one masked; mostly-ASCII text takes one test per step
    while (pos < o) {
      const step = min(o - pos, 64);
      const p = text + pos;
      if (i8x16.bitmask(v128.or(v128.or(v128.load(p), v128.load(p, 16)), v128.or(v128.load(p, 32), v128.load(p, 48)))) == 0) {
        units += step;
      } else {
        units += unitsIn(v128.load(p), lanes(step), notCont, astral) + unitsIn(v128.load(p, 16), lanes(step - min(step, 16)), notCont, astral) +
          unitsIn(v128.load(p, 32), lanes(step - min(step, 32)), notCont, astral) + unitsIn(v128.load(p, 48), lanes(step - min(step, 48)), notCont, astral);
      }
      pos += step;
    }
    store<u32>(at, <u32>units);
  }
}

// ---- Input ------------------------------------------------------------------

/**
 * Write the `units` UTF-16 code units at `src` as UTF-8 at `dst`, exactly as
 * TextEncoder does (a lone surrogate becomes U+FFFD); returns the bytes
 * written. Why: the host copies a string's UTF-16 out at memory speed, and
 * mostly-ASCII text narrows here 16 units per step, several times faster
 * than the host's own UTF-8 encoder.
 * Preconditions: src >= dst + units (in place: with src == dst + units the
 * output, at most 3 bytes per unit, never overtakes the unread input), and
 * 3 * units bytes from dst are reserved.
 */
export function scan_utf16_to_utf8(src: usize, units: usize, dst: usize): usize {
  const nonAscii = i16x8.splat(<i16>0xff80);
  let i: usize = 0;
  let o = dst;
  while (i < units) {
    if (i + 16 <= units) {
      const a = v128.load(src + (i << 1));
      const b = v128.load(src + (i << 1), 16);
      if (!v128.any_true(v128.and(v128.or(a, b), nonAscii))) {
        v128.store(o, i8x16.narrow_i16x8_u(a, b));
        o += 16;
        i += 16;
        continue;
      }
    }
    // a block with a non-ASCII unit (or the tail): one unit at a time
    const stop = min(units, i + 16);
    while (i < stop) {
      let c = <u32>load<u16>(src + (i << 1));
      if (c < 0x80) {
        store<u8>(o, <u8>c);
        o += 1;
        i += 1;
      } else if (c < 0x800) {
        store<u16>(o, <u16>(0xc0 | (c >> 6) | ((0x80 | (c & 0x3f)) << 8)));
        o += 2;
        i += 1;
      } else {
        if ((c & 0xf800) == 0xd800) {
          const c2 = i + 1 < units ? <u32>load<u16>(src + ((i + 1) << 1)) : 0;
          if (c < 0xdc00 && (c2 & 0xfc00) == 0xdc00) {
            const cp = 0x10000 + ((c - 0xd800) << 10) + (c2 - 0xdc00);
            store<u32>(o, 0xf0 | (cp >> 18) | ((0x80 | ((cp >> 12) & 0x3f)) << 8) | ((0x80 | ((cp >> 6) & 0x3f)) << 16) | ((0x80 | (cp & 0x3f)) << 24));
            o += 4;
            i += 2;
            continue;
          }
          c = 0xfffd; // a lone surrogate
        }
        store<u16>(o, <u16>(0xe0 | (c >> 12) | ((0x80 | ((c >> 6) & 0x3f)) << 8)));
        store<u8>(o + 2, <u8>(0x80 | (c & 0x3f)));
        o += 3;
        i += 1;
      }
    }
  }
  return o - dst;
}

// ---- Repeats ----------------------------------------------------------------

/** 2^64 / golden ratio: spreads the bits of each word (this filter's hash and lines.ts's). */
export const HASH_MUL: u64 = 0x9e3779b97f4a7c15;
const ONES: u64 = 0x0101010101010101;
const HIGHS: u64 = 0x8080808080808080;
const EF_BYTES: u64 = 0xefefefefefefefef;

/** Non-zero when some byte of w is 0xEF (the exact zero-byte test on w ^ EF..EF). */
@inline function hasEF(w: u64): u64 {
  const x = w ^ EF_BYTES;
  return (x - ONES) & ~x & HIGHS;
}

/**
 * Probes before a lookup of this filter or of lines.ts's entry table gives
 * up: at a quarter load a fair hash needs a few (at half load, runs past 32
 * turned up by chance once a line had tens of thousands of references), and
 * the hash is unkeyed, so references crafted to collide would otherwise make
 * every lookup walk one growing cluster (quadratic time, DESIGN §3). A lookup
 * that gives up leaves the comparing to the host, which does it by string.
 */
export const MAX_PROBES: u32 = 32;

/**
 * Drop repeated references, keeping each one's first pair, in order: the
 * `count` pairs at `pairs` are compacted in place. Returns (kept << 1) |
 * ambiguous. Byte strings are compared, which is string equality except
 * where TextEncoder wrote U+FFFD for a lone surrogate (EF BF BD): a pair
 * holding any 0xEF byte is always kept and sets `ambiguous`, and the host
 * then compares strings itself (rare: U+F000..U+FFFF or lone surrogates).
 * So does a pair whose lookup ran MAX_PROBES slots (crafted collisions,
 * or a rare long run): kept without a slot, a repeat of it may be kept too.
 * Preconditions: pairs from scan_text over these bytes (non-empty, <= len,
 * 8 bytes after text + len readable); max(32 * count, 64) bytes of scratch
 * at `table` (4-aligned), not overlapping the rest.
 */
export function scan_dedup(text: usize, pairs: usize, count: u32, table: usize): u32 {
  // open addressing at <= 25% load: 2^bits >= 4 * count slots of (kept index + 1)
  const bits: u64 = <u64>max(4, 32 - <i32>clz(count << 2));
  const mask = (<u32>1 << <u32>bits) - 1;
  memory.fill(table, 0, <usize>(mask + 1) << 2);
  let kept: u32 = 0;
  let ambiguous: u32 = 0;
  for (let i: u32 = 0; i < count; i++) {
    const start = load<u32>(pairs + (<usize>i << 3));
    const end = load<u32>(pairs + (<usize>i << 3) + 4);
    const n = <usize>(end - start);
    let p = text + start;
    let r = n;
    let h = <u64>n * HASH_MUL;
    let ef: u64 = 0;
    while (r >= 8) {
      const w = load<u64>(p);
      h = (h ^ w) * HASH_MUL;
      ef |= hasEF(w);
      p += 8;
      r -= 8;
    }
    if (r > 0) {
      // the tail word reads past the pair (into the text or its slack): those bytes are masked to 0
      const w = load<u64>(p) & ((<u64>1 << (<u64>r << 3)) - 1);
      h = (h ^ w) * HASH_MUL;
      ef |= hasEF(w);
    }
    let keep = true;
    if (ef != 0) {
      ambiguous = 1;
    } else {
      let slot = <u32>(h >>> (64 - bits)); // the top bits: the best mixed
      for (let probes: u32 = 0; ; probes++) {
        if (probes == MAX_PROBES) {
          ambiguous = 1;
          break;
        }
        const v = load<u32>(table + (<usize>slot << 2));
        if (v == 0) {
          store<u32>(table + (<usize>slot << 2), kept + 1);
          break;
        }
        const other = pairs + (<usize>(v - 1) << 3);
        const os = load<u32>(other);
        if (load<u32>(other + 4) - os == <u32>n && bytesEqual(text + os, text + start, n)) {
          keep = false;
          break;
        }
        slot = (slot + 1) & mask;
      }
    }
    if (keep) {
      store<u32>(pairs + (<usize>kept << 3), start);
      store<u32>(pairs + (<usize>kept << 3) + 4, end);
      kept++;
    }
  }
  return (kept << 1) | ambiguous;
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
