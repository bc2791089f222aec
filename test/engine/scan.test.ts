import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { regexpScanText } from "../../bench/baselines/regexp-scan.js";
import { collidingRefs } from "../../bench/colliding-refs.js";
import {
  countByteInEngine,
  scanBytes,
  scanInEngine,
  scanInputPointer,
  scanText,
  writeTextInEngine,
  type ScanKernel,
  type ScanOptions,
} from "../../src/engine/scan.js";
import { engine, memoryView } from "../../src/engine/wasm.js";
import { displayName } from "../../src/types.js";

const vectors: Array<{ text: string; refs: string[] }> = readFileSync(
  new URL("../fixtures/vectors/scan.jsonl", import.meta.url),
  "utf8",
)
  .split("\n")
  .filter((line) => line.trim() !== "")
  .map((line) => JSON.parse(line));

const refsOf = (text: unknown, options?: ScanOptions) => scanText(text, options).map((r) => r.ref);

// Python spaces (every one of them) and near misses that share their lead bytes.
const SPACES = ["\t", "\n", "\v", "\f", "\r", "\x1c", "\x1f", " ", "\x85", "\xa0", "\u1680", "\u2000", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000"];
const NEAR_SPACES = ["\x00", "\x08", "\x0e", "\x1b", "\x86", "\xa1", "\u1681", "\u200b", "\u2027", "\u2030", "\u205e", "\u3001", "\ufeff"];
const VOCAB = [
  "/mnt/user-data/", "/mnt/user-data", "/mnt/", "/", "//",
  "http://", "https://", "HTTP://", "http:/", "htps://", "xhttp://", "://", "http", "https", "s", ":",
  "a", "ex.com", "例え.jp", "数据", "🙂", "𝄞", "x-y_z", "%20", "v1.2", "..", ".",
  ".png", ".jpg", ".jpeg", ".jpe", ".gif", ".html", ".htm", ".pdf", ".csv", ".json", ".jso", ".txt",
  ".log", ".md", ".mdx", ".xls", ".xlsx", ".xlsxx", ".doc", ".docx", ".zip", ".tar.gz", "png", "md",
  "?", "#", "?q=1&x=2", "#frag",
  "\"", "'", "`", "<", ">",
  ",", ";", ")", "]", "}", "(", "[", "{",
  ...SPACES, ...NEAR_SPACES,
];
const fragments = fc.constantFrom(...VOCAB);
const soup = (maxLength: number, extra: fc.Arbitrary<string>[] = []) =>
  fc.array(extra.length ? fc.oneof(fragments, ...extra) : fragments, { maxLength, size: "max" }).map((parts) => parts.join(""));

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
const anyCodePoint = fc.string({ unit: "binary", minLength: 1, maxLength: 1 });

/** Deterministic soup of `bytes`-ish length, for inputs larger than fast-check makes. */
function bigSoup(seed: number, length: number): string {
  let s = seed >>> 0;
  const parts: string[] = [];
  let n = 0;
  while (n < length) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const part = VOCAB[s % VOCAB.length];
    parts.push(part);
    n += part.length;
  }
  return parts.join("");
}

describe("scanText: parity vectors", () => {
  it("matches all 400 expected results exactly", () => {
    expect(vectors).toHaveLength(400);
    const mismatches = vectors
      .map((v) => ({ text: v.text, want: v.refs, got: refsOf(v.text) }))
      .filter((m) => JSON.stringify(m.got) !== JSON.stringify(m.want));
    expect(mismatches).toEqual([]);
  });

  it("returns file refs whose display is the shared display name", () => {
    const refs = vectors.flatMap((v) => scanText(v.text));
    expect(refs.length).toBeGreaterThan(100);
    for (const r of refs) expect(r).toEqual({ type: "file", ref: r.ref, display: displayName(r.ref) });
  });
});

