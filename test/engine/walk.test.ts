import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { baselineIsReference, baselineIsTaskToken } from "../../bench/baselines/extract-ts.js";
import { KNOWN_KEYS, serializeBounded, serializerHeldBytes } from "../../src/engine/serialize.js";
import {
  isReference,
  isTaskToken,
  MAX_REF_BYTES,
  MAX_WALK_DEPTH,
  MAX_WALK_NODES,
  walkJsonBytes,
  walkJsonBytesScalar,
  walkStructured,
  walkStructuredWithJson,
  type StructuredWalk,
} from "../../src/engine/walk.js";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const walkText = (text: string) => walkJsonBytes(encoder.encode(text));
const refsOf = (w: StructuredWalk) => w.refs.map((r) => r.ref);
const dataOf = (w: StructuredWalk) => (w.status === "ok" ? w.data : undefined);
const rejectedAs = (reason: string) => ({ status: "rejected", reason, refs: [] });

/** `value` inside `times` one-item arrays: the value sits at level times + 1. */
function wrap(value: unknown, times: number): unknown {
  for (let i = 0; i < times; i++) value = [value];
  return value;
}

/** An independent count of JSON.parse(JSON.stringify(v)): values, and the deepest level. */
function measure(v: unknown, level = 1): { nodes: number; depth: number } {
  let nodes = 1;
  let depth = level;
  const children = Array.isArray(v) ? v : v !== null && typeof v === "object" ? Object.values(v) : [];
  for (const c of children) {
    const m = measure(c, level + 1);
    nodes += m.nodes;
    depth = Math.max(depth, m.depth);
  }
  return { nodes, depth };
}

const FILE_KEYS = ["file", "files", "file_path", "path", "url", "urls"];
const TASK_KEYS = ["task_id", "job_id"];

// Strings near the gates' edges: shape prefixes, then mixed characters.
const SPECIALS = [" ", "\n", "\t", "\u00a0", "\u2028", "\u0085", "\u007f", "\u0000", "\ud800", "\udc00", "😀", "é", '"', "\\", "/", "?", "#", "@", ":", "[", "]"];
const refish = fc
  .tuple(
    fc.constantFrom("/", "//", "C:\\", "c:/", "z:", "http://", "HTTPS://", "https://", "http:/", "data:", "file:///", "blob:", "rel/", "", "1:/"),
    fc.array(fc.oneof(fc.string({ unit: "binary", maxLength: 4 }), fc.constantFrom(...SPECIALS)), { maxLength: 6 }),
  )
  .map(([head, tail]) => head + tail.join(""));

const payload = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: "small", withCrossShrink: true }, fc.jsonValue({ maxDepth: 1 }), refish, tie("object"), tie("list")),
  list: fc.array(tie("value"), { maxLength: 5 }),
  object: fc.dictionary(fc.oneof(fc.constantFrom(...FILE_KEYS, ...TASK_KEYS), fc.string({ maxLength: 5 })), tie("value"), { maxKeys: 5 }),
})).value;

