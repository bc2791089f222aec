/**
 * The scanning work itself, the same on the calling thread and in a worker:
 * one item, a packed slice of items, or a chunk of archive lines.
 */
import { isUtf8 } from "node:buffer";
import { extractArtifacts, occurrenceIdOf, type ExtractOptions } from "../extract.js";
import { isIndex, scanOptionsProblem, timestampProblem, type ArtifactEntry } from "../types.js";
import { errorMessage } from "./errors.js";
import { formatEntries } from "./format.js";
import { isOtherMessage } from "../messages.js";
import { itemFromLine, normalizeItem, readItem, type NormalizedItem } from "./items.js";
import type { LineScanOptions, ScanOptions } from "./options.js";
import { encodeEntries, packLineResult, packRecords, unpackRecords, type Allocate, type LineResult } from "./packing.js";
import { scanLinesInEngine } from "../engine/lines.js";
import { EngineError } from "../engine/wasm.js";

export type { LineScanOptions, ScanOptions } from "./options.js";
export { scanOptionsOf } from "./options.js";

/** Called with each item's thread id before it is scanned; workers use it for fault injection in tests. */
export type ItemProbe = (threadId: string) => void;

/** Told of each structured payload extraction rejects whole, for the CLI's --stats. */
type RejectedPayload = NonNullable<ExtractOptions["onRejectedPayload"]>;

/** Entries of one item; throws an Error saying why the item cannot be scanned. */
export function scanItem(item: unknown, options: ScanOptions, onRejectedPayload?: RejectedPayload): ArtifactEntry[] {
  return scanNormalized(normalizeItem(item), options, onRejectedPayload);
}

/** An item the engine could not scan whole fails, naming why, instead of coming back short. */
const failItem = (error: Error): never => {
  throw error;
};

/** Entries of an item `normalizeItem` already checked and reduced. */
export function scanNormalized({ threadId, callIndex, message }: NormalizedItem, options: ScanOptions, onRejectedPayload?: RejectedPayload): ArtifactEntry[] {
  const { createdAt } = options;
  const extract: ExtractOptions = {
    threadId,
    callIndex,
    detectRefsInText: options.detectRefsInText,
    sandboxPrefixes: options.sandboxPrefixes,
    now: createdAt === undefined ? undefined : () => createdAt,
    onRejectedPayload,
    onEngineFailure: failItem,
  };
  return extractArtifacts(message, extract);
}

/** Items written by `writeItem` in, one record per item out: its entries (`encodeEntries`), or `{"error": reason}`. */
export function scanRecords(buffer: ArrayBuffer, options: ScanOptions, probe?: ItemProbe, alloc?: Allocate): ArrayBuffer {
  const records = unpackRecords(buffer);
  const results: string[] = [];
  for (let at = 0; at < records.length; ) {
    const { item, next } = readItem(records, at);
    at = next;
    try {
      probe?.(item.threadId);
      results.push(encodeEntries(scanNormalized(item, options)));
    } catch (err) {
      results.push(JSON.stringify({ error: errorMessage(err) }));
    }
  }
  return packRecords(results, alloc);
}

const NEWLINE = 0x0a;

/** What the lines of a chunk scanned so far gave, in order. */
interface LineAcc {
  result: LineResult;
  output: (string | Uint8Array)[];
  onRejectedPayload: () => void;
}

function newAcc(): LineAcc {
  const result: LineResult = { lines: 0, entries: 0, rejected: 0, skipped: 0, failures: [] };
  return { result, output: [], onRejectedPayload: () => void result.rejected++ };
}

/**
 * An archive line's item, with its line number as call index when nothing
 * else tells its tool result apart: DESIGN §2 leaves distinct indices to
 * callers whose messages have no id, and without a tool_call_id every such
 * result of a thread would hash the same seed (`thread::0:ordinal`).
 */
function lineIndexed(item: NormalizedItem, lineNumber: number): NormalizedItem {
  const { id, tool_call_id } = item.message;
  // An empty call id tells nothing apart either.
  const anonymous = item.callIndex === undefined && occurrenceIdOf(id) === undefined && (typeof tool_call_id !== "string" || tool_call_id === "");
  return anonymous ? { ...item, callIndex: lineNumber } : item;
}

/**
 * One line (bytes start..end of `buf`, newline excluded; `line` its number in
 * the chunk) through JSON.parse and extractArtifacts.
 */
function scanLine(buf: Buffer, start: number, end: number, line: number, options: LineScanOptions, probe: ItemProbe | undefined, acc: LineAcc): void {
  const { result } = acc;
  const text = buf.toString("utf8", start, end);
  if (text.trim() === "") return;
  // Decoding puts U+FFFD for each invalid byte: a Latin-1 `café.txt` would
  // come out as `caf\ufffd.txt`, a reference nothing can open, and two such
  // names one handle. The engine leaves such lines to this path, so this is
  // the one check.
  if (text.includes("\ufffd") && !isUtf8(buf.subarray(start, end))) {
    result.failures.push({ line, reason: "not valid UTF-8 (JSON lines must be UTF-8: was the file saved in another encoding?)" });
    return;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    result.failures.push({ line, reason: `invalid JSON: ${errorMessage(err)}` });
    return;
  }
  try {
    const item = itemFromLine(value, options.defaultThreadId);
    // Another kind of message, or (known once reduced) the marked answer to a structured response.
    const normalized = item && normalizeItem(item);
    if (normalized === undefined || isOtherMessage(normalized.message)) {
      result.skipped++;
      return;
    }
    probe?.(normalized.threadId);
    const found = scanNormalized(lineIndexed(normalized, (options.firstLine ?? 1) - 1 + line), options, acc.onRejectedPayload);
    result.entries += found.length;
    formatEntries(normalized.threadId, found, options.format, acc.output);
  } catch (err) {
    result.failures.push({ line, reason: errorMessage(err) });
  }
}