describe("scanText agrees with the RegExp rules", () => {
  it("on texts built from tricky fragments", () => {
    fc.assert(
      fc.property(soup(60), (text) => {
        expect(scanText(text)).toEqual(regexpScanText(text));
      }),
      { numRuns: 3000 },
    );
  });

  it("on fragments mixed with arbitrary code points and lone surrogates", () => {
    fc.assert(
      fc.property(soup(60, [anyCodePoint, loneSurrogate]), (text) => {
        expect(scanText(text)).toEqual(regexpScanText(text));
      }),
      { numRuns: 2000 },
    );
  });

  it("on fully random unicode strings", () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.oneof(anyCodePoint, loneSurrogate), maxLength: 200 }), (text) => {
        expect(scanText(text)).toEqual(regexpScanText(text));
      }),
      { numRuns: 1000 },
    );
  });

  // (An empty prefix is refused: test/bad-input.test.ts.)
  it("with custom prefix lists (several, one-byte, with spaces, non-ASCII)", () => {
    const prefix = fc.constantFrom("/mnt/user-data/", "/tmp/", "/", "数据/", "🙂", "a b/", "/mnt/", "C:\\", ".", "h", "http");
    const prefixed = fc.constantFrom("/tmp/", "数据/", "🙂", "a b/", "C:\\", "h");
    fc.assert(
      fc.property(fc.array(prefix, { maxLength: 6 }), soup(60, [prefixed]), (sandboxPrefixes, text) => {
        expect(scanText(text, { sandboxPrefixes })).toEqual(regexpScanText(text, sandboxPrefixes));
      }),
      { numRuns: 2000 },
    );
  });

  it("on texts long enough to cross many SIMD blocks", () => {
    for (let seed = 1; seed <= 8; seed++) {
      const text = bigSoup(seed, 50_000);
      expect(scanText(text)).toEqual(regexpScanText(text));
    }
  });
});