describe("serializeBounded", () => {
  const text = (v: unknown) => {
    const r = serializeBounded(v);
    return r.ok ? decoder.decode(r.bytes) : r.reason;
  };

  it("writes exactly JSON.stringify's text for JSON values", () => {
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: "binary" }), (v) => {
        const r = serializeBounded(v, Infinity, Infinity);
        expect(r.ok && decoder.decode(r.bytes)).toBe(JSON.stringify(v));
      }),
      { numRuns: 300 },
    );
  });

  it("writes exactly JSON.stringify's text for values with undefined, functions, symbols, toJSON, dates and boxes", () => {
    const odd = fc.oneof(
      fc.constant(undefined),
      fc.constant(() => 1),
      fc.constant(Symbol("s")),
      fc.date({ noInvalidDate: false }),
      fc.jsonValue({ maxDepth: 1 }).map((inner) => ({ toJSON: (key: string) => [key, inner] })),
      fc.double().map((d) => Object(d) as object),
      fc.string().map((s) => Object(s) as object),
      fc.boolean().map((b) => Object(b) as object),
      fc.constantFrom(NaN, Infinity, -Infinity, -0),
    );
    const value = fc.letrec((tie) => ({
      v: fc.oneof({ depthSize: "small" }, fc.jsonValue({ maxDepth: 1 }), odd, tie("o"), tie("a")),
      o: fc.dictionary(fc.string({ maxLength: 4 }), tie("v"), { maxKeys: 4 }),
      a: fc.array(tie("v"), { maxLength: 4 }),
    })).v;
    fc.assert(
      fc.property(value, (v) => {
        const r = serializeBounded(v, Infinity, Infinity);
        const expected = JSON.stringify(v);
        expect(r.ok && decoder.decode(r.bytes)).toBe(expected === undefined ? "" : expected);
      }),
      { numRuns: 300 },
    );
  });

  it("writes long strings exactly: escapes, non-ASCII, surrogate pairs and lone surrogates", () => {
    const long = fc.oneof(fc.string({ unit: "binary", minLength: 40, maxLength: 300 }), fc.string({ minLength: 40, maxLength: 300 }));
    fc.assert(
      fc.property(fc.array(long, { maxLength: 4 }), (v) => {
        const r = serializeBounded(v);
        expect(r.ok && decoder.decode(r.bytes)).toBe(JSON.stringify(v));
      }),
      { numRuns: 300 },
    );
  });

  it("writes ASCII strings exactly, every control character, quote, backslash and DEL included, short and long", () => {
    const ascii = fc.string({ unit: fc.integer({ min: 0, max: 0x7f }).map((c) => String.fromCharCode(c)), maxLength: 120 });
    const prose = fc.array(fc.constantFrom("word ", "/mnt/user-data/a.csv", "\n", "\t", '"', "\\", "\u007f", "\u0001"), { maxLength: 40 }).map((p) => p.join(""));
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.oneof(ascii, prose), fc.oneof(ascii, prose)), { maxLength: 4 }), (pairs) => {
        const v = { entries: Object.fromEntries(pairs), path: pairs.map(([k]) => k), note: pairs.map(([, x]) => x).join("\n") };
        const r = serializeBounded(v);
        expect(r.ok && decoder.decode(r.bytes)).toBe(JSON.stringify(v));
      }),
      { numRuns: 300 },
    );
  });

  it("rejects over budget exactly when the JSON value has more than 1024 nodes or 32 levels", () => {
    const big = fc.letrec((tie) => ({
      v: fc.oneof({ depthSize: "medium" }, fc.integer(), tie("a")),
      a: fc.array(tie("v"), { maxLength: 40 }),
    })).v;
    fc.assert(
      fc.property(fc.oneof(big, fc.nat(40).map((n) => wrap(1, n))), (v) => {
        const { nodes, depth } = measure(v);
        const r = serializeBounded(v);
        expect(r.ok).toBe(nodes <= MAX_WALK_NODES && depth <= MAX_WALK_DEPTH);
      }),
      { numRuns: 300 },
    );
  });

  it("stops reading at the first value over the node budget", () => {
    let reads = 0;
    const endless = new Proxy([] as number[], {
      get: (target, key) => (key === "length" ? 1e9 : typeof key === "string" && /^\d+$/.test(key) ? ++reads : Reflect.get(target, key)),
    });
    expect(serializeBounded(endless)).toEqual({ ok: false, reason: "nodes" });
    expect(reads).toBe(MAX_WALK_NODES); // the root plus 1023 items fit; the 1024th item is one too many
  });

  it("passes each toJSON its key: the property name, the index as a string, or the empty string", () => {
    const keys: string[] = [];
    const spy = { toJSON: (k: string) => (keys.push(k), 1) };
    expect(text(spy)).toBe("1");
    expect(text({ a: spy, b: [spy, spy] })).toBe('{"a":1,"b":[1,1]}');
    expect(keys).toEqual(["", "a", "0", "1"]);
  });

  it("writes a string longer than 4096 UTF-16 units as the stand-in and marks the bytes incomplete", () => {
    const r = serializeBounded({ data: "x".repeat(100 * 1024 * 1024) });
    expect(r.ok && decoder.decode(r.bytes)).toBe('{"data":"\\n"}');
    expect(r.ok && r.complete).toBe(false);
  });

  it("writes a string of exactly 4096 units in full", () => {
    const s = "é".repeat(MAX_REF_BYTES);
    const r = serializeBounded([s]);
    expect(r.ok && r.complete && decoder.decode(r.bytes)).toBe(JSON.stringify([s]));
  });

  it("stops copying strings the gates will not read once 4096 bytes are written", () => {
    const notes = Array.from({ length: 1000 }, (_, i) => `${i}`.padEnd(1000, "x"));
    const r = serializeBounded({ notes, files: notes.map((n) => "/" + n) }, Infinity, Infinity);
    expect(r.ok && r.complete).toBe(false);
    // Five notes fit under 4096 bytes at the point each starts; the file strings are all read by the gates.
    const expected = JSON.stringify({ notes: notes.map((n, i) => (i < 5 ? n : "\n")), files: notes.map((n) => "/" + n) });
    expect(r.ok && decoder.decode(r.bytes)).toBe(expected);
    expect(walkStructured({ notes, files: notes.map((n) => "/" + n) }).refs.length).toBe(0); // over the node budget
    expect(walkStructured({ notes: notes.slice(0, 500), files: notes.slice(0, 500).map((n) => "/" + n) }).refs.map((r) => r.ref)).toEqual(
      notes.slice(0, 500).map((n) => "/" + n),
    );
  });

  it("writes an oversized key as the stand-in too", () => {
    const r = serializeBounded({ ["k".repeat(5000)]: 1 });
    expect(r.ok && decoder.decode(r.bytes)).toBe('{"\\n":1}');
    expect(r.ok && r.complete).toBe(false);
  });

  it("rejects a cyclic object as invalid", () => {
    const a: Record<string, unknown> = { x: 1 };
    a.self = a;
    expect(serializeBounded(a)).toEqual({ ok: false, reason: "invalid" });
  });

  it("rejects a cycle through an array and a toJSON result", () => {
    const list: unknown[] = [];
    list.push({ toJSON: () => list });
    expect(serializeBounded(list)).toEqual({ ok: false, reason: "invalid" });
  });

  it("writes the same object twice when it is shared but not cyclic", () => {
    const shared = { a: 1 };
    expect(text([shared, { b: shared }])).toBe('[{"a":1},{"b":{"a":1}}]');
  });

  it("rejects a BigInt, bare or boxed, as invalid", () => {
    expect(serializeBounded({ n: 1n })).toEqual({ ok: false, reason: "invalid" });
    expect(serializeBounded([Object(1n)])).toEqual({ ok: false, reason: "invalid" });
  });

  it("rejects a payload whose getter, toJSON or proxy trap throws, without throwing", () => {
    const getter = Object.defineProperty({}, "x", { enumerable: true, get: () => { throw new Error("boom"); } });
    const toJSON = { toJSON: () => { throw new Error("boom"); } };
    const revoked = Proxy.revocable({}, {});
    revoked.revoke();
    const hostile = new Proxy({}, { ownKeys: () => { throw new Proxy({}, { getPrototypeOf: () => { throw new Error("trap"); } }); } });
    for (const v of [getter, toJSON, revoked.proxy, hostile]) expect(serializeBounded({ v })).toEqual({ ok: false, reason: "invalid" });
  });

  it("keeps __proto__ a plain key and pollutes no prototype", () => {
    const parsed = JSON.parse('{"__proto__":{"polluted":true},"path":"/a"}');
    expect(text(parsed)).toBe('{"__proto__":{"polluted":true},"path":"/a"}');
    expect(walkStructured(parsed)).toEqual({ status: "ok", refs: [{ type: "file", ref: "/a" }] });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("gives a re-entrant toJSON a writer of its own", () => {
    const inner = { toJSON: () => (serializeBounded({ nested: [1, 2, 3] }), "inner") };
    expect(text({ a: inner, b: "after" })).toBe('{"a":"inner","b":"after"}');
  });

  it("writes nothing for a root that JSON.stringify leaves undefined", () => {
    for (const v of [undefined, () => 1, Symbol("s")]) expect(text(v)).toBe("");
    expect(walkStructured(undefined)).toEqual({ status: "ok", refs: [] });
  });

  // 100 gated strings of 4096 three-byte characters: about 1.2 MB of JSON.
  const overAMiB = { files: Array.from({ length: 100 }, () => "€".repeat(MAX_REF_BYTES)) };

  it("drops a buffer grown past 1 MiB by one payload before the next, instead of holding it for good", () => {
    expect(serializeBounded(overAMiB).ok).toBe(true);
    const next = serializeBounded(null);
    expect(next.ok && next.bytes.buffer.byteLength).toBe(16 * 1024);
  });

  it("drops such a buffer as soon as a walk is done with its bytes, not at the next payload", () => {
    expect(walkStructured(overAMiB).status).toBe("ok");
    expect(serializerHeldBytes()).toBe(16 * 1024);
    expect(walkStructuredWithJson(overAMiB, Infinity).json).toBe(JSON.stringify(overAMiB));
    expect(serializerHeldBytes()).toBe(16 * 1024);
  });

  it("grows the buffer for a bracket that falls just past its end", () => {
    serializeBounded(overAMiB); // the next payload starts on a fresh 16 KiB buffer
    // "[" + 7 digits + 712 × ("," + 22 characters) = 16384 bytes: the closing bracket is the first byte past them.
    const v = [1234567, ...Array<number>(712).fill(1.2345678901234567e21)];
    expect(text(v)).toBe(JSON.stringify(v));
  });

  it("grows the buffer for a long string of three-byte characters whose closing quote falls just past its end", () => {
    serializeBounded(overAMiB); // the next payload starts on a fresh 16 KiB buffer
    // {"file":[ (9 bytes) + "x€…" (1 + 3 × 4000 + 2 quotes) + "," = 12013 bytes; then 1457 × "€" (4371 bytes
    // between its quotes): the closing quote is the first byte past 16384.
    const v = { file: ["x" + "€".repeat(4000), "€".repeat(1457)] };
    expect(text(v)).toBe(JSON.stringify(v));
  });

  it("escapes a lone surrogate in a long string that holds nothing else to escape, as JSON.stringify does", () => {
    const note = "a".repeat(60) + "\ud800";
    for (const v of [note, "\udfff" + "é".repeat(60), { path: "/tmp/" + "x".repeat(50) + "\udc00" }, [note, "\ud83d".repeat(50)]]) {
      expect(text(v)).toBe(JSON.stringify(v));
    }
    // The data fallback is the payload's JSON text: the escape, not U+FFFD.
    expect(walkStructured({ note })).toEqual({ status: "ok", refs: [], data: JSON.stringify({ note }) });
  });

  it("stops at the level budget itself: 32 levels are written, a value at level 33 is rejected", () => {
    expect(text(wrap(1, MAX_WALK_DEPTH - 1))).toBe(JSON.stringify(wrap(1, MAX_WALK_DEPTH - 1)));
    expect(serializeBounded(wrap(1, MAX_WALK_DEPTH))).toEqual({ ok: false, reason: "depth" });
    expect(serializeBounded(wrap({}, MAX_WALK_DEPTH))).toEqual({ ok: false, reason: "depth" });
    expect(serializeBounded({ a: wrap("s", MAX_WALK_DEPTH - 1) })).toEqual({ ok: false, reason: "depth" });
  });
});

