/** How the CLI prints entries: JSON lines (lossless) or a fixed-width table for people. */
import type { ArtifactEntry } from "../types.js";

export type OutputFormat = "jsonl" | "table";

/** Table columns and their widths; the last (0) is drawn REF_WIDTH wide, cut but not padded. */
const COLUMNS = [
  ["THREAD", 16],
  ["HANDLE", 12],
  ["TYPE", 5],
  ["TOOL", 16],
  ["NAME", 28],
  ["REFERENCE", 0],
] as const;
const REF_WIDTH = 96;

/**
 * C0 and C1 control characters, DEL, the line and paragraph separators, and
 * the bidirectional embeddings, overrides and isolates: none of untrusted
 * text's may reach a terminal as is (the separators can break a row, the
 * last ones reorder what follows them on the line).
 */
export const CONTROL_CHARS = /[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** Code points a terminal draws in no column: combining marks, zero-width spaces and joiners, the BOM. */
const ZERO_WIDTH = /^[\p{Mn}\p{Me}\u200b-\u200f\u2060-\u2064\ufeff]+$/u;
/**
 * Graphemes a terminal draws in two columns: emoji (with a variation
 * selector, a flag's two regional indicators, a ZWJ sequence: one emoji) and
 * those starting with an East Asian wide or fullwidth character (Hangul, CJK,
 * kana, fullwidth forms). JavaScript has no East_Asian_Width property: these
 * are its W and F blocks.
 */
const WIDE =
  /^(?:[\p{Emoji_Presentation}\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\ua960-\ua97f\uac00-\ud7a3\uf900-\ufaff\ufe10-\ufe19\ufe30-\ufe6f\uff00-\uff60\uffe0-\uffe6\u{16fe0}-\u{16fe4}\u{17000}-\u{18aff}\u{1b000}-\u{1b2ff}\u{1f200}-\u{1f2ff}\u{20000}-\u{2fffd}\u{30000}-\u{3fffd}]|\p{Extended_Pictographic}.*\ufe0f)/u;

/** Made on the first table cell: a segmenter is slow to make, and every scan would pay for it at start-up, in every worker too. */
let graphemes: Intl.Segmenter | undefined;

/** The columns one grapheme takes in a terminal. */
const columns = (g: string): number => (g < "\u0300" ? 1 : WIDE.test(g) ? 2 : ZERO_WIDTH.test(g) ? 0 : 1);

/**
 * `value` in `width` terminal columns: cut with "…" when longer, padded when
 * shorter (but for the `last` column). Widths are counted per grapheme,
 * as a terminal draws them, so a row of CJK names or emoji stays aligned.
 */
function cell(value: string, width: number, last: boolean): string {
  // Entries come from untrusted tool output: no control character may move the cursor.
  const flat = value.replace(CONTROL_CHARS, " ");
  let used = 0;
  let fits = 0; // code units that fit before a "…"
  let kept = 0; // and their columns
  graphemes ??= new Intl.Segmenter(undefined, { granularity: "grapheme" });
  for (const { segment } of graphemes.segment(flat)) {
    used += columns(segment);
    if (used > width) {
      // A wide character that would straddle the cut leaves one column blank (none in the last column).
      return flat.slice(0, fits) + "…" + (last ? "" : " ".repeat(width - 1 - kept));
    }
    if (used <= width - 1) {
      fits += segment.length;
      kept = used;
    }
  }
  return last ? flat : flat + " ".repeat(width - used);
}

export const TABLE_HEADER = COLUMNS.map(([name, width]) => (width === 0 ? name : name.padEnd(width))).join(" ") + "\n";

const json = JSON.stringify;

/** Where output lines go: any list that takes strings (the line scanner's also holds the engine's bytes). */
type Lines = { push(line: string): unknown };

/**
 * The JSON line of each entry of one result, pushed to `out`: `{"thread_id":…}`
 * then the entry's fields, in ArtifactEntry's order, byte for byte what
 * JSON.stringify({thread_id, ...entry}) writes. The fields every entry of a
 * result shares (tool, call, time) are encoded once per result, and handles
 * and types need no escaping: about half the cost of stringifying each entry.
 */
function jsonLines(threadId: string, entries: readonly ArtifactEntry[], out: Lines): void {
  const first = entries[0];
  const head = `{"thread_id":${json(threadId)},"handle":"`;
  const call = `","tool_name":${json(first.tool_name)},"tool_call_id":${json(first.tool_call_id)},"call_index":${json(first.call_index)},"artifact_type":"`;
  const end = `,"created_at":${json(first.created_at)}}\n`;
  for (const e of entries) {
    const shared = e.tool_name === first.tool_name && e.tool_call_id === first.tool_call_id && e.call_index === first.call_index && e.created_at === first.created_at;
    if (!shared || e.consumed_by !== undefined) {
      out.push(json({ thread_id: threadId, ...e }) + "\n");
      continue;
    }
    const mime = e.mime_type === undefined ? "" : `,"mime_type":${json(e.mime_type)}`;
    out.push(`${head}${e.handle}${call}${e.artifact_type}","display_name":${json(e.display_name)},"real_ref":${json(e.real_ref)}${mime}${end}`);
  }
}

/** The output lines of one result's entries, newlines included, pushed to `out`. */
export function formatEntries(threadId: string, entries: readonly ArtifactEntry[], format: OutputFormat, out: Lines): void {
  if (entries.length === 0) return;
  if (format === "jsonl") return jsonLines(threadId, entries, out);
  for (const e of entries) {
    const values = [threadId, e.handle, e.artifact_type, e.tool_name, e.display_name, e.real_ref];
    out.push(values.map((v, i) => (COLUMNS[i][1] === 0 ? cell(v, REF_WIDTH, true) : cell(v, COLUMNS[i][1], false))).join(" ") + "\n");
  }
}
