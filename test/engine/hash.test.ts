import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  generateHandle,
  generateHandles,
  generateResultHandles,
  occurrenceKey,
  occurrenceKeys,
  sha256Hex,
  type HandleSeed,
  type OccurrenceSeed,
} from "../../src/engine/hash.js";
import { engine, memoryView, rebuild, reserve } from "../../src/engine/wasm.js";

function readJsonl<T>(name: string): T[] {
  const text = readFileSync(new URL(`../fixtures/vectors/${name}`, import.meta.url), "utf8");
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as T);
}

interface HandleVector {
  thread_id: string;
  tool_call_id: string;
  call_index: number;
  ordinal: number;
  occurrence_id: string | null;
  handle: string;
}

interface KeyVector {
  kind: "result" | "call";
  thread_id: string;
  message_id: string | null;
  tool_call_id: string;
  index: number;
  key: string;
}

const handleVectors = readJsonl<HandleVector>("handles.jsonl");
const keyVectors = readJsonl<KeyVector>("ledger_keys.jsonl");

const nodeHex = (data: string | Uint8Array) => createHash("sha256").update(data).digest("hex");

// The seed text of DESIGN §2, written independently of the facade.
function handleOracle(s: HandleSeed): string {
  const text = `${s.threadId}:${s.toolCallId}:${s.callIndex}:${s.ordinal ?? 0}`;
  return `art_${nodeHex(s.occurrenceId == null ? text : `${text}:${s.occurrenceId}`).slice(0, 8)}`;
}

// Python's json.dumps(ensure_ascii=True) from JSON.stringify: the latter
// already writes the short escapes, \u00XX controls and lone surrogates in
// lowercase; what remains is every other code unit outside 0x20..0x7E.
function pyDumpsString(s: string): string {
  return JSON.stringify(s).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function keyOracle(s: OccurrenceSeed): string {
  const i = s.messageId == null || s.kind === "call" ? s.index : 0;
  const m = s.messageId == null ? "null" : pyDumpsString(s.messageId);
  return `${s.kind}:${nodeHex(`[${pyDumpsString(s.threadId)}, ${m}, ${pyDumpsString(s.toolCallId)}, ${i}]`)}`;
}

// Any UTF-16 sequence, lone surrogates included.
const anyUtf16 = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) });
const anyText = fc.oneof(fc.string(), fc.string({ unit: "binary" }), anyUtf16);
const anyIndex = fc.oneof(fc.nat(100), fc.maxSafeNat());
const handleSeed: fc.Arbitrary<HandleSeed> = fc.record(
  {
    threadId: anyText,
    toolCallId: anyText,
    callIndex: anyIndex,
    ordinal: anyIndex,
    occurrenceId: fc.option(anyText, { nil: undefined }).chain((o) =>
      o === undefined ? fc.constantFrom(undefined, null) : fc.constant(o),
    ),
  },
  { requiredKeys: ["threadId", "toolCallId", "callIndex"] },
);
const occurrenceSeed: fc.Arbitrary<OccurrenceSeed> = fc.record({
  kind: fc.constantFrom("result" as const, "call" as const),
  threadId: anyText,
  messageId: fc.oneof(anyText, fc.constant(null), fc.constant(undefined)),
  toolCallId: anyText,
  index: anyIndex,
});

