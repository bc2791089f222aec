/**
 * Scan an archive of JSON lines as a stream: input is cut into chunks at line
 * boundaries, each chunk is scanned (on a pool worker, or on this thread),
 * and outputs are written strictly in input order. At most a few chunks are
 * in flight and the writer's backpressure is honoured, so memory stays flat
 * whatever the input size; only one line must fit in memory.
 */
import { BufferPool, spareOrNew } from "./buffers.js";
import { errorMessage, type LineFailure } from "./errors.js";
import { unpackLineResult } from "./packing.js";
import type { ScanPool } from "./pool.js";
import { scanLinesPacked, type LineScanOptions } from "./scan.js";

export interface ArchiveProgress {
  bytesRead: number;
  entries: number;
  lines: number;
  elapsedMs: number;
}

export interface ArchiveSummary extends ArchiveProgress {
  /** Lines that failed (all reported through `onFailure`; a lost chunk is one report for all its lines). */
  failed: number;
  rejected: number;
  skipped: number;
}

export interface ArchiveOptions extends LineScanOptions {
  /** Scan on this pool; without one, on the calling thread. */
  pool?: ScanPool;
  /** Target input bytes per chunk. Default 1 MiB. */
  chunkBytes?: number;
  /** A longer line is reported as failed and skipped without being buffered whole. Default 256 MiB. */
  maxLineBytes?: number;
  onFailure(failure: LineFailure): void;
  onProgress?(progress: ArchiveProgress): void;
}

/**
 * Writes one output chunk. Calls `done` once it no longer needs `bytes` (their
 * memory is then reused); a returned promise holds the scan back until the
 * sink can take more.
 */
export type ArchiveWriter = (bytes: Uint8Array, done: () => void) => void | Promise<void>;

export const DEFAULT_CHUNK_BYTES = 1 << 20;
export const DEFAULT_MAX_LINE_BYTES = 256 << 20;
const NEWLINE = 0x0a;

/** A scanned chunk (its packed buffer and what it holds), or the error that lost it; `lines` is counted here either way. */
interface Chunk {
  lines: number;
  result: Promise<{ packed: ArrayBuffer; scanned: ReturnType<typeof unpackLineResult> } | { lost: unknown }>;
}

function countLines(bytes: Uint8Array): number {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let n = 0;
  for (let at = buf.indexOf(NEWLINE); at !== -1; at = buf.indexOf(NEWLINE, at + 1)) n++;
  return bytes.byteLength > 0 && bytes[bytes.byteLength - 1] !== NEWLINE ? n + 1 : n;
}