describe("scanText: behaviour", () => {
  it("returns [] for non-strings and the empty string", () => {
    for (const input of [undefined, null, 42, {}, ["/mnt/user-data/a.txt"], new String("/mnt/user-data/a.txt"), ""]) {
      expect(scanText(input)).toEqual([]);
    }
  });

  it("lists SANDBOX matches before URLs, strips trailing noise and drops repeats", () => {
    const text = "see https://ex.com/r.pdf), then /mnt/user-data/out/r.csv; and /mnt/user-data/out/r.csv again. https://ex.com/r.pdf";
    expect(scanText(text)).toEqual([
      { type: "file", ref: "/mnt/user-data/out/r.csv", display: "r.csv" },
      { type: "file", ref: "https://ex.com/r.pdf", display: "r.pdf" },
    ]);
  });

  it("ends a URL at the run's last extension and keeps a query to the end of the run", () => {
    expect(refsOf("http://a.md/b.json/c.tar.gz http://x/y.xlsx?dl=1&a=b#c>more https://h/.md")).toEqual([
      "http://a.md/b.json",
      "http://x/y.xlsx?dl=1&a=b#c",
      "https://h/.md",
    ]);
    expect(refsOf("http://.md https://x.mdx http://h/a.mdx.docxx")).toEqual(["https://x.md", "http://h/a.mdx.docx"]);
  });

  it("maps offsets exactly around non-ASCII and astral characters", () => {
    const text = "🙂𝄞 résumé /mnt/user-data/数据/🙂.png\u3000«https://例え.jp/𝄞/ünï.pdf?q=é»\u2028end";
    expect(refsOf(text)).toEqual(["/mnt/user-data/数据/🙂.png", "https://例え.jp/𝄞/ünï.pdf?q=é»"]);
    expect(scanText(text)).toEqual(regexpScanText(text));
  });

  it("keeps lone surrogates as they are in the text (scanned as U+FFFD, sliced from the original)", () => {
    const text = "\uDC00 /mnt/user-data/a\uD800b.txt https://h/\uDBFF.png \uD83D";
    const refs = refsOf(text);
    expect(refs).toEqual(["/mnt/user-data/a\uD800b.txt", "https://h/\uDBFF.png"]);
    expect(refs.join("")).not.toContain("\uFFFD");
  });

  it("tells repeats apart as strings where the UTF-8 bytes are equal (lone surrogates, U+FFFD)", () => {
    // all three are EF BF BD in UTF-8; only the repeated lone surrogate is a repeat
    const text = "/mnt/user-data/a\uD800 /mnt/user-data/a\uD801 /mnt/user-data/a\uFFFD /mnt/user-data/a\uD800";
    expect(refsOf(text)).toEqual(["/mnt/user-data/a\uD800", "/mnt/user-data/a\uD801", "/mnt/user-data/a\uFFFD"]);
    const wide = "https://h/\uFF21.png /mnt/user-data/\uFF21 https://h/\uFF21.png /mnt/user-data/\uFF21";
    expect(refsOf(wide)).toEqual(["/mnt/user-data/\uFF21", "https://h/\uFF21.png"]);
  });

  it("drops repeats among many references, the first occurrence kept in place", () => {
    const names = Array.from({ length: 3000 }, (_, i) => `/mnt/user-data/f${i % 700}.txt https://h/${i % 500}.png`);
    const text = names.join(" ");
    const refs = refsOf(text);
    expect(refs).toEqual(regexpScanText(text).map((r) => r.ref));
    expect(refs).toHaveLength(1200);
  });

  it("drops repeats among references crafted to share one hash in the engine's filter, which gives up on that cluster", () => {
    const crafted = collidingRefs(300);
    // Each repeated once or twice, interleaved with ordinary ones: the filter's
    // lookups give up past 32 slots and the host compares the rest as strings.
    const text = [...crafted, "/mnt/user-data/plain.txt", ...crafted.slice(0, 150).reverse(), ...crafted.filter((_, i) => i % 7 === 0)].join(" ");
    const refs = scanText(text);
    expect(refs.map((r) => r.ref)).toEqual([...crafted, "/mnt/user-data/plain.txt"]);
    expect(refs).toEqual(regexpScanText(text));
  });

  it("rejects a sandbox prefix with a lone surrogate, or a non-string one", () => {
    expect(() => scanText("x", { sandboxPrefixes: ["/a\uD800/"] })).toThrow(TypeError);
    expect(() => scanText("x", { sandboxPrefixes: [42 as unknown as string] })).toThrow(TypeError);
  });

  it("rejects a sandbox prefix with U+FFFD, which would match a lone surrogate in text (Python's regex matches neither)", () => {
    // Text is scanned as UTF-8, where each lone surrogate below becomes U+FFFD.
    expect(() => scanText("/\ud800/x /\udfff/y", { sandboxPrefixes: ["/\ufffd/"] })).toThrow(/sandbox prefix "\/\ufffd\/" has a lone surrogate or U\+FFFD/);
  });

  it("honours custom prefixes in order, and [] turns the SANDBOX rule off", () => {
    const text = "/tmp/a /data/b /mnt/user-data/c";
    expect(refsOf(text, { sandboxPrefixes: ["/data/", "/tmp/"] })).toEqual(["/tmp/a", "/data/b"]);
    expect(refsOf(text, { sandboxPrefixes: [] })).toEqual([]);
    expect(refsOf("/ab b/c", { sandboxPrefixes: ["/a", "/ab b/"] })).toEqual(["/ab"]);
    expect(refsOf("/ab b/c", { sandboxPrefixes: ["/ab b/", "/a"] })).toEqual(["/ab b/c"]);
  });

  it("reads a prefix list once: a getter that scans with other prefixes, or answers otherwise later, changes nothing", () => {
    const text = "wrote /data/out/a.csv and /data/out/b.csv";
    const want = ["/data/out/a.csv", "/data/out/b.csv"];
    expect(refsOf(text, { sandboxPrefixes: ["/data/out/"] })).toEqual(want); // the list last encoded
    let reads = 0;
    const prefixes: string[] = [];
    Object.defineProperty(prefixes, 0, {
      enumerable: true,
      get() {
        // The host's code: it scans with other prefixes, and would answer a
        // non-string to a second read.
        expect(refsOf("see /other/x.txt", { sandboxPrefixes: ["/other/"] })).toEqual(["/other/x.txt"]);
        return reads++ === 0 ? "/data/out/" : 42;
      },
    });
    expect(refsOf(text, { sandboxPrefixes: prefixes })).toEqual(want);
    expect(reads).toBe(1);
  });

  it("finds references in a text too long to go to the engine as UTF-16", () => {
    // past 2^24 units the text is encoded by TextEncoder, ASCII first
    const text = `${"a ".repeat(2 ** 23)}/mnt/user-data/é/x.txt https://h/🙂.pdf`;
    expect(text.length).toBeGreaterThan(2 ** 24);
    expect(refsOf(text)).toEqual(["/mnt/user-data/é/x.txt", "https://h/🙂.pdf"]);
  });

  it("fits the densest possible output (one-byte prefix, one match every three bytes)", () => {
    const text = "/a ".repeat(100_000);
    expect(refsOf(text, { sandboxPrefixes: ["/"] })).toEqual(["/a"]);
    const distinct = Array.from({ length: 5000 }, (_, i) => `/${i.toString(36)}`).join(" ");
    expect(scanText(distinct, { sandboxPrefixes: ["/"] })).toEqual(regexpScanText(distinct, ["/"]));
  });

  it("fits the densest URLs (the shortest, one blank apart)", () => {
    expect(refsOf("http://a.md ".repeat(100_000))).toEqual(["http://a.md"]);
    const distinct = Array.from({ length: 5000 }, (_, i) => `http://${(i % 36).toString(36)}.${["md", "gif", "pdf"][i % 3]}`).join(" ");
    expect(scanText(distinct)).toEqual(regexpScanText(distinct));
  });

  it("returns [] for the adversarial 'http://a.' repeated to 1 MiB", () => {
    const text = "http://a.".repeat(Math.floor((1 << 20) / 9));
    expect(scanText(text)).toEqual([]);
    // one match once a real extension ends the run
    expect(refsOf(text + "md")).toEqual([text + "md"]);
  });

  it("reports an arena that cannot grow as an Error naming the operation and size, then keeps working", () => {
    expect(() => scanBytes(2 ** 32 - 8)).toThrow(/scanText could not grow memory to \d+ bytes/);
    expect(refsOf("see /mnt/user-data/a.txt")).toEqual(["/mnt/user-data/a.txt"]);
  });

  it("does not grow engine memory when the same text is scanned again and again", () => {
    const text = bigSoup(7, 20_000);
    scanText(text);
    const size = engine().memory.buffer.byteLength;
    for (let i = 0; i < 2000; i++) scanText(text);
    expect(engine().memory.buffer.byteLength).toBe(size);
  });
});

