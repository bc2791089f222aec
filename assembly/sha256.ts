// SHA-256 (FIPS 180-4) over bytes the host has laid out in the arena.
//
// Preconditions for every export: each (ptr, len) range and each output range
// lies inside reserved memory; ranges may sit anywhere (no alignment needed).
// Nothing is allocated: round constants, message schedules, chaining states
// and padded tails live in static data, the working state in locals.
// Not reentrant (static scratch), which a single-threaded instance never needs.
//
// Two tiers with one batch signature: `sha256_batch_hex_scalar` hashes one
// message at a time; `sha256_batch_hex` hashes four at a time, one per 32-bit
// SIMD lane, which is what makes a batch cheaper than a loop of single calls.
// The one-message tier (also behind the single-hash exports) keeps its rounds
// scalar but computes the message schedule four words at a time in SIMD.
// Both run their 64 rounds unrolled by eight, so the working variables rotate
// by renaming instead of eight register moves per round, and both write hex
// with SIMD (16 digits per swizzle). Batch members that start with the same
// whole 64-byte block (one tool result's handles) compress it once: its state
// is kept and reused (see firstBlock). `sha256_counter_texts` lays out one
// result's handle texts from their shared prefix and suffix.
import { copyOver, putDecimal } from "./memory";

// Round constants: first 32 bits of the fractional parts of the cube roots of
// the first 64 primes.
const K: usize = memory.data<u32>([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

// Initial state: first 32 bits of the fractional parts of the square roots of
// the first 8 primes.
const IV: usize = memory.data<u32>([
  0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
]);

// Lowercase hex digits: one lookup per nibble beats branching on 9 < nibble.
const HEX: usize = memory.data<u8>([
  0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66,
]);

const LANES: u32 = 4;
const BLOCK: usize = 64;
// The 64-bit bit length fills the last 8 bytes of the final block, so a tail
// longer than 55 bytes (plus the 0x80 marker) spills into a second block.
const MAX_ONE_BLOCK_TAIL: usize = 55;

// One-message tier.
const WK: usize = memory.data(64 * 4, 16); // schedule plus round constants
const H: usize = memory.data(8 * 4, 16); // chaining state between blocks
const TAIL: usize = memory.data(2 * <i32>BLOCK, 16); // last one or two padded blocks

// SIMD tier: word t (or state word k) of lane l sits at 16 * t + 4 * l.
const VW: usize = memory.data(64 * 16, 16);
const VH: usize = memory.data(8 * 16, 16);
const VTAIL: usize = memory.data(<i32>LANES * 2 * <i32>BLOCK, 16); // lane l's tail at l * 128
const LANE_PTR: usize = memory.data(<i32>LANES * 4, 16);
const LANE_FULL: usize = memory.data(<i32>LANES * 4, 16); // whole blocks read in place
const LANE_BLOCKS: usize = memory.data(<i32>LANES * 4, 16); // whole blocks + padded tail blocks

@inline function bigSigma0(x: u32): u32 { return rotr<u32>(x, 2) ^ rotr<u32>(x, 13) ^ rotr<u32>(x, 22); }
@inline function bigSigma1(x: u32): u32 { return rotr<u32>(x, 6) ^ rotr<u32>(x, 11) ^ rotr<u32>(x, 25); }
// Choose f or g by the bits of e (one operation fewer than the textbook form).
@inline function ch(e: u32, f: u32, g: u32): u32 { return g ^ (e & (f ^ g)); }

// SIMD helpers (both tiers) -----------------------------------------------------

/** Byte-swap each 32-bit word: big-endian message words from little-endian loads. */
@inline function bswapWords(v: v128): v128 {
  return i8x16.shuffle(v, v, 3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12);
}

// wasm SIMD has no rotate: two shifts and an or.
@inline function vrotr(x: v128, n: i32): v128 { return v128.or(i32x4.shr_u(x, n), i32x4.shl(x, 32 - n)); }
@inline function vBigSigma0(x: v128): v128 { return v128.xor(v128.xor(vrotr(x, 2), vrotr(x, 13)), vrotr(x, 22)); }
@inline function vBigSigma1(x: v128): v128 { return v128.xor(v128.xor(vrotr(x, 6), vrotr(x, 11)), vrotr(x, 25)); }
@inline function vSmallSigma0(x: v128): v128 { return v128.xor(v128.xor(vrotr(x, 7), vrotr(x, 18)), i32x4.shr_u(x, 3)); }
@inline function vSmallSigma1(x: v128): v128 { return v128.xor(v128.xor(vrotr(x, 17), vrotr(x, 19)), i32x4.shr_u(x, 10)); }

/**
 * Pad the last `len % 64` bytes of a `len`-byte message at `ptr` into the one
 * or two blocks at `tail`; returns how many blocks it filled. Padding goes
 * into static scratch, never past the caller's input. Plain stores rather than
 * memory.fill/memory.copy: V8 compiles those to runtime calls, which cost more
 * than the at most 128 bytes they would move here.
 */
@inline function padTail(tail: usize, ptr: usize, len: usize): usize {
  const rest = len & (BLOCK - 1);
  const zero = i64x2.splat(0);
  v128.store(tail, zero, 0);
  v128.store(tail, zero, 16);
  v128.store(tail, zero, 32);
  v128.store(tail, zero, 48);
  v128.store(tail, zero, 64);
  v128.store(tail, zero, 80);
  v128.store(tail, zero, 96);
  v128.store(tail, zero, 112);
  const src = ptr + len - rest;
  // Whole chunks, then one last chunk ending exactly at `rest` (it may overlap
  // the previous one): no byte loop, and no read past the message.
  if (rest >= 16) {
    for (let o: usize = 0; o + 16 <= rest; o += 16) v128.store(tail + o, v128.load(src + o));
    v128.store(tail + rest - 16, v128.load(src + rest - 16));
  } else if (rest >= 8) {
    store<u64>(tail, load<u64>(src));
    store<u64>(tail + rest - 8, load<u64>(src + rest - 8));
  } else if (rest >= 4) {
    store<u32>(tail, load<u32>(src));
    store<u32>(tail + rest - 4, load<u32>(src + rest - 4));
  } else {
    for (let o: usize = 0; o < rest; o++) store<u8>(tail + o, load<u8>(src + o));
  }
  store<u8>(tail + rest, 0x80);
  const tailLen: usize = rest > MAX_ONE_BLOCK_TAIL ? 2 * BLOCK : BLOCK;
  store<u64>(tail + tailLen - 8, bswap<u64>(<u64>len << 3));
  return tailLen >> 6;
}

/**
 * Schedule words W[t..t+3] from x0 = W[t-16..t-13] .. x3 = W[t-4..t-1]:
 * W[t] = σ1(W[t-2]) + W[t-7] + σ0(W[t-15]) + W[t-16]. Everything but the σ1
 * term is four independent sums; W[t+2] and W[t+3] need σ1 of W[t] and
 * W[t+1], so σ1 runs twice, first on the last two old words, then on the
 * first two new ones. About a third of the instructions of four scalar words.
 */
@inline function scheduleQuad(x0: v128, x1: v128, x2: v128, x3: v128): v128 {
  const w15 = v128.shuffle<u32>(x0, x1, 1, 2, 3, 4); // W[t-15..t-12]
  const w7 = v128.shuffle<u32>(x2, x3, 1, 2, 3, 4); // W[t-7..t-4]
  const s = i32x4.add(i32x4.add(x0, w7), vSmallSigma0(w15));
  // Lanes 0-1: σ1(W[t-2]), σ1(W[t-1]); lanes 2-3 are not used.
  const low = vSmallSigma1(v128.shuffle<u32>(x3, x3, 2, 3, 2, 3));
  const first = i32x4.add(s, low); // W[t], W[t+1] in lanes 0-1
  // Lanes 2-3: σ1(W[t]), σ1(W[t+1]).
  const high = vSmallSigma1(v128.shuffle<u32>(first, first, 0, 1, 0, 1));
  return i32x4.add(s, v128.shuffle<u32>(low, high, 0, 1, 6, 7));
}

/** Fold one 64-byte block at `p` into the state at H. */
function compress(p: usize): void {
  // Message words are big-endian; wasm loads are little-endian. The schedule
  // is computed four words at a time in registers (see scheduleQuad); the
  // rounds then read K[t] + W[t] with one load each.
  let x0 = bswapWords(v128.load(p, 0));
  let x1 = bswapWords(v128.load(p, 16));
  let x2 = bswapWords(v128.load(p, 32));
  let x3 = bswapWords(v128.load(p, 48));
  v128.store(WK, i32x4.add(x0, v128.load(K, 0)), 0);
  v128.store(WK, i32x4.add(x1, v128.load(K, 16)), 16);
  v128.store(WK, i32x4.add(x2, v128.load(K, 32)), 32);
  v128.store(WK, i32x4.add(x3, v128.load(K, 48)), 48);
  for (let i: usize = 64; i < 256; i += 16) {
    const x4 = scheduleQuad(x0, x1, x2, x3);
    v128.store(WK + i, i32x4.add(x4, v128.load(K + i)));
    x0 = x1;
    x1 = x2;
    x2 = x3;
    x3 = x4;
  }
  let a = load<u32>(H, 0);
  let b = load<u32>(H, 4);
  let c = load<u32>(H, 8);
  let d = load<u32>(H, 12);
  let e = load<u32>(H, 16);
  let f = load<u32>(H, 20);
  let g = load<u32>(H, 24);
  let h = load<u32>(H, 28);
  // Eight rounds per iteration, each naming the variables one place further
  // on, so the state rotates by renaming. Each round's a ^ b is the next
  // round's b ^ c, which makes the majority three operations instead of four.
  let bc = b ^ c;
  let ab: u32;
  let t: u32;
  for (let i: usize = 0; i < 256; i += 32) {
    t = h + bigSigma1(e) + ch(e, f, g) + load<u32>(WK + i, 0);
    d += t; ab = a ^ b; h = t + bigSigma0(a) + (b ^ (ab & bc)); bc = ab;
    t = g + bigSigma1(d) + ch(d, e, f) + load<u32>(WK + i, 4);
    c += t; ab = h ^ a; g = t + bigSigma0(h) + (a ^ (ab & bc)); bc = ab;
    t = f + bigSigma1(c) + ch(c, d, e) + load<u32>(WK + i, 8);
    b += t; ab = g ^ h; f = t + bigSigma0(g) + (h ^ (ab & bc)); bc = ab;
    t = e + bigSigma1(b) + ch(b, c, d) + load<u32>(WK + i, 12);
    a += t; ab = f ^ g; e = t + bigSigma0(f) + (g ^ (ab & bc)); bc = ab;
    t = d + bigSigma1(a) + ch(a, b, c) + load<u32>(WK + i, 16);
    h += t; ab = e ^ f; d = t + bigSigma0(e) + (f ^ (ab & bc)); bc = ab;
    t = c + bigSigma1(h) + ch(h, a, b) + load<u32>(WK + i, 20);
    g += t; ab = d ^ e; c = t + bigSigma0(d) + (e ^ (ab & bc)); bc = ab;
    t = b + bigSigma1(g) + ch(g, h, a) + load<u32>(WK + i, 24);
    f += t; ab = c ^ d; b = t + bigSigma0(c) + (d ^ (ab & bc)); bc = ab;
    t = a + bigSigma1(f) + ch(f, g, h) + load<u32>(WK + i, 28);
    e += t; ab = b ^ c; a = t + bigSigma0(b) + (c ^ (ab & bc)); bc = ab;
  }
  store<u32>(H, load<u32>(H, 0) + a, 0);
  store<u32>(H, load<u32>(H, 4) + b, 4);
  store<u32>(H, load<u32>(H, 8) + c, 8);
  store<u32>(H, load<u32>(H, 12) + d, 12);
  store<u32>(H, load<u32>(H, 16) + e, 16);
  store<u32>(H, load<u32>(H, 20) + f, 20);
  store<u32>(H, load<u32>(H, 24) + g, 24);
  store<u32>(H, load<u32>(H, 28) + h, 28);
}

// Shared first block ---------------------------------------------------------
// The handles of one tool result share `threadId:toolCallId:callIndex:`, which
// with provider ids is usually 64 bytes or more: the whole first block. Its
// chaining state is kept here and reused while the first block stays the same,
// so each such message costs one compression instead of two.
const PREFIX_BLOCK: usize = memory.data(<i32>BLOCK, 16);
const PREFIX_STATE: usize = memory.data(8 * 4, 16);
let prefixValid = false;

/** Copy a 32-byte chaining state: two SIMD moves, not memory.copy (a runtime call in V8, see padTail). */
@inline function copyState(to: usize, from: usize): void {
  v128.store(to, v128.load(from));
  v128.store(to, v128.load(from, 16), 16);
}

/** Whether the 64 bytes at `a` and `b` are equal. */
@inline function sameBlock(a: usize, b: usize): bool {
  const diff = v128.or(
    v128.or(v128.xor(v128.load(a, 0), v128.load(b, 0)), v128.xor(v128.load(a, 16), v128.load(b, 16))),
    v128.or(v128.xor(v128.load(a, 32), v128.load(b, 32)), v128.xor(v128.load(a, 48), v128.load(b, 48))),
  );
  return !v128.any_true(diff);
}

/**
 * Leave at H the chaining state after the whole first block at `p`: from the
 * kept state when the block is the kept one, else compressed and kept.
 */
function firstBlock(p: usize): void {
  if (prefixValid && sameBlock(p, PREFIX_BLOCK)) {
    copyState(H, PREFIX_STATE);
    return;
  }
  copyState(H, IV);
  compress(p);
  copyOver(PREFIX_BLOCK, p, BLOCK);
  copyState(PREFIX_STATE, H);
  prefixValid = true;
}

/**
 * Hash `len` bytes at `ptr`; the digest is left as 8 native words at H. With
 * `shared`, a whole first block goes through the kept state (batch members
 * often share it; single calls rarely do, so they skip the check).
 */
function digest(ptr: usize, len: usize, shared: bool = false): void {
  const full = ptr + (len & ~(BLOCK - 1));
  let p = ptr;
  if (shared && p < full) {
    firstBlock(p);
    p += BLOCK;
  } else {
    copyState(H, IV);
  }
  for (; p < full; p += BLOCK) compress(p);
  const tailBlocks = padTail(TAIL, ptr, len);
  compress(TAIL);
  if (tailBlocks > 1) compress(TAIL + BLOCK);
}

/**
 * Hex of the first `words` (1 to 4) 32-bit lanes of `v` at `out`, most
 * significant digit first: 16 digits per table swizzle instead of one load
 * and one store per digit.
 */
@inline function storeHex(out: usize, v: v128, words: usize): void {
  const bytes = bswapWords(v);
  const hi = i8x16.shr_u(bytes, 4);
  const lo = v128.and(bytes, i8x16.splat(0x0f));
  const digits = v128.load(HEX);
  const first = i8x16.swizzle(digits, i8x16.shuffle(hi, lo, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23));
  if (words >= 2) v128.store(out, first);
  else v128.store64_lane(out, first, 0);
  if (words > 2) {
    const second = i8x16.swizzle(digits, i8x16.shuffle(hi, lo, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31));
    if (words == 4) v128.store(out, second, 16);
    else v128.store64_lane(out, second, 0, 16);
  }
}

/**
 * The first `chars` hex digits (a multiple of 8, 8 to 64) of a digest whose
 * words 0-3 are `lo` and words 4-7 are `hi`.
 */
@inline function writeHex(out: usize, chars: usize, lo: v128, hi: v128): void {
  const words = chars >> 3;
  storeHex(out, lo, words < 4 ? words : 4);
  if (words > 4) storeHex(out + 32, hi, words - 4);
}

// SIMD tier ---------------------------------------------------------------------

/** h + Σ1(e) + Ch(e, f, g) + K[t] + W[t] for round t = i / 4. */
@inline function vT1(h: v128, e: v128, f: v128, g: v128, i: usize): v128 {
  return i32x4.add(i32x4.add(h, vBigSigma1(e)), i32x4.add(v128.bitselect(f, g, e), vwk(i)));
}
/**
 * Σ0(a) + Maj(a, b, c), given ab = a ^ b and bc = b ^ c: where a and b agree
 * the majority is b, elsewhere it is c = b ^ (b ^ c).
 */
@inline function vT2(a: v128, b: v128, ab: v128, bc: v128): v128 {
  return i32x4.add(vBigSigma0(a), v128.xor(b, v128.and(ab, bc)));
}
// Schedule word plus the round constant for round i / 4.
@inline function vwk(i: usize): v128 {
  return i32x4.add(v128.load(VW + i * 4), v128.load32_splat(K + i));
}

/**
 * Load 16 bytes from each lane's block at `p0..p3` (words q*4 .. q*4+3) and
 * store them as schedule words with one lane per message: two rounds of
 * shuffles transpose the 4x4 words and byte-swap them on the way.
 */
@inline function gatherQuarter(p0: usize, p1: usize, p2: usize, p3: usize, q: usize): void {
  const r0 = v128.load(p0 + q * 16);
  const r1 = v128.load(p1 + q * 16);
  const r2 = v128.load(p2 + q * 16);
  const r3 = v128.load(p3 + q * 16);
  // [r0.w0, r1.w0, r0.w1, r1.w1] and [r0.w2, r1.w2, r0.w3, r1.w3], byte-swapped.
  const lo01 = i8x16.shuffle(r0, r1, 3, 2, 1, 0, 19, 18, 17, 16, 7, 6, 5, 4, 23, 22, 21, 20);
  const hi01 = i8x16.shuffle(r0, r1, 11, 10, 9, 8, 27, 26, 25, 24, 15, 14, 13, 12, 31, 30, 29, 28);
  const lo23 = i8x16.shuffle(r2, r3, 3, 2, 1, 0, 19, 18, 17, 16, 7, 6, 5, 4, 23, 22, 21, 20);
  const hi23 = i8x16.shuffle(r2, r3, 11, 10, 9, 8, 27, 26, 25, 24, 15, 14, 13, 12, 31, 30, 29, 28);
  const at = VW + q * 64;
  v128.store(at, i8x16.shuffle(lo01, lo23, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23));
  v128.store(at, i8x16.shuffle(lo01, lo23, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31), 16);
  v128.store(at, i8x16.shuffle(hi01, hi23, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23), 32);
  v128.store(at, i8x16.shuffle(hi01, hi23, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31), 48);
}

/** Where lane `l` reads its block `b`: in place, its padded tail, or (done) anything. */
@inline function laneBlock(l: usize, b: u32): usize {
  const full = load<u32>(LANE_FULL + l * 4);
  if (b < full) return <usize>load<u32>(LANE_PTR + l * 4) + (<usize>b << 6);
  const tail = VTAIL + l * 2 * BLOCK;
  return b < load<u32>(LANE_BLOCKS + l * 4) ? tail + (<usize>(b - full) << 6) : tail;
}

/** Fold block `blk` of every lane into VH; lanes whose message has ended keep their state. */
function compressLanes(blk: u32): void {
  const p0 = laneBlock(0, blk);
  const p1 = laneBlock(1, blk);
  const p2 = laneBlock(2, blk);
  const p3 = laneBlock(3, blk);
  gatherQuarter(p0, p1, p2, p3, 0);
  gatherQuarter(p0, p1, p2, p3, 1);
  gatherQuarter(p0, p1, p2, p3, 2);
  gatherQuarter(p0, p1, p2, p3, 3);
  for (let i: usize = 256; i < 1024; i += 16) {
    const w = i32x4.add(
      i32x4.add(vSmallSigma1(v128.load(VW + i - 32)), v128.load(VW + i - 112)),
      i32x4.add(vSmallSigma0(v128.load(VW + i - 240)), v128.load(VW + i - 256)),
    );
    v128.store(VW + i, w);
  }
  let a = v128.load(VH, 0);
  let b = v128.load(VH, 16);
  let c = v128.load(VH, 32);
  let d = v128.load(VH, 48);
  let e = v128.load(VH, 64);
  let f = v128.load(VH, 80);
  let g = v128.load(VH, 96);
  let h = v128.load(VH, 112);
  // Unrolled by eight with the carried a ^ b, as in the scalar `compress`.
  let bc = v128.xor(b, c);
  let ab: v128;
  let t: v128;
  for (let i: usize = 0; i < 256; i += 32) {
    t = vT1(h, e, f, g, i);
    d = i32x4.add(d, t); ab = v128.xor(a, b); h = i32x4.add(t, vT2(a, b, ab, bc)); bc = ab;
    t = vT1(g, d, e, f, i + 4);
    c = i32x4.add(c, t); ab = v128.xor(h, a); g = i32x4.add(t, vT2(h, a, ab, bc)); bc = ab;
    t = vT1(f, c, d, e, i + 8);
    b = i32x4.add(b, t); ab = v128.xor(g, h); f = i32x4.add(t, vT2(g, h, ab, bc)); bc = ab;
    t = vT1(e, b, c, d, i + 12);
    a = i32x4.add(a, t); ab = v128.xor(f, g); e = i32x4.add(t, vT2(f, g, ab, bc)); bc = ab;
    t = vT1(d, a, b, c, i + 16);
    h = i32x4.add(h, t); ab = v128.xor(e, f); d = i32x4.add(t, vT2(e, f, ab, bc)); bc = ab;
    t = vT1(c, h, a, b, i + 20);
    g = i32x4.add(g, t); ab = v128.xor(d, e); c = i32x4.add(t, vT2(d, e, ab, bc)); bc = ab;
    t = vT1(b, g, h, a, i + 24);
    f = i32x4.add(f, t); ab = v128.xor(c, d); b = i32x4.add(t, vT2(c, d, ab, bc)); bc = ab;
    t = vT1(a, f, g, h, i + 28);
    e = i32x4.add(e, t); ab = v128.xor(b, c); a = i32x4.add(t, vT2(b, c, ab, bc)); bc = ab;
  }
  const live = i32x4.gt_u(v128.load(LANE_BLOCKS), i32x4.splat(blk));
  v128.store(VH, v128.bitselect(i32x4.add(v128.load(VH, 0), a), v128.load(VH, 0), live), 0);
  v128.store(VH, v128.bitselect(i32x4.add(v128.load(VH, 16), b), v128.load(VH, 16), live), 16);
  v128.store(VH, v128.bitselect(i32x4.add(v128.load(VH, 32), c), v128.load(VH, 32), live), 32);
  v128.store(VH, v128.bitselect(i32x4.add(v128.load(VH, 48), d), v128.load(VH, 48), live), 48);
  v128.store(VH, v128.bitselect(i32x4.add(v128.load(VH, 64), e), v128.load(VH, 64), live), 64);
  v128.store(VH, v128.bitselect(i32x4.add(v128.load(VH, 80), f), v128.load(VH, 80), live), 80);
  v128.store(VH, v128.bitselect(i32x4.add(v128.load(VH, 96), g), v128.load(VH, 96), live), 96);
  v128.store(VH, v128.bitselect(i32x4.add(v128.load(VH, 112), h), v128.load(VH, 112), live), 112);
}

/**
 * Hash table entries `first .. first + lanes - 1` (1..4) side by side; unused
 * lanes repeat the first entry, so they cost nothing extra and are not written.
 */
function digestLanes(table: usize, first: u32, lanes: u32, out: usize, chars: usize, stride: usize): void {
  let most: u32 = 0;
  let fewest: u32 = U32.MAX_VALUE;
  for (let l: u32 = 0; l < LANES; l++) {
    const entry = table + (<usize>(first + (l < lanes ? l : 0)) << 3);
    const ptr = <usize>load<u32>(entry);
    const len = <usize>load<u32>(entry, 4);
    const full = <u32>(len >> 6);
    const blocks = full + <u32>padTail(VTAIL + <usize>l * 2 * BLOCK, ptr, len);
    store<u32>(LANE_PTR + (<usize>l << 2), <u32>ptr);
    store<u32>(LANE_FULL + (<usize>l << 2), full);
    store<u32>(LANE_BLOCKS + (<usize>l << 2), blocks);
    if (blocks > most) most = blocks;
    if (full < fewest) fewest = full;
  }
  // Lanes that all start with the same whole block start after it, from its
  // state (see firstBlock); lane 0's block stands for all four.
  const p0 = <usize>load<u32>(LANE_PTR);
  const shared =
    fewest > 0 &&
    sameBlock(p0, <usize>load<u32>(LANE_PTR, 4)) &&
    sameBlock(p0, <usize>load<u32>(LANE_PTR, 8)) &&
    sameBlock(p0, <usize>load<u32>(LANE_PTR, 12));
  const state = shared ? H : IV;
  if (shared) firstBlock(p0);
  for (let k: usize = 0; k < 8; k++) v128.store(VH + k * 16, v128.load32_splat(state + k * 4));
  for (let b: u32 = shared ? 1 : 0; b < most; b++) compressLanes(b);
  // VH holds word k of every lane in row k: transpose rows 0-3 (and 4-7 when
  // more than 32 digits are asked for) into one vector of words per lane.
  const r0 = v128.load(VH, 0);
  const r1 = v128.load(VH, 16);
  const r2 = v128.load(VH, 32);
  const r3 = v128.load(VH, 48);
  const lo01 = v128.shuffle<u32>(r0, r1, 0, 4, 1, 5);
  const hi01 = v128.shuffle<u32>(r0, r1, 2, 6, 3, 7);
  const lo23 = v128.shuffle<u32>(r2, r3, 0, 4, 1, 5);
  const hi23 = v128.shuffle<u32>(r2, r3, 2, 6, 3, 7);
  let m0 = lo01;
  let m1 = lo01;
  let m2 = lo01;
  let m3 = lo01;
  if (chars > 32) {
    const r4 = v128.load(VH, 64);
    const r5 = v128.load(VH, 80);
    const r6 = v128.load(VH, 96);
    const r7 = v128.load(VH, 112);
    const lo45 = v128.shuffle<u32>(r4, r5, 0, 4, 1, 5);
    const hi45 = v128.shuffle<u32>(r4, r5, 2, 6, 3, 7);
    const lo67 = v128.shuffle<u32>(r6, r7, 0, 4, 1, 5);
    const hi67 = v128.shuffle<u32>(r6, r7, 2, 6, 3, 7);
    m0 = v128.shuffle<u32>(lo45, lo67, 0, 1, 4, 5);
    m1 = v128.shuffle<u32>(lo45, lo67, 2, 3, 6, 7);
    m2 = v128.shuffle<u32>(hi45, hi67, 0, 1, 4, 5);
    m3 = v128.shuffle<u32>(hi45, hi67, 2, 3, 6, 7);
  }
  const at = out + <usize>first * stride;
  writeHex(at, chars, v128.shuffle<u32>(lo01, lo23, 0, 1, 4, 5), m0);
  if (lanes > 1) writeHex(at + stride, chars, v128.shuffle<u32>(lo01, lo23, 2, 3, 6, 7), m1);
  if (lanes > 2) writeHex(at + 2 * stride, chars, v128.shuffle<u32>(hi01, hi23, 0, 1, 4, 5), m2);
  if (lanes > 3) writeHex(at + 3 * stride, chars, v128.shuffle<u32>(hi01, hi23, 2, 3, 6, 7), m3);
}

// Exports -----------------------------------------------------------------------

/**
 * The first 4 digest bytes as a big-endian u32: a short handle needs nothing
 * more, and a return value costs no memory round trip.
 */
export function sha256_head32(ptr: usize, len: usize): u32 {
  digest(ptr, len);
  return load<u32>(H);
}

/** SHA-256 of `len` bytes at `ptr` as 64 lowercase hex digits at `out`. */
export function sha256_hex(ptr: usize, len: usize, out: usize): void {
  digest(ptr, len);
  writeHex(out, 64, v128.load(H), v128.load(H, 16));
}

/**
 * Hash `count` messages in one call. `table` holds `count` pairs of u32
 * (absolute pointer, byte length); message i's first `chars` hex digits
 * (a multiple of 8, 8 to 64) go to `out + i * stride` (`stride` >= `chars`),
 * so the host can leave room for a prefix of its own before each one. Four
 * messages at a time, one per SIMD lane.
 */
export function sha256_batch_hex(table: usize, count: u32, out: usize, chars: usize, stride: usize): void {
  let i: u32 = 0;
  for (; i + LANES <= count; i += LANES) digestLanes(table, i, LANES, out, chars, stride);
  const rest = count - i;
  // A four-lane block costs a little over two scalar ones: one or two
  // leftover messages are cheaper on the scalar path.
  if (rest > 2) digestLanes(table, i, rest, out, chars, stride);
  else if (rest > 0) sha256_batch_hex_scalar(table + (<usize>i << 3), rest, out + <usize>i * stride, chars, stride);
}

/** Table entry `i`: the message from `start` to `end`. */
@inline function setEntry(table: usize, i: u32, start: usize, end: usize): void {
  const entry = table + (<usize>i << 3);
  store<u32>(entry, <u32>start);
  store<u32>(entry, <u32>(end - start), 4);
}

/**
 * Lay out `count` messages for the batch exports that differ only in a
 * counter: message i is the `prefixLen` bytes at `prefix`, then i in decimal,
 * then the `suffixLen` bytes at `suffix` (the handles of one tool result,
 * ordinals 0 .. count-1). The host encodes the shared part once and nothing
 * per message. Messages are written one after another from `dest`, and
 * message i's (pointer, length) goes to `table + i * 8`; returns the end of
 * the last one. Copies move 16 bytes at a time: prefix and suffix may be read
 * up to 15 bytes past their end, and up to 15 bytes past the returned end may
 * be written, so the host keeps that much reserved room after each.
 */
export function sha256_counter_texts(prefix: usize, prefixLen: usize, suffix: usize, suffixLen: usize, count: u32, dest: usize, table: usize): usize {
  let at = dest;
  for (let i: u32 = 0; i < count; i++) {
    const start = at;
    at = copyOver(putDecimal(copyOver(at, prefix, prefixLen), i), suffix, suffixLen);
    setEntry(table, i, start, at);
  }
  return at;
}

/** `sha256_batch_hex` one message at a time: the reference the SIMD tier is tested against. */
export function sha256_batch_hex_scalar(table: usize, count: u32, out: usize, chars: usize, stride: usize): void {
  for (let i: u32 = 0; i < count; i++) {
    const entry = table + (<usize>i << 3);
    digest(<usize>load<u32>(entry), <usize>load<u32>(entry, 4), true);
    writeHex(out + <usize>i * stride, chars, v128.load(H), v128.load(H, 16));
  }
}

// Ledger-key support -----------------------------------------------------------

const QUOTE: u8 = 0x22;
const BACKSLASH: u8 = 0x5c;
const FIRST_PRINTABLE: u8 = 0x20;
const PRINTABLE_SPAN: u8 = 0x7e - 0x20; // printable ASCII is 0x20..0x7e

/**
 * The number of double quotes in `len` bytes at `ptr` if every byte is
 * printable ASCII other than a backslash, else -1. The host writes ledger-key
 * JSON with its ids unescaped and checks the quote count against the JSON
 * structure: then no id needed escaping (Python's json.dumps escapes exactly
 * the quote, the backslash and everything outside 0x20..0x7e), so the text is
 * already what json.dumps writes. 16 bytes per step; any length, any alignment.
 */
export function sha256_plain_quotes(ptr: usize, len: usize): i32 {
  const quote = i8x16.splat(QUOTE);
  const backslash = i8x16.splat(BACKSLASH);
  const first = i8x16.splat(FIRST_PRINTABLE);
  const span = i8x16.splat(PRINTABLE_SPAN);
  let bad = i8x16.splat(0);
  let quotes: i32 = 0;
  const whole = ptr + (len & ~(<usize>15));
  let p = ptr;
  for (; p < whole; p += 16) {
    const v = v128.load(p);
    // Bytes below 0x20 wrap around to above the span after the subtraction.
    bad = v128.or(bad, v128.or(i8x16.gt_u(i8x16.sub(v, first), span), i8x16.eq(v, backslash)));
    quotes += popcnt<i32>(i8x16.bitmask(i8x16.eq(v, quote)));
  }
  let badTail = false;
  for (const end = ptr + len; p < end; p++) {
    const b = load<u8>(p);
    badTail = badTail || <u8>(b - FIRST_PRINTABLE) > PRINTABLE_SPAN || b == BACKSLASH;
    quotes += <i32>(b == QUOTE);
  }
  return badTail || v128.any_true(bad) ? -1 : quotes;
}
