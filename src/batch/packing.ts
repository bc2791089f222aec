/**
 * Wire formats between the calling thread and the pool's workers.
 *
 * Everything crosses as one ArrayBuffer moved with `Piscina.move` (no
 * structured clone of object graphs, no copy): the sender builds a fresh
 * buffer it never touches again, the receiver reads it in place.
 *
 * Records (batch items in, per-item results out): a table of offsets, then the
 * UTF-8 of all records back to back.
 *
 *     u32 count | u32 end[count] | UTF-8 of record 0 … record count-1
 *
 * `end[i]` is where record i ends in the decoded payload, counted in UTF-16
 * code units, so the receiver decodes the payload once and slices it instead
 * of decoding record by record. That needs each record to be well-formed
 * UTF-16 (JSON.stringify output always is: it escapes lone surrogates).
 *
 * Line results (CLI chunks out): counters, the output text ready to write,
 * then the failures as JSON.
 *
 *     u32 lines | u32 entries | u32 rejected | u32 skipped | u32 outputBytes | u32 failureBytes | output | failures
 */
import type { LineFailure } from "./errors.js";

const U32 = 4;

/** A fresh ArrayBuffer (never a slice of Node's shared Buffer pool, which must not be moved). */
function allocate(bytes: number): ArrayBuffer {
  return new ArrayBuffer(bytes);
}

export function packRecords(records: readonly string[]): ArrayBuffer {
  const payload = records.join("");
  const header = (records.length + 1) * U32;
  const buffer = allocate(header + Buffer.byteLength(payload, "utf8"));
  const table = new Uint32Array(buffer, 0, records.length + 1);
  table[0] = records.length;
  let end = 0;
  for (let i = 0; i < records.length; i++) table[i + 1] = end += records[i].length;
  Buffer.from(buffer, header).write(payload, "utf8");
  return buffer;
}

export function unpackRecords(buffer: ArrayBuffer): string[] {
  if (buffer.byteLength < U32) throw new Error(`packed records: ${buffer.byteLength} bytes is shorter than the header`);
  const count = new Uint32Array(buffer, 0, 1)[0];
  const header = (count + 1) * U32;
  if (header > buffer.byteLength) throw new Error(`packed records: header of ${count} records overruns ${buffer.byteLength} bytes`);
  const table = new Uint32Array(buffer, U32, count);
  const payload = Buffer.from(buffer, header).toString("utf8");
  const records = new Array<string>(count);
  let start = 0;
  for (let i = 0; i < count; i++) {
    const end = table[i];
    if (end < start || end > payload.length) throw new Error(`packed records: record ${i} ends at ${end}, outside ${start}..${payload.length}`);
    records[i] = payload.slice(start, end);
    start = end;
  }
  return records;
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

export function packLineResult(result: LineResult, output: string): ArrayBuffer {
  const failures = result.failures.length === 0 ? "" : JSON.stringify(result.failures.map((f) => [f.line, f.reason]));
  const outputBytes = Buffer.byteLength(output, "utf8");
  const failureBytes = Buffer.byteLength(failures, "utf8");
  const buffer = allocate(LINE_HEADER + outputBytes + failureBytes);
  const head = new Uint32Array(buffer, 0, 6);
  head.set([result.lines, result.entries, result.rejected, result.skipped, outputBytes, failureBytes]);
  const bytes = Buffer.from(buffer);
  bytes.write(output, LINE_HEADER, "utf8");
  bytes.write(failures, LINE_HEADER + outputBytes, "utf8");
  return buffer;
}

/** The counters, failures, and the output as a view into `buffer` (not copied). */
export function unpackLineResult(buffer: ArrayBuffer): LineResult & { output: Uint8Array } {
  if (buffer.byteLength < LINE_HEADER) throw new Error(`packed line result: ${buffer.byteLength} bytes is shorter than the header`);
  const [lines, entries, rejected, skipped, outputBytes, failureBytes] = new Uint32Array(buffer, 0, 6);
  if (LINE_HEADER + outputBytes + failureBytes !== buffer.byteLength) {
    throw new Error(`packed line result: sections of ${outputBytes} + ${failureBytes} bytes do not fill ${buffer.byteLength} bytes`);
  }
  const output = new Uint8Array(buffer, LINE_HEADER, outputBytes);
  const failures: LineFailure[] =
    failureBytes === 0
      ? []
      : (JSON.parse(Buffer.from(buffer, LINE_HEADER + outputBytes, failureBytes).toString("utf8")) as [number, string][]).map(
          ([line, reason]) => ({ line, reason }),
        );
  return { lines, entries, rejected, skipped, failures, output };
}
