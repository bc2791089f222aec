/**
 * Scan an archive of JSON lines as a stream: input is read straight into
 * reusable chunk buffers, each cut at its last line boundary and scanned (on
 * a pool worker, or on this thread), and outputs are written strictly in
 * input order. At most a few chunks are in flight and the writer's
 * backpressure is honoured, so memory stays flat whatever the input size;
 * only one line must fit in memory.
 */
import { BufferPool, spareOrNew } from "./buffers.js";
import { errorMessage, WorkerStartError, type LineFailure } from "./errors.js";
import { unpackLineResult } from "./packing.js";
import type { ScanPool } from "./pool.js";
import { scanOptionsOf, type LineScanOptions } from "./options.js";

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
  /** Chunks scanned, and how many of them a pool worker scanned (the rest: the calling thread). */
  chunks: number;
  workerChunks: number;
}

export interface ArchiveOptions extends LineScanOptions {
  /** Scan on this pool; without one, on the calling thread. */
  pool?: ScanPool;
  /**
   * With a pool, the calling thread scans too: every chunk until the first
   * worker has started, then each chunk that finds two already queued or
   * running per worker. No worker starts before WORKER_AFTER_CHUNKS chunks'
   * worth of bytes have been read (unless `sizeHint` says there will be
   * more), and should one fail to start, this thread scans the rest of the
   * archive (see `onPoolUnavailable`). For a thread with nothing else to do
   * (the CLI's): each chunk it scans blocks its event loop for the time of
   * one scan.
   * Default false: with a pool, this thread only reads, hands out and
   * writes.
   */
  alsoScanHere?: boolean;
  /** Input bytes read at a time, and the least a chunk holds (but for the last, and for lines held while input that can pause waits: see IDLE_FLUSH_MS). Default 1 MiB. */
  chunkBytes?: number;
  /**
   * The archive's size, when known (a file's): with `alsoScanHere`, an
   * archive of more than WORKER_AFTER_CHUNKS chunks starts its worker at
   * once, while this thread loads its engine and scans its first chunks.
   */
  sizeHint?: number;
  /**
   * A line is reported as failed and skipped, without being buffered whole,
   * once more than this many of its bytes have been read and its end has
   * not (so a line that ends within the read that passes the limit is still
   * scanned). Default 256 MiB.
   */
  maxLineBytes?: number;
  /** A failed line, or (`lines` > 1) the lines of a chunk whose worker died, in one report. */
  onFailure(failure: LineFailure, lines: number): void;
  /** After each chunk is written: the counts so far (a summary of what has been written). */
  onProgress?(progress: ArchiveSummary): void;
  /**
   * With `alsoScanHere`: a pool worker could not start, so this thread scans
   * the rest of the archive, the chunks that worker was given included.
   * Called at most once, and not once the scan has ended.
   */
  onPoolUnavailable?(error: WorkerStartError): void;
}

/** Where archive bytes come from: fills `into` from its start, resolves to the byte count (0 at the end). */
export interface ArchiveSource {
  read(into: Uint8Array): Promise<number>;
  /**
   * A source whose input may pause (a pipe, a live log): undefined when a
   * read would be answered at once, else a promise that settles once it
   * would be. While it waits, the complete lines read so far are scanned and
   * written rather than held until a chunk fills.
   */
  ready?(): Promise<void> | undefined;
}

/** A no-op settle handler: waiting on a promise without handling its value or error. */
const settled = () => {};

/** A source over a stream's chunks (stdin): each chunk is copied out as `read` asks. */
export function streamSource(stream: AsyncIterable<Uint8Array>): ArchiveSource {
  const chunks = stream[Symbol.asyncIterator]();
  let left: Uint8Array | undefined;
  // The stream's next chunk, asked for by `ready` or `read`, and whether it has come.
  let next: Promise<IteratorResult<Uint8Array>> | undefined;
  let arrived = false;
  const fetch = () => {
    if (next === undefined) {
      arrived = false;
      next = chunks.next();
      const settle = () => void (arrived = true);
      next.then(settle, settle);
    }
    return next;
  };
  return {
    async read(into) {
      while (left === undefined || left.byteLength === 0) {
        const chunk = await fetch();
        next = undefined;
        if (chunk.done) return 0;
        left = chunk.value;
      }
      const n = Math.min(into.byteLength, left.byteLength);
      into.set(left.subarray(0, n));
      left = left.subarray(n);
      return n;
    },
    ready() {
      if (left !== undefined && left.byteLength > 0) return undefined;
      const chunk = fetch();
      return arrived ? undefined : chunk.then(settled, settled);
    },
  };
}

