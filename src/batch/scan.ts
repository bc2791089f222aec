/**
 * The scanning work itself, the same on the calling thread and in a worker:
 * one item, a packed slice of items, or a chunk of archive lines.
 */
import { extractArtifacts, type ExtractOptions } from "../extract.js";
import type { ArtifactEntry } from "../types.js";
import { errorMessage, type LineFailure } from "./errors.js";
import { formatEntries, type OutputFormat } from "./format.js";
import { itemFromLine, normalizeItem, readItem, type NormalizedItem } from "./items.js";
import { encodeEntries, packLineResult, packRecords, unpackRecords, type Allocate, type LineResult } from "./packing.js";

/** Extraction options that travel to workers (plain data only). */
export interface ScanOptions {
  detectRefsInText?: boolean;
  sandboxPrefixes?: readonly string[];
  /** ISO-8601 timestamp for every entry's `created_at` (default: the time of extraction). */
  createdAt?: string;
}

export interface LineScanOptions extends ScanOptions {
  format: OutputFormat;
  /** Thread id for lines that carry none; without it such a line fails. */
  defaultThreadId?: string;
}

/** Called with each item's thread id before it is scanned; workers use it for fault injection in tests. */
export type ItemProbe = (threadId: string) => void;

/** Told of each structured payload extraction rejects whole, for the CLI's --stats. */
type RejectedPayload = NonNullable<ExtractOptions["onRejectedPayload"]>;

/** The extraction options of `options` alone, for the trip to a worker (plain data). */
export function scanOptionsOf(options: ScanOptions): ScanOptions {
  return { detectRefsInText: options.detectRefsInText, sandboxPrefixes: options.sandboxPrefixes, createdAt: options.createdAt };
}

/** Entries of one item; throws an Error saying why the item cannot be scanned. */
export function scanItem(item: unknown, options: ScanOptions, onRejectedPayload?: RejectedPayload): ArtifactEntry[] {
  return scanNormalized(normalizeItem(item), options, onRejectedPayload);
}

/** Entries of an item `normalizeItem` already checked and reduced. */
function scanNormalized({ threadId, callIndex, message }: NormalizedItem, options: ScanOptions, onRejectedPayload?: RejectedPayload): ArtifactEntry[] {
  const { createdAt } = options;
  const extract: ExtractOptions = {
    threadId,
    callIndex,
    detectRefsInText: options.detectRefsInText,
    sandboxPrefixes: options.sandboxPrefixes,
    now: createdAt === undefined ? undefined : () => createdAt,
    onRejectedPayload,
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

/**
 * Scan newline-separated JSON records. Failures carry line numbers relative to
 * the chunk (its first line is 1); blank lines count for numbering only.
 */
function scanLines(bytes: Uint8Array, options: LineScanOptions, probe?: ItemProbe): { result: LineResult; output: string[] } {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const failures: LineFailure[] = [];
  const output: string[] = [];
  let lines = 0;
  let entries = 0;
  let skipped = 0;
  let rejected = 0;
  const onRejectedPayload = () => void rejected++;
  for (let start = 0; start < buf.length; ) {
    const nl = buf.indexOf(NEWLINE, start);
    const end = nl === -1 ? buf.length : nl;
    const text = buf.toString("utf8", start, end);
    start = end + 1;
    lines++;
    if (text.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      failures.push({ line: lines, reason: `invalid JSON: ${errorMessage(err)}` });
      continue;
    }
    try {
      const item = itemFromLine(value, options.defaultThreadId);
      if (item === undefined) {
        skipped++;
        continue;
      }
      probe?.(item.threadId);
      const found = scanItem(item, options, onRejectedPayload);
      entries += found.length;
      formatEntries(item.threadId, found, options.format, output);
    } catch (err) {
      failures.push({ line: lines, reason: errorMessage(err) });
    }
  }
  return { result: { lines, entries, rejected, skipped, failures }, output };
}

/** `scanLines` packed for the trip back from a worker. */
export function scanLinesPacked(bytes: Uint8Array, options: LineScanOptions, probe?: ItemProbe, alloc?: Allocate): ArrayBuffer {
  const { result, output } = scanLines(bytes, options, probe);
  return packLineResult(result, output, alloc);
}
