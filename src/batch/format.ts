/** How the CLI prints entries: JSON lines (lossless) or a fixed-width table for people. */
import type { ArtifactEntry } from "../types.js";

export type OutputFormat = "jsonl" | "table";

/** Table columns and their widths; the last one takes what is left of the line. */
const COLUMNS = [
  ["THREAD", 16],
  ["HANDLE", 12],
  ["TYPE", 5],
  ["TOOL", 16],
  ["NAME", 28],
  ["REFERENCE", 0],
] as const;
const REF_WIDTH = 96;

function cell(value: string, width: number): string {
  // Entries come from untrusted tool output: no control character may move the cursor.
  const flat = value.replace(/[\x00-\x1f\x7f-\x9f]/g, " ");
  const chars = Array.from(flat);
  if (chars.length > width) return chars.slice(0, width - 1).join("") + "…";
  return width === REF_WIDTH ? flat : flat + " ".repeat(width - chars.length);
}

export const TABLE_HEADER = COLUMNS.map(([name, width]) => (width === 0 ? name : name.padEnd(width))).join(" ") + "\n";

/** What `formatEntry` puts before each JSON entry of a thread: `{"thread_id":…,`. */
export function jsonlPrefix(threadId: string): string {
  return `{"thread_id":${JSON.stringify(threadId)},`;
}

/** One entry as output text, newline included. `prefix` is `jsonlPrefix(threadId)`, computed once per result. */
export function formatEntry(threadId: string, entry: ArtifactEntry, format: OutputFormat, prefix = jsonlPrefix(threadId)): string {
  // Splicing the thread id into the entry's own JSON avoids copying every entry into a new object.
  if (format === "jsonl") return prefix + JSON.stringify(entry).slice(1) + "\n";
  const values = [threadId, entry.handle, entry.artifact_type, entry.tool_name, entry.display_name, entry.real_ref];
  return values.map((v, i) => cell(v, COLUMNS[i][1] || REF_WIDTH)).join(" ") + "\n";
}
