#!/usr/bin/env node
/**
 * `tool-artifacts scan <file.jsonl | ->`: extract artifact entries from an
 * archive of tool results (JSON lines) and print them as JSON lines or a table.
 *
 * Exit status: 0 all lines scanned, 1 some line failed (each reported on
 * stderr with its number), 2 the input could not be read, the output could
 * not be written, the engine could not load or the command line was wrong,
 * 3 an internal error.
 */
import { once } from "node:events";
import { fstatSync, writeSync } from "node:fs";
import { open } from "node:fs/promises";
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { CONTROL_CHARS, TABLE_HEADER, type OutputFormat } from "./batch/format.js";
import { archivePool, archiveThreads } from "./batch/threads.js";
import { scanArchive, streamSource, type ArchiveProgress, type ArchiveSource, type ArchiveSummary, type ArchiveWriter } from "./batch/stream.js";
import { ENGINE_UNAVAILABLE, sandboxPrefixesProblem } from "./types.js";

const EXIT_FAILED_LINES = 1;
const EXIT_UNREADABLE = 2;
const EXIT_INTERNAL = 3;
const PROGRESS_INTERVAL_MS = 100;

interface ScanFlags {
  threads?: number;
  format: OutputFormat;
  text: boolean;
  stats?: boolean;
  threadId?: string;
  sandboxPrefix?: string[];
}

/** A read or open failure of the input, as opposed to a bad line in it. */
class InputError extends Error {}

/** A write failure of stdout other than a closed pipe (a full disk, say). */
class OutputError extends Error {}

function positiveInteger(value: string): number {
  // Digits only: Number() would also take "1e3", "0x2" and " 2".
  const n = /^[0-9]+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError("must be a positive integer");
  return n;
}

/** An option value that must not be empty: an empty thread id would fail every line it is meant for. */
function nonEmpty(value: string): string {
  if (value === "") throw new InvalidArgumentError("must not be empty");
  return value;
}

/** One more value of a repeatable option, checked as extraction checks prefixes (an empty one would match every word of every text). */
function prefixes(value: string, previous: string[] | undefined): string[] {
  const problem = sandboxPrefixesProblem([value]);
  if (problem !== undefined) throw new InvalidArgumentError(problem);
  return [...(previous ?? []), value];
}

// Format characters (Unicode Cf): invisible in a terminal, or reordering the
// line (the Arabic letter mark, as the bidi overrides do), so a reason quoting
// them would show other than it holds: zero-width spaces, U+FEFF, soft
// hyphens, tag characters that can spell hidden text. And half a character
// (Node's JSON error quotes one code unit), which UTF-8 would write as U+FFFD.
const UNSHOWN = /[\p{Cf}\p{Cs}]/gu;
function escapeChar(c: string): string {
  const code = c.codePointAt(0)!;
  if (code > 0xffff) return `\\u{${code.toString(16)}}`;
  return code > 0xff ? `\\u${code.toString(16).padStart(4, "0")}` : `\\x${code.toString(16).padStart(2, "0")}`;
}

/**
 * Untrusted text (a bad line's reason quotes the line) made safe for a
 * terminal: control characters (and invisible ones) shown as escapes, so none can move the
 * cursor, retitle the window or hide the line number before it.
 */
const printable = (text: string) =>
  text.replace(CONTROL_CHARS, escapeChar).replace(UNSHOWN, escapeChar);

const mb = (bytes: number) => (bytes / 1e6).toFixed(1);
const rate = (bytes: number, ms: number) => (ms > 0 ? (bytes / 1e6 / (ms / 1000)).toFixed(1) : "-");

/** Progress on one stderr line, redrawn in place at most every PROGRESS_INTERVAL_MS. */
function progressLine(totalBytes: number | undefined) {
  let last = 0;
  let shown = false;
  return {
    update(p: ArchiveProgress) {
      const now = performance.now();
      if (now - last < PROGRESS_INTERVAL_MS) return;
      last = now;
      shown = true;
      let bar = "";
      if (totalBytes) {
        const done = Math.min(1, p.bytesRead / totalBytes);
        const filled = Math.round(done * 20);
        bar = `[${"#".repeat(filled)}${"-".repeat(20 - filled)}] ${(done * 100).toFixed(0).padStart(3)}% `;
      }
      process.stderr.write(`\r\x1b[2K${bar}${mb(p.bytesRead)} MB read, ${p.entries} entries, ${rate(p.bytesRead, p.elapsedMs)} MB/s`);
    },
    clear() {
      if (shown) process.stderr.write("\r\x1b[2K");
      shown = false;
    },
  };
}