export async function scanArchive(input: AsyncIterable<Uint8Array>, write: ArchiveWriter, options: ArchiveOptions): Promise<ArchiveSummary> {
  const { pool, onFailure, onProgress } = options;
  const chunkBytes = options.chunkBytes ?? DEFAULT_CHUNK_BYTES;
  const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  const scan: LineScanOptions = {
    format: options.format,
    detectRefsInText: options.detectRefsInText,
    sandboxPrefixes: options.sandboxPrefixes,
    createdAt: options.createdAt,
    defaultThreadId: options.defaultThreadId,
  };
  const started = performance.now();
  const summary: ArchiveSummary = { bytesRead: 0, entries: 0, lines: 0, elapsedMs: 0, failed: 0, rejected: 0, skipped: 0 };
  const inFlight: Chunk[] = [];
  const maxInFlight = pool ? pool.threads * 2 : 1;

  const fail = (failure: LineFailure, lines = 1) => {
    summary.failed += lines;
    onFailure(failure);
  };

  const buffers = pool?.buffers ?? new BufferPool();

  /** Copy `parts` (whole lines) into one buffer of the pool and scan them there or on a worker. */
  const submit = (parts: readonly Uint8Array[], bytes: number) => {
    const input = buffers.take(bytes);
    const view = new Uint8Array(input, 0, bytes);
    let at = 0;
    for (const p of parts) {
      view.set(p, at);
      at += p.byteLength;
    }
    const lines = countLines(view);
    let result: Chunk["result"];
    if (pool) {
      result = pool
        .run({ kind: "lines", input, inputBytes: bytes, spare: buffers.spare(), options: scan })
        .then(({ output, free }) => {
          for (const b of free) buffers.give(b);
          return { packed: output, scanned: unpackLineResult(output) };
        })
        .catch((lost: unknown) => ({ lost }));
    } else {
      // The same packed result a worker returns: one code path for both.
      const { alloc, unused } = spareOrNew(buffers.spare());
      try {
        const packed = scanLinesPacked(view, scan, undefined, alloc);
        result = Promise.resolve({ packed, scanned: unpackLineResult(packed) });
      } catch (lost) {
        result = Promise.resolve({ lost });
      }
      buffers.give(input);
      buffers.give(unused());
    }
    inFlight.push({ lines, result });
  };

  const flushOne = async () => {
    const chunk = inFlight.shift()!;
    const done = await chunk.result;
    const base = summary.lines;
    summary.lines += chunk.lines;
    if ("lost" in done) {
      fail({ line: base + 1, reason: `lines ${base + 1}..${base + chunk.lines} not scanned: ${errorMessage(done.lost)}` }, chunk.lines);
    } else {
      const { packed, scanned } = done;
      for (const f of scanned.failures) fail({ line: base + f.line, reason: f.reason });
      summary.entries += scanned.entries;
      summary.rejected += scanned.rejected;
      summary.skipped += scanned.skipped;
      if (scanned.output.byteLength > 0) await write(scanned.output, () => buffers.give(packed));
      else buffers.give(packed);
    }
    summary.elapsedMs = performance.now() - started;
    onProgress?.(summary);
  };

  const enqueue = async (parts: readonly Uint8Array[], bytes: number) => {
    submit(parts, bytes);
    while (inFlight.length >= maxInFlight) await flushOne();
  };

  // Input not yet submitted: parts[] holds `pending` bytes; `cut` is the end of
  // the last complete line within them (-1: none yet).
  let parts: Uint8Array[] = [];
  let pending = 0;
  let cut = -1;
  // Inside an over-long line being dropped: everything up to the next newline.
  let dropping = false;

  const takeLines = async () => {
    const head: Uint8Array[] = [];
    let left = cut;
    while (left > 0) {
      const p = parts.shift()!;
      if (p.byteLength <= left) {
        head.push(p);
        left -= p.byteLength;
      } else {
        head.push(p.subarray(0, left));
        parts.unshift(p.subarray(left));
        left = 0;
      }
    }
    const bytes = cut;
    pending -= cut;
    cut = -1;
    await enqueue(head, bytes);
  };

  for await (const data of input) {
    // Buffer's indexOf/lastIndexOf are memchr; a plain Uint8Array's are not.
    let chunk = Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    summary.bytesRead += chunk.byteLength;
    if (dropping) {
      const nl = chunk.indexOf(NEWLINE);
      if (nl === -1) continue;
      dropping = false;
      chunk = chunk.subarray(nl + 1);
    }
    const nl = chunk.lastIndexOf(NEWLINE);
    if (nl !== -1) cut = pending + nl + 1;
    parts.push(chunk);
    pending += chunk.byteLength;
    if (cut !== -1 && pending >= chunkBytes) await takeLines();
    if (pending - Math.max(cut, 0) > maxLineBytes) {
      if (cut !== -1) await takeLines();
      // Numbered after the lines before it, which are now all submitted.
      while (inFlight.length > 0) await flushOne();
      summary.lines++;
      fail({ line: summary.lines, reason: `line longer than ${maxLineBytes} bytes, skipped` });
      parts = [];
      pending = 0;
      dropping = true;
    }
  }
  if (cut !== -1) await takeLines();
  if (pending > 0 && !dropping) await enqueue(parts, pending);
  while (inFlight.length > 0) await flushOne();
  summary.elapsedMs = performance.now() - started;
  return summary;
}
