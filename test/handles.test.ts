import { describe, expect, it } from "vitest";
import { findHandles, HANDLE_PATTERN, isHandle, resolveHandles } from "../src/handles.js";

const A = "art_0123abcd";
const B = "art_deadbeef";
const C = "art_00000000";
const refs = new Map([
  [A, "/mnt/user-data/a.txt"],
  [B, "https://x.test/b.pdf?q=$1&r=$&"],
]);

describe("findHandles", () => {
  it("finds bare and backticked handles in order, once each", () => {
    expect(findHandles(`use \`${B}\` then ${A}, again ${B}.`)).toEqual([B, A]);
  });

  it("requires no word character either side of a bare handle", () => {
    expect(findHandles(`x${A} ${A}x ${A}_ _${A} ${A}0 é${A} ${A}ü ٣${A}`)).toEqual([]);
    expect(findHandles(`(${A}) "${B}" /${C}/`)).toEqual([A, B, C]);
    expect(findHandles(`path/${A}.txt`)).toEqual([A]);
  });

  it("accepts a backticked handle even where a bare one would touch a word", () => {
    expect(findHandles(`x\`${A}\`y`)).toEqual([A]);
  });

  it("rejects handles of the wrong shape", () => {
    expect(findHandles("art_0123ABCD art_0123abc art_0123abcde art-0123abcd ART_0123abcd")).toEqual([]);
  });

  it("walks string values at any depth of objects and arrays, never keys", () => {
    const args = { [A]: 1, path: B, nested: { list: [1, null, { deep: [`see ${C}`] }], flag: true } };
    expect(findHandles(args)).toEqual([B, C]);
  });

  it("survives cycles and very deep nesting", () => {
    const cyclic: Record<string, unknown> = { a: A };
    cyclic.self = cyclic;
    cyclic.list = [cyclic, B];
    expect(findHandles(cyclic)).toEqual([A, B]);
    let deep: unknown = C;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(findHandles(deep)).toEqual([C]);
  });

  it("does not depend on where a host left the exported pattern", () => {
    const text = `first ${A}, then ${B}`;
    // A global pattern's test() moves its lastIndex past the match.
    expect(HANDLE_PATTERN.test(text)).toBe(true);
    expect(HANDLE_PATTERN.lastIndex).toBeGreaterThan(text.indexOf(A));
    try {
      expect(findHandles(text)).toEqual([A, B]);
      expect(findHandles({ path: text })).toEqual([A, B]);
    } finally {
      HANDLE_PATTERN.lastIndex = 0;
    }
  });

  it("returns nothing for non-strings and non-objects", () => {
    expect(findHandles(undefined)).toEqual([]);
    expect(findHandles(42)).toEqual([]);
    expect(findHandles(null)).toEqual([]);
  });
});

describe("isHandle", () => {
  it("matches exactly one handle", () => {
    expect(isHandle(A)).toBe(true);
    expect(isHandle(`\`${A}\``)).toBe(false);
    expect(isHandle(` ${A}`)).toBe(false);
    expect(isHandle(7)).toBe(false);
  });

  it("is lowercase hex only, as the pattern that finds handles in arguments: no stored handle a call cannot name counts as usable", () => {
    for (const h of ["art_0000A001", "ART_0000a001", "art_0000g001", "art_zzzzzzzz"]) {
      expect(isHandle(h), h).toBe(false);
      expect(findHandles(h), h).toEqual([]);
    }
  });
});