describe("engine kernels", () => {
  const enc = new TextEncoder();
  // Valid pieces plus bytes no encoder writes: stray continuations, cut sequences.
  const byteFragment = fc.oneof(
    { weight: 4, arbitrary: fragments.map((s) => enc.encode(s)) },
    { weight: 1, arbitrary: fc.constantFrom([0x80], [0xbf], [0xc2], [0xe2, 0x80], [0xe1, 0x9a], [0xe3], [0xf0, 0x9f], [0xff], [0xc2, 0x20]).map((b) => Uint8Array.from(b)) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 4 }) },
  );
  const fuzzBytes = fc.array(byteFragment, { maxLength: 120 }).map((parts) => {
    const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      bytes.set(p, at);
      at += p.length;
    }
    return bytes;
  });
  const prefixSets = fc.constantFrom<readonly string[]>(
    ["/mnt/user-data/"],
    [],
    ["/"],
    ["/", "/mnt/"],
    ["数据/", "a b/", "h", "/mnt/user-data/"],
    ["/a", "/b", "/c", "/d", "/e"],
    ["/m"],
    ["/mn"],
    [":", "/mnt/user-data/"],
    ["://", "h"],
    ["http", "ex"],
  );

  function write(bytes: Uint8Array): number {
    const at = scanInputPointer(bytes.length);
    memoryView().set(bytes, at);
    return bytes.length;
  }

  it("SIMD and scalar kernels agree on fuzzed bytes, valid UTF-8 or not", () => {
    fc.assert(
      fc.property(fuzzBytes, prefixSets, (bytes, sandboxPrefixes) => {
        const len = write(bytes);
        const simd = scanBytes(len, { sandboxPrefixes }, "simd");
        const scalar = scanBytes(len, { sandboxPrefixes }, "scalar");
        expect(Array.from(simd)).toEqual(Array.from(scalar));
      }),
      { numRuns: 3000 },
    );
  });

  it("ignores whatever lies in the slack after the input (SIMD blocks read into it)", () => {
    const garbage = fc.constantFrom("ls", "sx", "//a.md ", "md", "x/", ":", "://x.png", "data/a", "\u2000", ".json");
    fc.assert(
      fc.property(soup(40), fc.array(garbage, { maxLength: 8 }), fc.constantFrom<ScanKernel>("simd", "scalar"), (text, junk, kernel) => {
        const bytes = enc.encode(text);
        const after = enc.encode(junk.join("")).subarray(0, 80);
        const at = scanInputPointer(bytes.length);
        const view = memoryView();
        view.set(bytes, at);
        view.set(after, at + bytes.length);
        const pairs = scanBytes(bytes.length, undefined, kernel);
        const refs = new Set<string>();
        for (let i = 0; i < pairs.length; i += 2) refs.add(new TextDecoder().decode(bytes.subarray(pairs[i], pairs[i + 1])));
        expect([...refs]).toEqual(regexpScanText(text).map((r) => r.ref));
      }),
      { numRuns: 2000 },
    );
  });

  it("writes text into engine memory as exactly TextEncoder's UTF-8", () => {
    const unit = fc.oneof(anyCodePoint, loneSurrogate, fc.constantFrom("a", "é", "数", "🙂", "\uFFFD"));
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 80 }), fc.string({ unit: fc.constant("x"), maxLength: 40 }), (text, pad) => {
        // ASCII padding shifts the non-ASCII across the 16-unit blocks the engine narrows at once
        const s = pad + text + pad;
        const n = writeTextInEngine(s);
        const at = scanInputPointer(n);
        expect(memoryView().slice(at, at + n)).toEqual(enc.encode(s));
      }),
      { numRuns: 2000 },
    );
  });

  it("scanInEngine leaves the pairs scanBytes copies out", () => {
    const text = "/mnt/user-data/a.txt https://x/a.png /mnt/user-data/a.txt";
    const n = write(enc.encode(text));
    expect(scanInEngine(n)).toBe(3);
    expect(scanBytes(n).length).toBe(6);
  });

  it("scanBytes reports byte offsets of scanText's matches, repeats included", () => {
    const text = "/mnt/user-data/é.txt https://x/a.png /mnt/user-data/é.txt";
    const bytes = enc.encode(text);
    const pairs = scanBytes(write(bytes));
    const dec = new TextDecoder();
    const refs = [];
    for (let i = 0; i < pairs.length; i += 2) refs.push(dec.decode(bytes.subarray(pairs[i], pairs[i + 1])));
    expect(refs).toEqual(["/mnt/user-data/é.txt", "/mnt/user-data/é.txt", "https://x/a.png"]);
  });

  it("the byte-count pass counts exactly, across its counter flushes", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 3000 }), fc.integer({ min: 0, max: 255 }), (bytes, byte) => {
        expect(countByteInEngine(write(bytes), byte)).toBe(bytes.filter((b) => b === byte).length);
      }),
      { numRuns: 300 },
    );
    const slashes = new Uint8Array(100_003).fill(0x2f);
    expect(countByteInEngine(write(slashes), 0x2f)).toBe(100_003);
  });
});