/** Whether `promise` settles within `ms` milliseconds. */
async function settlesWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(resolve, ms, false)));
  try {
    return await Promise.race([promise.then(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}

const BOM = [0xef, 0xbb, 0xbf];

/**
 * `source` without a UTF-8 byte order mark at its start: tools on Windows
 * write one, and JSON.parse would reject the first line for it.
 */
function withoutBom(source: ArchiveSource): ArchiveSource {
  const stripped: ArchiveSource = {
    ready: source.ready?.bind(source),
    async read(into) {
      // Only the first read looks for a mark; later ones go straight to the source.
      stripped.read = (bytes) => source.read(bytes);
      let n = 0;
      // A stream may hand over fewer bytes than a mark at first.
      while (n < BOM.length) {
        const got = await source.read(into.subarray(n));
        if (got === 0) break;
        n += got;
      }
      if (n < BOM.length || BOM.some((b, i) => into[i] !== b)) return n;
      into.copyWithin(0, BOM.length, n);
      n -= BOM.length;
      return n > 0 ? n : source.read(into);
    },
  };
  return stripped;
}

/**
 * Writes one output chunk. Calls `done` once it no longer needs `bytes` (their
 * memory is then reused); a returned promise holds the scan back until the
 * sink can take more.
 */
export type ArchiveWriter = (bytes: Uint8Array, done: () => void) => void | Promise<void>;

const DEFAULT_CHUNK_BYTES = 1 << 20;
/** How long input may pause before the complete lines held are scanned and written (a live log's lines show as they come). */
const IDLE_FLUSH_MS = 100;
/**
 * How long a complete line may wait here, from a source whose input never
 * pauses that long (a log written to every 50 ms), before the lines held are
 * scanned and written: a chunk of such lines could take minutes to fill.
 */
const MAX_HOLD_MS = 1000;
const DEFAULT_MAX_LINE_BYTES = 256 << 20;
/**
 * Scanning here too, a worker is started only once this many chunks' worth
 * of bytes have been read (bytes, not chunks: a live log cut by its pauses
 * gives a chunk of a few lines a second). Its start takes time (and CPU, on
 * a small machine) that an archive of a few chunks, scanned here in a few
 * milliseconds each, would only pay for; a large archive gets its worker
 * that few milliseconds later.
 */
const WORKER_AFTER_CHUNKS = 4;
/**
 * Chunks scanned here that may wait, with their results, behind the pool's
 * unfinished ones: that many chunk-sized results more memory, and this
 * thread goes on scanning while a worker is slow.
 */
const HERE_IN_FLIGHT = 4;
const NEWLINE = 0x0a;

/** A scanned chunk (its packed buffer and what it holds), or the error that lost it; `lines` is counted here either way. */
interface Chunk {
  lines: number;
  /** The result is in: at once for a chunk scanned on this thread, when the worker answers for the pool's. */
  settled: boolean;
  result: Promise<{ packed: ArrayBuffer; scanned: ReturnType<typeof unpackLineResult> } | { lost: unknown }>;
}

function countLines(bytes: Uint8Array): number {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let n = 0;
  for (let at = buf.indexOf(NEWLINE); at !== -1; at = buf.indexOf(NEWLINE, at + 1)) n++;
  return bytes.byteLength > 0 && bytes[bytes.byteLength - 1] !== NEWLINE ? n + 1 : n;
}

/**
 * Scan the archive `archive` gives (past a UTF-8 byte order mark at its
 * start), writing each chunk's entries in input order. A bad line, or the
 * lines of a chunk whose worker died, are reported through `onFailure` and
 * the scan goes on; it rejects when the source or the writer fails, or when
 * no pool worker can start (WorkerStartError) and this thread does not scan
 * too (`alsoScanHere`; with it, see `onPoolUnavailable`).
 */
export async function scanArchive(archive: ArchiveSource, write: ArchiveWriter, options: ArchiveOptions): Promise<ArchiveSummary> {
  const { pool, onFailure, onProgress } = options;
  const source = withoutBom(archive);
  const chunkBytes = options.chunkBytes ?? DEFAULT_CHUNK_BYTES;
  const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  const scan: LineScanOptions = { ...scanOptionsOf(options), format: options.format, defaultThreadId: options.defaultThreadId };
  const started = performance.now();
  const summary: ArchiveSummary = { bytesRead: 0, entries: 0, lines: 0, elapsedMs: 0, failed: 0, rejected: 0, skipped: 0, chunks: 0, workerChunks: 0 };
  const inFlight: Chunk[] = [];
  const buffers = pool?.buffers ?? new BufferPool();
  const here = !pool || options.alsoScanHere === true;
  // Each worker has one chunk queued behind the one it scans, so it never
  // waits for this thread; chunks this thread scans wait behind theirs.
  const maxPoolTasks = pool ? pool.threads * 2 : 0;
  const maxInFlight = pool ? maxPoolTasks + (here ? HERE_IN_FLIGHT : 0) : 1;
  let poolTasks = 0;
  // Scanning here too, chunks go to the pool only once a worker has started;
  // until then, or if none can start, this thread takes them all.
  let poolReady = !here;
  // Whether a worker is still to be asked for once enough is read (see WORKER_AFTER_CHUNKS).
  let workerToAsk = false;
  // Lines before the next chunk to submit (a skipped over-long line counts).
  let linesBefore = 0;
  let ended = false;
  let poolLost = false;
  /** No worker could start: from now on this thread scans everything (said once, while the scan runs). */
  const losePool = (err: WorkerStartError) => {
    poolReady = false;
    if (!poolLost && !ended) options.onPoolUnavailable?.(err);
    poolLost = true;
  };
  const awaitFirstWorker = () =>
    pool!.workerStarted().then(
      () => (poolReady = !poolLost),
      (err: unknown) => {
        if (err instanceof WorkerStartError) losePool(err);
      },
    );
  // A long archive starts its worker before anything is read.
  const early = pool !== undefined && here && (options.sizeHint ?? 0) > WORKER_AFTER_CHUNKS * chunkBytes;
  if (early) void awaitFirstWorker();
  else workerToAsk = pool !== undefined && here;
  // The scanner (and its engine) is loaded only to scan here, and only once
  // there is something to scan: with a pool alone, this thread only reads,
  // hands out and writes.
  let local: typeof import("./scan.js") | undefined;

  const fail = (failure: LineFailure, lines = 1) => {
    summary.failed += lines;
    onFailure(failure, lines);
  };

  /** Scan the first `bytes` of `input` here, in the same packed form a worker returns; the buffer goes back to the pool. */
  const scanHere = (input: ArrayBuffer, bytes: number, options: LineScanOptions): Chunk["result"] => {
    const { alloc, unused } = spareOrNew(buffers.spare());
    let result: Chunk["result"];
    try {
      const packed = local!.scanLinesPacked(new Uint8Array(input, 0, bytes), options, { alloc });
      result = Promise.resolve({ packed, scanned: unpackLineResult(packed) });
    } catch (lost) {
      result = Promise.resolve({ lost });
    }
    buffers.give(input);
    buffers.give(unused());
    return result;
  };

  /** Scan the first `bytes` of `input` (whole lines) here or on a worker. */
  const submit = (input: ArrayBuffer, bytes: number) => {
    const chunk: Chunk = { lines: countLines(new Uint8Array(input, 0, bytes)), settled: true, result: undefined! };
    const options: LineScanOptions = { ...scan, firstLine: linesBefore + 1 };
    linesBefore += chunk.lines;
    summary.chunks++;
    if (pool && poolReady && poolTasks < maxPoolTasks) {
      poolTasks++;
      chunk.settled = false;
      chunk.result = pool
        .run({ kind: "lines", input, inputBytes: bytes, spare: buffers.spare(), options })
        .then(({ output, free }) => {
          for (const b of free) buffers.give(b);
          summary.workerChunks++;
          return { packed: output, scanned: unpackLineResult(output) };
        })
        .catch((lost: unknown) => {
          if (!here || !(lost instanceof WorkerStartError)) return { lost };
          losePool(lost);
          // WorkerStartError comes only for a task no worker took (none was left): its input is here.
          return scanHere(input, bytes, options);
        })
        .finally(() => {
          poolTasks--;
          chunk.settled = true;
        });
    } else chunk.result = scanHere(input, bytes, options);
    inFlight.push(chunk);
  };

  const flushOne = async () => {
    const chunk = inFlight.shift()!;
    const done = await chunk.result;
    const base = summary.lines;
    summary.lines += chunk.lines;
    if ("lost" in done) {
      // Unless this thread scans too, a pool that cannot start a worker
      // would lose every chunk alike.
      if (done.lost instanceof WorkerStartError) throw done.lost;
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

  /** Scan a chunk (the last one when `last`); write what is done, in order, and wait only when too much is in flight. */
  const enqueue = async (input: ArrayBuffer, bytes: number, last = false) => {
    // Past a few chunks, start a worker while this thread goes on scanning.
    if (workerToAsk && summary.bytesRead >= WORKER_AFTER_CHUNKS * chunkBytes) {
      workerToAsk = false;
      if (!last) void awaitFirstWorker();
    }
    if (here) local ??= await import("./scan.js");
    submit(input, bytes);
    while (inFlight.length >= maxInFlight || inFlight[0]?.settled) await flushOne();
  };

  // `current` holds `length` bytes read but not yet submitted; `lastNewline`
  // is the end of the last complete line among them (-1: none yet). Only the
  // tail after a cut is copied (to the next buffer): one line at most.
  let current = buffers.take(chunkBytes);
  let length = 0;
  let lastNewline = -1;
  // Inside an over-long line being dropped: everything up to the next newline.
  let dropping = false;
  // When the oldest complete line in `current` was read (while lastNewline is not -1).
  let heldSince = 0;

  const moveTail = (from: number) => {
    const tail = length - from;
    const next = buffers.take(tail + chunkBytes);
    new Uint8Array(next).set(new Uint8Array(current, from, tail));
    current = next;
    length = tail;
  };

  /** Start reading into `current` after its `length` bytes. */
  const readMore = (): Promise<number> => {
    if (current.byteLength - length < chunkBytes / 4) {
      // Only a line longer than a chunk fills a buffer this far: grow it
      // (doubling, so a long line costs linear copying), but no further than
      // a line may be (past that it is dropped) and one read.
      const grown = buffers.take(Math.min(Math.max(current.byteLength * 2, length + chunkBytes), maxLineBytes + chunkBytes));
      new Uint8Array(grown).set(new Uint8Array(current, 0, length));
      buffers.give(current);
      current = grown;
    }
    return source.read(new Uint8Array(current, length, Math.min(chunkBytes, current.byteLength - length)));
  };
  // A read started before a chunk is scanned, so the two overlap (the read
  // runs on libuv's thread pool); one read at a time, in order.
  let ahead: Promise<number> | undefined;

  for (;;) {
    // A source that may pause: once it has (or a line has waited
    // MAX_HOLD_MS), scan and write what is held. The
    // complete lines not yet submitted go before the next read (a read then
    // would write into their buffer)...
    if (ahead === undefined && lastNewline > 0 && source.ready !== undefined) {
      const overdue = performance.now() - heldSince >= MAX_HOLD_MS;
      const waiting = overdue ? undefined : source.ready();
      if (overdue || (waiting !== undefined && !(await settlesWithin(waiting, IDLE_FLUSH_MS)))) {
        const cut = lastNewline;
        const full = current;
        moveTail(cut);
        lastNewline = -1;
        await enqueue(full, cut);
        while (inFlight.length > 0) await flushOne();
      }
    }
    const reading = ahead ?? readMore();
    // ...and chunks still with a worker are written while the read waits.
    if (inFlight.length > 0 && source.ready !== undefined && !(await settlesWithin(reading.then(settled, settled), IDLE_FLUSH_MS))) {
      while (inFlight.length > 0) await flushOne();
    }
    const n = await reading;
    ahead = undefined;
    if (n === 0) break;
    summary.bytesRead += n;
    const fresh = Buffer.from(current, length, n);
    length += n;
    const held = lastNewline !== -1;
    if (dropping) {
      const nl = fresh.indexOf(NEWLINE);
      if (nl === -1) {
        length = 0;
        continue;
      }
      dropping = false;
      const keep = fresh.subarray(nl + 1);
      new Uint8Array(current).set(keep);
      length = keep.byteLength;
      const again = Buffer.from(current, 0, length).lastIndexOf(NEWLINE);
      lastNewline = again === -1 ? -1 : again + 1;
    } else {
      const nl = fresh.lastIndexOf(NEWLINE);
      if (nl !== -1) lastNewline = length - n + nl + 1;
    }
    if (!held && lastNewline !== -1) heldSince = performance.now();
    if (lastNewline !== -1 && length >= chunkBytes) {
      const cut = lastNewline;
      const full = current;
      moveTail(cut);
      lastNewline = -1;
      ahead = readMore();
      // Should the scan end in an error first, this read's own error is moot.
      ahead.catch(() => {});
      await enqueue(full, cut);
    } else if (lastNewline === -1 && length > maxLineBytes) {
      // Numbered after the lines before it, which are all submitted already.
      while (inFlight.length > 0) await flushOne();
      summary.lines++;
      linesBefore++;
      fail({ line: summary.lines, reason: `line longer than ${maxLineBytes} bytes, skipped` });
      current = buffers.take(chunkBytes); // the grown buffer is left to the GC
      length = 0;
      dropping = true;
    }
  }
  if (length > 0 && !dropping) await enqueue(current, length, true);
  else buffers.give(current);
  while (inFlight.length > 0) await flushOne();
  ended = true;
  summary.elapsedMs = performance.now() - started;
  return summary;
}
