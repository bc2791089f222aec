/**
 * Wire formats between the calling thread and the pool's workers.
 *
 * Everything crosses as one ArrayBuffer moved with `Piscina.move` (no
 * structured clone of object graphs, no copy): the sender builds a fresh
 * buffer it never touches again, the receiver reads it in place.
 *
 * Records (batch items in, per-item results out): a table of where each
 * record ends, then the records back to back as UTF-16 code units.
 *
 *     u32 count | u32 end[count] (in UTF-16 units) | UTF-16LE of record 0 … record count-1
 *
 * UTF-16, not UTF-8: a JavaScript string is UTF-16 already, so writing and
 * reading a record is a copy (no encoding or decoding either way), any
 * string survives (lone surrogates too), and the bytes
 * only ever move between threads of one process. Records are written and read
 * one by one: joining them into one large string first costs more than the
 * copy itself.
 *
 * Line results (CLI chunks out): counters, the failures as JSON, then the
 * output text ready to write (UTF-8, since it goes to stdout as is).
 *
 *     u32 lines | u32 entries | u32 rejected | u32 skipped | u32 outputBytes | u32 failureBytes | failures | output
 */
import type { ArtifactEntry } from "../types.js";
import type { LineFailure } from "./errors.js";

const U32 = 4;
const UNIT = 2;
// UTF-8 takes at most 3 bytes per UTF-16 unit (a surrogate pair: 4 for 2).
const MAX_UTF8_PER_UNIT = 3;

/** Allocates a buffer of at least the given size (a reused one: see BufferPool). */
export type Allocate = (bytes: number) => ArrayBuffer;

// Never a slice of Node's shared Buffer pool: that must not be moved.
const fresh: Allocate = (bytes) => new ArrayBuffer(bytes);

/** The records packed at the start of a buffer from `alloc` (which may be larger than needed). */
export function packRecords(records: readonly string[], alloc: Allocate = fresh): ArrayBuffer {
  const header = (records.length + 1) * U32;
  let units = 0;
  for (const r of records) units += r.length;
  const buffer = alloc(header + units * UNIT);
  const table = new Uint32Array(buffer, 0, records.length + 1);
  table[0] = records.length;
  const bytes = Buffer.from(buffer);
  let at = header;
  for (let i = 0; i < records.length; i++) {
    at += bytes.write(records[i], at, "utf16le");
    table[i + 1] = (at - header) / UNIT;
  }
  return buffer;
}

export function unpackRecords(buffer: ArrayBuffer): string[] {
  if (buffer.byteLength < U32) throw new Error(`packed records: ${buffer.byteLength} bytes is shorter than the header`);
  const count = new Uint32Array(buffer, 0, 1)[0];
  const header = (count + 1) * U32;
  if (header > buffer.byteLength) throw new Error(`packed records: header of ${count} records overruns ${buffer.byteLength} bytes`);
  const table = new Uint32Array(buffer, U32, count);
  const bytes = Buffer.from(buffer);
  const units = (buffer.byteLength - header) / UNIT;
  const records = new Array<string>(count);
  let start = 0;
  for (let i = 0; i < count; i++) {
    const end = table[i];
    if (end < start || end > units) throw new Error(`packed records: record ${i} ends at ${end}, outside ${start}..${units}`);
    records[i] = bytes.toString("utf16le", header + start * UNIT, header + end * UNIT);
    start = end;
  }
  return records;
}

/**
 * An item's entries as one record: each entry a JSON array of its values in
 * a fixed order, not an object, which halves the bytes to write and parse
 * (the key names are most of a small entry).
 */
export function encodeEntries(entries: readonly ArtifactEntry[]): string {
  return JSON.stringify(
    entries.map((e) => {
      const values: unknown[] = [e.handle, e.tool_name, e.tool_call_id, e.call_index, e.artifact_type, e.display_name, e.real_ref, e.created_at];
      if (e.mime_type !== undefined || e.consumed_by !== undefined) values.push(e.mime_type ?? null);
      if (e.consumed_by !== undefined) values.push(e.consumed_by);
      return values;
    }),
  );
}

