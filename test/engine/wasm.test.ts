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
});
