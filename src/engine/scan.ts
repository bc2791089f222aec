/**
 * Free-text scanning (DESIGN §3): sandbox paths and http(s) file URLs in
 * plain-string tool results, found by the engine in linear time over UTF-8.
 *
 * Arena layout per call, from the arena base:
 *   input bytes | SLACK | prefix table (u32 ptr, u32 len)* | prefix bytes | output pairs | repeat table
 * The input always starts at the base, so low-level callers can write bytes
 * first and scan them afterwards.
 */
import { describeValue, displayName, isRecord, prefixesSnapshot, sandboxPrefixesProblem, unknownOptionProblem, type ScanRef } from "../types.js";
import { engine, memoryView, onRebuild, releaseMemoryFor, reserve, runEngine, type EngineExports } from "./wasm.js";

interface ScanExports extends EngineExports {
  scan_max_pairs(len: number, table: number, count: number): number;
  scan_text(text: number, len: number, table: number, count: number, out: number): number;
  scan_text_scalar(text: number, len: number, table: number, count: number, out: number): number;
  scan_dedup(text: number, pairs: number, count: number, table: number): number;
  scan_utf16_to_utf8(src: number, units: number, dst: number): number;
  scan_utf16_offsets(text: number, len: number, offsets: number, count: number): void;
  scan_count_byte(ptr: number, len: number, byte: number): number;
}

/** The options of `scanText`; unknown keys are refused. */
export interface ScanOptions {
  /** Path prefixes of the SANDBOX rule, tried in order. Default ["/mnt/user-data/"]; [] turns the rule off. */
  sandboxPrefixes?: readonly string[] | undefined;
}

/** Which engine kernel to run: the SIMD one, or the scalar reference it is tested against. */
export type ScanKernel = "simd" | "scalar";

export const DEFAULT_SANDBOX_PREFIXES: readonly string[] = Object.freeze(["/mnt/user-data/"]);

const OP = "scanText";
// Readable room after the input: the kernels' SIMD steps run up to 64 bytes
// past the end (and word reads a few more) and mask what they read.
const SLACK = 80;
const encoder = new TextEncoder();

/** Prefixes as the engine wants them: UTF-8 bytes, and their total size. */
interface EncodedPrefixes {
  readonly source: readonly string[];
  readonly bytes: readonly Uint8Array[];
  readonly size: number;
}

const align16 = (n: number) => (n + 15) & ~15;

function encodeList(source: readonly string[]): EncodedPrefixes {
  const bytes = source.map((p) => encoder.encode(p));
  return { source: [...source], bytes, size: bytes.reduce((sum, b) => sum + b.length, 0) };
}

const DEFAULT_ENCODED = encodeList(DEFAULT_SANDBOX_PREFIXES);
// The last custom list: callers pass the same configured list on every call.
let lastEncoded = DEFAULT_ENCODED;

function encodePrefixes(options: ScanOptions | undefined): EncodedPrefixes {
  const given = options?.sandboxPrefixes;
  if (given === undefined || given === DEFAULT_SANDBOX_PREFIXES) return DEFAULT_ENCODED;
  // Read once, first: the host's getter may also scan with other prefixes
  // (replacing lastEncoded mid-compare).
  const prefixes = prefixesSnapshot(given);
  if (Array.isArray(prefixes) && sameList(prefixes, lastEncoded.source)) return lastEncoded;
  const problem = sandboxPrefixesProblem(prefixes);
  if (problem !== undefined) throw new TypeError(`scanText: ${problem}`);
  lastEncoded = encodeList(prefixes as readonly string[]);
  return lastEncoded;
}