describe("parity vectors", () => {
  it("generateHandle matches every line of handles.jsonl", () => {
    const got = handleVectors.map((v) =>
      generateHandle(v.thread_id, v.tool_call_id, v.call_index, v.ordinal, v.occurrence_id),
    );
    expect(got).toEqual(handleVectors.map((v) => v.handle));
  });

  it("generateHandles matches every line of handles.jsonl in one call", () => {
    const seeds = handleVectors.map((v) => ({
      threadId: v.thread_id,
      toolCallId: v.tool_call_id,
      callIndex: v.call_index,
      ordinal: v.ordinal,
      occurrenceId: v.occurrence_id,
    }));
    expect(generateHandles(seeds)).toEqual(handleVectors.map((v) => v.handle));
  });

  it("occurrenceKey matches every line of ledger_keys.jsonl", () => {
    const got = keyVectors.map((v) => occurrenceKey(v.kind, v.thread_id, v.message_id, v.tool_call_id, v.index));
    expect(got).toEqual(keyVectors.map((v) => v.key));
  });

  it("occurrenceKeys matches every line of ledger_keys.jsonl in one call", () => {
    const seeds = keyVectors.map((v) => ({
      kind: v.kind,
      threadId: v.thread_id,
      messageId: v.message_id,
      toolCallId: v.tool_call_id,
      index: v.index,
    }));
    expect(occurrenceKeys(seeds)).toEqual(keyVectors.map((v) => v.key));
  });

  // Produced with CPython's json.dumps + hashlib; the shared vectors hold no
  // quotes, backslashes, control characters or lone surrogates.
  it.each([
    ["result", 't"q', "m\\b", "c\n\r\t\b\f", 3, "result:72c7eaefb03a9ab68a1294f2a05dc8c28c7d1a8d294b257a38416cb78d6fb937"],
    ["call", "\u0000\u001f\u007f", "\u00e9\u2028\uffff", "\u{1F642}\u{10FFFF}", 7, "call:c9c010cc77e41d0d1b1ce06ed55587632f1423b598003ed992e9779e12556804"],
    ["result", "lone\ud800", "x\udfff", "\udc00\ud83d", 0, "result:1009f6859105c1bc8984363fa20ff98af52999212f1538ae7d37b0d1663e384f"],
    ["call", "", null, "", Number.MAX_SAFE_INTEGER, "call:69cb332dc145179e4b0b9c9483b02a2457769c618e0da0890b9d5ef51883bb1c"],
    ["result", "thread", "msg", "call", 5, "result:5e45158181486cc53d579a05da0dbd58915ceffafa730d17558c26dd3c0e671c"],
    ["result", "thread", null, "call", 5, "result:392d34cc138bf412f73aa62c9a56f021fcee3b7deaba5ab6fcbc10d48095db9b"],
  ] as const)("occurrenceKey escapes like Python json.dumps: %s %j %j %j %d", (kind, t, m, c, i, key) => {
    expect(occurrenceKey(kind, t, m, c, i)).toBe(key);
    expect(occurrenceKeys([{ kind, threadId: t, messageId: m, toolCallId: c, index: i }])).toEqual([key]);
  });
});

describe("derivations", () => {
  it("uses the index of a result only when it has no message id", () => {
    const withId = (i: number) => occurrenceKey("result", "t", "m", "c", i);
    expect(withId(1)).toBe(withId(2));
    expect(occurrenceKey("result", "t", undefined, "c", 1)).toBe(occurrenceKey("result", "t", null, "c", 1));
    expect(occurrenceKey("result", "t", null, "c", 1)).not.toBe(occurrenceKey("result", "t", null, "c", 2));
    expect(occurrenceKey("call", "t", "m", "c", 1)).not.toBe(occurrenceKey("call", "t", "m", "c", 2));
  });

  it("defaults the ordinal to 0 and treats a null or undefined occurrence id as absent", () => {
    const plain = generateHandle("t", "c", 1);
    expect(plain).toMatch(/^art_[0-9a-f]{8}$/);
    expect(generateHandle("t", "c", 1, 0)).toBe(plain);
    expect(generateHandle("t", "c", 1, 0, null)).toBe(plain);
    expect(generateHandle("t", "c", 1, 0, undefined)).toBe(plain);
    expect(generateHandle("t", "c", 1, 0, "")).not.toBe(plain);
    expect(generateHandles([{ threadId: "t", toolCallId: "c", callIndex: 1 }])).toEqual([plain]);
  });

  it("hashes a lone surrogate in a handle seed as U+FFFD (documented)", () => {
    expect(generateHandle("a\ud800", "c", 0)).toBe(generateHandle("a\ufffd", "c", 0));
    expect(generateHandle("a\udc00", "c", 0)).toBe(generateHandle("a\ufffd", "c", 0));
    expect(sha256Hex("\ud83d")).toBe(sha256Hex("\ufffd"));
  });
});

describe("sha256Hex", () => {
  it("matches the FIPS 180-2 examples", () => {
    expect(sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")).toBe(
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    );
  });

  it("matches node:crypto on the empty string and around every padding boundary", () => {
    const lengths = [0, 1, 54, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 191, 192, 193];
    for (const n of lengths) {
      const s = "x".repeat(n);
      expect(sha256Hex(s), `${n} bytes`).toBe(nodeHex(s));
    }
  });

  it("matches node:crypto on multi-byte characters straddling block and padding boundaries", () => {
    for (const ch of ["é", "线", "🙂"]) {
      for (let pad = 50; pad <= 70; pad++) {
        const s = `${"y".repeat(pad)}${ch}${ch}`;
        expect(sha256Hex(s), `${pad} + ${ch}`).toBe(nodeHex(s));
      }
    }
  });

  it("matches node:crypto on multi-block and MB-size inputs", () => {
    const block = "The quick brown fox 🦊 jumps over the lazy dog — 懒狗.\n";
    for (const repeats of [10, 1000, 20_000, 100_000]) {
      const s = block.repeat(repeats);
      expect(sha256Hex(s), `${s.length} chars`).toBe(nodeHex(s));
    }
  });

  it("matches node:crypto on arbitrary strings (full unicode and lone surrogates)", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: "binary", maxLength: 300 }), anyUtf16), (s) => {
        // node:crypto encodes lone surrogates as U+FFFD too.
        expect(sha256Hex(s)).toBe(nodeHex(s));
      }),
      { numRuns: 500 },
    );
  });
});

