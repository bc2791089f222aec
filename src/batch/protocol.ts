/**
 * What the pool and its workers pass each other. Apart from the worker entry,
 * so that the pool's public types name no Piscina type: a consumer's
 * TypeScript then never reads Piscina's declarations (which fail under
 * `moduleResolution: node16`).
 */
import type { LineScanOptions, ScanOptions } from "./scan.js";

/**
 * One slice of work. `input` holds packed records, or `inputBytes` of JSON
 * lines; `spare`, when sent, is a free buffer for the result to be written
 * into. Both are moved here and moved back.
 */
export type ScanTask = { input: ArrayBuffer; spare?: ArrayBuffer } & (
  | { kind: "records"; options: ScanOptions }
  | { kind: "lines"; inputBytes: number; options: LineScanOptions }
);

/** The packed result, and the buffers the task no longer needs, for reuse. */
export interface ScanResult {
  output: ArrayBuffer;
  free: ArrayBuffer[];
}

/** Test-only fault injection, set through the pool's workerData. */
export interface WorkerFaults {
  /** Exit the worker thread (as a crash would) on reaching an item of this thread. */
  exitOnThreadId?: string;
  /** Fail the item (as an engine trap would) on reaching an item of this thread. */
  failOnThreadId?: string;
  /**
   * Fail start-up, as a worker whose engine cannot load would: always, or
   * while this shared flag's first item is not 0 (a failure that passes; the
   * test clears it).
   */
  failStartup?: boolean | Int32Array;
  /**
   * On reaching an item of this thread, set the flag's second item to 1 and
   * wait while its first is 1: a worker kept busy until the test lets go.
   */
  hold?: { threadId: string; flag: Int32Array };
}
