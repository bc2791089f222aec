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

// Scalar tier.
const W: usize = memory.data(64 * 4, 16); // message schedule
const WK: usize = memory.data(64 * 4, 16); // schedule plus round constants
const H: usize = memory.data(8 * 4, 16); // chaining state between blocks
const TAIL: usize = memory.data(2 * BLOCK, 16); // last one or two padded blocks

// SIMD tier: word t (or state word k) of lane l sits at 16 * t + 4 * l.
const VW: usize = memory.data(64 * 16, 16);
const VH: usize = memory.data(8 * 16, 16);
const VTAIL: usize = memory.data(<i32>LANES * 2 * <i32>BLOCK, 16); // lane l's tail at l * 128
const LANE_PTR: usize = memory.data(<i32>LANES * 4, 16);
const LANE_FULL: usize = memory.data(<i32>LANES * 4, 16); // whole blocks read in place
const LANE_BLOCKS: usize = memory.data(<i32>LANES * 4, 16); // whole blocks + padded tail blocks

@inline function bigSigma0(x: u32): u32 { return rotr<u32>(x, 2) ^ rotr<u32>(x, 13) ^ rotr<u32>(x, 22); }
@inline function bigSigma1(x: u32): u32 { return rotr<u32>(x, 6) ^ rotr<u32>(x, 11) ^ rotr<u32>(x, 25); }
@inline function smallSigma0(x: u32): u32 { return rotr<u32>(x, 7) ^ rotr<u32>(x, 18) ^ (x >>> 3); }
@inline function smallSigma1(x: u32): u32 { return rotr<u32>(x, 17) ^ rotr<u32>(x, 19) ^ (x >>> 10); }
// Choose f or g by the bits of e; majority vote of a, b, c (fewer ops than the
// textbook forms).
@inline function ch(e: u32, f: u32, g: u32): u32 { return g ^ (e & (f ^ g)); }
@inline function maj(a: u32, b: u32, c: u32): u32 { return (a & b) | (c & (a | b)); }

// SIMD helpers -------------------------------------------------------------------
// (the scalar tier byte-swaps its message with them; the lanes tier uses all)

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
 * into static scratch, never past the caller's input.
 */
@inline function padTail(tail: usize, ptr: usize, len: usize): usize {
  const rest = len & (BLOCK - 1);
  const tailLen: usize = rest > MAX_ONE_BLOCK_TAIL ? 2 * BLOCK : BLOCK;
  memory.fill(tail, 0, tailLen);
  memory.copy(tail, ptr + len - rest, rest);
  store<u8>(tail + rest, 0x80);
  store<u64>(tail + tailLen - 8, bswap<u64>(<u64>len << 3));
  return tailLen >> 6;
}

