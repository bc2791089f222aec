/**
 * Archive lines scanned in the engine (assembly/lines.ts): the CLI's per-line
 * work, from raw UTF-8 JSON lines to output JSON lines, for the lines whose
 * shape the kernel reads itself. It leaves the others to the caller, which
 * scans them with the TypeScript path and puts their output in its place.
 *
 * Arena layout per chunk, from the arena base:
 *   input bytes | SLACK | prefix table | created_at token | stats | output room | kernel scratch
 * The kernel grows memory for its scratch itself. It is run to the end of the
 * chunk before the caller scans any line itself: the TypeScript path uses the
 * same arena and would overwrite the input.
 */
import { prefixTableBytes, writePrefixTable, type ScanOptions } from "./scan.js";
import { memoryView, releaseMemoryFor, reserve, runEngine, type EngineExports } from "./wasm.js";

interface LineExports extends EngineExports {
  lines_scan(input: number, len: number, out: number, cap: number, work: number, prefixes: number, count: number, flags: number, created: number, createdLen: number, stats: number, firstLine: number): number;
}

export interface EngineLineOptions extends ScanOptions {
  /** Scan texts for references (default true). */
  detectRefsInText?: boolean;
  /** created_at of every entry (ISO-8601). */
  createdAt: string;
  /** The number of the chunk's first line in the archive (default 1): the call index of a result with no id and no tool_call_id. */
  firstLine?: number;
}

/** One chunk as the engine left it: its output in order, with the lines it left to the caller in between. */
export interface EngineLines {
  /** Lines the engine scanned (blank ones included), and what they gave. */
  lines: number;
  entries: number;
  rejected: number;
  skipped: number;
  /**
   * In input order: the engine's output (views into engine memory, or into
   * a buffer this module reuses: valid until the next call into the engine)
   * and the lines left to the caller
   * (byte range of the line without its newline, and its 1-based number in
   * the chunk).
   */
  pieces: (Uint8Array | { start: number; end: number; line: number })[];
}

const OP = "scanLines";
// Readable room after the input: the scanner reads up to 80 bytes past a
// text's end (scan.ts), and the kernel's 16-byte copies 15 more.
const SLACK = 96;
const STATS_BYTES = 32;
const STOP_LINE = 1;
const STOP_FULL = 2;
const FLAG_TEXT = 1;
const NEWLINE = 0x0a;
const encoder = new TextEncoder();

const align16 = (n: number) => (n + 15) & ~15;

// The engine's output, copied out of engine memory before the caller's own
// scans reuse the arena; kept and grown, so that a chunk costs a copy and no
// fresh allocation (but not kept past HELD_KEPT after a chunk that needed
// more, so one huge line does not pin its output for the thread's life).
let held = new Uint8Array(0);
let heldBytes = 0;
const HELD_KEPT = 8 << 20;

function hold(view: Uint8Array, from: number, bytes: number): void {
  if (heldBytes + bytes > held.byteLength) {
    const grown = new Uint8Array(Math.max(2 * held.byteLength, heldBytes + bytes, 1 << 20));
    grown.set(held.subarray(0, heldBytes));
    held = grown;
  }
  held.set(view.subarray(from, from + bytes), heldBytes);
  heldBytes += bytes;
}

/**
 * Scan the JSON lines of `bytes` in the engine. Throws like any engine call
 * (a trap, memory that cannot grow); the caller then scans the chunk itself.
 */
export function scanLinesInEngine(bytes: Uint8Array, options: EngineLineOptions): EngineLines {
  const len = bytes.byteLength;
  // A chunk needs about three times its size; memory a huge line grew is
  // given back at the next ordinary chunk.
  releaseMemoryFor(3 * len);
  const created = encoder.encode(JSON.stringify(options.createdAt));
  const base = reserve(0, OP);
  const table = align16(base + len + SLACK);
  const createdAt = align16(table + prefixTableBytes(options));
  const stats = align16(createdAt + created.length);
  const out = align16(stats + STATS_BYTES);
  // Room for about as much output as input: most chunks need one run. The
  // 64 KiB past it are a line's scratch (`work`), which the engine takes
  // from there and grows only for a line that needs more.
  let cap = align16(Math.max(len, 1 << 16));
  reserve(out + cap - base + (1 << 16), OP);
  memoryView().set(bytes, base);
  const count = writePrefixTable(table, options);
  memoryView().set(created, createdAt);
  const flags = (options.detectRefsInText ?? true) ? FLAG_TEXT : 0;
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, len);

  // Runs write their output one after another from `out`; `used` of the room
  // is taken. Where a line is left to the caller, the output so far is cut.
  const cuts: ({ to: number } | { start: number; end: number; line: number })[] = [];
  const result: EngineLines = { lines: 0, entries: 0, rejected: 0, skipped: 0, pieces: [] };
  if (held.byteLength > HELD_KEPT) held = new Uint8Array(0); // the last chunk's pieces are no longer in use
  heldBytes = 0;
  let used = 0;
  let at = 0;
  let lineNo = 0;
  const firstLine = options.firstLine ?? 1;
  while (at < len) {
    const work = align16(out + cap);
    const consumed = runEngine(OP, len, (e) =>
      (e as LineExports).lines_scan(base + at, len - at, out + used, cap - used, work, table, count, flags, createdAt, created.length, stats, firstLine + lineNo),
    );
    const view = memoryView(); // the kernel may have grown memory
    const [lines, entries, rejected, skipped, outBytes, stop, needed] = new Uint32Array(view.buffer, stats, 7);
    result.lines += lines;
    result.entries += entries;
    result.rejected += rejected;
    result.skipped += skipped;
    lineNo += lines;
    at += consumed;
    used += outBytes;
    if (stop === STOP_LINE) {
      const nl = buf.indexOf(NEWLINE, at);
      const end = nl === -1 ? len : nl;
      cuts.push({ to: heldBytes + used }, { start: at, end, line: ++lineNo });
      at = end + 1;
    } else if (stop === STOP_FULL) {
      if (used === 0) {
        // One line's output is larger than the room: make room for it.
        cap = align16(Math.max(2 * cap, needed));
        reserve(out + cap - base + (1 << 16), OP);
      } else {
        hold(view, out, used);
        used = 0;
      }
    } else break;
  }
  if (cuts.length === 0 && heldBytes === 0) {
    // The usual chunk: all its output from one run and no line left to the
    // caller, who copies it out before calling the engine again. Copying it
    // here as well was a second pass over about as many bytes as the input.
    if (used > 0) result.pieces.push(memoryView().subarray(out, out + used));
    return result;
  }
  hold(memoryView(), out, used);
  let from = 0;
  for (const cut of cuts) {
    if ("to" in cut) {
      if (cut.to > from) result.pieces.push(held.subarray(from, cut.to));
      from = cut.to;
    } else result.pieces.push(cut);
  }
  if (heldBytes > from) result.pieces.push(held.subarray(from, heldBytes));
  return result;
}