describe("scanText: custom prefixes and long URL runs", () => {
  it("drops a match made only of trailing noise, without looking before it", () => {
    // Trailing noise is stripped back to the match's start, not past it: the "," before the "." prefix is not the match's.
    for (const text of [",.)", "x ,..) y", ";.]"]) {
      expect(refsOf(text, { sandboxPrefixes: ["."] })).toEqual([]);
      expect(regexpScanText(text, ["."]).map((r) => r.ref)).toEqual([]);
    }
  });

  // Past 128 bytes a run's first window is searched backwards for the extension, 16 bytes at a time.
  const tail = "x".repeat(150);
  it("takes an extension whose dot is a long run's second body byte", () => {
    expect(refsOf(`http://a.png${tail}`)).toEqual(["http://a.png"]);
    expect(refsOf(`see https://a.pdf${tail} now`)).toEqual(["https://a.pdf"]);
  });
  it("takes no dot right after the scheme in a long run", () => {
    // The body needs a byte before its dot: the window's lanes before that are masked.
    expect(refsOf(`http://.png${tail}`)).toEqual([]);
    expect(regexpScanText(`http://.png${tail}`).map((r) => r.ref)).toEqual([]);
  });
});

describe("scanText: a prefix of two bytes", () => {
  // Prefixes under three bytes take the several-prefix sweep, even alone.
  it.each([["see d/x.txt now"], ["d/a d/b"], ["xd/y"]])("%j", (text) => {
    const want = regexpScanText(text, ["d/"]).map((r) => r.ref);
    expect(want.length).toBeGreaterThan(0);
    expect(refsOf(text, { sandboxPrefixes: ["d/"] })).toEqual(want);
  });
});