describe("resolveHandles", () => {
  it("replaces bare handles and backticked handles including their backticks", () => {
    expect(resolveHandles(`open \`${A}\` and ${A}`, refs)).toBe("open /mnt/user-data/a.txt and /mnt/user-data/a.txt");
  });

  it("a backtick with no partner stays: only a closed pair belongs to the handle", () => {
    expect(resolveHandles(`see \`${A} now and ${A}\``, refs)).toBe("see `/mnt/user-data/a.txt now and /mnt/user-data/a.txt`");
  });

  it("inserts references literally, `$` sequences included", () => {
    expect(resolveHandles(B, refs)).toBe("https://x.test/b.pdf?q=$1&r=$&");
  });

  it("leaves unknown handles as written", () => {
    expect(resolveHandles(`${C} and \`${C}\``, refs)).toBe(`${C} and \`${C}\``);
  });

  it("accepts a lookup function", () => {
    expect(resolveHandles({ p: A }, (h) => (h === A ? "/x" : undefined))).toEqual({ p: "/x" });
  });

  it("resolves nested values, copying only along changed paths, never touching the input", () => {
    const untouched = { n: 1, s: "plain" };
    const args = { path: A, meta: untouched, list: [1, { url: `\`${B}\`` }, [A, "x"]], [B]: "key stays" };
    const before = JSON.stringify(args);
    const out = resolveHandles(args, refs);
    expect(out).toEqual({ path: refs.get(A), meta: untouched, list: [1, { url: refs.get(B) }, [refs.get(A), "x"]], [B]: "key stays" });
    expect(JSON.stringify(args)).toBe(before);
    expect(out).not.toBe(args);
    expect(out.meta).toBe(untouched);
  });

  it("returns the very input when there is nothing to replace", () => {
    const args = { a: ["x", { b: "y" }], c: 3 };
    expect(resolveHandles(args, refs)).toBe(args);
    expect(resolveHandles(5, refs)).toBe(5);
  });

  it("survives cycles and very deep nesting", () => {
    const cyclic: Record<string, unknown> = { a: A };
    cyclic.self = cyclic;
    const out = resolveHandles(cyclic, refs);
    expect(out.a).toBe(refs.get(A));
    expect(cyclic.a).toBe(A);
    let deep: unknown = A;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    let res = resolveHandles(deep, refs);
    for (let i = 0; i < 100_000; i++) res = (res as unknown[])[0];
    expect(res).toBe(refs.get(A));
  });

  it("keeps a __proto__ key an own data property and never pollutes prototypes", () => {
    const args = JSON.parse(`{"__proto__": {"polluted": "${A}"}, "p": "${A}"}`);
    const out = resolveHandles(args, refs) as Record<string, unknown>;
    expect(Object.hasOwn(out, "__proto__")).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect((Object.getOwnPropertyDescriptor(out, "__proto__")!.value as Record<string, unknown>).polluted).toBe(refs.get(A));
  });
});

describe("resolveHandles: shared subtrees", () => {
  it("resolves a subtree shared by siblings (no cycle) wherever it appears", () => {
    const shared = { path: A };
    const input = { first: shared, second: shared, list: [shared, [shared]] };
    const out = resolveHandles(input, refs);
    const resolved = { path: "/mnt/user-data/a.txt" };
    expect(out).toEqual({ first: resolved, second: resolved, list: [resolved, [resolved]] });
    expect(shared.path).toBe(A); // the input is untouched
  });

  it("reads and copies a shared object once, however many paths lead to it", () => {
    // Each level holds the one below twice: 2^16 paths to the handle at the
    // bottom, 17 objects. Walked by path, the lookup runs 2^16 times (and at
    // 24 levels, 22 s went by).
    let node: Record<string, unknown> = { path: A };
    const bottom = node;
    for (let i = 0; i < 16; i++) node = { left: node, right: node };
    let lookups = 0;
    const out = resolveHandles(node, (h) => (lookups++, refs.get(h)));
    expect(lookups).toBe(1);
    let copy = out;
    for (let i = 0; i < 16; i++) {
      expect(copy.left).toBe(copy.right); // one copy, shared as the input shares
      copy = copy.left as Record<string, unknown>;
    }
    expect(copy).toEqual({ path: refs.get(A) });
    expect(bottom.path).toBe(A);
  });

  it("makes a cycle through a copied object lead to the copy, so no path from the result reaches the handle", () => {
    const args: Record<string, unknown> = { path: A };
    args.self = args;
    args.list = [args, { back: args }];
    const out = resolveHandles(args, refs) as Record<string, unknown> & { list: [unknown, { back: unknown }] };
    expect(out).not.toBe(args);
    expect(out.self).toBe(out);
    expect(out.list[0]).toBe(out);
    expect(out.list[1].back).toBe(out);
    expect(findHandles(out)).toEqual([]);
    expect(args.path).toBe(A);
    // A cycle with nothing to replace is returned as it is.
    const quiet: Record<string, unknown> = { path: "/x" };
    quiet.self = quiet;
    expect(resolveHandles(quiet, refs)).toBe(quiet);
  });
});

