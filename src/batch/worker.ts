/**
 * Pool worker entry. The module's default export is a Promise of the handler:
 * Piscina awaits it once per thread, so the engine (compiled and instantiated
 * when this module graph loads) and a warm-up scan happen once per worker,
 * before the worker takes its first task. A worker whose engine cannot load
 * fails here, at start-up, instead of on every task.
 */
import { workerData } from "node:worker_threads";
import { Piscina } from "piscina";
import { spareOrNew } from "./buffers.js";
import { Moved } from "./moved.js";
import type { ScanResult, ScanTask, WorkerFaults } from "./protocol.js";
import { scanItem, scanLinesPacked, scanRecords, type ItemProbe } from "./scan.js";

const faults = (workerData as { faults?: WorkerFaults } | null)?.faults;
const probe: ItemProbe | undefined =
  faults?.exitOnThreadId === undefined && faults?.failOnThreadId === undefined && faults?.hold === undefined
    ? undefined
    : (threadId) => {
        if (threadId === faults.exitOnThreadId) process.exit(70);
        if (threadId === faults.failOnThreadId) throw new Error("injected item failure");
        const hold = faults.hold;
        if (threadId === hold?.threadId) {
          Atomics.store(hold.flag, 1, 1);
          // Waits only while the flag still says held: a release before the wait ends it at once.
          while (Atomics.load(hold.flag, 0) !== 0) Atomics.wait(hold.flag, 0, 1);
        }
      };

function handle(task: ScanTask): ReturnType<typeof Piscina.move> {
  const { alloc, unused } = spareOrNew(task.spare);
  const output =
    task.kind === "records"
      ? scanRecords(task.input, task.options, probe, alloc)
      : scanLinesPacked(new Uint8Array(task.input, 0, task.inputBytes), task.options, { probe, alloc });
  const free = [task.input];
  const spare = unused();
  if (spare) free.push(spare);
  const result: ScanResult = { output, free };
  return Piscina.move(new Moved(result, [output, ...free]));
}

export default (async () => {
  const failStartup = faults?.failStartup;
  if (failStartup === true || (failStartup instanceof Int32Array && Atomics.load(failStartup, 0) !== 0)) throw new Error("injected start-up failure");
  scanItem({ threadId: "warm-up", message: { type: "tool", tool_call_id: "warm-up", content: "/mnt/user-data/warm-up.txt" } }, {});
  return handle;
})();
