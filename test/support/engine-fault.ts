/**
 * Fault injection into the engine for tests: src/engine/wasm.ts as it is,
 * except that every kernel call runEngine makes goes through `around`, which
 * may throw (as a trap would) before or after the real call. For use in a
 * `vi.mock("../src/engine/wasm.js", ...)` factory.
 */
type Wasm = typeof import("../../src/engine/wasm.js");

export function aroundKernelCalls(real: Wasm, around: <T>(op: string, call: () => T) => T): Wasm {
  return { ...real, runEngine: (op, inputBytes, fn) => real.runEngine(op, inputBytes, (e) => around(op, () => fn(e))) };
}
