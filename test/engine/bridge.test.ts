/**
 * Tests from a mutation campaign over the engine bridge (src/engine/scan.ts,
 * walk.ts, serialize.ts, wasm.ts and assembly/memory.ts): each pins
 * behaviour a survivor showed unpinned.
 */
import { describe, expect, it } from "vitest";
import { scanInputPointer, scanText } from "../../src/engine/scan.js";
import { MAX_REF_BYTES, walkJsonBytes, walkStructured } from "../../src/engine/walk.js";
import { engine, EngineError, rebuild, runEngine } from "../../src/engine/wasm.js";
import { collectGarbage } from "../support/heap.js";

const encoder = new TextEncoder();

describe("walk after a rebuild", () => {
  it("walks a large JSON text again after the instance was rebuilt (its arena is reserved on the new instance)", () => {
    const paths = Array.from({ length: 1000 }, (_, i) => `/data/${"x".repeat(2000)}/${i}.csv`);
    const bytes = encoder.encode(JSON.stringify({ files: paths }));
    expect(walkJsonBytes(bytes).refs.length).toBe(1000);
    rebuild(); // as a trap elsewhere, or memory given back after a huge text, would
    const again = walkJsonBytes(bytes);
    expect(again.status).toBe("ok");
    expect(again.refs.map((r) => r.ref)).toEqual(paths);
  });
});

describe("scan memory on a fresh instance", () => {
  it("finds references on a fresh instance in the densest output, repeats dropped (the repeat table's room is reserved)", () => {
    rebuild();
    expect(scanText("/a ".repeat(100_000), { sandboxPrefixes: ["/"] }).map((r) => r.ref)).toEqual(["/a"]);
    rebuild();
    const distinct = Array.from({ length: 50_000 }, (_, i) => `/${i.toString(36)}`);
    expect(scanText(`${distinct.join(" ")} ${distinct.join(" ")}`, { sandboxPrefixes: ["/"] }).map((r) => r.ref)).toEqual(distinct);
  });

  it("finds a reference after a long non-ASCII tail in a text too long to go to the engine as UTF-16", () => {
    // Past 2^24 units TextEncoder writes the text, ASCII first; the rest takes up to 3 bytes a unit.
    rebuild();
    const text = `${"a ".repeat(2 ** 23)}${"é".repeat(2 ** 24)} /mnt/user-data/end.txt`;
    expect(scanText(text).map((r) => r.ref)).toEqual(["/mnt/user-data/end.txt"]);
  });
});

describe("walk input", () => {
  it("drops only a whole byte order mark: other bytes EF BB .. before a JSON text leave it invalid", () => {
    const json = encoder.encode('{"path":"/x/a.csv"}');
    const withLead = (lead: number[]) => new Uint8Array([...lead, ...json]);
    expect(walkJsonBytes(withLead([0xef, 0xbb, 0xbf])).refs.map((r) => r.ref)).toEqual(["/x/a.csv"]);
    expect(walkJsonBytes(withLead([0xef, 0xbb, 0x80]))).toEqual({ status: "rejected", reason: "invalid", refs: [] }); // U+FEC0, not a mark
    expect(walkJsonBytes(withLead([0xef, 0xbb, 0x20]))).toEqual({ status: "rejected", reason: "invalid", refs: [] }); // not UTF-8
  });

  it("keeps no view of a replaced instance's memory alive after walking JSON bytes", async () => {
    expect(scanText("x ".repeat(20_000_000) + "/mnt/user-data/huge.csv")).toHaveLength(1);
    // An ASCII reference read from the walk's bytes (walkJsonBytes has no serializer's strings).
    expect(walkJsonBytes(encoder.encode('{"path":"/mnt/user-data/j.csv"}')).refs.map((r) => r.ref)).toEqual(["/mnt/user-data/j.csv"]);
    const old = new WeakRef(engine().memory.buffer);
    expect(old.deref()!.byteLength).toBeGreaterThan(64 << 20);
    // An ordinary scan starts a fresh instance, and nothing of the walk's holds the old one.
    expect(scanText("see /mnt/user-data/a.csv")).toHaveLength(1);
    expect(engine().memory.buffer.byteLength).toBeLessThan(4 << 20);
    await new Promise((resolve) => setTimeout(resolve, 0)); // a WeakRef target lives to the end of the job
    collectGarbage();
    expect(old.deref() === undefined, "the replaced memory is still reachable").toBe(true);
  });
});

describe("bounded serializer", () => {
  it("refuses an array whose length is a BigInt (a proxy's), as JSON.stringify throws", () => {
    const odd = new Proxy([], { get: (target, key) => (key === "length" ? 1n : Reflect.get(target, key)) });
    expect(() => JSON.stringify(odd)).toThrow(TypeError);
    expect(walkStructured({ files: odd })).toEqual({ status: "rejected", reason: "invalid", refs: [] });
  });

  it("keeps the outer payload's bytes when a toJSON walks another payload once they are past 1 MiB", () => {
    // A walk done with its bytes lets a grown buffer go; not the one an outer walk is still writing.
    const paths = Array.from({ length: 300 }, (_, i) => `/data/${i}/${"x".repeat(MAX_REF_BYTES - 20)}`);
    let inner: unknown;
    const payload = { files: paths, later: { toJSON: () => ((inner = walkStructured({ path: "/in/a.csv" })), "/after") }, path: "/last.csv" };
    const walk = walkStructured(payload);
    expect(inner).toEqual({ status: "ok", refs: [{ type: "file", ref: "/in/a.csv" }] });
    expect(walk).toEqual({ status: "ok", refs: [...paths, "/last.csv"].map((ref) => ({ type: "file", ref })) });
  });
});

describe("arena bounds", () => {
  it("turns a RangeError inside an engine call (a view past memory's end) into an EngineError and rebuilds", () => {
    const before = engine();
    const call = () =>
      runEngine("someOp", 12, () => {
        throw new RangeError("offset is out of bounds");
      });
    expect(call).toThrow(EngineError);
    expect(call).toThrow("tool-artifacts engine: someOp failed on 12 bytes of input: offset is out of bounds");
    expect(engine()).not.toBe(before);
  });

  it("gives memory back at the next scan of a few MB after a huge one, not only after a small one", () => {
    expect(scanText("x ".repeat(20_000_000) + "/mnt/user-data/huge.csv")).toHaveLength(1);
    expect(engine().memory.buffer.byteLength).toBeGreaterThan(64 << 20);
    // 2 MB of text: an operation of about 6 MB, well within what is kept.
    expect(scanText("y ".repeat(1_000_000) + "/mnt/user-data/mid.csv").map((r) => r.ref)).toEqual(["/mnt/user-data/mid.csv"]);
    expect(engine().memory.buffer.byteLength).toBeLessThan(16 << 20);
  });

  it("refuses an arena of exactly 4 GiB (the u32 ABI would wrap it to 0), then keeps working", () => {
    expect(() => scanInputPointer(2 ** 32 - 80)).toThrow(/could not grow memory to 4294967296 bytes/);
    expect(scanText("see /mnt/user-data/a.txt").map((r) => r.ref)).toEqual(["/mnt/user-data/a.txt"]);
  });
});