/** Writes to stdout honouring backpressure; a closed pipe (`| head`) ends the scan. */
function stdoutWriter(): ArchiveWriter {
  const failure = (err: NodeJS.ErrnoException) => (err.code === "EPIPE" ? err : new OutputError(err.message, { cause: err }));
  if (writesDirectly()) {
    return (bytes, done) => {
      try {
        // Node's stream for a file writes once and takes a short write (a
        // disk that filled, a file-size limit) for all of it: the rest would
        // be lost with exit status 0. Writing again gives the error.
        for (let at = 0; at < bytes.byteLength; ) {
          const n = writeSync(1, bytes, at);
          // A device that takes nothing without an error would spin here for good.
          if (n === 0) throw new Error("the output took no bytes");
          at += n;
        }
      } catch (err) {
        throw failure(err as NodeJS.ErrnoException);
      }
      done();
    };
  }
  let broken: Error | undefined;
  process.stdout.on("error", (err: NodeJS.ErrnoException) => (broken = failure(err)));
  return async (bytes, done) => {
    if (broken) throw broken;
    try {
      if (!process.stdout.write(bytes, () => done())) await once(process.stdout, "drain");
    } catch (err) {
      // The error that ended the wait for "drain".
      throw failure(err as NodeJS.ErrnoException);
    }
  };
}

/** Whether stdout is a file or a device other than a terminal, which Node writes synchronously anyway. */
function writesDirectly(): boolean {
  if (process.stdout.isTTY) return false;
  try {
    const stat = fstatSync(1);
    return stat.isFile() || stat.isCharacterDevice();
  } catch {
    return false;
  }
}

interface Input {
  name: string;
  source: ArchiveSource;
  size?: number;
  close(): Promise<void>;
}

/** Tell a read failure apart from a scanning failure. */
function readErrors(source: ArchiveSource): ArchiveSource {
  return {
    ready: source.ready?.bind(source),
    read: (into) =>
      source.read(into).catch((err: unknown) => {
        throw new InputError((err as Error).message);
      }),
  };
}

async function openInput(file: string): Promise<Input> {
  if (file === "-") {
    const stat = fstatSync(0);
    // Node reads a directory on stdin as empty input: say what it is instead.
    if (stat.isDirectory()) throw new InputError("EISDIR: stdin is a directory");
    // A file redirected to stdin (`scan - < file`) has a size, as the file named would: the progress bar and the default threads use it.
    const size = stat.isFile() ? stat.size : undefined;
    // Once the scan has ended (a closed stdout, say), stop reading: a live
    // stdin (`tail -f log | tool-artifacts scan - | head`) would otherwise
    // keep the process alive for as long as it stays open.
    return { name: "<stdin>", source: readErrors(streamSource(process.stdin)), size, close: async () => void process.stdin.destroy() };
  }
  let handle;
  try {
    handle = await open(file, "r");
    const stat = await handle.stat();
    if (stat.isDirectory()) throw new Error(`EISDIR: is a directory, open '${file}'`);
    const fh = handle;
    // A pipe by name (`scan /dev/stdin`, `scan <(tail -f log)`, a FIFO) may
    // pause: read as stdin is, so its entries come as its lines do; it has no size.
    if (!stat.isFile()) {
      const source = streamSource(fh.createReadStream({ autoClose: false }));
      return { name: file, source: readErrors(source), close: () => fh.close() };
    }
    // Read straight into the scanner's buffers: no stream, no intermediate copies.
    const source = { read: async (into: Uint8Array) => (await fh.read(into, 0, into.byteLength, null)).bytesRead };
    return { name: file, source: readErrors(source), size: stat.size, close: () => fh.close() };
  } catch (err) {
    await handle?.close();
    throw new InputError((err as Error).message);
  }
}