describe("walk budgets", () => {
  const numbers = (n: number) => Array.from({ length: n }, (_, i) => i);

  it("accepts 1024 nodes", () => {
    const v = { path: "/a", rest: numbers(MAX_WALK_NODES - 3) }; // root, "/a", the list, its items
    expect(walkStructured(v)).toEqual({ status: "ok", refs: [{ type: "file", ref: "/a" }] });
    expect(walkText(JSON.stringify(v)).status).toBe("ok");
  });

  it("rejects 1025 nodes whole, references included", () => {
    const v = { path: "/a", rest: numbers(MAX_WALK_NODES - 2) };
    expect(walkStructured(v)).toEqual(rejectedAs("nodes"));
    expect(walkText(JSON.stringify(v))).toEqual(rejectedAs("nodes"));
  });

  it("counts an undefined array item written as null, but not an omitted property", () => {
    expect(walkStructured([...numbers(MAX_WALK_NODES - 2), undefined]).status).toBe("ok");
    expect(walkStructured([...numbers(MAX_WALK_NODES - 1), undefined])).toEqual(rejectedAs("nodes"));
    const withOmitted = Object.fromEntries(numbers(MAX_WALK_NODES - 1).map((i) => [`k${i}`, i]));
    expect(walkStructured({ ...withOmitted, gone: undefined }).status).toBe("ok");
  });

  it("accepts a value at level 32", () => {
    expect(walkStructured(wrap({ path: "/deep" }, MAX_WALK_DEPTH - 2)).refs).toEqual([{ type: "file", ref: "/deep" }]);
    expect(walkStructured(wrap([], MAX_WALK_DEPTH - 1)).status).toBe("ok");
    expect(walkText(JSON.stringify(wrap(0, MAX_WALK_DEPTH - 1))).status).toBe("ok");
  });

  it("rejects a scalar at level 33", () => {
    expect(walkStructured(wrap(0, MAX_WALK_DEPTH))).toEqual(rejectedAs("depth"));
    expect(walkText(JSON.stringify(wrap(0, MAX_WALK_DEPTH)))).toEqual(rejectedAs("depth"));
  });

  it("rejects an empty container at level 33", () => {
    expect(walkStructured(wrap({}, MAX_WALK_DEPTH))).toEqual(rejectedAs("depth"));
    expect(walkText(JSON.stringify(wrap([], MAX_WALK_DEPTH)))).toEqual(rejectedAs("depth"));
  });

  it("rejects a 10^7-node payload by its node count", () => {
    expect(walkStructured(new Array(1e7))).toEqual(rejectedAs("nodes")); // holes: 10^7 nulls
  });

  it("rejects nesting 10^5 levels deep in bytes without recursing", () => {
    expect(walkText("[".repeat(1e5) + "]".repeat(1e5))).toEqual(rejectedAs("depth"));
  });
});