describe("properties", () => {
  it("generateHandle agrees with the DESIGN §2 derivation via node:crypto", () => {
    fc.assert(
      fc.property(handleSeed, (s) => {
        expect(generateHandle(s.threadId, s.toolCallId, s.callIndex, s.ordinal, s.occurrenceId)).toBe(handleOracle(s));
      }),
      { numRuns: 300 },
    );
  });

  it("occurrenceKey agrees with a json.dumps oracle via node:crypto", () => {
    fc.assert(
      fc.property(occurrenceSeed, (s) => {
        expect(occurrenceKey(s.kind, s.threadId, s.messageId, s.toolCallId, s.index)).toBe(keyOracle(s));
      }),
      { numRuns: 300 },
    );
  });

  it("generateHandles equals generateHandle seed by seed", () => {
    fc.assert(
      fc.property(fc.array(handleSeed, { maxLength: 40 }), (seeds) => {
        const singles = seeds.map((s) => generateHandle(s.threadId, s.toolCallId, s.callIndex, s.ordinal, s.occurrenceId));
        expect(generateHandles(seeds)).toEqual(singles);
      }),
      { numRuns: 200 },
    );
  });

  it("occurrenceKeys equals occurrenceKey seed by seed", () => {
    fc.assert(
      fc.property(fc.array(occurrenceSeed, { maxLength: 40 }), (seeds) => {
        const singles = seeds.map((s) => occurrenceKey(s.kind, s.threadId, s.messageId, s.toolCallId, s.index));
        expect(occurrenceKeys(seeds)).toEqual(singles);
      }),
      { numRuns: 200 },
    );
  });

  it("occurrenceKeys past one engine call's chunk (4096 seeds): same keys in order, escaping chunks apart, errors by absolute index", () => {
    const seeds: OccurrenceSeed[] = Array.from({ length: 9000 }, (_, i) => ({ kind: i % 2 ? "call" : "result", threadId: "t", messageId: i % 7 ? `m${i}` : null, toolCallId: `c${i}`, index: i % 5 }));
    seeds[5000] = { ...seeds[5000]!, threadId: 'quote " and é' }; // only the second chunk needs escaping
    expect(occurrenceKeys(seeds)).toEqual(seeds.map(keyOracle));
    const bad = [...seeds];
    bad[8191] = { ...seeds[8191]!, index: -1 };
    expect(() => occurrenceKeys(bad)).toThrow(/seeds\[8191\]\.index/);
  });
});