/** `poolLost`: a worker could not start, so this thread scanned the rest (the rate is then one thread's). */
function printStats(s: ArchiveSummary, threads: number, { stoppedEarly = false, poolLost = false } = {}): void {
  // A short archive starts no worker: say how much the workers took.
  const shared = threads > 1 ? `, ${s.workerChunks} of ${s.chunks} chunks on workers${poolLost ? "; a worker could not start" : ""}` : "";
  process.stderr.write(
    (stoppedEarly ? "stopped early: the output was closed; counts are of the chunks written whole before that; bad lines: every one reported\n" : "") +
      `lines ${s.lines}, entries ${s.entries}, bad lines ${s.failed}, other messages ${s.skipped}, rejected payloads ${s.rejected}\n` +
      `${mb(s.bytesRead)} MB in ${(s.elapsedMs / 1000).toFixed(2)} s: ${rate(s.bytesRead, s.elapsedMs)} MB/s (${threads} thread${threads === 1 ? "" : "s"}${shared})\n`,
  );
}

const EMPTY_SUMMARY: ArchiveSummary = { bytesRead: 0, entries: 0, lines: 0, elapsedMs: 0, failed: 0, rejected: 0, skipped: 0, chunks: 0, workerChunks: 0 };

/**
 * A signal that ends the process (Ctrl-C, `timeout`) first takes the
 * progress line away, so the shell prompt does not land after a half-drawn
 * bar; then the signal is raised again with no handler, so the process ends
 * by it as it would have. The handlers are never taken off: a signal that
 * came while this thread was busy (scanning the last chunk) is handled only
 * when the event loop next polls, after the scan has returned, and would be
 * lost with them (the scan then ended with status 0). They keep no process
 * alive (Node's signal handles do not hold the event loop).
 */
function clearOnSignal(progress: { clear(): void }): void {
  const signals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
  const handler = (signal: NodeJS.Signals) => {
    for (const other of signals) process.off(other, handler);
    progress.clear();
    process.kill(process.pid, signal);
  };
  for (const signal of signals) process.once(signal, handler);
}

async function scanCommand(file: string, flags: ScanFlags): Promise<number> {
  let source;
  try {
    source = await openInput(file);
  } catch (err) {
    process.stderr.write(`tool-artifacts: cannot read ${file}: ${(err as Error).message}\n`);
    return EXIT_UNREADABLE;
  }
  // Not when stdout is the same terminal: the progress line would be
  // redrawn into the entries printed there.
  const progress = process.stderr.isTTY && !process.stdout.isTTY ? progressLine(source.size) : undefined;
  const threads = scanThreads(flags.threads, source.size);
  const pool = archivePool(threads);
  const write = stdoutWriter();
  // Failed lines, counted here too: a scan that ends early (`| head`) returns no summary.
  let failed = 0;
  // The counts so far, for --stats when the scan ends early.
  let latest: ArchiveSummary = EMPTY_SUMMARY;
  let poolLost = false;
  if (progress) clearOnSignal(progress);
  try {
    if (flags.format === "table") await write(Buffer.from(TABLE_HEADER), () => {});
    const summary = await scanArchive(source.source, write, {
      pool,
      alsoScanHere: true,
      sizeHint: source.size,
      format: flags.format,
      detectRefsInText: flags.text,
      sandboxPrefixes: flags.sandboxPrefix,
      defaultThreadId: flags.threadId,
      onFailure: (f, lines) => {
        failed += lines;
        progress?.clear();
        process.stderr.write(`${source.name}:${f.line}: ${printable(f.reason)}\n`);
      },
      onProgress: (p) => {
        latest = { ...p };
        progress?.update(p);
      },
      onPoolUnavailable: (err) => {
        poolLost = true;
        progress?.clear();
        process.stderr.write(`tool-artifacts: ${err.message}; scanning on this thread alone\n`);
      },
    });
    progress?.clear();
    if (flags.stats) printStats(summary, threads, { poolLost });
    return summary.failed > 0 ? EXIT_FAILED_LINES : 0;
  } catch (err) {
    progress?.clear();
    if ((err as NodeJS.ErrnoException).code === "EPIPE") {
      // A chunk's bad lines are reported before its entries are written: a
      // chunk cut off by the close has reported its own, which count too
      // (`failed` counts lines, as the summary does).
      if (flags.stats) printStats({ ...latest, failed }, threads, { stoppedEarly: true, poolLost });
      return failed > 0 ? EXIT_FAILED_LINES : 0;
    }
    if (err instanceof InputError) {
      process.stderr.write(`tool-artifacts: cannot read ${file}: ${err.message}\n`);
      return EXIT_UNREADABLE;
    }
    if (err instanceof OutputError) {
      process.stderr.write(`tool-artifacts: cannot write the output: ${err.message}\n`);
      return EXIT_UNREADABLE;
    }
    throw err;
  } finally {
    await Promise.all([pool?.close(), source.close()]);
  }
}