function sameList(a: readonly unknown[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

// A u32 view of engine memory, rebuilt when memory grows (or the instance is rebuilt).
let words = new Uint32Array(0);
function wordView(): Uint32Array {
  const buffer = engine().memory.buffer;
  if (words.buffer !== buffer) words = new Uint32Array(buffer);
  return words;
}

/** Where the prefix table goes after `byteLength` input bytes at base (16-aligned). */
const tableAt = (base: number, byteLength: number) => align16(base + byteLength + SLACK);
/** The bytes of the prefix table: (pointer, length) per prefix, then their bytes. */
const tableBytes = (prefixes: EncodedPrefixes) => 8 * prefixes.bytes.length + prefixes.size;

/** Where the output pairs go after that table (16-aligned). */
const outAt = (table: number, prefixes: EncodedPrefixes) => align16(table + tableBytes(prefixes));

/** The prefix table at `table` (4-aligned, reserved): (pointer, length) per prefix, then their bytes. */
function putPrefixTable(table: number, prefixes: EncodedPrefixes): void {
  const view = memoryView();
  const w = wordView();
  const count = prefixes.bytes.length;
  let at = table + 8 * count;
  for (let k = 0; k < count; k++) {
    const p = prefixes.bytes[k];
    w[(table >> 2) + 2 * k] = at;
    w[(table >> 2) + 2 * k + 1] = p.length;
    view.set(p, at);
    at += p.length;
  }
}

/**
 * LOW-LEVEL (engine facades that scan inside their own kernels): the prefix
 * table for `options` (checked as scanText checks them) at `table`, in
 * reserved memory; returns the prefix count.
 */
export function writePrefixTable(table: number, options: ScanOptions | undefined): number {
  const prefixes = encodePrefixes(options);
  putPrefixTable(table, prefixes);
  return prefixes.bytes.length;
}

/** LOW-LEVEL: the bytes writePrefixTable needs for `options`; throws a TypeError for bad prefixes, as scanText does. */
export function prefixTableBytes(options: ScanOptions | undefined): number {
  return tableBytes(encodePrefixes(options));
}

/**
 * Scan `byteLength` bytes at the arena base, inside runEngine: lays out the
 * prefixes and room for the output, runs the kernel, returns the pair count
 * (the pairs are at outAt()).
 */
function scanArena(x: ScanExports, base: number, byteLength: number, prefixes: EncodedPrefixes, kernel: ScanKernel): number {
  const table = tableAt(base, byteLength);
  const out = outAt(table, prefixes);
  const count = prefixes.bytes.length;
  reserve(out - base, OP);
  putPrefixTable(table, prefixes);
  reserve(out - base + 8 * x.scan_max_pairs(byteLength, table, count), OP);
  return kernel === "simd" ? x.scan_text(base, byteLength, table, count, out) : x.scan_text_scalar(base, byteLength, table, count, out);
}

// Up to this many UTF-16 units, a text goes to the engine as UTF-16 (3 bytes
// of arena per unit); beyond, TextEncoder writes it (ASCII: 1 byte per unit).
const UTF16_MAX_UNITS = 2 ** 24;

// A Buffer over engine memory (Buffer.write copies a string's UTF-16 out at memory speed).
let bytes = Buffer.alloc(0);
function byteView(): Buffer {
  const buffer = engine().memory.buffer;
  if (bytes.buffer !== buffer) bytes = Buffer.from(buffer);
  return bytes;
}

onRebuild(() => {
  words = new Uint32Array(0);
  bytes = Buffer.alloc(0);
});

/**
 * Write `text` as UTF-8 at the arena base; returns the byte length. Inside
 * runEngine. Small and medium texts are copied out as UTF-16 and transcoded
 * by the engine (several times faster than TextEncoder on mostly-ASCII
 * text, byte-identical output); very long ones are encoded by TextEncoder,
 * ASCII first, so an ASCII text needs no more arena than its length.
 */
function encodeText(x: ScanExports, text: string, base: number): number {
  const length = text.length;
  if (length <= UTF16_MAX_UNITS) {
    // UTF-16 right after room for its UTF-8: the in-place transcode never overtakes it
    reserve(3 * length + SLACK, OP);
    byteView().write(text, base + length, 2 * length, "utf16le");
    return x.scan_utf16_to_utf8(base + length, length, base);
  }
  reserve(length + SLACK, OP);
  let { read, written } = encoder.encodeInto(text, memoryView().subarray(base, base + length));
  if (read < length) {
    const rest = length - read;
    reserve(written + 3 * rest + SLACK, OP);
    written += encoder.encodeInto(text.slice(read), memoryView().subarray(base + written, base + written + 3 * rest)).written;
  }
  return written;
}

/**
 * Find the file references in free text (DESIGN §3): every SANDBOX match
 * (`<prefix>\S+`, default prefix "/mnt/user-data/"), then every http(s) URL
 * ending in a known file extension, trailing `.,;:)]}"'` and backtick stripped,
 * each reference once, in that order. `\s` is Python's `str.isspace()` set.
 * Linear time in the text, whatever it holds.
 *
 * Non-strings and "" give []. Refs are exact slices of `text` (non-ASCII and
 * astral characters included). Lone surrogates: the engine scans the UTF-8
 * TextEncoder would write, each lone surrogate as U+FFFD, which, like the
 * lone surrogate, is not a space and not a URL stop, so matches are the same;
 * since refs are sliced from `text`, not decoded, they keep the lone
 * surrogate rather than U+FFFD (and repeats are then told apart as strings,
 * not bytes). A sandbox prefix with a lone surrogate is rejected (TypeError):
 * the engine could not tell it from U+FFFD.
 *
 * Throws an Error naming the operation and input size if the engine traps or
 * cannot grow its memory; the next call works.
 */
export function scanText(text: unknown, options?: ScanOptions): ScanRef[] {
  // A prefix passed bare (`scanText(text, "/tmp/")`), or a misspelt option
  // (`sandboxPrefix`), would leave the default prefix on unsaid.
  if (options != null && !isRecord(options)) {
    throw new TypeError(`scanText: options must be an object {sandboxPrefixes?} (got ${Array.isArray(options) ? "an array" : describeValue(options)})`);
  }
  const unknown = options == null ? undefined : unknownOptionProblem(options, ["sandboxPrefixes"]);
  if (unknown !== undefined) throw new TypeError(`scanText: ${unknown}`);
  // Checked whether or not there is text, as extraction checks its options.
  const prefixes = encodePrefixes(options ?? undefined);
  if (typeof text !== "string" || text === "") return [];
  releaseMemoryFor(3 * text.length);
  return scanEncoded(text, prefixes);
}

/**
 * scanText within an operation that has released memory at its start
 * (extraction): releasing again between its texts would throw away, after a
 * small text, the memory the next huge one grows again.
 */
export function scanTextWithin(text: string, options?: ScanOptions): ScanRef[] {
  return text === "" ? [] : scanEncoded(text, encodePrefixes(options));
}

// V8 makes a slice of a string a view of it, so an entry holding a slice of
// a tool result keeps the whole result alive as long as the entry lives (the
// test "keeps no tool result alive" holds 60 MiB for 40 results of 1 MiB
// without copies). Past this length, references are copied out; below it, a
// view holds little.
const OWN_COPY_ABOVE = 1024;
const sliceOf = (text: string, start: number, end: number) => text.slice(start, end);
/**
 * A copy, every code unit kept (lone surrogates too): V8 slices a joined
 * string by first writing it out whole, so the result views that new short
 * string, not `text`, and costs far less than a round trip through a
 * Buffer (commit 3cf63cb). The test "keeps no tool result alive" checks
 * that it copies.
 */
const ownCopy = (text: string, start: number, end: number) => ` ${text.slice(start, end)}`.slice(1);

function scanEncoded(text: string, prefixes: EncodedPrefixes): ScanRef[] {
  const base = scanInputPointer(0);
  let out = 0;
  // One engine visit: encode, scan, drop repeats (by bytes), map the kept offsets to UTF-16.
  const result = runEngine(OP, text.length, (e) => {
    const x = e as ScanExports;
    const written = encodeText(x, text, base);
    out = outAt(tableAt(base, written), prefixes);
    const pairs = scanArena(x, base, written, prefixes, "simd");
    if (pairs === 0) return 0;
    const repeats = align16(out + 8 * pairs);
    reserve(repeats - base + Math.max(32 * pairs, 64), OP);
    const r = x.scan_dedup(base, out, pairs, repeats);
    // As many bytes as units means all ASCII: byte offsets are string offsets.
    if (written !== text.length) x.scan_utf16_offsets(base, written, out, 2 * (r >>> 1));
    return r;
  });
  const kept = result >>> 1;
  if (kept === 0) return [];
  const w = wordView();
  const refs: ScanRef[] = [];
  const cut = text.length > OWN_COPY_ABOVE ? ownCopy : sliceOf;
  if ((result & 1) === 0) {
    for (let i = out >> 2, end = i + 2 * kept; i < end; i += 2) {
      const ref = cut(text, w[i], w[i + 1]);
      refs.push({ type: "file", ref, display: displayName(ref) });
    }
    return refs;
  }
  // Some ref holds an 0xEF byte, maybe a U+FFFD standing for one of several
  // lone surrogates, or outran the engine's probes (crafted collisions): compare strings.
  const seen = new Set<string>();
  for (let i = out >> 2, end = i + 2 * kept; i < end; i += 2) {
    const ref = cut(text, w[i], w[i + 1]);
    if (seen.has(ref)) continue;
    seen.add(ref);
    refs.push({ type: "file", ref, display: displayName(ref) });
  }
  return refs;
}

/**
 * LOW-LEVEL (benchmarks, batch code): make room for `byteLength` input bytes
 * and return the engine-memory offset to write them at, through memoryView().
 * Then call scanBytes / scanInEngine / countByteInEngine with the same
 * length. Any other engine call in between may overwrite them.
 */
export function scanInputPointer(byteLength: number): number {
  return reserve(byteLength + SLACK, OP);
}

/**
 * LOW-LEVEL: write `text` as UTF-8 at scanInputPointer(), as scanText does
 * (byte-identical to TextEncoder); returns the byte length to scan.
 */
export function writeTextInEngine(text: string): number {
  const base = scanInputPointer(0);
  return runEngine(OP, text.length, (e) => encodeText(e as ScanExports, text, base));
}

/**
 * LOW-LEVEL: scan `byteLength` UTF-8 bytes already written at
 * scanInputPointer() and leave the pairs in engine memory; returns how many
 * (the kernel alone, as the benchmark times it). `kernel` picks the SIMD
 * kernel or its scalar reference.
 */
export function scanInEngine(byteLength: number, options?: ScanOptions, kernel: ScanKernel = "simd"): number {
  const base = scanInputPointer(byteLength);
  const prefixes = encodePrefixes(options);
  return runEngine(OP, byteLength, (e) => scanArena(e as ScanExports, base, byteLength, prefixes, kernel));
}

/**
 * LOW-LEVEL: scanInEngine, then a copy of the byte-offset pairs
 * [start, end, ...], in scanText's order but before repeats are dropped.
 */
export function scanBytes(byteLength: number, options?: ScanOptions, kernel: ScanKernel = "simd"): Uint32Array {
  const pairs = scanInEngine(byteLength, options, kernel);
  const out = outAt(tableAt(scanInputPointer(0), byteLength), encodePrefixes(options));
  return wordView().slice(out >> 2, (out >> 2) + 2 * pairs);
}

/**
 * LOW-LEVEL: count `byte` in the `byteLength` bytes at scanInputPointer() with
 * the engine's simplest SIMD pass: the memory-speed limit a scan is measured
 * against.
 */
export function countByteInEngine(byteLength: number, byte: number): number {
  const base = scanInputPointer(byteLength);
  return runEngine("countByte", byteLength, (e) => (e as ScanExports).scan_count_byte(base, byteLength, byte & 0xff));
}