describe("batches", () => {
  it("returns [] for an empty batch", () => {
    expect(generateHandles([])).toEqual([]);
    expect(occurrenceKeys([])).toEqual([]);
  });

  it("counts U+07FF as two UTF-8 bytes and U+0800 as three in a batch's ids", () => {
    // The batch's byte lengths come from its own UTF-8 count, not the engine's encoder.
    const seeds: HandleSeed[] = ["\u07ff", "\u0800", "a\u0800b", "\u0800\u0800"].map((id) => ({ threadId: id, toolCallId: "c", callIndex: 1, ordinal: 2 }));
    expect(generateHandles(seeds)).toEqual(seeds.map(handleOracle));
  });

  it("keeps lone surrogates at seed boundaries apart (no pairing across seeds)", () => {
    const seeds: HandleSeed[] = [
      { threadId: "t", toolCallId: "c", callIndex: 0, occurrenceId: "end\ud83d" },
      { threadId: "\ude42start", toolCallId: "c", callIndex: 0 },
    ];
    expect(generateHandles(seeds)).toEqual(seeds.map(handleOracle));
  });

  it("escapes a quote in an id of keys without a message id in a batch, as occurrenceKey does", () => {
    // One quote per seed beyond the structure's four: the batch must still see that an id needs escaping.
    const seeds: OccurrenceSeed[] = [
      { kind: "result", threadId: 't"q', messageId: null, toolCallId: "c", index: 2 },
      { kind: "call", threadId: "t", messageId: undefined, toolCallId: 'a"', index: 0 },
    ];
    const want = seeds.map((s) => occurrenceKey(s.kind, s.threadId, s.messageId, s.toolCallId, s.index));
    expect(want[0]).toBe(`result:${nodeHex('["t\\"q", null, "c", 2]')}`);
    expect(occurrenceKeys(seeds)).toEqual(want);
    expect(occurrenceKeys([seeds[0]])).toEqual([want[0]]);
  });

  it("escapes only what needs it when one id in a plain batch needs escaping", () => {
    const plain: OccurrenceSeed = { kind: "result", threadId: "t-1", messageId: "m-1", toolCallId: "c-1", index: 0 };
    // Each of these keeps the optimistic JSON printable ASCII or changes its
    // quote count (an added quote, or a quote that would close the string early).
    for (const odd of ['a"b', '", "', "back\\slash", "tab\t", "del\u007f", "é", "\ud800", "\u{1F642}", '"', ""]) {
      const seeds: OccurrenceSeed[] = [
        plain,
        { ...plain, messageId: odd },
        { ...plain, kind: "call", threadId: odd, index: 2 },
        { ...plain, messageId: null, toolCallId: odd, index: 3 },
        plain,
      ];
      expect(occurrenceKeys(seeds), JSON.stringify(odd)).toEqual(seeds.map(keyOracle));
    }
  });

  it("hashes runs of seeds that share their ids like node:crypto, in one call and call after call", () => {
    // Extraction's batches: one tool result's artifacts share the thread,
    // tool-call and occurrence ids. Long ids fill the first 64-byte block,
    // whose state the engine keeps and reuses while the block stays the same:
    // ids that agree on 64 bytes and differ after, or differ only in byte 0 or 63,
    // must still hash apart.
    const a64 = "a".repeat(64);
    const id = fc.constantFrom(a64, `${a64}x`, `${"a".repeat(63)}b`, `b${"a".repeat(63)}`, "a", "", "é".repeat(40), "\ud83d", "3f2c1a8e-8b1b-4e2a-9a55-0c8f0d6f1e2a");
    const run = fc.record({
      threadId: id,
      toolCallId: id,
      callIndex: fc.oneof(fc.nat(12), fc.constant(Number.MAX_SAFE_INTEGER)),
      occurrenceId: fc.option(id, { nil: null }),
      ordinals: fc.array(fc.oneof(fc.nat(12), fc.constant(Number.MAX_SAFE_INTEGER)), { minLength: 1, maxLength: 9 }),
    });
    fc.assert(
      fc.property(fc.array(run, { maxLength: 6 }), (runs) => {
        const batches = runs.map(({ ordinals, ...ids }) => ordinals.map((ordinal): HandleSeed => ({ ...ids, ordinal })));
        const seeds = batches.flat();
        expect(generateHandles(seeds)).toEqual(seeds.map(handleOracle));
        for (const batch of batches) expect(generateHandles(batch)).toEqual(batch.map(handleOracle));
      }),
      { numRuns: 300 },
    );
  });

  it("generateResultHandles gives generateHandle's handle for each ordinal, call after call", () => {
    // The same id pool as above (shared first blocks, non-ASCII, a lone surrogate).
    const a64 = "a".repeat(64);
    const id = fc.constantFrom(a64, `${a64}x`, `${"a".repeat(63)}b`, `b${"a".repeat(63)}`, "a", "", "é".repeat(40), "\udc42", "\ud83d");
    fc.assert(
      fc.property(
        fc.array(fc.tuple(id, id, fc.oneof(fc.nat(12), fc.constant(Number.MAX_SAFE_INTEGER)), fc.integer({ min: 0, max: 23 }), fc.option(id, { nil: null })), { maxLength: 5 }),
        (results) => {
          for (const [t, c, ci, count, occ] of results) {
            const singles = Array.from({ length: count }, (_, ordinal) => generateHandle(t, c, ci, ordinal, occ));
            expect(generateResultHandles(t, c, ci, count, occ)).toEqual(singles);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("generateResultHandles: ordinals of every digit count, past the initial scratch", () => {
    const count = 12_345;
    const handles = generateResultHandles("thread-é", "call_1", 3, count, "msg-1");
    for (const ordinal of [0, 9, 10, 99, 100, 999, 1000, 9999, 10_000, count - 1]) {
      expect(handles[ordinal], `ordinal ${ordinal}`).toBe(handleOracle({ threadId: "thread-é", toolCallId: "call_1", callIndex: 3, ordinal, occurrenceId: "msg-1" }));
    }
    expect(new Set(handles).size).toBe(count);
  });

  it("handles a batch larger than the initial scratch in one call", () => {
    const seeds: HandleSeed[] = Array.from({ length: 3000 }, (_, i) => ({
      threadId: `thread-${"é".repeat(i % 97)}`,
      toolCallId: `call_${i}`,
      callIndex: i,
      ordinal: i % 3,
      occurrenceId: i % 2 ? `msg-${i}` : null,
    }));
    expect(generateHandles(seeds)).toEqual(seeds.map(handleOracle));
    const keys: OccurrenceSeed[] = seeds.map((s, i) => ({
      kind: i % 2 ? "call" : "result",
      threadId: s.threadId,
      messageId: s.occurrenceId,
      toolCallId: s.toolCallId,
      index: i,
    }));
    expect(occurrenceKeys(keys)).toEqual(keys.map(keyOracle));
  });
});

describe("batch kernels", () => {
  type BatchKernel = (table: number, count: number, out: number, chars: number, stride: number) => void;
  const FILL = 0x2e; // "." in every output byte the kernel must not touch
  // Lay out messages, a (pointer, length) table and an output area, and run
  // one of the two batch tiers over them; returns each output slot as text.
  function runBatch(
    name: "sha256_batch_hex" | "sha256_batch_hex_scalar",
    messages: Uint8Array[],
    chars: number,
    stride: number,
  ): string[] {
    const total = messages.reduce((n, m) => n + m.length, 0);
    const tableBytes = 8 * messages.length;
    const outBytes = stride * messages.length;
    const base = reserve(tableBytes + outBytes + total, "test");
    const mem = memoryView();
    const table = new DataView(mem.buffer, base, tableBytes);
    mem.fill(FILL, base + tableBytes, base + tableBytes + outBytes);
    let at = base + tableBytes + outBytes;
    messages.forEach((m, i) => {
      mem.set(m, at);
      table.setUint32(8 * i, at, true);
      table.setUint32(8 * i + 4, m.length, true);
      at += m.length;
    });
    const kernel = (engine() as unknown as Record<string, BatchKernel>)[name];
    kernel(base, messages.length, base + tableBytes, chars, stride);
    const out = Buffer.from(memoryView().subarray(base + tableBytes, base + tableBytes + outBytes)).toString("latin1");
    return messages.map((_, i) => out.slice(i * stride, (i + 1) * stride));
  }

  it("SIMD lanes and the scalar tier agree with node:crypto on fuzzed message sets", () => {
    // Lengths around the one/two padding-block boundary and multi-block ones,
    // mixed within a group of four so lanes finish at different blocks; every
    // digest length, with and without room left in the slot.
    // Messages may also share a whole first block (its state is kept and
    // reused), with prefixes that differ only in their first or last byte.
    const prefixes = [new Uint8Array(64).fill(7), new Uint8Array(64).fill(7).fill(8, 63), new Uint8Array(64).fill(7).fill(8, 0, 1)];
    const message = fc.oneof(
      fc.uint8Array({ maxLength: 130 }),
      fc
        .tuple(fc.constantFrom(...prefixes), fc.uint8Array({ maxLength: 150 }))
        .map(([prefix, rest]) => Buffer.concat([prefix, rest])),
      fc.integer({ min: 50, max: 70 }).chain((n) => fc.uint8Array({ minLength: n, maxLength: n })),
      fc.uint8Array({ minLength: 200, maxLength: 700 }),
    );
    const shape = fc
      .integer({ min: 1, max: 8 })
      .chain((words) => fc.tuple(fc.constant(8 * words), fc.integer({ min: 8 * words, max: 8 * words + 9 })));
    fc.assert(
      fc.property(fc.array(message, { maxLength: 13 }), shape, (messages, [chars, stride]) => {
        const expected = messages.map((m) => nodeHex(m).slice(0, chars) + ".".repeat(stride - chars));
        expect(runBatch("sha256_batch_hex", messages, chars, stride)).toEqual(expected);
        expect(runBatch("sha256_batch_hex_scalar", messages, chars, stride)).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });

  it("sha256_plain_quotes counts quotes in printable ASCII and rejects anything json.dumps escapes", () => {
    // `offset` from the 16-byte aligned arena base: the kernel must not assume alignment.
    const plainQuotes = (bytes: Uint8Array, offset = 0): number => {
      const base = reserve(offset + bytes.length, "test");
      memoryView().set(bytes, base + offset);
      const kernel = (engine() as unknown as Record<string, (ptr: number, len: number) => number>).sha256_plain_quotes;
      return kernel(base + offset, bytes.length);
    };
    const oracle = (bytes: Uint8Array): number =>
      bytes.every((b) => b >= 0x20 && b <= 0x7e && b !== 0x5c) ? bytes.filter((b) => b === 0x22).length : -1;
    // Mostly printable ASCII with quotes, so both answers come up often.
    const byte = fc.oneof(
      { weight: 20, arbitrary: fc.integer({ min: 0x20, max: 0x7e }) },
      { weight: 5, arbitrary: fc.constant(0x22) },
      { weight: 1, arbitrary: fc.constantFrom(0x00, 0x1f, 0x5c, 0x7f, 0x80, 0xff) },
    );
    fc.assert(
      fc.property(fc.array(byte, { maxLength: 80 }), fc.nat(15), (list, offset) => {
        const bytes = Uint8Array.from(list);
        expect(plainQuotes(bytes, offset)).toBe(oracle(bytes));
      }),
      { numRuns: 1000 },
    );
    // Each rejected byte at each position of a 48-byte run (three SIMD steps).
    for (const b of [0x00, 0x1f, 0x5c, 0x7f, 0x80, 0xff]) {
      for (let at = 0; at < 48; at++) {
        const bytes = new Uint8Array(48).fill(0x22);
        bytes[at] = b;
        expect(plainQuotes(bytes), `0x${b.toString(16)} at ${at}`).toBe(-1);
      }
    }
  });
});

describe("engine lifecycle", () => {
  it("keeps hashing correctly after the instance is rebuilt", () => {
    // Large inputs: the fresh instance starts with less memory than the old
    // one had grown to, so a stale reservation would show.
    const big = "z".repeat(300_000);
    const before = [generateHandle(big, "c", 1), occurrenceKey("call", big, null, "c", 1), sha256Hex(big)];
    rebuild();
    expect([generateHandle(big, "c", 1), occurrenceKey("call", big, null, "c", 1), sha256Hex(big)]).toEqual(before);
    sha256Hex(big);
    rebuild();
    expect(generateHandles([{ threadId: big, toolCallId: "c", callIndex: 1 }])).toEqual([before[0]]);
  });

  it("reads each occurrence seed once, before the engine runs: a getter that rebuilds the instance changes no key", () => {
    // An id that needs escaping takes the second layout pass.
    const plain: OccurrenceSeed[] = [
      { kind: "result", threadId: "t1", messageId: 'm"1', toolCallId: "c1", index: 0 },
      { kind: "call", threadId: "t2", messageId: null, toolCallId: "c2", index: 3 },
    ];
    const want = occurrenceKeys(plain);
    let reads = 0;
    const seeds = plain.map((seed) => ({ ...seed }));
    Object.defineProperty(seeds[0], "threadId", {
      enumerable: true,
      get() {
        reads++;
        rebuild(); // as host code that scanned a huge text would
        return "t1";
      },
    });
    expect(occurrenceKeys(seeds)).toEqual(want);
    expect(reads).toBe(1);
  });

  it("hashes a long id of three-byte characters in full on a fresh instance", () => {
    // 3 UTF-8 bytes per unit: more than the arena a fresh instance has reserved for hashing.
    rebuild();
    const t = "€".repeat(1 << 20);
    expect(generateHandle(t, "c", 0)).toBe(`art_${nodeHex(`${t}:c:0:0`).slice(0, 8)}`);
  });

  it("keeps hashing correctly after another caller grows memory", () => {
    const before = generateHandle("t", "c", 2);
    reserve(8 << 20, "test");
    expect(generateHandle("t", "c", 2)).toBe(before);
    expect(sha256Hex("abc")).toBe(nodeHex("abc"));
  });
});

describe("input validation", () => {
  const call = (f: () => unknown) => f;
  const bad = (v: unknown) => v as never;

  it.each([
    ["threadId", call(() => generateHandle(bad(1), "c", 0)), /generateHandle: threadId must be a string, got number 1/],
    ["toolCallId", call(() => generateHandle("t", bad(undefined), 0)), /toolCallId must be a string, got undefined/],
    ["occurrenceId", call(() => generateHandle("t", "c", 0, 0, bad(5))), /occurrenceId must be a string/],
    ["callIndex -1", call(() => generateHandle("t", "c", -1)), /callIndex must be a non-negative integer, got number -1/],
    ["callIndex 1.5", call(() => generateHandle("t", "c", 1.5)), /callIndex must be a non-negative integer/],
    ["callIndex NaN", call(() => generateHandle("t", "c", NaN)), /callIndex must be a non-negative integer/],
    ["callIndex string", call(() => generateHandle("t", "c", bad("1"))), /callIndex must be a non-negative integer, got "1"/],
    ["ordinal null", call(() => generateHandle("t", "c", 0, bad(null))), /ordinal must be a non-negative integer, got null/],
    ["ordinal 2^53", call(() => generateHandle("t", "c", 0, 2 ** 53)), /ordinal must be a non-negative integer/],
    ["kind", call(() => occurrenceKey(bad("tool"), "t", null, "c", 0)), /occurrenceKey: kind must be "result" or "call", got "tool"/],
    ["messageId", call(() => occurrenceKey("result", "t", bad(7), "c", 0)), /messageId must be a string, got number 7/],
    ["index", call(() => occurrenceKey("call", "t", null, "c", -3)), /index must be a non-negative integer/],
    ["text", call(() => sha256Hex(bad(Buffer.from("x")))), /sha256Hex: text must be a string, got object/],
    ["result handles count", call(() => generateResultHandles("t", "c", 0, -1)), /generateResultHandles: count must be a non-negative integer/],
    ["result handles count 2^32", call(() => generateResultHandles("t", "c", 0, 2 ** 32)), /generateResultHandles: count must be at most 4294967295/],
    ["result handles id", call(() => generateResultHandles("t", bad(null), 0, 2)), /generateResultHandles: toolCallId must be a string, got null/],
    ["handle seeds", call(() => generateHandles(bad("x"))), /generateHandles: seeds must be an array/],
    // The batch takes what generateHandle takes: a default ordinal is for undefined only.
    ["handle seed ordinal null", call(() => generateHandles([{ threadId: "t", toolCallId: "c", callIndex: 0, ordinal: bad(null) }])), /generateHandles: seeds\[0\]\.ordinal must be a non-negative integer, got null/],
    // A bad value is quoted whole up to 40 characters, and cut after 40.
    ["callIndex of 40 characters", call(() => generateHandle("t", "c", bad("1".repeat(40)))), new RegExp(`got "${"1".repeat(40)}"`)],
    ["callIndex of 41 characters", call(() => generateHandle("t", "c", bad("1".repeat(41)))), new RegExp(`got "${"1".repeat(40)}…"`)],
    ["handle seed", call(() => generateHandles([bad(null)])), /generateHandles: seeds\[0\] must be an object/],
    ["hole in seeds", call(() => occurrenceKeys(bad([, { kind: "call" }]))), /occurrenceKeys: seeds\[0\] must be an object, got undefined/],
    [
      "handle seed field",
      call(() => generateHandles([{ threadId: "t", toolCallId: "c", callIndex: 0 }, bad({ threadId: "t", toolCallId: 3, callIndex: 0 })])),
      /generateHandles: seeds\[1\]\.toolCallId must be a string/,
    ],
    [
      "key seed kind",
      call(() => occurrenceKeys([bad({ kind: "x", threadId: "t", toolCallId: "c", index: 0 })])),
      /occurrenceKeys: seeds\[0\]\.kind must be "result" or "call"/,
    ],
    [
      "key seed index",
      call(() => occurrenceKeys([{ kind: "call", threadId: "t", messageId: null, toolCallId: "c", index: -1 }])),
      /occurrenceKeys: seeds\[0\]\.index must be a non-negative integer/,
    ],
    // An optional field spelt otherwise would be read as not given: another handle or key without a word.
    [
      "handle seed occurrenceId spelt otherwise",
      call(() => generateHandles([{ threadId: "t", toolCallId: "c", callIndex: 0, OccurrenceID: "m" } as never])),
      /^generateHandles: seeds\[0\] has "OccurrenceID"; did you mean occurrenceId\?$/,
    ],
    ["handle seed occurrenceId in snake case", call(() => generateHandles([{ threadId: "t", toolCallId: "c", callIndex: 0, occurrence_id: "m" } as never])), /seeds\[0\] has "occurrence_id"; did you mean occurrenceId\?/],
    [
      "key seed messageId spelt otherwise",
      call(() => occurrenceKeys([{ kind: "result", threadId: "t", toolCallId: "c", index: 3 }, { kind: "result", threadId: "t", messageID: "m1", toolCallId: "c", index: 3 } as never])),
      /^occurrenceKeys: seeds\[1\] has "messageID"; did you mean messageId\?$/,
    ],
  ])("rejects a bad %s with a TypeError", (_name, f, message) => {
    expect(f).toThrow(TypeError);
    expect(f).toThrow(message);
  });

  it("takes a seed's other keys as the host's own, even near a field's name, and another spelling beside the field as the host's", () => {
    const seed = { threadId: "t", toolCallId: "c", callIndex: 0 };
    // Own keys near the names, a misspelling no case or separator explains, an inherited key.
    const hosts = Object.assign(Object.create({ occurrence_id: "x" }), seed, { original: 1, occurrence: 2, occurenceId: "x", message: {} });
    expect(generateHandles([hosts])).toEqual([generateHandle("t", "c", 0)]);
    expect(generateHandles([{ ...seed, occurrenceId: "m", occurrence_id: "x" } as never])).toEqual([generateHandle("t", "c", 0, 0, "m")]);
    // Beside a messageId the host's message_id is its own; beside a null one (no id, DESIGN §2) it is a misspelling.
    const key = { kind: "result", threadId: "t", messageId: null, toolCallId: "c", index: 2 } as const;
    expect(occurrenceKeys([{ ...key, message: {}, messages: [] } as never])).toEqual([occurrenceKey("result", "t", null, "c", 2)]);
    expect(occurrenceKeys([{ ...key, messageId: "m0", message_id: "m" } as never])).toEqual([occurrenceKey("result", "t", "m0", "c", 2)]);
    expect(() => occurrenceKeys([{ ...key, message_id: "m" } as never])).toThrow('occurrenceKeys: seeds[0] has "message_id"; did you mean messageId?');
    expect(() => generateHandles([{ ...seed, occurrenceId: null, occurrence_id: "m" } as never])).toThrow('generateHandles: seeds[0] has "occurrence_id"; did you mean occurrenceId?');
    // A key set to undefined is none.
    expect(generateHandles([{ ...seed, occurrence_id: undefined } as never])).toEqual([generateHandle("t", "c", 0)]);
  });
});

describe("a first 64-byte block of zero bytes", () => {
  // The engine keeps the state after a batch's shared first block; a fresh
  // instance (the host starts one after a huge input) keeps none yet, and a
  // block of zero bytes must not pass for the kept one.
  const threadId = "\0".repeat(64);
  for (const count of [1, 2, 4, 7]) {
    it(`hashes ${count} seed(s) like node:crypto as the first batch of a fresh instance`, () => {
      rebuild();
      const seeds: HandleSeed[] = Array.from({ length: count }, (_, ordinal) => ({ threadId, toolCallId: "call_1", callIndex: 0, ordinal }));
      expect(generateHandles(seeds)).toEqual(seeds.map(handleOracle));
    });
  }

  it("gives generateResultHandles the same handles, first on a fresh instance", () => {
    rebuild();
    const want = [0, 1, 2].map((ordinal) => handleOracle({ threadId, toolCallId: "call_1", callIndex: 0, ordinal, occurrenceId: "m1" }));
    expect(generateResultHandles(threadId, "call_1", 0, 3, "m1")).toEqual(want);
  });
});

describe("batch hashing", () => {
  it("counts U+007F as one UTF-8 byte and U+0080 as two in a batch's ids", () => {
    // The batch's byte lengths come from its own UTF-8 count, not the engine's encoder.
    const seeds: HandleSeed[] = ["\u007f", "\u0080", "a\u0080b", "\u0080\u0080", "\u00ff"].map((id) => ({ threadId: id, toolCallId: "c", callIndex: 1, ordinal: 2 }));
    expect(generateHandles(seeds)).toEqual(seeds.map(handleOracle));
    expect(generateHandles(seeds)).toEqual(seeds.map((s) => generateHandle(s.threadId, s.toolCallId, s.callIndex, s.ordinal)));
  });

  it("names a seed that is not an object by its index in the whole batch, past the first engine call's chunk", () => {
    const seeds: OccurrenceSeed[] = Array.from({ length: 5000 }, (_, i) => ({ kind: "call", threadId: "t", toolCallId: `c${i}`, index: i }));
    const bad: unknown[] = [...seeds];
    bad[4500] = "not a seed";
    expect(() => occurrenceKeys(bad as OccurrenceSeed[])).toThrow(/seeds\[4500\] must be an object/);
    const misspelt: unknown[] = [...seeds];
    misspelt[4500] = { ...seeds[4500]!, message_id: "m" };
    expect(() => occurrenceKeys(misspelt as OccurrenceSeed[])).toThrow(/seeds\[4500\] has "message_id"/);
  });
});
