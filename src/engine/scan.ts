/**
 * Free-text scanning (DESIGN §3): sandbox paths and http(s) file URLs in
 * plain-string tool results, found by the engine in linear time over UTF-8.
 *
 * Arena layout per call, from the arena base:
 *   input bytes | 48+ bytes slack | prefix table (u32 ptr, u32 len)* | prefix bytes | output pairs
 * The input always starts at the base, so low-level callers can write bytes
 * first and scan them afterwards.
 */
import { displayName, type ScanRef } from "../types.js";
import { engine, memoryView, reserve, runEngine, type EngineExports } from "./wasm.js";

interface ScanExports extends EngineExports {
  scan_max_pairs(len: number, table: number, count: number): number;
  scan_text(text: number, len: number, table: number, count: number, out: number): number;
  scan_text_scalar(text: number, len: number, table: number, count: number, out: number): number;
  scan_utf16_offsets(text: number, len: number, offsets: number, count: number): void;
  scan_count_byte(ptr: number, len: number, byte: number): number;
}

export interface ScanOptions {
  /** Path prefixes of the SANDBOX rule, tried in order. Default ["/mnt/user-data/"]; [] turns the rule off. */
  sandboxPrefixes?: readonly string[];
}

/** Which engine kernel to run: the SIMD one, or the scalar reference it is tested against. */
export type ScanKernel = "simd" | "scalar";

export const DEFAULT_SANDBOX_PREFIXES: readonly string[] = Object.freeze(["/mnt/user-data/"]);

const OP = "scanText";
// Readable room after the input: the kernels' last SIMD steps (and 4-byte
// extension reads) run up to 34 bytes past the end and mask what they read.
const SLACK = 48;
const encoder = new TextEncoder();
const DEFAULT_ENCODED: readonly Uint8Array[] = DEFAULT_SANDBOX_PREFIXES.map((p) => encoder.encode(p));
const LONE_SURROGATE = /\p{Surrogate}/u;

const align16 = (n: number) => (n + 15) & ~15;

function scanExports(): ScanExports {
  return engine() as ScanExports;
}

function encodePrefixes(options: ScanOptions | undefined): readonly Uint8Array[] {
  const prefixes = options?.sandboxPrefixes;
  if (prefixes === undefined || prefixes === DEFAULT_SANDBOX_PREFIXES) return DEFAULT_ENCODED;
  if (!Array.isArray(prefixes)) throw new TypeError("scanText: sandboxPrefixes must be an array of strings");
  return prefixes.map((p: unknown) => {
    if (typeof p !== "string") throw new TypeError("scanText: sandboxPrefixes must be an array of strings");
    // The engine sees U+FFFD for it, which would also match real U+FFFD in text.
    if (LONE_SURROGATE.test(p)) throw new TypeError(`scanText: sandbox prefix ${JSON.stringify(p)} has a lone surrogate`);
    return encoder.encode(p);
  });
}

function putU32(view: Uint8Array, at: number, value: number): void {
  view[at] = value & 0xff;
  view[at + 1] = (value >>> 8) & 0xff;
  view[at + 2] = (value >>> 16) & 0xff;
  view[at + 3] = value >>> 24;
}

/**
 * Scan `byteLength` bytes at the arena base: lays out the prefixes and the
 * output after them, runs the kernel, returns where the pairs are and how many.
 */
function scanArena(
  base: number,
  byteLength: number,
  prefixes: readonly Uint8Array[],
  kernel: ScanKernel,
): { out: number; pairs: number } {
  const table = align16(base + byteLength + SLACK);
  let at = table + 8 * prefixes.length;
  const prefixBytes = prefixes.reduce((sum, p) => sum + p.length, 0);
  const out = align16(at + prefixBytes);
  reserve(out - base, OP);
  const view = memoryView();
  prefixes.forEach((p, k) => {
    putU32(view, table + 8 * k, at);
    putU32(view, table + 8 * k + 4, p.length);
    view.set(p, at);
    at += p.length;
  });
  return runEngine(OP, byteLength, (e) => {
    const x = e as ScanExports;
    reserve(out - base + 8 * x.scan_max_pairs(byteLength, table, prefixes.length), OP);
    const run = kernel === "simd" ? x.scan_text : x.scan_text_scalar;
    return { out, pairs: run(base, byteLength, table, prefixes.length, out) };
  });
}

