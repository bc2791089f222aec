// The engine's one arena. With the stub runtime nothing is ever allocated by
// the kernels, so everything from __heap_base up is scratch that the host lays
// out per call (input bytes, then output slots) and overwrites on the next call.
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
