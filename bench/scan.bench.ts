// Free-text scanning (DESIGN §3): the engine against the plain RegExp version
// of the same rules, on a generated corpus of tool outputs and on hostile input.
// Every result is checked before anything is timed. Figures are medians of all
// samples; tasks compared with each other run in alternating rounds, so a
// burst of load on a shared machine hits both. GB/s and MB/s are decimal
// (1e9, 1e6 UTF-8 bytes per second). SCAN_CORPUS_MB sets the corpus size (default 32).
import { loadavg } from "node:os";
import { isDeepStrictEqual } from "node:util";
import { Bench } from "tinybench";
import { regexpScanText } from "./baselines/regexp-scan.js";
import { generateCorpus } from "./corpus.js";
import { countByteInEngine, scanBytes, scanInputPointer, scanText } from "../src/engine/scan.js";
import { memoryView } from "../src/engine/wasm.js";

const SLASH = 0x2f;
const enc = new TextEncoder();
const dec = new TextDecoder();

/** Median latency (ms) of each task over `rounds` tinybench runs, task order alternating. */
async function medians(tasks: Record<string, () => unknown>, rounds: number, iterations: number): Promise<Record<string, number>> {
  const samples: Record<string, number[]> = Object.fromEntries(Object.keys(tasks).map((k) => [k, []]));
  for (let r = 0; r < rounds; r++) {
    const bench = new Bench({ time: 0, iterations, warmup: r === 0, warmupIterations: 2, retainSamples: true });
    const names = Object.keys(tasks);
    for (const name of r % 2 === 0 ? names : names.reverse()) bench.add(name, tasks[name]);
    await bench.run();
    for (const task of bench.tasks) {
      const result = task.result;
      if (!("latency" in result) || !result.latency.samples) throw new Error(`bench task ${task.name}: ${result.state}`);
      samples[task.name].push(...result.latency.samples);
    }
  }
  return Object.fromEntries(
    Object.entries(samples).map(([name, s]) => {
      const sorted = [...s].sort((a, b) => a - b);
      const mid = sorted.length >> 1;
      return [name, sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2];
    }),
  );
}
const fmtMs = (ms: number) => `${ms.toFixed(ms < 10 ? 3 : 1)} ms`.padStart(11);
const rate = (bytes: number, ms: number) => bytes / (ms / 1000);
const gbps = (bytes: number, ms: number) => `${(rate(bytes, ms) / 1e9).toFixed(2)} GB/s`;
const mbps = (bytes: number, ms: number) => `${(rate(bytes, ms) / 1e6).toFixed(0)} MB/s`;
const load = () => loadavg().map((x) => x.toFixed(1)).join(" ");

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`scan bench: results differ before timing: ${what}`);
}

// ---- The corpus, verified ------------------------------------------------------
const mb = Number(process.env.SCAN_CORPUS_MB ?? 32);
const docs = generateCorpus({ chars: mb * 2 ** 20 });
const texts = docs.map((d) => d.text);
const docBytes = texts.reduce((n, t) => n + enc.encode(t).length, 0);
const nonAscii = texts.filter((t) => /[^\x00-\x7f]/.test(t)).length;
const kinds = ["shell", "markdown", "json"].map((k) => `${docs.filter((d) => d.kind === k).length} ${k}`).join(", ");

let refCount = 0;
for (const [i, text] of texts.entries()) {
  const got = scanText(text);
  check(isDeepStrictEqual(got, regexpScanText(text)), `document ${i} (${docs[i].kind})`);
  refCount += got.length;
}

// The whole corpus as one byte buffer, for the kernel on bytes already in memory.
const joined = texts.join("\n");
const bytes = enc.encode(joined);
/** Write the corpus bytes where scanBytes reads them (reserve first: it may grow memory). */
function loadBytes(): void {
  const at = scanInputPointer(bytes.length);
  memoryView().set(bytes, at);
}
{
  loadBytes();
  const pairs = scanBytes(bytes.length);
  const seen = new Set<string>();
  for (let i = 0; i < pairs.length; i += 2) seen.add(dec.decode(bytes.subarray(pairs[i], pairs[i + 1])));
  check(isDeepStrictEqual([...seen], regexpScanText(joined).map((r) => r.ref)), "kernel on the joined corpus");
  check(isDeepStrictEqual(scanBytes(bytes.length, undefined, "scalar"), pairs), "scalar kernel on the joined corpus");
  check(countByteInEngine(bytes.length, SLASH) === bytes.filter((b) => b === SLASH).length, "byte count");
}

