import { spawn, spawnSync, type SpawnSyncOptions } from "node:child_process";
import { once } from "node:events";
import { closeSync, createWriteStream, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { POOL_MIN_ARCHIVE_BYTES, archivePool, archiveThreads } from "../src/batch/index.js";
import { until } from "./support/pool.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const EXAMPLE = join(ROOT, "examples/archive.jsonl");
const dir = mkdtempSync(join(tmpdir(), "tool-artifacts-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function cli(args: string[], options: SpawnSyncOptions = {}) {
  const r = spawnSync(process.execPath, ["--import", "tsx", join(ROOT, "src/cli.ts"), ...args], { cwd: ROOT, encoding: "utf8", timeout: 60_000, ...options });
  return { status: r.status, stdout: String(r.stdout), stderr: String(r.stderr) };
}

/** The thread counts to run the CLI with: `--threads` is at most the core count (one core scans with one). */
const THREADS = availableParallelism() > 1 ? ["1", "2"] : ["1"];

/** `count` archive lines of one thread, each a result with one sandbox file: 5.5 MiB for 50,000. */
const manyLines = (count: number) =>
  Array.from({ length: count }, (_, i) => `${JSON.stringify({ thread_id: "many", message: { tool_call_id: `call-${i}`, content: `wrote /mnt/user-data/out/report-${i}.txt` } })}\n`).join("");

const rows = (stdout: string) => stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
const withoutTime = (stdout: string) => rows(stdout).map(({ created_at, ...rest }) => rest);

/** What examples/archive.jsonl holds, entry by entry (the AI message and the error result give none). */
const EXAMPLE_ENTRIES = [
  ["support-42", "file", "/mnt/user-data/outputs/q3-report.pdf"],
  ["support-42", "image", "https://cdn.example.com/charts/revenue-2024.png"],
  ["support-42", "file", "/mnt/user-data/exports/customers.csv"],
  ["support-42", "task", "tx-7f3a9c"],
  ["support-42", "data", '{"city":"Lisbon","temp_c":21,"sky":"clear"}'],
  ["research-7", "file", "/mnt/user-data/notes/search.md"],
  ["research-7", "file", "https://arxiv.org/pdf/2401.00001.pdf"],
  ["research-7", "file", "https://example.org/data/results.json"],
  ["research-7", "file", "https://files.example.org/paper-draft.docx"],
  ["research-7", "file", "/mnt/user-data/nb/plot.png"],
  ["research-7", "task", "nb-run-0193"],
];
const FROM_TEXT = new Set(["/mnt/user-data/outputs/q3-report.pdf", "/mnt/user-data/notes/search.md", "https://arxiv.org/pdf/2401.00001.pdf", "https://example.org/data/results.json"]);

describe("tool-artifacts scan", () => {
  it("prints the entries of the sample archive as JSON lines, in order, and exits 0", () => {
    const r = cli(["scan", EXAMPLE]);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    const out = rows(r.stdout);
    expect(out.map((e) => [e.thread_id, e.artifact_type, e.real_ref])).toEqual(EXAMPLE_ENTRIES);
    for (const e of out) {
      expect(e.handle).toMatch(/^art_[0-9a-f]{8}$/);
      expect(Date.parse(e.created_at as string)).not.toBeNaN();
    }
    expect(out[1]).toMatchObject({ tool_name: "fetch_chart", tool_call_id: "call_chart", display_name: "revenue-2024.png", mime_type: "image/png" });
    expect(out[4]).toMatchObject({ display_name: "get_weather structured result" });
  });

  it("gives the same entries, in order, with --threads 1 and --threads 2 on an archive of several chunks", () => {
    // Past four chunks, so that with two threads a worker starts (how many
    // chunks it gets depends on how soon: the entries must not).
    const file = join(dir, "several-chunks.jsonl");
    writeFileSync(file, manyLines(50_000));
    const big = { maxBuffer: 1 << 28 };
    const one = cli(["scan", file, "--threads", "1"], big);
    expect(one.status).toBe(0);
    expect(rows(one.stdout)).toHaveLength(50_000);
    for (const threads of THREADS.slice(1)) {
      const two = cli(["scan", file, "--threads", threads], big);
      expect(two.status).toBe(0);
      expect(withoutTime(two.stdout)).toEqual(withoutTime(one.stdout));
    }
  });

  it.skipIf(!THREADS.includes("2"))("with two threads it starts a pool, and scans alone, saying so, when no worker can start", async () => {
    // Piscina cannot load in this process: the pool's first worker fails to
    // start once a fifth chunk is read. Input stays open until that is said,
    // so the scan cannot end first.
    const child = spawn(process.execPath, ["--import", "tsx", "--import", join(ROOT, "test/support/no-piscina.mjs"), join(ROOT, "src/cli.ts"), "scan", "-", "--threads", "2", "--stats"], { cwd: ROOT });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d));
    const said = new Promise<void>((resolve, reject) => {
      child.stderr.on("data", (d: Buffer) => {
        stderr += d;
        if (/scanning on this thread alone/.test(stderr)) resolve();
      });
      child.once("exit", () => reject(new Error(`exited before saying it scans alone: ${stderr}`)));
    });
    try {
      child.stdin.write(manyLines(50_000));
      await said;
      child.stdin.end();
      const [code] = (await once(child, "exit")) as [number];
      expect(code).toBe(0);
      expect(stderr).toMatch(/^tool-artifacts: scan worker could not start: cannot load Piscina: .*Cannot find package 'piscina'.*; scanning on this thread alone\n/);
      expect(stderr).toMatch(/\(2 threads, 0 of \d+ chunks on workers; a worker could not start\)\n$/);
      expect(rows(stdout)).toHaveLength(50_000);
    } finally {
      if (child.exitCode === null) child.kill();
    }
  });

  it("--format table prints a header and one aligned row per entry", () => {
    const r = cli(["scan", EXAMPLE, "--format", "table"]);
    expect(r.status).toBe(0);
    const [header, ...lines] = r.stdout.trimEnd().split("\n");
    expect(header).toMatch(/^THREAD\s+HANDLE\s+TYPE\s+TOOL\s+NAME\s+REFERENCE$/);
    expect(lines).toHaveLength(EXAMPLE_ENTRIES.length);
    const handles = rows(cli(["scan", EXAMPLE]).stdout).map((e) => e.handle);
    lines.forEach((line, i) => {
      expect(line.indexOf("art_")).toBe(header.indexOf("HANDLE"));
      expect(line).toContain(handles[i] as string);
      expect(line.endsWith(EXAMPLE_ENTRIES[i][2])).toBe(true);
    });
  });

  it("--format table counts columns as a terminal draws them: wide characters two, combining marks none", () => {
    const line = (content: string) => JSON.stringify({ thread_id: "线程", message: { tool_call_id: "c", name: "工具".repeat(5), content } });
    const file = join(dir, "wide.jsonl");
    // Emoji: with a variation selector, a flag, a ZWJ family (one grapheme, two columns each); a bidi override shown as a blank.
    const emoji = "❤\ufe0f🇵🇹👨\u200d👩\u200d👧";
    writeFileSync(file, [line("/mnt/user-data/報告書.pdf"), line(`/mnt/user-data/${"数据".repeat(10)}.csv`), line("/mnt/user-data/😀e\u0301.txt"), line(`/mnt/user-data/${emoji}\u202e.txt`)].join("\n") + "\n");
    const r = cli(["scan", file, "--format", "table"]);
    expect(r.status).toBe(0);
    // THREAD 16, HANDLE 12, TYPE 5, TOOL 16, NAME 28 columns, one space apart.
    const cells = r.stdout.trimEnd().split("\n").slice(1).map((row) => row.split(/(?<=art_[0-9a-f]{8}) file  /));
    expect(cells.map(([thread]) => thread!.replace(/art_.*/, ""))).toEqual(Array(4).fill("线程" + " ".repeat(12) + " "));
    const tool = "工具工具工具工…" + " "; // 7 wide characters and the "…" fill 15 of 16 columns
    expect(cells.map(([, rest]) => rest)).toEqual([
      `${tool} 報告書.pdf${" ".repeat(28 - 10)} /mnt/user-data/報告書.pdf`,
      `${tool} ${"数据".repeat(6)}数…  /mnt/user-data/${"数据".repeat(10)}.csv`,
      `${tool} 😀e\u0301.txt${" ".repeat(28 - 7)} /mnt/user-data/😀e\u0301.txt`,
      `${tool} ${emoji} .txt${" ".repeat(28 - 11)} /mnt/user-data/${emoji} .txt`,
    ]);
  });

  it("--format table shows line and paragraph separators as blanks: one row per entry", () => {
    const file = join(dir, "separators.jsonl");
    writeFileSync(file, JSON.stringify({ thread_id: "t\u2029u", message: { tool_call_id: "c", name: "a\u2028b", content: [{ type: "image", url: "https://x.io/pq.png" }] } }) + "\n");
    const r = cli(["scan", file, "--format", "table"]);
    expect(r.status).toBe(0);
    const [, row, ...rest] = r.stdout.trimEnd().split("\n");
    expect(rest).toEqual([]);
    expect(row).not.toMatch(/[\u2028\u2029]/);
    expect(row).toMatch(/^t u +art_[0-9a-f]{8} image a b +pq\.png +https:\/\/x\.io\/pq\.png$/);
  });

  it("--no-text leaves out references found in free text only", () => {
    const r = cli(["scan", EXAMPLE, "--no-text"]);
    expect(r.status).toBe(0);
    expect(rows(r.stdout).map((e) => e.real_ref)).toEqual(EXAMPLE_ENTRIES.map((e) => e[2]).filter((ref) => !FROM_TEXT.has(ref)));
  });

  it('reads stdin for "-"', () => {
    const r = cli(["scan", "-"], { input: readFileSync(EXAMPLE) });
    expect(r.status).toBe(0);
    expect(rows(r.stdout).map((e) => e.real_ref)).toEqual(EXAMPLE_ENTRIES.map((e) => e[2]));
  });

  // On stdin ("-"), or a pipe named as the file (a FIFO, as `scan <(tail -f log)` gives).
  it.each(THREADS.flatMap((threads) => ["stdin", "a named pipe"].map((input) => [input, threads])))("from a pipe that pauses (a live log), writes the lines read so far before more come (%s, --threads %s)", async (input, threads) => {
    const line = (n: number) => `${JSON.stringify({ thread_id: "live", message: { tool_call_id: `c${n}`, content: `/mnt/user-data/live-${n}.txt` } })}\n`;
    const fifo = join(dir, `live-${threads}.fifo`);
    if (input !== "stdin") expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
    const child = spawn(process.execPath, ["--import", "tsx", join(ROOT, "src/cli.ts"), "scan", input === "stdin" ? "-" : fifo, "--threads", threads], { cwd: ROOT });
    const feed = input === "stdin" ? child.stdin : createWriteStream(fifo);
    let stdout = "";
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d));
    const entries = (count: number) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (stdout.split("\n").filter(Boolean).length >= count) resolve();
        };
        child.stdout.on("data", (d: Buffer) => {
          stdout += d;
          check();
        });
        child.once("exit", () => reject(new Error(`exited before ${count} entries: ${stderr}`)));
        check();
      });
    try {
      // Three lines, then the pipe stays open: their entries must come while it does.
      feed.write(line(1) + line(2) + line(3));
      await entries(3);
      expect(rows(stdout).map((e) => e.real_ref)).toEqual([1, 2, 3].map((n) => `/mnt/user-data/live-${n}.txt`));
      feed.end(line(4));
      const [code] = (await once(child, "exit")) as [number];
      expect(code).toBe(0);
      expect(rows(stdout).map((e) => e.real_ref)).toEqual([1, 2, 3, 4].map((n) => `/mnt/user-data/live-${n}.txt`));
      expect(stderr).toBe("");
    } finally {
      if (child.exitCode === null) child.kill();
      feed.destroy();
    }
  });

  it("a reader that closes the output ends the scan of a stdin that stays open (`tail -f log | scan - | head`)", async () => {
    const line = JSON.stringify({ thread_id: "live", message: { tool_call_id: "c", content: "/mnt/user-data/live.txt" } }) + "\n";
    const child = spawn(process.execPath, ["--import", "tsx", join(ROOT, "src/cli.ts"), "scan", "-", "--stats"], { cwd: ROOT });
    let stderr = "";
    child.stdin.on("error", () => {});
    // A live log: a line now and then until the scan has stopped, and the input never ends.
    const feed = setInterval(() => child.stdin.write(line), 100);
    child.stderr.on("data", (d: Buffer) => {
      stderr += d;
      if (stderr.includes("stopped early")) clearInterval(feed);
    });
    try {
      child.stdin.write(line);
      await once(child.stdout, "data");
      child.stdout.destroy();
      const [code] = (await once(child, "exit")) as [number];
      expect(code).toBe(0);
      expect(stderr).toMatch(/^stopped early: the output was closed/);
    } finally {
      clearInterval(feed);
      if (child.exitCode === null) child.kill();
    }
  });

  it("reports each bad line by number and reason, keeps scanning, and exits 1", () => {
    const good = (n: number) => JSON.stringify({ thread_id: "t", message: { tool_call_id: `c${n}`, content: `/mnt/user-data/${n}.txt` } });
    const file = join(dir, "mixed.jsonl");
    const badIndex = JSON.stringify({ thread_id: "t", call_index: -1, message: { tool_call_id: "c10", content: "/mnt/user-data/10.txt" } });
    const lines = [good(1), "{not json", good(3), "[1,2]", "", JSON.stringify({ message: { tool_call_id: "x", content: "y" } }), good(7), JSON.stringify({ thread_id: "t", message: 5 }), good(9), badIndex];
    // A path saved as Latin-1: decoded, it would be /mnt/user-data/caf\ufffd.txt.
    const latin1 = Buffer.concat([Buffer.from('{"thread_id":"t","message":{"tool_call_id":"c11","content":"/mnt/user-data/caf'), Buffer.from([0xe9]), Buffer.from('.txt"}}\n')]);
    writeFileSync(file, Buffer.concat([Buffer.from(lines.join("\n") + "\n"), latin1]));
    for (const threads of THREADS) {
      const r = cli(["scan", file, "--threads", threads]);
      expect(r.status).toBe(1);
      expect(rows(r.stdout).map((e) => e.tool_call_id)).toEqual(["c1", "c3", "c7", "c9"]);
      const reported = r.stderr.trimEnd().split("\n");
      expect(reported).toHaveLength(6);
      expect(reported[0]).toMatch(new RegExp(`^${file}:2: invalid JSON: `));
      expect(reported.slice(1)).toEqual([
        `${file}:4: expected a JSON object, got an array`,
        `${file}:6: no thread_id (give the line one, or run the CLI with --thread-id)`,
        `${file}:8: message is not an object`,
        `${file}:10: call_index must be a non-negative integer`,
        `${file}:11: not valid UTF-8 (JSON lines must be UTF-8: was the file saved in another encoding?)`,
      ]);
    }
  });

  it("takes LangChain serialized messages, with --thread-id for lines that carry none", () => {
    const file = join(dir, "serialized.jsonl");
    const serialized = { lc: 1, type: "constructor", id: ["langchain_core", "messages", "ToolMessage"], kwargs: { tool_call_id: "c1", name: "n", content: "/mnt/user-data/a.txt", additional_kwargs: {}, response_metadata: {} } };
    writeFileSync(file, JSON.stringify(serialized) + "\n");
    expect(cli(["scan", file]).stderr).toMatch(/:1: no thread_id \(give the line one, or run the CLI with --thread-id\)\n/);
    const r = cli(["scan", file, "--thread-id", "archive-1"]);
    expect(r.status).toBe(0);
    expect(rows(r.stdout)).toMatchObject([{ thread_id: "archive-1", tool_name: "n", tool_call_id: "c1", real_ref: "/mnt/user-data/a.txt" }]);
  });

  it("--stats prints counts, throughput and rejected payloads on stderr", () => {
    const r = cli(["scan", EXAMPLE, "--stats"]);
    expect(r.status).toBe(0);
    expect(r.stderr).toMatch(/^lines 10, entries 11, bad lines 0, other messages 1, rejected payloads 0\n[\d.]+ MB in [\d.]+ s: [\d.-]+ MB\/s \(\d+ threads?(, \d+ of \d+ chunks on workers)?\)\n$/);
  });

  it("picks an archive's threads by size and cores: one below 256 MiB on fewer than 3 cores", () => {
    const MiB = 1024 * 1024;
    expect(POOL_MIN_ARCHIVE_BYTES).toBe(256 * MiB);
    expect([archiveThreads(1, 2), archiveThreads(256 * MiB - 1, 2), archiveThreads(256 * MiB, 2), archiveThreads(undefined, 2)]).toEqual([1, 1, 2, 2]);
    expect([archiveThreads(1, 1), archiveThreads(1, 3), archiveThreads(undefined, 8), archiveThreads(0, 4)]).toEqual([1, 3, 8, 4]);
  });

  it("scans with --threads N on N - 1 workers, since the calling thread scans too; one thread makes no pool", async () => {
    expect(archivePool(1)).toBeUndefined();
    for (const threads of [2, 3, 8]) {
      const pool = archivePool(threads)!;
      expect(pool.threads).toBe(threads - 1);
      expect(pool.workers).toEqual([]); // no worker before a chunk is given
      await pool.close();
    }
  });

  it("defaults --threads to 1 for a small file below 3 cores, else to the core count; piped stdin takes the core count", () => {
    const cores = availableParallelism();
    const small = cores < 3 ? 1 : cores;
    const threads = (n: number) => new RegExp(`\\(${n} threads?(, \\d+ of \\d+ chunks on workers)?\\)\\n$`);
    expect(cli(["scan", EXAMPLE, "--stats"]).stderr).toMatch(threads(small));
    expect(cli(["scan", "-", "--stats"], { input: readFileSync(EXAMPLE, "utf8") }).stderr).toMatch(threads(cores));
    // A file redirected to stdin has its size, as the file named does.
    const fd = openSync(EXAMPLE, "r");
    try {
      expect(cli(["scan", "-", "--stats"], { stdio: [fd, "pipe", "pipe"] }).stderr).toMatch(threads(small));
    } finally {
      closeSync(fd);
    }
    // The sample is one chunk: too short to start a worker, and --stats says so.
    if (THREADS.includes("2")) expect(cli(["scan", EXAMPLE, "--stats", "--threads", "2"]).stderr).toMatch(/\(2 threads, 0 of 1 chunks on workers\)\n$/);
  });

  it("--stats counts structured payloads rejected over budget", () => {
    const file = join(dir, "rejected.jsonl");
    const wide = { type: "tool", tool_call_id: "c", content: "", artifact: { structured_content: { files: Array.from({ length: 2000 }, (_, i) => `/data/${i}.txt`) } } };
    writeFileSync(file, JSON.stringify({ thread_id: "t", message: wide }) + "\n");
    const r = cli(["scan", file, "--stats"]);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(/rejected payloads 1\n/);
  });

  it("a missing or unreadable input is one line on stderr and exit 2", () => {
    for (const path of [join(dir, "missing.jsonl"), dir]) {
      const r = cli(["scan", path]);
      expect(r.status).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
      expect(r.stderr).toContain(`cannot read ${path}`);
    }
  });

  // Linux's /proc/self/mem opens, then fails its first read at offset 0 with EIO: a disk error mid-file, say.
  it.skipIf(!existsSync("/proc/self/mem"))("an input that opens but fails to read is one line on stderr and exit 2", () => {
    const r = cli(["scan", "/proc/self/mem"]);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe("tool-artifacts: cannot read /proc/self/mem: EIO: i/o error, read\n");
  });

  it("scans with no more threads than cores, saying so: each one past them only adds a worker's memory", () => {
    const cores = availableParallelism();
    const r = cli(["scan", EXAMPLE, "--threads", String(cores + 998), "--stats"]);
    expect(r.status).toBe(0);
    expect(r.stderr).toContain(`tool-artifacts: --threads ${cores + 998} is more than the ${cores} core${cores === 1 ? "" : "s"}; scanning with ${cores}\n`);
    expect(r.stderr).toMatch(new RegExp(`MB/s \\(${cores} thread`));
    expect(withoutTime(r.stdout)).toEqual(withoutTime(cli(["scan", EXAMPLE, "--threads", "1"]).stdout));
  });

  it("keeps scanning when stderr is closed early (`2>&1 | head`): every entry reaches stdout", async () => {
    const lines = Array.from({ length: 40_000 }, (_, i) => (i % 2 ? "{bad" : JSON.stringify({ thread_id: "t", message: { tool_call_id: `c${i}`, content: `/mnt/user-data/${i}.txt` } })));
    const file = join(dir, "noisy.jsonl");
    writeFileSync(file, lines.join("\n") + "\n");
    const out = openSync(join(dir, "noisy.out"), "w");
    const child = spawn(process.execPath, ["--import", "tsx", join(ROOT, "src/cli.ts"), "scan", file, "--threads", "1"], { cwd: ROOT, stdio: ["ignore", out, "pipe"] });
    // The reader of stderr is gone before the first bad line is reported.
    child.stderr!.destroy();
    const [status] = (await once(child, "exit")) as [number | null];
    closeSync(out);
    // 1: lines failed (and were reported to nobody), not a crash that cut the output short.
    expect(status).toBe(1);
    expect(readFileSync(join(dir, "noisy.out"), "utf8").trimEnd().split("\n")).toHaveLength(20_000);
  });

  it("a bad command line exits 2", () => {
    for (const threads of ["0", "-1", "abc", "1.5", "1e3", "0x2", " 2", ""]) expect(cli(["scan", EXAMPLE, "--threads", threads]).status, threads).toBe(2);
    expect(cli(["scan", EXAMPLE, "--format", "xml"]).status).toBe(2);
    expect(cli(["scan"]).status).toBe(2);
    // An empty prefix would make every word of every text a file.
    const empty = cli(["scan", EXAMPLE, "--sandbox-prefix", "/data/", ""]);
    expect(empty.status).toBe(2);
    expect(empty.stderr).toMatch(/--sandbox-prefix.*must not be empty/);
    // U+FFFD (what a non-UTF-8 argument byte becomes) would match lone surrogates in text: a usage error, not a crash.
    const replacement = cli(["scan", EXAMPLE, "--sandbox-prefix", "/mnt/\uFFFD/"]);
    expect(replacement.status).toBe(2);
    expect(replacement.stderr).toMatch(/--sandbox-prefix.*lone surrogate or U\+FFFD/);
    expect(replacement.stderr).not.toMatch(/internal error|\n\s+at /);
    // Prefixes before the file take the file too: the error says why the file is missing.
    const swallowed = cli(["scan", "--sandbox-prefix", "/data/", EXAMPLE]);
    expect(swallowed.status).toBe(2);
    expect(swallowed.stderr).toMatch(/missing required argument 'file'\n.*--sandbox-prefix takes every value after it, so the file was read as a prefix: give the file first, or end the prefixes with --\n$/s);
    expect(cli(["scan", "--sandbox-prefix", "/data/", "--", EXAMPLE]).status).toBe(0);
    expect(cli(["scan"]).stderr).not.toMatch(/sandbox-prefix/);
    // An empty thread id would fail every line it is meant for.
    const noThread = cli(["scan", EXAMPLE, "--thread-id", ""]);
    expect(noThread.status).toBe(2);
    expect(noThread.stderr).toMatch(/--thread-id.*must not be empty/);
  });

  it("a directory on stdin is one line on stderr and exit 2, not an empty archive", () => {
    const fd = openSync(dir, "r");
    try {
      const r = cli(["scan", "-"], { stdio: [fd, "pipe", "pipe"] });
      expect(r.status).toBe(2);
      expect(r.stderr).toBe("tool-artifacts: cannot read -: EISDIR: stdin is a directory\n");
    } finally {
      closeSync(fd);
    }
  });

  it.skipIf(!existsSync("/dev/full"))("output that cannot be written is one line on stderr and exit 2", () => {
    const fd = openSync("/dev/full", "w");
    try {
      const r = cli(["scan", EXAMPLE], { stdio: ["ignore", fd, "pipe"] });
      expect(r.status).toBe(2);
      expect(r.stderr).toBe("tool-artifacts: cannot write the output: ENOSPC: no space left on device, write\n");
    } finally {
      closeSync(fd);
    }
  });

  it("output cut short by a file-size limit is exit 2, not a file cut mid-line with exit 0", () => {
    // The limit falls inside the output's only write: the kernel writes what
    // fits, and only a second write says why the rest cannot go.
    const whole = cli(["scan", EXAMPLE]).stdout;
    const out = join(dir, "limited.jsonl");
    const limit = 1000 * 1024; // `ulimit -f` counts 1024-byte blocks
    writeFileSync(out, Buffer.alloc(limit - 1000));
    const command = `ulimit -f ${limit / 1024}; exec "${process.execPath}" --import tsx src/cli.ts scan examples/archive.jsonl >> "${out}"`;
    const r = spawnSync("bash", ["-c", command], { cwd: ROOT, encoding: "utf8", timeout: 60_000 });
    expect(Buffer.byteLength(whole)).toBeGreaterThan(1000);
    expect(readFileSync(out).byteLength).toBe(limit);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe("tool-artifacts: cannot write the output: EFBIG: file too large, write\n");
  });

  it("control characters of a bad line reach the terminal as escapes", () => {
    const path = join(dir, "ansi.jsonl");
    // Terminal escapes, and a right-to-left override that would reorder the rest of the line.
    writeFileSync(path, "r\u202eX\x1b]0;PWNED\x07\x1b[2J\rred\nx\ufeff\u200by\nl\u061cm\u00ad\u{e0041}\n\u{e0001}tag\n");
    const r = cli(["scan", path]);
    expect(r.status).toBe(1);
    expect(r.stderr).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069\u200b\ufeff\p{Cf}]/u);
    expect(r.stderr.startsWith(`${path}:1: invalid JSON: `)).toBe(true);
    expect(r.stderr).toContain(String.raw`"r\u202eX\x1b]0;PWN"`);
    // Invisible characters too (a mark not at the file's start, a zero-width space).
    expect(r.stderr).toContain(String.raw`\ufeff`);
    // Every format character: the Arabic letter mark (bidi), a soft hyphen, a tag character.
    expect(r.stderr).toContain(String.raw`"l\u061cm\xad\u{e0041}"`);
    // Node's reason quotes half of a tag character at the error: that half is
    // an escape too, not the U+FFFD a lone surrogate becomes in UTF-8.
    const line4 = r.stderr.split("\n").find((l) => l.startsWith(`${path}:4: invalid JSON: `));
    expect(line4).toContain(String.raw`'\udb40'`);
    expect(line4).toContain(String.raw`"\u{e0001}tag"`);
    expect(r.stderr).not.toContain("\ufffd");
  });

  it("a UTF-8 byte order mark before the first line is skipped, from a file and from stdin", () => {
    const path = join(dir, "bom.jsonl");
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), readFileSync(EXAMPLE)]);
    writeFileSync(path, bytes);
    const expected = withoutTime(cli(["scan", EXAMPLE]).stdout);
    for (const r of [cli(["scan", path]), cli(["scan", "-"], { input: bytes })]) {
      expect(r.stderr).toBe("");
      expect(r.status).toBe(0);
      expect(withoutTime(r.stdout)).toEqual(expected);
    }
  });

  const hasBash = spawnSync("bash", ["--version"]).status === 0;
  it.skipIf(!hasBash)("a reader that closes the pipe early (| head) ends the scan: exit 0, or 1 if a line had failed", () => {
    // Enough output to outlast the pipe's buffer.
    const lines = readFileSync(EXAMPLE, "utf8");
    const good = join(dir, "long.jsonl");
    const bad = join(dir, "long-bad.jsonl");
    writeFileSync(good, lines.repeat(1500));
    writeFileSync(bad, "{oops\n" + lines.repeat(1500));
    const run = (path: string, flags = "") => {
      const command = `"${process.execPath}" --import tsx src/cli.ts scan "${path}" ${flags} | head -c 100 > /dev/null; echo "\${PIPESTATUS[0]}"`;
      return spawnSync("bash", ["-c", command], { cwd: ROOT, encoding: "utf8", timeout: 60_000 });
    };
    const quiet = run(good);
    expect(quiet.stdout.trim()).toBe("0");
    expect(quiet.stderr).toBe(""); // a closed pipe is no output error
    const failed = run(bad);
    expect(failed.stdout.trim()).toBe("1");
    expect(failed.stderr).toMatch(/long-bad\.jsonl:1: invalid JSON/);
    expect(failed.stderr.trimEnd().split("\n")).toHaveLength(1);
    // --stats still reports, and says the counts stop where the output did.
    const stats = run(good, "--stats");
    expect(stats.stdout.trim()).toBe("0");
    const counted = /^stopped early: the output was closed; counts are of the chunks written whole before that; bad lines: every one reported\nlines (\d+), entries (\d+), bad lines 0, other messages (\d+), rejected payloads 0\n[\d.]+ MB in [\d.]+ s: [\d.-]+ MB\/s \(\d+ threads?(, \d+ of \d+ chunks on workers)?\)\n$/.exec(stats.stderr);
    expect(counted, stats.stderr).not.toBeNull();
    const [scanned, entries] = [Number(counted![1]), Number(counted![2])];
    expect(scanned).toBeLessThan(15_000);
    // Whole copies of the sample, as chunks end at line ends: 11 entries per 10 lines.
    expect(entries * 10).toBe(scanned * 11);
    // A bad line in the chunk the close cut off was reported: it is counted, as the exit status counts it.
    const failedStats = run(bad, "--stats");
    expect(failedStats.stdout.trim()).toBe("1");
    expect(failedStats.stderr).toMatch(/long-bad\.jsonl:1: invalid JSON.*\nstopped early: .*\nlines \d+, entries \d+, bad lines 1, /s);
  });

  it.skipIf(!hasBash)("--stats after the reader closed the pipe counts only the chunks written whole, not the one cut off", () => {
    // About four chunks of output, 1.2 MB each; the reader takes 1.5 MB: one chunk goes through whole, the second is cut off.
    const file = join(dir, "four-chunks.jsonl");
    writeFileSync(file, readFileSync(EXAMPLE, "utf8").repeat(1500));
    const full = cli(["scan", file, "--threads", "1"], { maxBuffer: 1 << 26 });
    expect(full.status).toBe(0);
    const lineBytes = full.stdout.split("\n").map((l) => Buffer.byteLength(l) + 1);
    const taken = 1_500_000;
    const command = `"${process.execPath}" --import tsx src/cli.ts scan "${file}" --threads 1 --stats | head -c ${taken} > /dev/null`;
    const r = spawnSync("bash", ["-c", command], { cwd: ROOT, encoding: "utf8", timeout: 60_000 });
    const counted = /^stopped early: .*\nlines (\d+), entries (\d+), /.exec(r.stderr);
    expect(counted, r.stderr).not.toBeNull();
    const entries = Number(counted![2]);
    expect(entries).toBeGreaterThan(0);
    // What was written whole went into the pipe: what the reader took, and at most what the pipe holds (64 KiB; 512 KiB of slack).
    const written = lineBytes.slice(0, entries).reduce((a, b) => a + b, 0);
    expect(written).toBeLessThanOrEqual(taken + 512 * 1024);
  });

  const hasScript = spawnSync("script", ["--version"]).status === 0;
  it.skipIf(!hasScript)("shows progress on stderr only when stderr is a terminal", () => {
    const piped = cli(["scan", EXAMPLE]);
    expect(piped.stderr).toBe("");
    const command = `${process.execPath} --import tsx src/cli.ts scan examples/archive.jsonl > /dev/null`;
    const tty = spawnSync("script", ["-qec", command, "/dev/null"], { cwd: ROOT, encoding: "utf8", timeout: 60_000 });
    expect(tty.status).toBe(0);
    expect(tty.stdout).toMatch(/\[#+-*\]\s+\d+% [\d.]+ MB read, \d+ entries, [\d.-]+ MB\/s/);
    // With the entries printed on the same terminal, no progress is drawn into them.
    const both = spawnSync("script", ["-qec", command.replace(" > /dev/null", ""), "/dev/null"], { cwd: ROOT, encoding: "utf8", timeout: 60_000 });
    expect(both.status).toBe(0);
    expect(both.stdout).not.toMatch(/MB read/);
    expect(both.stdout.match(/"thread_id"/g)).toHaveLength(EXAMPLE_ENTRIES.length);
    // A file redirected to stdin has a size, so the bar shows how far it is.
    const redirected = spawnSync("script", ["-qec", command.replace("examples/archive.jsonl", "- < examples/archive.jsonl"), "/dev/null"], { cwd: ROOT, encoding: "utf8", timeout: 60_000 });
    expect(redirected.status).toBe(0);
    expect(redirected.stdout).toMatch(/\[#{20}\] 100% [\d.]+ MB read/);
  });

  it.skipIf(!hasScript)("takes its progress line away when a signal ends it, and ends by that signal", async () => {
    // A live log: its lines are scanned (and the progress drawn) once input
    // pauses, and the scan waits for more until the signal comes. POSIX sh
    // only (a FIFO, not bash's <(...)): script runs this with $SHELL, which
    // is /bin/sh where SHELL is unset, as in CI. The signal is sent once the
    // terminal's record (script -f writes it as it goes) shows the progress:
    // no guess at how long the CLI takes to start.
    for (const shell of ["/bin/sh", "/bin/bash"].filter((path) => existsSync(path))) {
      const dir = mkdtempSync(join(tmpdir(), "tool-artifacts-progress-"));
      try {
        const [fifo, pidFile, record] = ["in", "pid", "record"].map((name) => join(dir, name));
        const command =
          `mkfifo "${fifo}"; ${process.execPath} --import tsx src/cli.ts scan - < "${fifo}" > /dev/null & pid=$!; echo $pid > "${pidFile}"; ` +
          `exec 3>"${fifo}"; cat examples/archive.jsonl >&3; wait $pid; echo "status $?"; exec 3>&-`;
        const script = spawn("script", ["-qfec", command, record], { cwd: ROOT, stdio: "ignore", env: { ...process.env, SHELL: shell } });
        const ended = once(script, "exit");
        const cliPid = () => Number(readFileSync(pidFile, "utf8"));
        try {
          await until(() => existsSync(record) && readFileSync(record, "utf8").includes("MB read"));
          process.kill(cliPid(), "SIGTERM");
          await ended;
        } finally {
          // A CLI that never drew its progress would wait on the FIFO for good.
          if (script.exitCode === null && script.signalCode === null) {
            if (existsSync(pidFile)) process.kill(cliPid(), "SIGKILL");
            script.kill("SIGKILL");
          }
        }
        const out = readFileSync(record, "utf8");
        expect(out, shell).toMatch(/status 143/);
        const drawn = out.lastIndexOf("MB read");
        // Cleared after it was last drawn.
        expect(out.indexOf("\r\x1b[2K", drawn), shell).toBeGreaterThan(drawn);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  });

  it.skipIf(!hasScript)("ends by a signal that came while the last chunk was scanned, not after it with status 0", () => {
    // A Node parent tells an end by the signal from an exit with status
    // 128 + its number, which a shell's $? cannot. It writes how the CLI
    // ended to stderr, the terminal script records; the CLI's stdout is a pipe.
    const args = ["--import", "tsx", "--import", "./test/support/signal-on-write.mjs", "src/cli.ts", "scan", "examples/archive.jsonl"];
    const parent = `const r = require("node:child_process").spawnSync(${JSON.stringify(process.execPath)}, ${JSON.stringify(args)}, { stdio: ["inherit", "pipe", "inherit"] }); console.error("ended by", r.signal ?? "status " + r.status);`;
    for (const signal of ["SIGTERM", "SIGINT"]) {
      const r = spawnSync("script", ["-qec", `${process.execPath} -e '${parent}'`, "/dev/null"], { cwd: ROOT, encoding: "utf8", timeout: 60_000, env: { ...process.env, SIGNAL_ON_WRITE: signal } });
      expect(r.stdout, signal).toMatch(new RegExp(`ended by ${signal}\\b`));
    }
  });
});

describe("tool-artifacts scan: input and options at their edges", () => {
  it("exits 0 for --version and --help", () => {
    expect(cli(["--version"]).status).toBe(0);
    expect(cli(["scan", "--help"]).status).toBe(0);
  });

  it("--stats with one thread says one thread, and nothing of workers", () => {
    expect(cli(["scan", EXAMPLE, "--stats", "--threads", "1"]).stderr).toMatch(/ MB\/s \(1 thread\)\n$/);
  });

  it("reports a line that spells thread_id or call_index both ways with different values, and reads one whose two spellings agree", () => {
    const path = join(dir, "two-spellings.jsonl");
    const message = (id: string) => ({ type: "tool", tool_call_id: id, content: `/mnt/user-data/${id}.txt` });
    const lines = [
      { thread_id: "snake", threadId: "camel", message: message("a") },
      { thread_id: "t", call_index: 1, callIndex: 2, message: message("b") },
      { thread_id: "t", threadId: "t", call_index: 3, callIndex: 3, message: message("c") },
    ];
    writeFileSync(path, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
    const r = cli(["scan", path]);
    expect(r.status).toBe(1);
    expect(r.stderr.split("\n").filter((l) => l.startsWith(path))).toEqual([`${path}:1: thread_id and threadId differ (give one)`, `${path}:2: call_index and callIndex differ (give one)`]);
    expect(r.stdout.trim().split("\n").map((l) => JSON.parse(l) as { thread_id: string; call_index: number; real_ref: string })).toEqual([
      expect.objectContaining({ thread_id: "t", call_index: 3, real_ref: "/mnt/user-data/c.txt" }),
    ]);
  });

  it("refuses a --threads past the safe integers rather than rounding it", () => {
    expect(cli(["scan", EXAMPLE, "--threads", "99999999999999999999"]).status).toBe(2);
  });

  it("--sandbox-prefix replaces the prefixes free text is scanned with", () => {
    const file = join(dir, "prefix.jsonl");
    writeFileSync(file, JSON.stringify({ thread_id: "t", message: { tool_call_id: "c", content: "wrote /data/out.csv and /mnt/user-data/a.txt" } }) + "\n");
    for (const threads of THREADS) {
      const r = cli(["scan", file, "--threads", threads, "--sandbox-prefix", "/data/"]);
      expect(r.status).toBe(0);
      expect(rows(r.stdout).map((e) => e.real_ref)).toEqual(["/data/out.csv"]);
    }
  });

  it("--sandbox-prefix takes several prefixes, in one list or repeated, and scans with all of them", () => {
    const file = join(dir, "prefixes.jsonl");
    writeFileSync(file, JSON.stringify({ thread_id: "t", message: { tool_call_id: "c", content: "wrote /data/out.csv, /srv/b.txt and /mnt/user-data/a.txt" } }) + "\n");
    for (const args of [[file, "--sandbox-prefix", "/data/", "/srv/"], ["--sandbox-prefix", "/data/", "--sandbox-prefix", "/srv/", "--", file]]) {
      const r = cli(["scan", ...args]);
      expect(r.status, r.stderr).toBe(0);
      expect(rows(r.stdout).map((e) => e.real_ref)).toEqual(["/data/out.csv", "/srv/b.txt"]);
    }
  });

  it("names a bad line read from stdin <stdin>, not the \"-\" given for it", () => {
    const r = cli(["scan", "-"], { input: "{bad\n" });
    expect(r.status).toBe(1);
    expect(r.stderr.startsWith("<stdin>:1: invalid JSON: ")).toBe(true);
  });

  it("a directory named as the file is refused when opened: no table header first, and the error says it is a directory", () => {
    const r = cli(["scan", dir, "--format", "table"]);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(`tool-artifacts: cannot read ${dir}: EISDIR: is a directory, open '${dir}'\n`);
  });
});