describe("writeTextInEngine: TextEncoder's bytes at U+0800", () => {
  // U+0800 is the first code point of three UTF-8 bytes (E0 A0 80), U+07FF the last of two.
  it.each([["\u0800"], ["\u07ff\u0800x"]])("%j", (s) => {
    const n = writeTextInEngine(s);
    const at = scanInputPointer(n);
    expect(memoryView().slice(at, at + n)).toEqual(new TextEncoder().encode(s));
  });
});

describe("scanText: U+205F is the one space in its row", () => {
  it("keeps U+2060 and superscripts inside a sandbox path, and ends one at U+205F", () => {
    expect(scanText("see /mnt/user-data/x\u2070y\u2060z.txt now").map((r) => r.ref)).toEqual(["/mnt/user-data/x\u2070y\u2060z.txt"]);
    expect(scanText("see /mnt/user-data/x\u205fy.txt").map((r) => r.ref)).toEqual(["/mnt/user-data/x"]);
  });
});

describe("scanBytes: an extension ends where the input does, whatever lies past it", () => {
  const encoder = new TextEncoder();
  for (const kernel of ["simd", "scalar"] as ScanKernel[]) {
    it.each([
      ["http://a.jpe", "g"],
      ["http://a.jso", "n"],
      ["http://a.htm", "l"],
    ])(`${kernel}: %s with %s after it in memory is no URL`, (text, after) => {
      const bytes = encoder.encode(text);
      const at = scanInputPointer(bytes.length);
      memoryView().set(bytes, at);
      memoryView().set(encoder.encode(after.repeat(16)), at + bytes.length);
      expect([...scanBytes(bytes.length, { sandboxPrefixes: [] }, kernel)]).toEqual([]);
    });
  }

  it("through scanText, whose own UTF-16 copy lies past the input", () => {
    expect(scanText("g http://a.jpe")).toEqual([]);
  });
});

// ---- Edges the fuzzed tests reach only by chance (found by hand-made mutants of assembly/scan.ts) ----

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const KERNELS: ScanKernel[] = ["simd", "scalar"];

/** Scan `bytes` with one kernel, `after` lying in the slack past them; the distinct references, in order. */
function kernelRefs(bytes: Uint8Array, kernel: ScanKernel, sandboxPrefixes?: readonly string[], after: Uint8Array = new Uint8Array(0)): string[] {
  const at = scanInputPointer(bytes.length);
  memoryView().set(bytes, at);
  memoryView().set(after, at + bytes.length);
  const pairs = scanBytes(bytes.length, sandboxPrefixes === undefined ? undefined : { sandboxPrefixes }, kernel);
  const refs = new Set<string>();
  for (let i = 0; i < pairs.length; i += 2) refs.add(decoder.decode(bytes.subarray(pairs[i], pairs[i + 1])));
  return [...refs];
}

describe("both kernels stop a URL run at every one of \" ' ` < >", () => {
  // The scalar kernel is the reference the SIMD one is tested against: it must follow the rules by itself.
  for (const kernel of KERNELS) {
    it.each([['"'], ["'"], ["`"], ["<"], [">"]])(`${kernel}: %s inside a run`, (stop) => {
      for (const text of [`http://a${stop}b.png`, `see https://x/a${stop}.pdf`, `http://a.png${stop}b.txt`]) {
        const want = regexpScanText(text, []).map((r) => r.ref);
        expect(kernelRefs(encoder.encode(text), kernel, [])).toEqual(want);
      }
    });
  }
});