console.log(
  `corpus: ${docs.length} documents (${kinds}; ${nonAscii} with non-ASCII), ${(docBytes / 1e6).toFixed(1)} MB UTF-8, ` +
    `${refCount} refs; verified: scanText == regexpScanText on every document, kernel pairs == RegExp on the joined corpus`,
);
console.log(`load average at start: ${load()}`);

// ---- From JS strings: scanText vs the RegExp baseline ----------------------------
const strings = await medians(
  {
    scanText: () => {
      for (const t of texts) scanText(t);
    },
    regexpScanText: () => {
      for (const t of texts) regexpScanText(t);
    },
  },
  5,
  2,
);
console.log(`\nfrom JS strings, one pass over all ${docs.length} documents (median):`);
console.log(`  scanText          ${fmtMs(strings.scanText)}  ${mbps(docBytes, strings.scanText)}`);
console.log(`  regexpScanText    ${fmtMs(strings.regexpScanText)}  ${mbps(docBytes, strings.regexpScanText)}`);
console.log(`  scanText speed-up ${(strings.regexpScanText / strings.scanText).toFixed(2)}x vs RegExp (target >= 3x)`);

// ---- Bytes already in engine memory: kernel vs the byte-count limit -----------
// Nothing else may touch the arena between writing the bytes and these tasks.
loadBytes();
const mem = await medians(
  {
    simd: () => scanBytes(bytes.length),
    scalar: () => scanBytes(bytes.length, undefined, "scalar"),
    count: () => countByteInEngine(bytes.length, SLASH),
  },
  5,
  4,
);
console.log(`\nbytes already in engine memory (${(bytes.length / 1e6).toFixed(1)} MB, median):`);
console.log(`  scan kernel (SIMD)    ${fmtMs(mem.simd)}  ${gbps(bytes.length, mem.simd)} (target >= 2 GB/s)`);
console.log(`  scan kernel (scalar)  ${fmtMs(mem.scalar)}  ${gbps(bytes.length, mem.scalar)}`);
console.log(`  byte count (limit)    ${fmtMs(mem.count)}  ${gbps(bytes.length, mem.count)}`);
console.log(`  SIMD kernel at ${((100 * mem.count) / mem.simd).toFixed(0)}% of the byte-count speed; ${(mem.scalar / mem.simd).toFixed(2)}x the scalar kernel`);

// ---- Adversarial: "http://a." repeated ------------------------------------------
const hostile = (bytes: number) => "http://a.".repeat(Math.floor(bytes / 9));
const mi1 = hostile(2 ** 20);
const mi4 = hostile(2 ** 22);
const kb64 = hostile(64 * 1024);
const kb144 = hostile(144 * 1024);
for (const t of [mi1, mi4]) check(scanText(t).length === 0, `scanText on ${t.length} hostile bytes`);
for (const t of [kb64, kb144]) check(regexpScanText(t).length === 0, `regexpScanText on ${t.length} hostile bytes`);

const hostileEngine = await medians({ mi1: () => scanText(mi1), mi4: () => scanText(mi4) }, 5, 8);
// The kernel alone on the same bytes already in memory (no encoding): the scan's own growth.
const kernelOn = async (text: string) => {
  const b = enc.encode(text);
  const at = scanInputPointer(b.length);
  memoryView().set(b, at);
  check(scanBytes(b.length).length === 0, `kernel on ${b.length} hostile bytes`);
  return (await medians({ k: () => scanBytes(b.length) }, 1, 20)).k;
};
const k1 = await kernelOn(mi1);
const k4 = await kernelOn(mi4);
// The RegExp is quadratic here: three runs each, and never on MBs.
const hostileRegexp = await medians({ kb64: () => regexpScanText(kb64), kb144: () => regexpScanText(kb144) }, 1, 3);
console.log(`\nadversarial "http://a." repeated (median):`);
console.log(`  scanText 1 MiB          ${fmtMs(hostileEngine.mi1)}  (target <= 10 ms)`);
console.log(`  scanText 4 MiB          ${fmtMs(hostileEngine.mi4)}`);
console.log(`  4 MiB / 1 MiB           ${(hostileEngine.mi4 / hostileEngine.mi1).toFixed(2)} (linear = 4)`);
console.log(`  kernel only, 1 MiB      ${fmtMs(k1)}`);
console.log(`  kernel only, 4 MiB      ${fmtMs(k4)}  (${(k4 / k1).toFixed(2)}x)`);
console.log(`  regexpScanText 64 KiB   ${fmtMs(hostileRegexp.kb64)}  (reference; quadratic)`);
console.log(`  regexpScanText 144 KiB  ${fmtMs(hostileRegexp.kb144)}  (${(hostileRegexp.kb144 / hostileRegexp.kb64).toFixed(2)}x the 64 KiB time for 2.25x the input)`);
console.log(`\nload average at end: ${load()} (2 cores)`);