/**
 * Find the file references in free text (DESIGN §3): every SANDBOX match
 * (`<prefix>\S+`, default prefix "/mnt/user-data/"), then every http(s) URL
 * ending in a known file extension, trailing `.,;:)]}"'` and backtick stripped,
 * each reference once, in that order. `\s` is Python's `str.isspace()` set.
 * Linear time in the text, whatever it holds.
 *
 * Non-strings and "" give []. Refs are exact slices of `text` (non-ASCII and
 * astral characters included). Lone surrogates: TextEncoder.encodeInto writes
 * each as U+FFFD, which, like the lone surrogate, is not a space and not a
 * URL stop, so matches are the same; since refs are sliced from `text`, not
 * decoded, they keep the lone surrogate rather than U+FFFD. A sandbox prefix
 * with a lone surrogate is rejected (TypeError): the engine could not tell it
 * from U+FFFD.
 *
 * Throws an Error naming the operation and input size if the engine traps or
 * cannot grow its memory; the next call works.
 */
export function scanText(text: unknown, options?: ScanOptions): ScanRef[] {
  if (typeof text !== "string" || text === "") return [];
  const prefixes = encodePrefixes(options);
  const length = text.length;
  // ASCII first: one byte per unit; only the rest of a non-ASCII text needs 3x.
  const base = reserve(length + SLACK, OP);
  let { read, written } = encoder.encodeInto(text, memoryView().subarray(base, base + length));
  if (read < length) {
    const rest = length - read;
    reserve(written + 3 * rest + SLACK, OP);
    written += encoder.encodeInto(text.slice(read), memoryView().subarray(base + written, base + written + 3 * rest)).written;
  }
  const { out, pairs } = scanArena(base, written, prefixes, "simd");
  if (pairs === 0) return [];
  // As many bytes as units means all ASCII: byte offsets are string offsets.
  if (written !== length) {
    runEngine(OP, written, (e) => (e as ScanExports).scan_utf16_offsets(base, written, out, 2 * pairs));
  }
  const offsets = new Uint32Array(scanExports().memory.buffer, out, 2 * pairs);
  const refs: ScanRef[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < 2 * pairs; i += 2) {
    const ref = text.slice(offsets[i], offsets[i + 1]);
    if (seen.has(ref)) continue;
    seen.add(ref);
    refs.push({ type: "file", ref, display: displayName(ref) });
  }
  return refs;
}

/**
 * LOW-LEVEL (benchmarks, batch code): make room for `byteLength` input bytes
 * and return the engine-memory offset to write them at, through memoryView().
 * Then call scanBytes / countByteInEngine with the same length. Any other
 * engine call in between may overwrite them.
 */
export function scanInputPointer(byteLength: number): number {
  return reserve(byteLength + SLACK, OP);
}

/**
 * LOW-LEVEL: scan `byteLength` UTF-8 bytes already written at
 * scanInputPointer(). Returns byte-offset pairs [start, end, ...] (a copy), in
 * scanText's order but before de-duplication. `kernel` picks the SIMD kernel
 * or its scalar reference.
 */
export function scanBytes(byteLength: number, options?: ScanOptions, kernel: ScanKernel = "simd"): Uint32Array {
  const base = scanInputPointer(byteLength);
  const { out, pairs } = scanArena(base, byteLength, encodePrefixes(options), kernel);
  return new Uint32Array(scanExports().memory.buffer, out, 2 * pairs).slice();
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
