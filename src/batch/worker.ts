/**
 * Pool worker entry. The module's default export is a Promise of the handler:
 * Piscina awaits it once per thread, so the engine (compiled and instantiated
 * when this module graph loads) and a warm-up scan happen once per worker,
 * before the worker takes its first task. A worker whose engine cannot load
 * fails here, at start-up, instead of on every task.
 */
import { workerData } from "node:worker_threads";
import { Piscina } from "piscina";
import { scanItem, scanLinesPacked, scanRecords, type ItemProbe, type LineScanOptions, type ScanOptions } from "./scan.js";

export type ScanTask =
  | { kind: "records"; buffer: ArrayBuffer; options: ScanOptions }
  | { kind: "lines"; buffer: ArrayBuffer; options: LineScanOptions };

/** Test-only fault injection, set through the pool's workerData. */
export interface WorkerFaults {
  /** Exit the worker thread (as a crash would) on reaching an item of this thread. */
  exitOnThreadId?: string;
  /** Fail start-up, as a worker whose engine cannot load would. */
  failStartup?: boolean;
}

const faults = (workerData as { faults?: WorkerFaults } | null)?.faults;
const probe: ItemProbe | undefined =
  faults?.exitOnThreadId === undefined
    ? undefined
    : (threadId) => {
        if (threadId === faults.exitOnThreadId) process.exit(70);
      };

function handle(task: ScanTask) {
  const result =
    task.kind === "records"
      ? scanRecords(task.buffer, task.options, probe)
      : scanLinesPacked(new Uint8Array(task.buffer), task.options, probe);
  return Piscina.move(result);
}

export default (async () => {
  if (faults?.failStartup) throw new Error("injected start-up failure");
  scanItem({ threadId: "warm-up", message: { type: "tool", tool_call_id: "warm-up", content: "/mnt/user-data/warm-up.txt" } }, {});
  return handle;
})();
