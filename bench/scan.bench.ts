// Free-text scanning (DESIGN §3): the engine against the plain RegExp version
// of the same rules, on a generated corpus of tool outputs and on hostile input.
// Every result is checked before anything is timed.
//
// The machine is shared: other processes take turns on its cores, which
// stretches wall-clock time but not the CPU time this process is given. So
// every task reports both: the median wall time of its samples, and the
// median process.cpuUsage() time (user + system, all of this process's
// threads) over the same samples. Per-core throughput is bytes / CPU time;
// when wall and CPU agree the machine was quiet. Ratios are given on both.
// Tasks compared with each other run in alternating rounds, so a burst of
// load hits both. GB/s and MB/s are decimal (1e9, 1e6 UTF-8 bytes per second).
// SCAN_CORPUS_MB sets the corpus size (default 32).
import { loadavg } from "node:os";
import { isDeepStrictEqual } from "node:util";
import { Bench } from "tinybench";
import { regexpScanText } from "./baselines/regexp-scan.js";
import { collidingRefs } from "./colliding-refs.js";
import { generateCorpus } from "./corpus.js";
import { countByteInEngine, scanBytes, scanInEngine, scanInputPointer, scanText } from "../src/engine/scan.js";
import { memoryView } from "../src/engine/wasm.js";

const SLASH = 0x2f;
const enc = new TextEncoder();
const dec = new TextDecoder();

interface Timing {
  /** Median wall-clock time of one sample, ms. */
  wall: number;
  /** Median CPU time (user + system) of one sample, ms. */
  cpu: number;
}

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

/** Wall and CPU medians of each task over `rounds` tinybench runs, task order alternating. */
async function medians<K extends string>(tasks: Record<K, () => unknown>, rounds: number, iterations: number): Promise<Record<K, Timing>> {
  const names = Object.keys(tasks) as K[];
  const wall = new Map<string, number[]>(names.map((k) => [k, []]));
  const cpu = new Map<string, number[]>(names.map((k) => [k, []]));
  let started = process.cpuUsage();
  const hooks = (name: string) => ({
    async: false,
    beforeEach: (mode?: string) => {
      if (mode === "run") started = process.cpuUsage();
    },
    afterEach: (mode?: string) => {
      if (mode !== "run") return;
      const used = process.cpuUsage(started);
      cpu.get(name)!.push((used.user + used.system) / 1000);
    },
  });
  for (let r = 0; r < rounds; r++) {
    const bench = new Bench({ time: 0, iterations, warmup: r === 0, warmupIterations: 2, retainSamples: true });
    for (const name of r % 2 === 0 ? names : [...names].reverse()) bench.add(name, tasks[name], hooks(name));
    await bench.run();
    for (const task of bench.tasks) {
      const result = task.result;
      if (!("latency" in result) || !result.latency.samples) throw new Error(`bench task ${task.name}: ${result.state}`);
      wall.get(task.name)!.push(...result.latency.samples);
    }
  }
  return Object.fromEntries(names.map((k) => [k, { wall: median(wall.get(k)!), cpu: median(cpu.get(k)!) }])) as Record<K, Timing>;
}

const fmtMs = (ms: number) => `${ms.toFixed(ms < 10 ? 3 : 1)} ms`;
const both = (t: Timing) => `wall ${fmtMs(t.wall).padStart(10)}  cpu ${fmtMs(t.cpu).padStart(10)}`;
const gbps = (bytes: number, ms: number) => `${(bytes / ms / 1e6).toFixed(2)} GB/s`;
const mbps = (bytes: number, ms: number) => `${(bytes / ms / 1e3).toFixed(0)} MB/s`;
const rates = (bytes: number, t: Timing, unit: typeof gbps) => `${unit(bytes, t.wall)} wall, ${unit(bytes, t.cpu)} cpu`;
const ratio = (slow: Timing, fast: Timing) => `${(slow.wall / fast.wall).toFixed(2)}x wall, ${(slow.cpu / fast.cpu).toFixed(2)}x cpu`;
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
/** Write the corpus bytes where the kernels read them (reserve first: it may grow memory). */
function loadBytes(): void {
  const at = scanInputPointer(bytes.length);
  memoryView().set(bytes, at);
}
let kernelPairs = 0;
{
  loadBytes();
  const pairs = scanBytes(bytes.length);
  kernelPairs = pairs.length / 2;
  const seen = new Set<string>();
  for (let i = 0; i < pairs.length; i += 2) seen.add(dec.decode(bytes.subarray(pairs[i], pairs[i + 1])));
  check(isDeepStrictEqual([...seen], regexpScanText(joined).map((r) => r.ref)), "kernel on the joined corpus");
  check(isDeepStrictEqual(scanBytes(bytes.length, undefined, "scalar"), pairs), "scalar kernel on the joined corpus");
  check(scanInEngine(bytes.length) === kernelPairs, "kernel pair count");
  check(countByteInEngine(bytes.length, SLASH) === bytes.filter((b) => b === SLASH).length, "byte count");
}

