/**
 * The options of a scan, apart from the scanner itself: a caller that only
 * hands work to a pool (the archive stream) reads them without loading the
 * engine.
 */
import { scanOptionsProblem, timestampProblem } from "../types.js";
import type { OutputFormat } from "./format.js";

/** Extraction options that travel to workers (plain data only). */
export interface ScanOptions {
  detectRefsInText?: boolean | undefined;
  sandboxPrefixes?: readonly string[] | undefined;
  /** ISO-8601 timestamp for every entry's `created_at` (default: the time of extraction). */
  createdAt?: string | undefined;
}

export interface LineScanOptions extends ScanOptions {
  format: OutputFormat;
  /** Thread id for lines that carry none; without it such a line fails. */
  defaultThreadId?: string;
  /**
   * The number of the chunk's first line in the archive (default 1). A line
   * whose tool result has neither an `id` nor a `tool_call_id`, and that
   * gives no `call_index`, gets its line number as call index, so that two
   * such results of one thread do not share handles.
   */
  firstLine?: number;
}

/**
 * The extraction options of `options` alone, for the trip to a worker (plain
 * data); checked here, once, so a bad one is one clear error and not a
 * failure of every item or line.
 */
export function scanOptionsOf(options: ScanOptions): ScanOptions {
  const { detectRefsInText, sandboxPrefixes, createdAt } = options;
  const problem = scanOptionsProblem(detectRefsInText, sandboxPrefixes);
  if (problem !== undefined) throw new TypeError(problem);
  const badTime = createdAt === undefined ? undefined : timestampProblem(createdAt);
  if (badTime !== undefined) throw new TypeError(`options.createdAt must be an ISO-8601 string (${badTime})`);
  return { detectRefsInText, sandboxPrefixes, createdAt };
}
