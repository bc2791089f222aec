/**
 * The scanning work itself, the same on the calling thread and in a worker:
 * one item, a packed slice of items, or a chunk of archive lines.
 */
import { extractArtifacts } from "../extract.js";
import type { ArtifactEntry } from "../types.js";
import { errorMessage, type LineFailure } from "./errors.js";
import { formatEntry, type OutputFormat } from "./format.js";
import { itemFromLine, normalizeItem } from "./items.js";
import { packLineResult, packRecords, unpackRecords, type LineResult } from "./packing.js";

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

function extractOptions(options: ScanOptions) {
  const { createdAt } = options;
  return {
    detectRefsInText: options.detectRefsInText,
    sandboxPrefixes: options.sandboxPrefixes,
    now: createdAt === undefined ? undefined : () => createdAt,
  };
}

/** Entries of one item; throws an Error saying why the item cannot be scanned. */
export function scanItem(item: unknown, options: ScanOptions): ArtifactEntry[] {
  const { threadId, callIndex, message } = normalizeItem(item);
  return extractArtifacts(message, { threadId, callIndex, ...extractOptions(options) });
}

/** One record per item: the entries array, or `{"error": reason}`. */
export function scanRecords(buffer: ArrayBuffer, options: ScanOptions, probe?: ItemProbe): ArrayBuffer {
  const records = unpackRecords(buffer);
  const results = new Array<string>(records.length);
  for (let i = 0; i < records.length; i++) {
    try {
      const item = JSON.parse(records[i]) as { threadId: string };
      probe?.(item.threadId);
      results[i] = JSON.stringify(scanItem(item, options));
    } catch (err) {
      results[i] = JSON.stringify({ error: errorMessage(err) });
    }
  }
  return packRecords(results);
}

const NEWLINE = 0x0a;

/**
 * Scan newline-separated JSON records. Failures carry line numbers relative to
 * the chunk (its first line is 1); blank lines count for numbering only.
 */
export function scanLines(bytes: Uint8Array, options: LineScanOptions, probe?: ItemProbe): { result: LineResult; output: string } {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const failures: LineFailure[] = [];
  let output = "";
  let lines = 0;
  let entries = 0;
  let skipped = 0;
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
      const found = scanItem(item, options);
      entries += found.length;
      for (const entry of found) output += formatEntry(item.threadId, entry, options.format);
    } catch (err) {
      failures.push({ line: lines, reason: errorMessage(err) });
    }
  }
  return { result: { lines, entries, rejected: 0, skipped, failures }, output };
}

/** `scanLines` packed for the trip back from a worker. */
export function scanLinesPacked(bytes: Uint8Array, options: LineScanOptions, probe?: ItemProbe): ArrayBuffer {
  const { result, output } = scanLines(bytes, options, probe);
  return packLineResult(result, output);
}
