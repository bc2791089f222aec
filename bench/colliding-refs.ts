/**
 * Sandbox references crafted to share one hash in the engine's repeat filter
 * (`scan_dedup` in assembly/scan.ts: an unkeyed multiply-xor over 8-byte
 * words), as a hostile tool output could: every lookup then meets the same
 * cluster, which must not make scanning quadratic (DESIGN §3). Used by the
 * scan bench and the scan tests.
 *
 * A reference is 32 bytes, four words: the prefix and one letter, 8 free
 * bytes, then the 8 bytes that bring the hash to the target (solved, since
 * the multiplier is odd and so invertible mod 2^64); kept when those are
 * printable ASCII and the last is not one the scanner strips.
 */
const MASK = (1n << 64n) - 1n;
const MUL = 0x9e3779b97f4a7c15n;
const LENGTH = 32;
const PREFIX = "/mnt/user-data/c"; // words 0 and 1

/** MUL's inverse mod 2^64 (Newton's iteration: each step doubles the correct low bits). */
function inverse(m: bigint): bigint {
  let x = m;
  for (let i = 0; i < 6; i++) x = (x * (2n - m * x)) & MASK;
  return x;
}
const MUL_INVERSE = inverse(MUL);

const word = (bytes: Uint8Array, at: number) => {
  let w = 0n;
  for (let i = 7; i >= 0; i--) w = (w << 8n) | BigInt(bytes[at + i]!);
  return w;
};
/** One word of the hash: `(h ^ w) * MUL`, mod 2^64. */
const step = (h: bigint, w: bigint) => ((h ^ w) * MUL) & MASK;

const STRIPPED = new Set([...".,;:)]}\"'`"].map((c) => c.charCodeAt(0)));

/** The high 32 bits of the 64-bit product of two u32 (16-bit pieces: every partial product exact in a double). */
function mulHigh(a: number, b: number): number {
  const a0 = a & 0xffff;
  const a1 = a >>> 16;
  const b0 = b & 0xffff;
  const b1 = b >>> 16;
  const low = a0 * b0;
  const mid1 = a1 * b0 + (low >>> 16);
  const mid2 = a0 * b1 + (mid1 & 0xffff);
  return (a1 * b1 + Math.floor(mid1 / 0x10000) + Math.floor(mid2 / 0x10000)) >>> 0;
}
const printable = (b: number) => b >= 0x21 && b <= 0x7e;

/** `count` distinct 32-byte references under /mnt/user-data/ with one scan_dedup hash (deterministic for a seed). */
export function collidingRefs(count: number, seed = 1): string[] {
  const prefix = new TextEncoder().encode(PREFIX);
  let h = (BigInt(LENGTH) * MUL) & MASK;
  h = step(h, word(prefix, 0));
  h = step(h, word(prefix, 8));
  const afterPrefix = h;
  // The target: what the last word's product must be; any value will do.
  const beforeLast = (0x0123456789abcdefn * MUL_INVERSE) & MASK;
  let state = seed >>> 0 || 1;
  const random = () => {
    // xorshift32: a fixed sequence, so every run crafts the same references
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return state >>> 0;
  };
  // The search in 32-bit halves (BigInt is far slower): last = beforeLast ^ ((afterPrefix ^ free) * MUL).
  const half = (v: bigint): [number, number] => [Number(v >> 32n), Number(v & 0xffffffffn)];
  const [ph, pl] = half(afterPrefix);
  const [th, tl] = half(beforeLast);
  const [mh, ml] = half(MUL);
  const refs = new Set<string>();
  const bytes = new Uint8Array(16);
  const view = new DataView(bytes.buffer);
  while (refs.size < count) {
    for (let i = 0; i < 8; i++) bytes[i] = 0x61 + (random() % 26);
    const xh = (ph ^ view.getUint32(4, true)) >>> 0;
    const xl = (pl ^ view.getUint32(0, true)) >>> 0;
    const lo = Math.imul(xl, ml) >>> 0;
    const hi = (mulHigh(xl, ml) + Math.imul(xh, ml) + Math.imul(xl, mh)) >>> 0;
    view.setUint32(8, (tl ^ lo) >>> 0, true);
    view.setUint32(12, (th ^ hi) >>> 0, true);
    if (!bytes.subarray(8).every(printable) || STRIPPED.has(bytes[15]!)) continue;
    refs.add(PREFIX + String.fromCharCode(...bytes));
  }
  return [...refs];
}