/** Fold one 64-byte block at `p` into the state at H. */
function compress(p: usize): void {
  // Message words are big-endian; wasm loads are little-endian.
  for (let i: usize = 0; i < 64; i += 16) {
    const w = bswapWords(v128.load(p + i));
    v128.store(W + i, w);
    v128.store(WK + i, i32x4.add(w, v128.load(K + i)));
  }
  // Scalar from here: W[t] needs W[t-2], and 16-byte loads spanning several
  // fresh 4-byte stores would stall on store-to-load forwarding.
  for (let i: usize = 64; i < 256; i += 4) {
    const w15 = load<u32>(W + i - 60);
    const w2 = load<u32>(W + i - 8);
    const w = smallSigma1(w2) + load<u32>(W + i - 28) + smallSigma0(w15) + load<u32>(W + i - 64);
    store<u32>(W + i, w);
    // K[i] + W[i] up front: one load per round instead of two.
    store<u32>(WK + i, w + load<u32>(K + i));
  }
  let a = load<u32>(H, 0);
  let b = load<u32>(H, 4);
  let c = load<u32>(H, 8);
  let d = load<u32>(H, 12);
  let e = load<u32>(H, 16);
  let f = load<u32>(H, 20);
  let g = load<u32>(H, 24);
  let h = load<u32>(H, 28);
  for (let i: usize = 0; i < 256; i += 4) {
    const t1 = h + bigSigma1(e) + ch(e, f, g) + load<u32>(WK + i);
    const t2 = bigSigma0(a) + maj(a, b, c);
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
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

/** Hash `len` bytes at `ptr`; the digest is left as 8 native words at H. */
function digest(ptr: usize, len: usize): void {
  memory.copy(H, IV, 32);
  const full = ptr + (len & ~(BLOCK - 1));
  for (let p = ptr; p < full; p += BLOCK) compress(p);
  const tailBlocks = padTail(TAIL, ptr, len);
  compress(TAIL);
  if (tailBlocks > 1) compress(TAIL + BLOCK);
}

/**
 * Write the first `chars` hex digits (a multiple of 8, at most 64) of the
 * digest whose word k sits at `words + k * stride`.
 */
@inline function writeHex(out: usize, chars: usize, words: usize, stride: usize): void {
  for (let k: usize = 0; k < chars; k += 8) {
    const w = load<u32>(words + (k >> 3) * stride);
    for (let n: usize = 0; n < 8; n++) {
      store<u8>(out + k + n, load<u8>(HEX + ((w >>> (28 - ((<u32>n) << 2))) & 15)));
    }
  }
}

// SIMD tier ---------------------------------------------------------------------

// Majority: where a and b differ, c decides.
@inline function vMaj(a: v128, b: v128, c: v128): v128 { return v128.bitselect(c, a, v128.xor(a, b)); }
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
  for (let i: usize = 0; i < 256; i += 4) {
    const t1 = i32x4.add(i32x4.add(h, vBigSigma1(e)), i32x4.add(v128.bitselect(f, g, e), vwk(i)));
    const t2 = i32x4.add(vBigSigma0(a), vMaj(a, b, c));
    h = g;
    g = f;
    f = e;
    e = i32x4.add(d, t1);
    d = c;
    c = b;
    b = a;
    a = i32x4.add(t1, t2);
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
function digestLanes(table: usize, first: u32, lanes: u32, out: usize, chars: usize): void {
  let most: u32 = 0;
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
  }
  for (let k: usize = 0; k < 8; k++) v128.store(VH + k * 16, v128.load32_splat(IV + k * 4));
  for (let b: u32 = 0; b < most; b++) compressLanes(b);
  for (let l: u32 = 0; l < lanes; l++) {
    writeHex(out + <usize>(first + l) * chars, chars, VH + (<usize>l << 2), 16);
  }
}

// Exports -----------------------------------------------------------------------

/** SHA-256 of `len` bytes at `ptr`; the 32-byte digest goes to `out`. */
export function sha256_digest(ptr: usize, len: usize, out: usize): void {
  digest(ptr, len);
  for (let i: usize = 0; i < 32; i += 4) {
    store<u32>(out + i, bswap<u32>(load<u32>(H + i)));
  }
}

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
  writeHex(out, 64, H, 4);
}

/**
 * Hash `count` messages in one call. `table` holds `count` pairs of u32
 * (absolute pointer, byte length); message i's first `chars` hex digits
 * (a multiple of 8, at most 64) go to `out + i * chars`, so the host decodes
 * all of them as one ASCII string. Four messages at a time, one per SIMD lane.
 */
export function sha256_batch_hex(table: usize, count: u32, out: usize, chars: usize): void {
  let i: u32 = 0;
  for (; i + LANES <= count; i += LANES) digestLanes(table, i, LANES, out, chars);
  const rest = count - i;
  // One leftover message is cheaper on the scalar path than alone in a SIMD group.
  if (rest > 1) digestLanes(table, i, rest, out, chars);
  else if (rest == 1) sha256_batch_hex_scalar(table + (<usize>i << 3), 1, out + <usize>i * chars, chars);
}

/** `sha256_batch_hex` one message at a time: the reference the SIMD tier is tested against. */
export function sha256_batch_hex_scalar(table: usize, count: u32, out: usize, chars: usize): void {
  for (let i: u32 = 0; i < count; i++) {
    const entry = table + (<usize>i << 3);
    digest(<usize>load<u32>(entry), <usize>load<u32>(entry, 4));
    writeHex(out + <usize>i * chars, chars, H, 4);
  }
}
