import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** A full garbage collection, without starting node with --expose-gc. */
export function collectGarbage(): void {
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}

/** The heap in use after a full collection. */
export function heapAfterGc(): number {
  collectGarbage();
  return process.memoryUsage().heapUsed;
}
