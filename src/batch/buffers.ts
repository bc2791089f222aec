/**
 * A free list of ArrayBuffers that travel between threads and come back.
 *
 * Every chunk of input and every packed result needs a buffer of a megabyte
 * or so. Allocating each fresh costs more than filling it: the kernel has to
 * fault in and zero every page first (on the development VM about 3.4 ms per
 * MiB, against 0.05 ms to write it again; see the README). Workers return the buffers
 * they were sent, so after the first few tasks every buffer is reused and a
 * scan allocates none.
 */
export class BufferPool {
  readonly #free: ArrayBuffer[] = [];

  /** @param keep how many idle buffers to hold at most (the rest are left to the GC). */
  constructor(private readonly keep = 16) {}

  /** A buffer of at least `bytes`: a free one if any is large enough, else a new one with headroom. */
  take(bytes: number): ArrayBuffer {
    let best = -1;
    for (let i = 0; i < this.#free.length; i++) {
      const size = this.#free[i].byteLength;
      if (size >= bytes && (best === -1 || size < this.#free[best].byteLength)) best = i;
    }
    if (best !== -1) return this.#free.splice(best, 1)[0];
    return withHeadroom(bytes);
  }

  /** The largest free buffer, to send along for a result to be written into; undefined when none is free. */
  spare(): ArrayBuffer | undefined {
    let best = -1;
    for (let i = 0; i < this.#free.length; i++) if (best === -1 || this.#free[i].byteLength > this.#free[best].byteLength) best = i;
    return best === -1 ? undefined : this.#free.splice(best, 1)[0];
  }

  /** Hand a buffer back (detached ones, moved elsewhere meanwhile, are dropped). */
  give(buffer: ArrayBuffer | undefined): void {
    if (buffer === undefined || buffer.byteLength === 0) return;
    if (this.#free.length >= this.keep) {
      // Keep the larger ones: they fit any request a smaller one fits.
      let smallest = 0;
      for (let i = 1; i < this.#free.length; i++) if (this.#free[i].byteLength < this.#free[smallest].byteLength) smallest = i;
      if (this.#free[smallest].byteLength >= buffer.byteLength) return;
      this.#free.splice(smallest, 1);
    }
    this.#free.push(buffer);
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
