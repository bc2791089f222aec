// The engine's one arena. With the stub runtime nothing is ever allocated by
// the kernels, so everything from __heap_base up is scratch that the host lays
// out per call (input bytes, then output slots) and overwrites on the next
// call; only the archive-line kernel (lines.ts) also takes scratch of its own
// past what the host laid out, growing memory for it.
// Memory only grows to the largest request ever made, so millions of calls do
// not grow it further.

/** Start of the arena, 16-byte aligned so SIMD loads from it are aligned. */
@inline export function arenaBase(): usize {
  return (__heap_base + 15) & ~(<usize>15);
}

/**
 * Ensure `bytes` of scratch exist from the arena base and return that base.
 * Returns 0 when memory cannot grow (the host turns that into an Error).
 */
export function reserve(bytes: usize): usize {
  const base = arenaBase();
  const end = base + bytes;
  if (end < base) return 0; // wrapped: more than 4 GiB asked for
  const have = (<usize>memory.size()) << 16;
  if (end > have) {
    const pages = <i32>((end - have + 0xffff) >> 16);
    if (memory.grow(pages) < 0) return 0;
  }
  return base;
}

/**
 * Copy `len` bytes from `src` to `at` 16 at a time; returns the end. Short
 * copies are most of the engine's, where memory.copy's call costs more than
 * the copy. Unless `len` is a multiple of 16, up to 15 bytes past either end
 * are read or written: callers keep that much room after both.
 */
@inline export function copyOver(at: usize, src: usize, len: usize): usize {
  for (let o: usize = 0; o < len; o += 16) v128.store(at + o, v128.load(src + o));
  return at + len;
}

/** Digits of `v` in decimal. */
@inline export function decimalLength(v: u64): usize {
  let digits: usize = 1;
  for (let x = v; x >= 10; x /= 10) digits++;
  return digits;
}

/** `v` in decimal at `at` (ordinals, call indices, line numbers); returns the end. */
@inline export function putDecimal(at: usize, v: u64): usize {
  const digits = decimalLength(v);
  let x = v;
  for (let k = digits; k > 0; k--) {
    store<u8>(at + k - 1, <u8>(0x30 + <u32>(x % 10)));
    x /= 10;
  }
  return at + digits;
}