export function decodeEntries(record: string): ArtifactEntry[] {
  return (JSON.parse(record) as unknown[][]).map((v) => {
    // Keys in ArtifactEntry's order, as extraction sets them, so an entry
    // serializes to the same bytes whether or not it came through a worker.
    const entry = {
      handle: v[0],
      tool_name: v[1],
      tool_call_id: v[2],
      call_index: v[3],
      artifact_type: v[4],
      display_name: v[5],
      real_ref: v[6],
    } as ArtifactEntry;
    if (v[8] != null) entry.mime_type = v[8] as string;
    entry.created_at = v[7] as string;
    if (v[9] !== undefined) entry.consumed_by = v[9] as string[];
    return entry;
  });
}

/** What scanning one chunk of input lines produced. */
export interface LineResult {
  /** Lines in the chunk, blank ones included (they still count for numbering). */
  lines: number;
  entries: number;
  /** Structured payloads rejected whole (node or depth budget, not JSON). */
  rejected: number;
  /** Well-formed lines that hold no tool result (other message types). */
  skipped: number;
  /** Failures with line numbers relative to the chunk (first line = 1). */
  failures: LineFailure[];
}

const LINE_HEADER = 6 * U32;

/**
 * `output` is written piece by piece, for the reason records are: strings
 * into room for their longest UTF-8 (3 bytes per UTF-16 unit), since
 * measuring each piece's UTF-8 length first was a tenth of a CLI scan; byte
 * pieces (the engine's output) are copied. Pooled buffers make the headroom
 * free after the first few chunks.
 */
export function packLineResult(result: LineResult, output: readonly (string | Uint8Array)[], alloc: Allocate = fresh): ArrayBuffer {
  const failures = result.failures.length === 0 ? "" : JSON.stringify(result.failures.map((f) => [f.line, f.reason]));
  let room = 0;
  for (const piece of output) room += typeof piece === "string" ? piece.length * MAX_UTF8_PER_UNIT : piece.byteLength;
  const failureBytes = Buffer.byteLength(failures, "utf8");
  const buffer = alloc(LINE_HEADER + failureBytes + room);
  const bytes = Buffer.from(buffer);
  bytes.write(failures, LINE_HEADER, "utf8");
  const start = LINE_HEADER + failureBytes;
  let at = start;
  for (const piece of output) {
    if (typeof piece === "string") at += bytes.write(piece, at, "utf8");
    else {
      bytes.set(piece, at);
      at += piece.byteLength;
    }
  }
  new Uint32Array(buffer, 0, 6).set([result.lines, result.entries, result.rejected, result.skipped, at - start, failureBytes]);
  return buffer;
}

/** The counters, failures, and the output as a view into `buffer` (not copied). */
export function unpackLineResult(buffer: ArrayBuffer): LineResult & { output: Uint8Array } {
  if (buffer.byteLength < LINE_HEADER) throw new Error(`packed line result: ${buffer.byteLength} bytes is shorter than the header`);
  const [lines, entries, rejected, skipped, outputBytes, failureBytes] = new Uint32Array(buffer, 0, 6);
  if (LINE_HEADER + outputBytes + failureBytes > buffer.byteLength) {
    throw new Error(`packed line result: sections of ${outputBytes} + ${failureBytes} bytes overrun ${buffer.byteLength} bytes`);
  }
  const output = new Uint8Array(buffer, LINE_HEADER + failureBytes, outputBytes);
  const failures: LineFailure[] =
    failureBytes === 0
      ? []
      : (JSON.parse(Buffer.from(buffer, LINE_HEADER, failureBytes).toString("utf8")) as [number, string][]).map(
          ([line, reason]) => ({ line, reason }),
        );
  return { lines, entries, rejected, skipped, failures, output };
}