/**
 * The threads to scan with: as asked, but no more than the cores. Each
 * thread beyond them adds a worker's memory (and chunks in flight) and no
 * speed, so `--threads 1000` would only have held hundreds of MB.
 */
function scanThreads(asked: number | undefined, inputBytes: number | undefined): number {
  if (asked === undefined) return archiveThreads(inputBytes);
  const cores = availableParallelism();
  if (asked <= cores) return asked;
  process.stderr.write(`tool-artifacts: --threads ${asked} is more than the ${cores} core${cores === 1 ? "" : "s"}; scanning with ${cores}\n`);
  return cores;
}

function cli(): Command {
  const { version } = createRequire(import.meta.url)("../package.json") as { version: string };
  const program = new Command("tool-artifacts")
    .description("Durable handles for the files, URLs and task ids agent tools produce.")
    .version(version)
    .exitOverride();
  program
    .command("scan")
    .description("Extract artifact entries from JSON lines of tool results ({thread_id, message}, a tool message with thread_id, or a LangChain serialized or stored ToolMessage).")
    .argument("<file>", 'JSON lines archive, or "-" for stdin')
    .option("--threads <n>", "scanning threads, this one included (1 = this thread only; at most the core count; default: the core count, or 1 for a file under 256 MiB on a machine with fewer than 3 cores)", positiveInteger)
    .addOption(new Option("--format <format>", "output format").choices(["jsonl", "table"]).default("jsonl"))
    .option("--no-text", "do not scan free text for paths and URLs")
    .option("--stats", "print counts, MB/s, rejected payloads and the chunks workers scanned on stderr")
    .option("--thread-id <id>", "thread id for lines that carry none", nonEmpty)
    .option("--sandbox-prefix <prefix...>", "sandbox path prefixes for free-text scanning (default /mnt/user-data/; give the file first, or end the list with --)", prefixes)
    .action(async (file: string, flags: ScanFlags) => {
      process.exitCode = await scanCommand(file, flags);
    });
  return program;
}

// A closed stderr (a pipe its reader left, `2>&1 | head`) must not stop the
// scan: the entries go to stdout, and an unhandled EPIPE would end the
// process with exit status 1, which says that some line failed.
process.stderr.on("error", () => {});

try {
  await cli().parseAsync();
} catch (err) {
  // Commander has already printed its message (usage errors, --help, --version).
  if (err instanceof CommanderError) {
    // `scan --sandbox-prefix /a/ file.jsonl`: the prefix list took the file too.
    if (err.code === "commander.missingArgument" && process.argv.includes("--sandbox-prefix")) {
      process.stderr.write("tool-artifacts: --sandbox-prefix takes every value after it, so the file was read as a prefix: give the file first, or end the prefixes with --\n");
    }
    process.exitCode = err.exitCode === 0 ? 0 : EXIT_UNREADABLE;
  }
  // The engine cannot load in this process: the environment's problem, said plainly.
  else if ((err as NodeJS.ErrnoException).code === ENGINE_UNAVAILABLE) {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exitCode = EXIT_UNREADABLE;
  } else {
    process.stderr.write(`tool-artifacts: internal error: ${(err as Error).stack ?? err}\n`);
    process.exitCode = EXIT_INTERNAL;
  }
}