describe("isHandle and resolveHandles: exactness and copies", () => {
  it("isHandle is exactly one handle, nothing after it", () => {
    expect(isHandle("art_0123abcd")).toBe(true);
    expect(isHandle("art_0123abcdx")).toBe(false);
    expect(isHandle("art_0123abcd\n")).toBe(false);
  });

  it("resolveHandles refuses a lookup that is neither a function nor a Map, before any handle is looked up", () => {
    expect(() => resolveHandles("no handle here", {} as never)).toThrow(TypeError);
    expect(() => resolveHandles({ a: "art_0123abcd" }, { get: 1 } as never)).toThrow(TypeError);
  });

  it("reads a long array by the items it holds, not by its length", () => {
    // An array built in code can claim billions of slots with two items;
    // read slot by slot (or sliced), 2^32 - 1 of them took minutes. Ten
    // million here, so that reading them all fails in seconds.
    const args = { list: [A] as unknown[] };
    args.list.length = 10_000_000;
    args.list[9_999_999] = `see ${B}`;
    const reads: PropertyKey[] = [];
    const watched = { list: new Proxy(args.list, { get: (t, k, r) => (reads.push(k), Reflect.get(t, k, r)) }) };
    expect(findHandles(watched)).toEqual([A, B]);
    const out = resolveHandles(watched, refs);
    expect(out.list).toHaveLength(10_000_000);
    expect(out.list[0]).toBe(refs.get(A));
    expect(out.list[9_999_999]).toBe(`see ${refs.get(B)}`);
    expect(Object.keys(out.list)).toEqual(["0", "9999999"]);
    // A key that is not an index is no item, as slot by slot it is never read.
    const odd: unknown[] = [];
    odd.length = 10_000_000;
    (odd as unknown as Record<string, unknown>)["100000.5"] = A;
    expect(findHandles({ odd })).toEqual([]);
    // Slot by slot only until 65,536 of them held nothing, then by its keys.
    expect(reads.filter((k) => typeof k === "string" && /^\d+$/.test(k)).length).toBeLessThan(8 * 65_536);
  });

  it("reads an array's length once: a Proxy that answers a long length the second time gets no longer walk", () => {
    let lengthReads = 0;
    let slotReads = 0;
    const flipping = () =>
      new Proxy([A], {
        get: (t, k, r) => {
          if (k === "length") return lengthReads++ === 0 ? 1 : 10_000_000;
          if (typeof k === "string" && /^\d+$/.test(k)) slotReads++;
          return Reflect.get(t, k, r);
        },
      });
    expect(findHandles({ list: flipping() })).toEqual([A]);
    lengthReads = 0;
    expect(resolveHandles({ list: flipping() }, refs)).toEqual({ list: [refs.get(A)] });
    expect(slotReads).toBeLessThanOrEqual(4);
  });

  it("a copied array keeps its holes", () => {
    const args = [, "art_0123abcd"]; // eslint-disable-line no-sparse-arrays
    const out = resolveHandles(args, new Map([["art_0123abcd", "/mnt/user-data/a.txt"]]));
    expect(out).not.toBe(args);
    expect(out[1]).toBe("/mnt/user-data/a.txt");
    expect(0 in out).toBe(false);
  });

  it("a long array of holes, copied by its slots, keeps its length", () => {
    const args: unknown[] = [`see ${A}`];
    args.length = 70_000;
    const out = resolveHandles({ items: args }, refs);
    expect(out.items).toHaveLength(70_000);
    expect(out.items[0]).toBe("see /mnt/user-data/a.txt");
    expect(Object.keys(out.items)).toEqual(["0"]);
  });
});