/**
 * Scan newline-separated JSON records. Failures carry line numbers relative to
 * the chunk (its first line is 1); blank lines count for numbering only.
 */
function scanLines(bytes: Uint8Array, options: LineScanOptions, probe?: ItemProbe): LineAcc {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const acc = newAcc();
  for (let start = 0; start < buf.length; ) {
    const nl = buf.indexOf(NEWLINE, start);
    const end = nl === -1 ? buf.length : nl;
    scanLine(buf, start, end, ++acc.result.lines, options, probe, acc);
    start = end + 1;
  }
  return acc;
}

/**
 * The engine's pass over the chunk (src/engine/lines.ts), then the lines it
 * left, each scanned here and its output put in its place. undefined when the
 * engine failed on the chunk (it has then written nothing anywhere).
 */
function scanLinesWithEngine(bytes: Uint8Array, options: LineScanOptions & { createdAt: string }, stats?: LinePathStats): LineAcc | undefined {
  // Bad options (sandbox prefixes, a switch that is no boolean, a created_at
  // that is no ISO-8601 string, a first line number that gives no call index): the
  // TypeScript path reports them line by line. The engine would write such a
  // created_at as it is and cast such a number to an integer.
  if (scanOptionsProblem(options.detectRefsInText, options.sandboxPrefixes) !== undefined) return undefined;
  if (timestampProblem(options.createdAt) !== undefined || !callIndexesSafe(options.firstLine ?? 1, bytes.byteLength)) return undefined;
  let scanned;
  try {
    scanned = scanLinesInEngine(bytes, options);
  } catch (err) {
    if (err instanceof EngineError) return undefined;
    throw err;
  }
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const acc = newAcc();
  const { result } = acc;
  let left = 0;
  for (const piece of scanned.pieces) {
    if (piece instanceof Uint8Array) {
      acc.output.push(piece);
      continue;
    }
    left++;
    scanLine(buf, piece.start, piece.end, piece.line, options, undefined, acc);
  }
  result.lines = scanned.lines + left;
  result.entries += scanned.entries;
  result.rejected += scanned.rejected;
  result.skipped += scanned.skipped;
  if (stats) {
    stats.engineLines += scanned.lines;
    stats.jsLines += left;
  }
  return acc;
}

/**
 * Whether every line of a chunk of `len` bytes starting at line `firstLine`
 * numbers a valid call index (a non-negative safe integer), as the reference
 * requires of the index it gives an anonymous result. A chunk of `len` bytes
 * holds at most `len` lines, so its last line number is below `firstLine + len`.
 */
function callIndexesSafe(firstLine: number, len: number): boolean {
  return isIndex(firstLine) && isIndex(firstLine + len);
}

/** How many lines of a chunk each path scanned (blank lines count for the path that saw them). */
export interface LinePathStats {
  engineLines: number;
  jsLines: number;
}

/** What a caller may hook into a chunk's scan. */
export interface LineScanHooks {
  /** Fault injection (tests): takes the chunk to the TypeScript path, which calls it per item. */
  probe?: ItemProbe;
  /** Where the packed result is written. */
  alloc?: Allocate;
  /** Counts of the lines each path took, added to. */
  stats?: LinePathStats;
}

/**
 * `scanLines` packed for the trip back from a worker. JSON-lines output goes
 * through the engine first; the table format, and chunks with a fault probe
 * (tests), take the TypeScript path whole. Without `createdAt`, every entry
 * of the chunk gets the time the chunk's scan began.
 */
export function scanLinesPacked(bytes: Uint8Array, options: LineScanOptions, hooks: LineScanHooks = {}): ArrayBuffer {
  const { probe, alloc, stats } = hooks;
  // One created_at for the chunk, whichever path scans each line.
  const timed = options.createdAt === undefined ? { ...options, createdAt: new Date().toISOString() } : (options as LineScanOptions & { createdAt: string });
  const acc = timed.format === "jsonl" && probe === undefined ? scanLinesWithEngine(bytes, timed, stats) : undefined;
  // Packed before any other engine call: the engine's pieces may be views of its memory.
  if (acc) return packLineResult(acc.result, acc.output, alloc);
  return scanLinesPackedJs(bytes, timed, hooks);
}

/** The reference: every line through JSON.parse and extractArtifacts. */
export function scanLinesPackedJs(bytes: Uint8Array, options: LineScanOptions, { probe, alloc, stats }: LineScanHooks = {}): ArrayBuffer {
  const { result, output } = scanLines(bytes, options, probe);
  if (stats) stats.jsLines += result.lines;
  return packLineResult(result, output, alloc);
}