console.log(
  `corpus: ${docs.length} documents (${kinds}; ${nonAscii} with non-ASCII), ${(docBytes / 1e6).toFixed(1)} MB UTF-8, ` +
    `${refCount} refs; verified: scanText == regexpScanText on every document, kernel pairs == RegExp on the joined corpus`,
);
console.log(`load average at start: ${load()} (2 cores); times are medians of wall and of CPU time per sample`);

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
console.log(`\nfrom JS strings, one pass over all ${docs.length} documents:`);
console.log(`  scanText          ${both(strings.scanText)}  ${rates(docBytes, strings.scanText, mbps)}`);
console.log(`  regexpScanText    ${both(strings.regexpScanText)}  ${rates(docBytes, strings.regexpScanText, mbps)}`);
console.log(`  scanText speed-up ${ratio(strings.regexpScanText, strings.scanText)} vs RegExp (target >= 3x)`);

// ---- Bytes already in engine memory: kernel vs the byte-count limit -----------
// The kernel leaves its pairs in engine memory (nothing copied out), as a
// caller holding the bytes there would. Nothing else may touch the arena
// between writing the bytes and these tasks.
loadBytes();
const mem = await medians(
  {
    simd: () => scanInEngine(bytes.length),
    scalar: () => scanInEngine(bytes.length, undefined, "scalar"),
    count: () => countByteInEngine(bytes.length, SLASH),
  },
  5,
  4,
);
check(scanInEngine(bytes.length) === kernelPairs, "kernel pair count after timing");
console.log(`\nbytes already in engine memory (${(bytes.length / 1e6).toFixed(1)} MB, ${kernelPairs} pairs):`);
console.log(`  scan kernel (SIMD)    ${both(mem.simd)}  ${rates(bytes.length, mem.simd, gbps)} (target >= 2 GB/s per core)`);
console.log(`  scan kernel (scalar)  ${both(mem.scalar)}  ${rates(bytes.length, mem.scalar, gbps)}`);
console.log(`  byte count (limit)    ${both(mem.count)}  ${rates(bytes.length, mem.count, gbps)}`);
console.log(
  `  SIMD kernel at ${((100 * mem.count.cpu) / mem.simd.cpu).toFixed(0)}% of the byte-count speed (cpu); ` +
    `${ratio(mem.scalar, mem.simd)} the scalar kernel`,
);

// ---- Adversarial: "http://a." repeated ------------------------------------------
const hostile = (n: number) => "http://a.".repeat(Math.floor(n / 9));
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
  check(scanInEngine(b.length) === 0, `kernel on ${b.length} hostile bytes`);
  return (await medians({ k: () => scanInEngine(b.length) }, 1, 20)).k;
};
const k1 = await kernelOn(mi1);
const k4 = await kernelOn(mi4);
// The RegExp is quadratic here: three runs each, and never on MBs.
const hostileRegexp = await medians({ kb64: () => regexpScanText(kb64), kb144: () => regexpScanText(kb144) }, 1, 3);
console.log(`\nadversarial "http://a." repeated:`);
console.log(`  scanText 1 MiB          ${both(hostileEngine.mi1)}  (target <= 10 ms)`);
console.log(`  scanText 4 MiB          ${both(hostileEngine.mi4)}`);
console.log(`  4 MiB / 1 MiB           ${ratio(hostileEngine.mi4, hostileEngine.mi1)} (linear = 4)`);
console.log(`  kernel only, 1 MiB      ${both(k1)}`);
console.log(`  kernel only, 4 MiB      ${both(k4)}  (${ratio(k4, k1)})`);
console.log(`  regexpScanText 64 KiB   ${both(hostileRegexp.kb64)}  (reference; quadratic)`);
console.log(`  regexpScanText 144 KiB  ${both(hostileRegexp.kb144)}  (${ratio(hostileRegexp.kb144, hostileRegexp.kb64)} the 64 KiB time for 2.25x the input)`);

// ---- Adversarial: references crafted to share one hash ---------------------------
// The engine drops repeated references through a hash table; an unkeyed hash
// lets a hostile page make every reference land in one cluster. The 16k text
// is four times the 4k one: linear = 4. Ordinary references of the same
// length (numbered) are the baseline. Each text repeats its first 100
// references, which the filter must still drop.
const crafted = collidingRefs(16_000);
const numbered = Array.from({ length: 16_000 }, (_, i) => `/mnt/user-data/c${String(i).padStart(16, "q")}`);
const textOf = (refs: readonly string[], n: number) => [...refs.slice(0, n), ...refs.slice(0, 100)].join(" ");
const collide = { k4: textOf(crafted, 4000), k16: textOf(crafted, 16_000), plain4: textOf(numbered, 4000), plain16: textOf(numbered, 16_000) };
for (const [name, text] of Object.entries(collide)) check(isDeepStrictEqual(scanText(text), regexpScanText(text)), `scanText == regexpScanText on ${name}`);
const collided = await medians({ k4: () => scanText(collide.k4), k16: () => scanText(collide.k16), plain4: () => scanText(collide.plain4), plain16: () => scanText(collide.plain16) }, 5, 8);
console.log(`\nadversarial: references crafted to share one hash in the repeat filter (32 bytes each):`);
console.log(`  scanText 4k crafted     ${both(collided.k4)}  (${ratio(collided.k4, collided.plain4)} 4k numbered)`);
console.log(`  scanText 16k crafted    ${both(collided.k16)}  (${ratio(collided.k16, collided.plain16)} 16k numbered)`);
console.log(`  16k / 4k crafted        ${ratio(collided.k16, collided.k4)} (linear = 4; numbered: ${ratio(collided.plain16, collided.plain4)})`);
console.log(`\nload average at end: ${load()} (2 cores)`);
