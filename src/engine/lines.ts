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
import { memoryView, reserve, runEngine, type EngineExports } from "./wasm.js";

interface LineExports extends EngineExports {
  lines_scan(input: number, len: number, out: number, cap: number, work: number, prefixes: number, count: number, flags: number, created: number, createdLen: number, stats: number): number;
}

export interface EngineLineOptions extends ScanOptions {
  /** Scan texts for references (default true). */
  detectRefsInText?: boolean;
  /** created_at of every entry (ISO-8601). */
  createdAt: string;
}

/** One chunk as the engine left it: its output in order, with the lines it left to the caller in between. */
export interface EngineLines {
  /** Lines the engine scanned (blank ones included), and what they gave. */
  lines: number;
  entries: number;
  rejected: number;
  skipped: number;
  /**
   * In input order: the engine's output (bytes, a copy) and the lines left
   * to the caller (byte range of the line without its newline, and its
   * 1-based number in the chunk).
   */
  pieces: (Uint8Array | { start: number; end: number; line: number })[];
}

const OP = "scanLines";
// Readable room after the input: the scanner reads past a text's end (see scan.ts).
const SLACK = 96;
const STATS_BYTES = 32;
const STOP_END = 0;
const STOP_LINE = 1;
const STOP_FULL = 2;
const FLAG_TEXT = 1;
const NEWLINE = 0x0a;
const encoder = new TextEncoder();

const align16 = (n: number) => (n + 15) & ~15;

/**
 * Scan the JSON lines of `bytes` in the engine. Throws like any engine call
 * (a trap, memory that cannot grow); the caller then scans the chunk itself.
 */
export function scanLinesInEngine(bytes: Uint8Array, options: EngineLineOptions): EngineLines {
  const len = bytes.byteLength;
  const created = encoder.encode(JSON.stringify(options.createdAt));
  const base = reserve(0, OP);
  const table = align16(base + len + SLACK);
  const createdAt = align16(table + prefixTableBytes(options));
  const stats = align16(createdAt + created.length);
  const out = align16(stats + STATS_BYTES);
  // Room for about as much output as input: most chunks need one run.
  let cap = align16(Math.max(len, 1 << 16));
  reserve(out + cap - base + (1 << 16), OP);
  let view = memoryView();
  view.set(bytes, base);
  const { count } = writePrefixTable(table, options);
  view.set(created, createdAt);
  const flags = (options.detectRefsInText ?? true) ? FLAG_TEXT : 0;
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, len);

  const result: EngineLines = { lines: 0, entries: 0, rejected: 0, skipped: 0, pieces: [] };
  let at = 0;
  let lineNo = 0;
  while (at < len) {
    const work = align16(out + cap);
    const consumed = runEngine(OP, len, (e) =>
      (e as LineExports).lines_scan(base + at, len - at, out, cap, work, table, count, flags, createdAt, created.length, stats),
    );
    view = memoryView(); // the kernel may have grown memory
    const s = new Uint32Array(view.buffer, stats, 7);
    const [lines, entries, rejected, skipped, outBytes, stop, needed] = s;
    result.lines += lines;
    result.entries += entries;
    result.rejected += rejected;
    result.skipped += skipped;
    lineNo += lines;
    at += consumed;
    if (outBytes > 0) result.pieces.push(view.slice(out, out + outBytes));
    if (stop === STOP_LINE) {
      const nl = buf.indexOf(NEWLINE, at);
      const end = nl === -1 ? len : nl;
      result.pieces.push({ start: at, end, line: ++lineNo });
      at = end + 1;
    } else if (stop === STOP_FULL && outBytes === 0) {
      // One line's output is larger than the room: make room for it.
      cap = align16(Math.max(2 * cap, needed));
      reserve(out + cap - base + (1 << 16), OP);
    } else if (stop === STOP_END) break;
  }
  return result;
}