describe("file gate", () => {
  const accepted: [string, string][] = [
    ["Unix-absolute path", "/mnt/user-data/report.csv"],
    ["the Unix root", "/"],
    ["Unix path with spaces", "/mnt/user-data/my report.pdf"],
    ["Unix path with non-ASCII and astral characters", "/données/été 😀.txt"],
    ["http URL", "http://example.com/a.png"],
    ["https URL with query and fragment", "https://example.com/a?b=1#c"],
    ["upper-case scheme", "HTTPS://EXAMPLE.COM/x"],
    ["URL with userinfo and port", "https://user:pw@host:8443/p"],
    ["URL with a bare host", "http://h"],
    ["URL with an IPv6 host and a port", "https://[::1]:8080/x"],
    ["URL with an empty password", "https://user:@host/x"],
    ["URL with a non-ASCII host after user info", "https://é@hé/x"],
    ["URL whose port holds an '@' (user info after all)", "https://:80@h/x"],
    ["drive-absolute path with backslashes", "C:\\Users\\me\\a.txt"],
    ["drive-absolute path with slashes", "d:/data/x.csv"],
    ["path of exactly 4096 UTF-8 bytes", "/" + "é".repeat(2047) + "a"],
    ["path with a lone surrogate (measured as 3 bytes)", "/a\ud800b"],
  ];
  const rejected: [string, unknown][] = [
    ["relative path", "reports/a.csv"],
    ["dot-relative path", "./a.csv"],
    ["network path (//…)", "//server/share"],
    ["empty string", ""],
    ["data: URI", "data:text/plain;base64,SGk="],
    ["blob: URL", "blob:https://example.com/uuid"],
    ["file: URL", "file:///etc/passwd"],
    ["javascript: URL", "javascript:alert(1)"],
    ["ftp: URL", "ftp://host/x"],
    ["http URL without authority", "http:///path"],
    ["scheme and slashes only", "https://"],
    ["query where the host should be", "http://?q=1"],
    // DESIGN §4: a non-empty host; user info and a port are none (these passed before).
    ["URL with a port and no host", "https://:80/x.pdf"],
    ["URL with user info and no host", "https://@/x.pdf"],
    ["URL with user info, a port and no host", "https://u:p@:443/x"],
    ["URL with an empty IPv6 literal", "https://[]:80/x"],
    ["URL with non-ASCII user info and no host", "https://é@/x"],
    ["http with one slash", "http:/x"],
    ["URL with a space", "https://x.com/a b"],
    ["URL with a no-break space", "https://x.com/a\u00a0b"],
    ["URL with an ideographic space", "https://x.com/a\u3000b"],
    ["path with a line feed", "/a\nb"],
    ["path with a carriage return", "/a\rb"],
    ["path with a tab", "/a\tb"],
    ["path with NUL", "/a\u0000b"],
    ["path with DEL", "/a\u007fb"],
    ["path with a C1 control (NEL)", "/a\u0085b"],
    ["path with a line separator", "/a\u2028b"],
    ["drive letter without a slash", "C:relative"],
    ["digit as a drive letter", "1:/x"],
    ["prose mentioning a path", "see /mnt/user-data/a.csv"],
    ["path of 4097 UTF-8 bytes", "/" + "é".repeat(2048)],
    ["path of 4097 ASCII bytes", "/" + "a".repeat(4096)],
  ];

  it.each(accepted)("accepts a %s", (_, ref) => {
    expect(isReference(ref)).toBe(true);
    expect(walkStructured({ path: ref }).refs).toEqual([{ type: "file", ref }]);
    expect(walkText(JSON.stringify({ url: [ref] })).refs).toEqual([{ type: "file", ref }]);
  });

  it.each(rejected)("rejects a %s", (_, ref) => {
    expect(isReference(ref)).toBe(false);
    expect(walkStructured({ path: ref }).refs).toEqual([]);
    expect(walkText(JSON.stringify({ url: [ref] })).refs).toEqual([]);
  });

  it("rejects anything but a string", () => {
    for (const v of [42, null, undefined, ["/a"], { url: "/a" }, new String("/a")]) expect(isReference(v)).toBe(false);
  });

  it("accepts a path of 4096 unescaped bytes written with 6-byte escapes", () => {
    const ref = "/" + "a".repeat(4095);
    const escaped = '{"path":"/' + "\\u0061".repeat(4095) + '"}';
    expect(walkText(escaped).refs).toEqual([{ type: "file", ref }]);
    expect(walkText(escaped.replace('"}', 'a"}')).refs).toEqual([]);
  });

  it("agrees with the RegExp oracle on generated strings", () => {
    fc.assert(
      fc.property(refish, (s) => {
        expect(isReference(s)).toBe(baselineIsReference(s));
        expect(walkStructured({ file: s }).refs.length).toBe(baselineIsReference(s) ? 1 : 0);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("task gate", () => {
  const accepted: [string, string][] = [
    ["plain id", "task-7f3e"],
    ["id with punctuation", "job:42/a#b"],
    ["non-ASCII id", "tâche-ü"],
    ["id of 256 characters", "x".repeat(256)],
    ["id of 256 astral code points (512 UTF-16 units)", "😀".repeat(256)],
    ["id with a control character that is not whitespace", "a\u0000b"],
  ];
  const rejected: [string, unknown][] = [
    ["empty id", ""],
    ["id with a space", "a b"],
    ["id with a tab", "a\tb"],
    ["id with a line feed", "a\nb"],
    ["id with an ideographic space", "a\u3000b"],
    ["id with a file separator (Python whitespace)", "a\u001cb"],
    ["id of 257 characters", "x".repeat(257)],
    ["id of 257 astral code points", "😀".repeat(257)],
  ];

  it.each(accepted)("accepts a %s", (_, id) => {
    expect(isTaskToken(id)).toBe(true);
    expect(walkStructured({ task_id: id }).refs).toEqual([{ type: "task", ref: id }]);
    expect(walkStructured({ job_id: [id] }).refs).toEqual([{ type: "task", ref: id }]);
  });

  it.each(rejected)("rejects a %s", (_, id) => {
    expect(isTaskToken(id)).toBe(false);
    expect(walkStructured({ job_id: id }).refs).toEqual([]);
  });

  it("rejects anything but a string", () => {
    for (const v of [7, null, ["t"], new String("t")]) expect(isTaskToken(v)).toBe(false);
  });

  it("agrees with the oracle on generated strings", () => {
    fc.assert(
      fc.property(fc.oneof(refish, fc.string({ unit: "binary", maxLength: 300 })), (s) => {
        expect(isTaskToken(s)).toBe(baselineIsTaskToken(s));
      }),
      { numRuns: 1000 },
    );
  });
});

describe("known keys", () => {
  it("are the same list in the serializer and the engine", () => {
    expect([...KNOWN_KEYS].sort()).toEqual([...FILE_KEYS, ...TASK_KEYS].sort());
    fc.assert(
      fc.property(fc.oneof(fc.constantFrom(...KNOWN_KEYS), fc.string({ maxLength: 10 }), fc.constantFrom(...KNOWN_KEYS).map((k) => k + "_")), (key) => {
        const value = key.endsWith("_id") ? "t1" : "/a";
        expect(walkText(JSON.stringify({ [key]: value })).refs.length).toBe(KNOWN_KEYS.has(key) ? 1 : 0);
      }),
      { numRuns: 500 },
    );
  });

  it("finds references under every file key and task key, in document order", () => {
    const v = Object.fromEntries([...FILE_KEYS, ...TASK_KEYS].map((k, i) => [k, TASK_KEYS.includes(k) ? `t${i}` : `/r${i}`]));
    expect(walkStructured(v).refs).toEqual([
      ...FILE_KEYS.map((_, i) => ({ type: "file", ref: `/r${i}` })),
      ...TASK_KEYS.map((_, i) => ({ type: "task", ref: `t${FILE_KEYS.length + i}` })),
    ]);
  });

  it("takes the strings of a list value and walks its other items", () => {
    const v = { files: ["/a", 1, "rel", { url: "https://x/y" }, ["/nested-list-item"], null, "/b"] };
    expect(refsOf(walkStructured(v))).toEqual(["/a", "https://x/y", "/b"]);
  });

  it("walks an object under a known key like any other value", () => {
    expect(refsOf(walkStructured({ path: { dir: "/not-taken", url: "/taken" } }))).toEqual(["/taken"]);
  });

  it("finds known keys at any depth and keeps duplicates", () => {
    const v = { a: [{ b: { path: "/x" } }, { c: [{ file: "/x" }] }], task_id: "t" };
    expect(walkStructured(v).refs).toEqual([
      { type: "file", ref: "/x" },
      { type: "file", ref: "/x" },
      { type: "task", ref: "t" },
    ]);
  });

  it("ignores strings under other keys, near-miss keys and at the root", () => {
    expect(walkStructured({ Path: "/a", paths: "/b", filepath: "/c", " url": "/d", task: "t" }).refs).toEqual([]);
    expect(walkStructured("/root").refs).toEqual([]);
    expect(walkStructured(["/in-a-root-list"]).refs).toEqual([]);
  });

  it("matches keys written with escapes", () => {
    expect(refsOf(walkText('{"p\\u0061th":"/a","\\u0066ile_path":"/b","t\\u0061sk_\\u0069d":"t"}'))).toEqual(["/a", "/b", "t"]);
    expect(walkText('{"path\\u0000":"/a","pat\\u00e9":"/b"}').refs).toEqual([]);
  });

  it("decodes escaped references exactly, surrogate pairs and lone surrogates included", () => {
    const w = walkText('{"path":"/a\\u00e9\\ud83d\\ude00\\/b\\\\c\\"d","url":"/x\\ud800"}');
    expect(refsOf(w)).toEqual(["/aé😀/b\\c\"d", "/x\ud800"]);
  });

  it("decodes raw UTF-8 references exactly", () => {
    const ref = "/ünï/😀/中文.txt";
    expect(walkText(JSON.stringify({ file: ref })).refs).toEqual([{ type: "file", ref }]);
  });
});

describe("data fallback", () => {
  const data = (v: unknown) => dataOf(walkStructured(v));

  it("is the compact JSON when no string sits under a known key", () => {
    const v = { rows: 3, cols: ["a", "b"], nested: { path: 12 } };
    expect(walkStructured(v)).toEqual({ status: "ok", refs: [], data: JSON.stringify(v) });
  });

  it("is absent when some reference was found", () => {
    expect(walkStructured({ path: "/a", n: 1 })).toEqual({ status: "ok", refs: [{ type: "file", ref: "/a" }] });
  });

  it("is absent when the only known-key values were rejected", () => {
    expect(walkStructured({ url: "data:text/plain,secret", n: 1 })).toEqual({ status: "ok", refs: [] });
    expect(walkStructured({ files: ["relative.txt"] })).toEqual({ status: "ok", refs: [] });
  });

  it("is absent when an oversized string sits under a known key", () => {
    expect(walkStructured({ path: "/" + "a".repeat(5000) })).toEqual({ status: "ok", refs: [] });
  });

  it.each([
    ["{}", {}],
    ["[]", []],
    ["null", null],
    ['""', ""],
  ])("is absent for %s", (_, v) => {
    expect(walkStructured(v)).toEqual({ status: "ok", refs: [] });
    expect(walkText(` ${JSON.stringify(v)} `)).toEqual({ status: "ok", refs: [] });
  });

  it("is present for other small scalars and containers of empties", () => {
    expect(data(0)).toBe("0");
    expect(data(false)).toBe("false");
    expect(data([null])).toBe("[null]");
    expect(data({ a: {} })).toBe('{"a":{}}');
  });

  it("fits at exactly 4096 bytes and not at 4097", () => {
    const fits = { a: "x".repeat(MAX_REF_BYTES - 8) }; // {"a":"…"} adds 8 bytes
    expect(data(fits)).toBe(JSON.stringify(fits));
    expect(data({ a: "x".repeat(MAX_REF_BYTES - 7) })).toBeUndefined();
    const wide = { a: "é".repeat((MAX_REF_BYTES - 8) / 2) };
    expect(data(wide)).toBe(JSON.stringify(wide));
    expect(data({ a: "é".repeat((MAX_REF_BYTES - 8) / 2) + "x" })).toBeUndefined();
  });

  it("measures the compact form of JSON bytes, not their whitespace or escapes", () => {
    const fits = { a: "x".repeat(MAX_REF_BYTES - 8) };
    const loose = `{\n  "a" :\t"${"\\u0078".repeat(MAX_REF_BYTES - 8)}"\n}\n`;
    expect(walkText(loose)).toEqual({ status: "ok", refs: [], data: JSON.stringify(fits) });
    expect(dataOf(walkText(loose.replace('"\n}', 'x"\n}')))).toBeUndefined();
  });

  it("measures numbers of JSON bytes as JSON.stringify writes them", () => {
    const base = "x".repeat(MAX_REF_BYTES - 10); // ["…",] plus the number
    expect(dataOf(walkText(`["${base}",1e5]`))).toBeUndefined(); // 9 bytes short, but 1e5 prints as 100000
    expect(dataOf(walkText(`["${base}",1.0000000000]`))).toBe(`["${base}",1]`); // 7 bytes over, but prints as 1
  });

  it("is absent when a string was too long to copy, wherever it sits", () => {
    expect(walkStructured({ note: "x".repeat(5000) })).toEqual({ status: "ok", refs: [] });
  });
});

describe("invalid JSON bytes", () => {
  const cases: [string, Uint8Array][] = [
    ["empty input", new Uint8Array(0)],
    ["whitespace only", encoder.encode("  \n")],
    ["truncated object", encoder.encode('{"path":"/a"')],
    ["truncated string", encoder.encode('{"path":"/a')],
    ["truncated escape", encoder.encode('["\\u00')],
    ["truncated literal", encoder.encode("[tru")],
    ["garbage", encoder.encode("hello")],
    ["trailing garbage", encoder.encode('{"a":1} x')],
    ["two values", encoder.encode("1 2")],
    ["trailing comma", encoder.encode("[1,]")],
    ["missing colon", encoder.encode('{"a" 1}')],
    ["non-string key", encoder.encode("{1:2}")],
    ["mismatched brackets", encoder.encode("[1}")],
    ["leading zero", encoder.encode("01")],
    ["bare minus", encoder.encode("[-]")],
    ["fraction without digits", encoder.encode("1.")],
    ["exponent without digits", encoder.encode("1e+")],
    ["single quotes", encoder.encode("['a']")],
    ["raw line feed in a string", encoder.encode('["a\nb"]')],
    ["unknown escape", encoder.encode('["\\x41"]')],
    ["bad hex in an escape", encoder.encode('["\\u12G4"]')],
    ["lone surrogate as raw bytes", new Uint8Array([0x22, 0xed, 0xa0, 0x80, 0x22])],
    ["overlong UTF-8", new Uint8Array([0x22, 0xc0, 0xaf, 0x22])],
    ["truncated UTF-8 sequence", new Uint8Array([0x22, 0xe2, 0x82, 0x22])],
    ["stray continuation byte", new Uint8Array([0x22, 0x80, 0x22])],
    ["code point past U+10FFFF", new Uint8Array([0x22, 0xf4, 0x90, 0x80, 0x80, 0x22])],
    ["invalid UTF-8 in a known key's value", new Uint8Array([...encoder.encode('{"path":"/a'), 0xff, 0x22, 0x7d])],
    ["non-ASCII byte outside strings", new Uint8Array([0x5b, 0xc3, 0xa9, 0x5d])],
    ["nesting left open", encoder.encode("[".repeat(10))],
  ];

  it.each(cases)("rejects %s as invalid", (_, bytes) => {
    expect(walkJsonBytes(bytes)).toEqual(rejectedAs("invalid"));
    expect(walkJsonBytesScalar(bytes)).toEqual(rejectedAs("invalid"));
  });

  it("accepts lone surrogate escapes, which JSON.stringify itself writes", () => {
    expect(walkText('["\\ud800", "\\udc00x"]')).toEqual({ status: "ok", refs: [], data: '["\\ud800","\\udc00x"]' });
  });

  it("ignores a leading byte order mark", () => {
    expect(walkJsonBytes(new Uint8Array([0xef, 0xbb, 0xbf, ...encoder.encode('{"path":"/a"}')])).refs).toEqual([
      { type: "file", ref: "/a" },
    ]);
  });

  it("never throws on random bytes, truncations and byte flips, and the next call works", () => {
    const mutated = fc
      .tuple(payload, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.boolean())
      .map(([v, at, byte, truncate]) => {
        const b = encoder.encode(JSON.stringify(v));
        if (b.length === 0) return b;
        const i = at % b.length;
        if (truncate) return b.subarray(0, i);
        b[i] = byte;
        return b;
      });
    fc.assert(
      fc.property(fc.oneof(mutated, fc.uint8Array({ maxLength: 64 })), (bytes) => {
        const w = walkJsonBytes(bytes);
        let valid = true;
        try {
          JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes));
        } catch {
          valid = false;
        }
        // Valid bytes may still be over budget; equality with walkStructured is checked below.
        if (valid) expect(w).not.toEqual(rejectedAs("invalid"));
        else expect(w).toEqual(rejectedAs("invalid"));
      }),
      { numRuns: 1000 },
    );
    expect(walkText('{"path":"/after"}').refs).toEqual([{ type: "file", ref: "/after" }]);
  });
});

describe("walkStructuredWithJson", () => {
  it("gives walkStructured's walk and JSON.stringify's text of the payload", () => {
    fc.assert(
      fc.property(payload, (v) => {
        const { walk, json } = walkStructuredWithJson(v, Infinity);
        expect(walk).toEqual(walkStructured(v));
        if (json !== undefined) expect(json).toBe(JSON.stringify(v));
        else expect(JSON.stringify(v) === undefined || walk.status === "rejected").toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it("keeps the text only within jsonUpTo UTF-8 bytes", () => {
    const v = { note: "é" }; // {"note":"é"}: 13 bytes
    expect(walkStructuredWithJson(v, 13).json).toBe('{"note":"é"}');
    expect(walkStructuredWithJson(v, 12).json).toBeUndefined();
  });

  it("has no text when the payload was not written in full, or over budget", () => {
    const long = { path: "/" + "a".repeat(MAX_REF_BYTES) };
    expect(walkStructuredWithJson(long, Infinity)).toEqual({ walk: walkStructured(long) });
    const wide = new Array(MAX_WALK_NODES).fill(0);
    expect(walkStructuredWithJson(wide, Infinity)).toEqual({ walk: rejectedAs("nodes") });
    expect(walkStructuredWithJson(undefined, Infinity)).toEqual({ walk: { status: "ok", refs: [] } });
  });
});

describe("walkJsonBytes agrees with walkStructured", () => {
  it("on generated payloads, compact or indented", () => {
    fc.assert(
      fc.property(payload, fc.boolean(), (v, indent) => {
        const expected = walkStructured(v);
        expect(walkJsonBytes(encoder.encode(JSON.stringify(v, null, indent ? 2 : undefined)))).toEqual(expected);
      }),
      { numRuns: 1000 },
    );
  });

  it("on JSON values with any UTF-16, lone surrogates included", () => {
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: "binary" }), (v) => {
        expect(walkJsonBytes(encoder.encode(JSON.stringify(v)))).toEqual(walkStructured(v));
      }),
      { numRuns: 300 },
    );
  });

  it("on strings that begin with U+FEFF, which is part of the value, not a byte order mark", () => {
    for (const v of [{ task_id: "\ufeffjob-1" }, { path: "\ufeff/x", files: ["\ufeff/y"] }, { note: "\ufeff" }]) {
      // Plain, and with an escape after the mark (the engine's escaped records).
      for (const text of [JSON.stringify(v), JSON.stringify(v).replace(/"\ufeff/g, '"\ufeff\\u0062')]) {
        const bytes = encoder.encode(text);
        expect(walkJsonBytes(bytes)).toEqual(walkStructured(JSON.parse(text)));
        expect(walkJsonBytesScalar(bytes)).toEqual(walkStructured(JSON.parse(text)));
      }
    }
  });

  it("on payloads with oversized strings, where walkStructured used the stand-in", () => {
    for (const v of [{ path: "/" + "a".repeat(5000) }, { note: "é".repeat(3000) }, { note: "x".repeat(4097), job_id: "t1" }]) {
      expect(walkJsonBytes(encoder.encode(JSON.stringify(v)))).toEqual(walkStructured(v));
    }
  });

  it("on payloads at and over the budgets", () => {
    for (const v of [wrap(0, MAX_WALK_DEPTH - 1), wrap(0, MAX_WALK_DEPTH), new Array(MAX_WALK_NODES - 1).fill(1), new Array(MAX_WALK_NODES).fill(1)]) {
      expect(walkJsonBytes(encoder.encode(JSON.stringify(v)))).toEqual(walkStructured(v));
    }
  });
});

describe("SIMD and scalar kernels", () => {
  it("agree on generated JSON and on mutated bytes", () => {
    const long = fc.string({ unit: "binary", minLength: 10, maxLength: 80 });
    const bytes = fc.oneof(
      fc.tuple(payload, long).map(([v, s]) => encoder.encode(JSON.stringify({ v, s, path: "/" + s }))),
      fc.tuple(long, fc.nat(), fc.integer({ min: 0, max: 255 })).map(([s, at, byte]) => {
        const b = encoder.encode(JSON.stringify({ note: s + s, file: "/" + s }));
        b[at % b.length] = byte;
        return b;
      }),
    );
    fc.assert(
      fc.property(bytes, (b) => {
        expect(walkJsonBytes(b)).toEqual(walkJsonBytesScalar(b));
      }),
      { numRuns: 1000 },
    );
  });
});

describe("gates and walk: code point edges", () => {
  it("rejects the overlong three-byte form of U+07FF", () => {
    // E0 9F BF decodes to U+07FF, which has a two-byte form: RFC 3629 forbids it.
    expect(walkJsonBytes(new Uint8Array([0x22, 0xe0, 0x9f, 0xbf, 0x22])).status).toBe("rejected");
  });
  it("counts U+10000 as four bytes toward the file gate's 4096", () => {
    expect(isReference("/" + "a".repeat(4091) + "\u{10000}")).toBe(true);
    expect(isReference("/" + "a".repeat(4092) + "\u{10000}")).toBe(false);
  });
  it("takes Z and z as drive letters", () => {
    // The shape test lower-cases A..Z, Z included, before it looks for a drive a..z.
    for (const p of ["Z:\\a", "Z:/\u00e9", "z:/a", "z:\\\u00e9"]) expect(isReference(p)).toBe(true);
  });
  it("reads all eight shape characters of https:// on the non-ASCII path", () => {
    for (const p of ["https://example.com/\u00e9", "https://\u00e9.example/a"]) expect(isReference(p)).toBe(true);
  });
  it("accepts U+10FFFF, the last code point, as four UTF-8 bytes", () => {
    for (const value of ["\u{10ffff}", "a\u{10ffff}", { x: "a\u{10ffff}" }]) {
      expect(walkJsonBytes(encoder.encode(JSON.stringify(value)))).toEqual({ status: "ok", refs: [], data: JSON.stringify(value) });
    }
  });
  it("refuses a task id holding U+200A, the last of the U+2000..U+200A Python spaces", () => {
    expect(isTaskToken("a\u200ab")).toBe(false);
  });
  it("matches a known key on all its characters: file_patx is not file_path", () => {
    expect(walkStructured({ file_patx: "/a/b.txt" })).toEqual({ status: "ok", refs: [], data: '{"file_patx":"/a/b.txt"}' });
    expect(refsOf(walkStructured({ file_path: "/a/b.txt" }))).toEqual(["/a/b.txt"]);
  });
  it("counts \\f as two compact bytes: 1500 of them fit a data entry", () => {
    // JSON.stringify writes U+000C as \f, not \u000c: 8 + 3000 bytes fit 4096.
    const json = `{"x":"${"\\f".repeat(1500)}"}`;
    expect(dataOf(walkText(json))).toBe(json);
  });
});

describe("serializeBounded: JSON.stringify's text at its edges", () => {
  const text = (v: unknown) => {
    const r = serializeBounded(v);
    if (!r.ok) throw new Error(`rejected: ${r.reason}`);
    return { json: decoder.decode(r.bytes), complete: r.complete, gated: r.gated.strings };
  };

  it("writes U+0080 as UTF-8", () => {
    // The short-string loop copies ASCII only; U+0080 is the first unit it must hand on.
    for (const s of ["\u0080", "a\u0080b", "\u007f\u0080"]) expect(text([s]).json).toBe(JSON.stringify([s]));
  });

  it("uses a BigInt's toJSON, as JSON.stringify does", () => {
    // Hosts often define BigInt.prototype.toJSON; only a BigInt without one is invalid.
    const proto = BigInt.prototype as unknown as { toJSON?: () => string };
    proto.toJSON = function (this: bigint) {
      return `${this.toString()}n`;
    };
    try {
      expect(text({ n: 12n, list: [3n] }).json).toBe(JSON.stringify({ n: 12n, list: [3n] }));
      expect(text({ n: 12n }).json).toBe('{"n":"12n"}');
    } finally {
      delete proto.toJSON;
    }
    expect(serializeBounded({ n: 1n })).toEqual({ ok: false, reason: "invalid" });
  });

  it("gates the items of a list under a known key, not those of a list nested in it", () => {
    // The gates read `files: ["…"]`, not `files: [["…"]]`: the nested string is plain.
    expect(text({ files: ["/a", ["/b"]], path: "/c" }).gated).toEqual(["/a", "/c"]);
    // Plain, a nested string past 4096 written bytes is not copied: a stand-in, and incomplete.
    const r = text({ pad: "x".repeat(4090), files: [["y".repeat(100)]] });
    expect(r.complete).toBe(false);
    expect(r.json).toBe(`{"pad":"${"x".repeat(4090)}","files":[["\\n"]]}`);
  });

  it("still copies a string past 4096 bytes that is no longer than the stand-in", () => {
    // Four characters cost no more than the stand-in, so the text stays the payload's whole JSON.
    const value = { a: "x".repeat(4000), b: "y".repeat(200), c: "abcd" };
    expect(text(value)).toMatchObject({ json: JSON.stringify(value), complete: true });
    expect(walkStructuredWithJson(value, 1 << 20).json).toBe(JSON.stringify(value));
  });

  it("copies a string that starts at exactly 4096 written bytes and cuts one that starts past them", () => {
    // `["x…x",` is 4096 bytes for 4092 x's.
    const atEdge = ["x".repeat(4092), "abcdef"];
    expect(text(atEdge)).toMatchObject({ json: JSON.stringify(atEdge), complete: true });
    expect(walkStructuredWithJson(atEdge, 1 << 20).json).toBe(JSON.stringify(atEdge));
    const pastEdge = ["x".repeat(4093), "abcdef"];
    expect(text(pastEdge)).toMatchObject({ json: `["${"x".repeat(4093)}","\\n"]`, complete: false });
  });
});

describe("data fallback: emptiness is the root's alone", () => {
  it("keeps a payload whose only string, nested, is empty", () => {
    expect(walkStructured({ note: "" })).toEqual({ status: "ok", refs: [], data: '{"note":""}' });
    expect(walkJsonBytes(new TextEncoder().encode('[""]'))).toEqual({ status: "ok", refs: [], data: '[""]' });
  });
});

describe("data fallback of JSON bytes: the 4096 bound counts UTF-8 bytes", () => {
  it("drops a non-ASCII payload whose numbers print longer than the engine's lower bound", () => {
    // The engine's lower bound is 4088 bytes; JSON.stringify writes 4098 bytes, in 2058 UTF-16 units.
    const text = `["${"é".repeat(2040)}",1e300,1e300]`;
    expect(Buffer.byteLength(JSON.stringify(JSON.parse(text)))).toBe(4098);
    expect(walkJsonBytes(new TextEncoder().encode(text))).toEqual({ status: "ok", refs: [] });
  });
});

describe("\\u escapes take exactly the 22 hex digits (0-9, A-F, a-f)", () => {
  // The bytes just outside 0-9, A-F and a-f: JSON.parse refuses each, and so must the walk.
  const neighbours = ["/", ":", "@", "G", "`", "g"];
  it.each(neighbours)("rejects %j in a \\u escape as invalid", (c) => {
    for (const text of [`["\\u00${c}0"]`, `["\\u${c}000"]`, `{"path":"/a\\u00${c}1"}`, `{"k\\u00${c}0":1}`]) {
      expect(() => JSON.parse(text)).toThrow();
      expect(walkText(text).status).toBe("rejected");
      expect(walkJsonBytesScalar(encoder.encode(text)).status).toBe("rejected");
    }
  });

  it("accepts every hex digit, in either case", () => {
    const text = '["\\u0009\\u00aF\\u00Af\\u0Bcd\\u0eF0"]';
    expect(walkText(text)).toEqual({ status: "ok", refs: [], data: JSON.stringify(JSON.parse(text)) });
  });
});