describe("a sandbox prefix that starts with a space", () => {
  // The search resumes at the space that ended the previous match, where such a prefix may start.
  const cases: Array<[string, string[]]> = [
    ["/a/b /cd", ["/a/", " /c"]],
    ["/a/b\t/cd x", ["/a/", "\t/c"]],
    // five prefixes: the scalar SANDBOX pass runs inside the SIMD kernel too
    ["/a/b /cd", ["/a/", " /c", "/p", "/q", "/r"]],
  ];
  it.each(cases)("%j with %j", (text, sandboxPrefixes) => {
    const want = regexpScanText(text, sandboxPrefixes).map((r) => r.ref);
    expect(want).toHaveLength(2);
    expect(scanText(text, { sandboxPrefixes }).map((r) => r.ref)).toEqual(want);
    for (const kernel of KERNELS) expect(kernelRefs(encoder.encode(text), kernel, sandboxPrefixes)).toEqual(want);
  });
});

describe("a multi-byte space cut off by the input's end is no space, whatever lies past it", () => {
  // Spaces are read at any byte position, so invalid UTF-8 is scanned deterministically:
  // the bytes past the input (slack) must not complete a cut sequence into U+2000, U+1680 or U+3000.
  const cut: Array<[number[], number[]]> = [
    [[0xe2, 0x80], [0x80]],
    [[0xe1, 0x9a], [0x80]],
    [[0xe3, 0x80], [0x80]],
  ];
  for (const kernel of KERNELS) {
    it.each(cut)(`${kernel}: %j then %j in the slack`, (tail, slack) => {
      const head = encoder.encode("/mnt/user-data/ab");
      const bytes = new Uint8Array([...head, ...tail]);
      const refs = kernelRefs(bytes, kernel, undefined, new Uint8Array([...slack, ...slack, 0x20]));
      expect(refs).toEqual([decoder.decode(bytes)]);
    });
  }
});

describe("writeTextInEngine: lone surrogates as TextEncoder writes them", () => {
  const written = (s: string) => {
    const n = writeTextInEngine(s);
    const at = scanInputPointer(n);
    return memoryView().slice(at, at + n);
  };

  it("a low surrogate is never the first half of a pair, U+DC00 included", () => {
    for (const s of ["\udc00\udc00", "x\udc00\udc01y", "\udc00\udfff", "\udbff\udc00\udc00"]) {
      expect(written(s)).toEqual(encoder.encode(s));
    }
  });

  it("a high surrogate at the end pairs with nothing past the text, whatever memory holds there", () => {
    // A first text leaves low surrogates (UTF-16) in engine memory past where the next one's UTF-16 ends.
    for (const n of [934, 950, 999]) {
      const first = "a".repeat(900) + "\udc00".repeat(100);
      expect(written(first)).toEqual(encoder.encode(first));
      const s = "b".repeat(n - 1) + "\ud800";
      expect(written(s)).toEqual(encoder.encode(s));
      expect(scanText(`/mnt/user-data/${s}`).map((r) => r.ref)).toEqual([`/mnt/user-data/${s}`]);
    }
  });
});

describe("repeats where the UTF-8 bytes are equal, at every length", () => {
  // A lone surrogate and U+FFFD are both EF BF BD: only strings tell them apart,
  // also when that character lies in the last 8 bytes of a reference whose length is a multiple of 8.
  it.each([[0], [1], [5], [6], [7], [13], [14]])("/mnt/user-data/ + %i letters + a lone surrogate or U+FFFD", (k) => {
    const body = "/mnt/user-data/" + "x".repeat(k);
    const text = `${body}\uD800 ${body}\uFFFD ${body}\uD800 ${body}\uDBFF`;
    const want = [`${body}\uD800`, `${body}\uFFFD`, `${body}\uDBFF`];
    expect(scanText(text).map((r) => r.ref)).toEqual(want);
    expect(regexpScanText(text).map((r) => r.ref)).toEqual(want);
  });
});
