/**
 * Scan an archive of JSON lines as a stream: input is cut into chunks at line
 * boundaries, each chunk is scanned (on a pool worker, or on this thread),
 * and outputs are written strictly in input order. At most a few chunks are
 * in flight and the writer's backpressure is honoured, so memory stays flat
 * whatever the input size; only one line must fit in memory.
 */
import { errorMessage, type LineFailure } from "./errors.js";
import { unpackLineResult, type LineResult } from "./packing.js";
import type { ScanPool } from "./pool.js";
import { scanLines, type LineScanOptions } from "./scan.js";

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

/** Writes one output chunk; resolves when the sink can take more. */
export type ArchiveWriter = (bytes: Uint8Array) => void | Promise<void>;

export const DEFAULT_CHUNK_BYTES = 1 << 20;
export const DEFAULT_MAX_LINE_BYTES = 256 << 20;
const NEWLINE = 0x0a;

/** Scanned chunk, or the error that lost it; `lines` comes from this thread either way. */
interface Chunk {
  lines: number;
  result: Promise<(LineResult & { output: Uint8Array }) | { lost: unknown }>;
}

function countLines(bytes: Uint8Array): number {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let n = 0;
  for (let at = buf.indexOf(NEWLINE); at !== -1; at = buf.indexOf(NEWLINE, at + 1)) n++;
  return bytes.byteLength > 0 && bytes[bytes.byteLength - 1] !== NEWLINE ? n + 1 : n;
}

/** The parts joined into a fresh ArrayBuffer that can be moved to a worker. */
function join(parts: readonly Uint8Array[], bytes: number): Uint8Array {
  const out = new Uint8Array(new ArrayBuffer(bytes));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
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

  const submit = (bytes: Uint8Array) => {
    const lines = countLines(bytes);
    let result: Chunk["result"];
    if (pool) {
      // Callers hand the pool a buffer of its own (see takeLines): moving it detaches nothing else.
      result = pool
        .run({ kind: "lines", buffer: bytes.buffer as ArrayBuffer, options: scan })
        .then(unpackLineResult)
        .catch((lost: unknown) => ({ lost }));
    } else {
      try {
        const { result: r, output } = scanLines(bytes, scan);
        result = Promise.resolve({ ...r, output: Buffer.from(output, "utf8") });
      } catch (lost) {
        result = Promise.resolve({ lost });
      }
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
      for (const f of done.failures) fail({ line: base + f.line, reason: f.reason });
      summary.entries += done.entries;
      summary.rejected += done.rejected;
      summary.skipped += done.skipped;
      if (done.output.byteLength > 0) await write(done.output);
    }
    summary.elapsedMs = performance.now() - started;
    onProgress?.(summary);
  };

  const enqueue = async (bytes: Uint8Array) => {
    submit(bytes);
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
    pending -= cut;
    cut = -1;
    const bytes = head.reduce((n, p) => n + p.byteLength, 0);
    await enqueue(pool || head.length !== 1 ? join(head, bytes) : head[0]);
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
  if (pending > 0 && !dropping) {
    await enqueue(join(parts, pending));
  }
  while (inFlight.length > 0) await flushOne();
  summary.elapsedMs = performance.now() - started;
  return summary;
}
