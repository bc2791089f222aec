import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { engine, memoryView, reserve } from "../../src/engine/wasm.js";

describe("engine arena", () => {
  it("reserves an aligned arena and grows memory on demand", () => {
    const before = engine().memory.buffer.byteLength;
    const ptr = reserve(before + 3 * 65536, "test");
    expect(ptr % 16).toBe(0);
    expect(engine().memory.buffer.byteLength).toBeGreaterThanOrEqual(ptr + before + 3 * 65536);
    expect(memoryView().buffer).toBe(engine().memory.buffer);
  });

  it("does not keep growing for repeated requests of the same size", () => {
    reserve(1 << 20, "test");
    const size = engine().memory.buffer.byteLength;
    for (let i = 0; i < 10_000; i++) reserve(1 << 20, "test");
    expect(engine().memory.buffer.byteLength).toBe(size);
  });

  it("reports a failed grow as an Error naming the operation, then keeps working", () => {
    expect(() => reserve(2 ** 32 - 16, "scanText")).toThrow(/scanText could not grow memory/);
    expect(reserve(1024, "test")).toBeGreaterThan(0);
  });

  it("reports a grow the runtime refuses, within 4 GiB, as that Error, then keeps working", () => {
    // V8's --wasm-max-mem-pages caps every wasm memory (256 pages, 16 MiB):
    // the engine's memory.grow itself fails, where the test above stops at
    // the request past 4 GiB.
    const wasm = fileURLToPath(new URL("../../src/engine/wasm.ts", import.meta.url));
    const script = `
      import { engine, reserve } from ${JSON.stringify(wasm)};
      let refused = "grew";
      try { reserve(32 << 20, "scanText"); } catch (err) { refused = err.constructor.name + ": " + err.message; }
      console.log(JSON.stringify({ refused, bytes: engine().memory.buffer.byteLength, after: reserve(8 << 20, "test") > 0 }));`;
    const r = spawnSync(process.execPath, ["--wasm-max-mem-pages=256", "--import", "tsx", "--input-type=module", "-e", script], { encoding: "utf8" });
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout)).toEqual({ refused: "EngineError: tool-artifacts engine: scanText could not grow memory to 33554432 bytes", bytes: 65536, after: true });
  });
});
