/**
 * A free list of ArrayBuffers that travel between threads and come back.
 *
 * Every chunk of input and every packed result needs a buffer of a megabyte
 * or so. Allocating each fresh costs more than filling it: the kernel has to
 * fault in and zero every page first, which costs far more than writing it
 * again. Workers return the buffers
 * they were sent, so after the first few tasks every buffer is reused and a
 * scan allocates none.
 */
export class BufferPool {
  readonly #free: ArrayBuffer[] = [];
  #idleBytes = 0;

  /**
   * @param keep how many idle buffers to hold at most (the rest are left to the GC).
   * @param keepBytes how many bytes of idle buffers to hold at most: one batch
   *   of huge items must not pin its buffers for the pool's life.
   */
  constructor(
    private readonly keep = 16,
    private readonly keepBytes = 64 << 20,
  ) {}

  /** Bytes held in idle buffers. */
  get idleBytes(): number {
    return this.#idleBytes;
  }

  /** A buffer of at least `bytes`: a free one if any is large enough, else a new one with headroom. */
  take(bytes: number): ArrayBuffer {
    let best = -1;
    for (let i = 0; i < this.#free.length; i++) {
      const size = this.#free[i].byteLength;
      if (size >= bytes && (best === -1 || size < this.#free[best].byteLength)) best = i;
    }
    if (best !== -1) return this.#remove(best);
    return withHeadroom(bytes);
  }

  /** The largest free buffer, to send along for a result to be written into; undefined when none is free. */
  spare(): ArrayBuffer | undefined {
    let best = -1;
    for (let i = 0; i < this.#free.length; i++) if (best === -1 || this.#free[i].byteLength > this.#free[best].byteLength) best = i;
    return best === -1 ? undefined : this.#remove(best);
  }

  /** Hand a buffer back (detached ones, moved elsewhere meanwhile, are dropped). */
  give(buffer: ArrayBuffer | undefined): void {
    if (buffer === undefined || buffer.byteLength === 0 || buffer.byteLength > this.keepBytes) return;
    const size = buffer.byteLength;
    const fits = (count: number, bytes: number) => count <= this.keep && bytes <= this.keepBytes;
    if (!fits(this.#free.length + 1, this.#idleBytes + size)) {
      // Keep the larger ones (they fit any request a smaller one fits): make
      // room by letting smaller ones go, smallest first, if that is enough;
      // otherwise this one goes.
      const smaller = this.#free.filter((b) => b.byteLength < size).sort((a, b) => a.byteLength - b.byteLength);
      let count = this.#free.length + 1;
      let bytes = this.#idleBytes + size;
      let evicted = 0;
      while (!fits(count, bytes) && evicted < smaller.length) {
        bytes -= smaller[evicted++].byteLength;
        count--;
      }
      if (!fits(count, bytes)) return;
      for (const b of smaller.slice(0, evicted)) this.#remove(this.#free.indexOf(b));
    }
    this.#free.push(buffer);
    this.#idleBytes += size;
  }

  /** Let every idle buffer go. */
  clear(): void {
    this.#free.length = 0;
    this.#idleBytes = 0;
  }

  #remove(i: number): ArrayBuffer {
    const buffer = this.#free.splice(i, 1)[0];
    this.#idleBytes -= buffer.byteLength;
    return buffer;
  }
}

/** An allocator that writes into `spare` when it is large enough, else takes a new buffer. */
export function spareOrNew(spare: ArrayBuffer | undefined): { alloc: (bytes: number) => ArrayBuffer; unused: () => ArrayBuffer | undefined } {
  let left = spare;
  return {
    alloc(bytes) {
      if (left !== undefined && left.byteLength >= bytes) {
        const b = left;
        left = undefined;
        return b;
      }
      return withHeadroom(bytes);
    },
    unused: () => left,
  };
}

/** A new buffer a quarter larger than asked, so a slightly larger next request can reuse it. */
function withHeadroom(bytes: number): ArrayBuffer {
  return new ArrayBuffer(Math.ceil(bytes * 1.25));
}
