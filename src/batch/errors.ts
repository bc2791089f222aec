/**
 * Error shapes of batch scanning. A batch never throws for one bad item: each
 * failure is reported against the item (or input line) it belongs to, so the
 * caller can tell exactly which inputs produced no entries and why.
 */

/** One item of a `scanBatch` call that produced no entries because it failed. */
export interface BatchItemError {
  /** Position of the item in the input array. */
  index: number;
  threadId: string | undefined;
  toolCallId: string | undefined;
  /** Why it failed, naming the item. */
  error: string;
}

/** One input line of the CLI that could not be scanned (1-based line number). */
export interface LineFailure {
  line: number;
  reason: string;
}

import { toolCallIdOf } from "../messages.js";

const text = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/** Best-effort ids of an item for error messages; never throws on junk input. */
function describeItem(item: unknown): { threadId: string | undefined; toolCallId: string | undefined } {
  let threadId: string | undefined;
  let toolCallId: string | undefined;
  // Reading may throw (a getter, a revoked Proxy): what was read by then names the item.
  try {
    if (item === null || typeof item !== "object") return { threadId, toolCallId };
    const fields = item as { threadId?: unknown; message?: unknown };
    threadId = text(fields.threadId);
    const message = fields.message;
    if (message !== null && typeof message === "object") toolCallId = text(toolCallIdOf(message));
  } catch {
    // the error being reported says what went wrong
  }
  return { threadId, toolCallId };
}

function label(index: number, threadId: string | undefined, toolCallId: string | undefined): string {
  const ids = [threadId === undefined ? "" : `thread ${JSON.stringify(threadId)}`, toolCallId === undefined ? "" : `tool call ${JSON.stringify(toolCallId)}`]
    .filter(Boolean)
    .join(", ");
  return `item ${index}${ids ? ` (${ids})` : ""}`;
}

/**
 * No pool worker could start (its engine did not load, say): every task would
 * fail alike, so an archive scan ends with this instead of failing its lines
 * one chunk at a time, or, when its calling thread scans too, goes on there.
 */
export class WorkerStartError extends Error {}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The item itself could not be scanned: bad shape, or extraction threw (an engine trap included). */
export function itemError(index: number, item: unknown, cause: unknown): BatchItemError {
  const { threadId, toolCallId } = describeItem(item);
  return { index, threadId, toolCallId, error: `${label(index, threadId, toolCallId)}: ${errorMessage(cause)}` };
}

/**
 * The worker scanning a slice of the batch died (crash, exit, termination):
 * every item of that slice failed, and each error says so, since which of them
 * caused it is unknown.
 */
export function workerLostError(index: number, item: unknown, first: number, last: number, cause: unknown): BatchItemError {
  const { threadId, toolCallId } = describeItem(item);
  return {
    index,
    threadId,
    toolCallId,
    error: `${label(index, threadId, toolCallId)}: not scanned, the worker scanning items ${first}..${last} failed (${errorMessage(cause)})`,
  };
}
