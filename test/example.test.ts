// The `npm start` example, run as a user runs it: a real process that
// re-spawns itself for the restart, real MCP server children, SQLite on disk.
// It checks its own outcomes; these tests hold it to its transcript and to
// failing loudly when a step does not behave.
import { afterEach, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const EXAMPLE = fileURLToPath(new URL("../examples/main.ts", import.meta.url));
// Four Node processes start here; the guard only stops a hung run.
const RUN_TIMEOUT = 180_000;

function runExample(args: string[] = []): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", EXAMPLE, ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

let tempDir: string | undefined;
afterEach(() => {
  if (tempDir) rmSync(tempDir, { recursive: true, force: true });
  tempDir = undefined;
});

it(
  "runs end to end: capture, compaction, a restart in a new process, resolution, a rejected handle",
  async () => {
    const { code, stdout, stderr } = await runExample();
    expect(code, `${stdout}\n${stderr}`).toBe(0);
    expect(stdout).not.toContain("✘");

    // Step 1: tools (one of them over MCP) produced every kind of reference.
    expect(stdout).toMatch(/MCP server "reports" \(stdio child process\) offers: render_report, job_status/);
    expect(stdout).toMatch(/capture │ art_[0-9a-f]{8} task render-q3-7f3a {2}← render_report/);
    expect(stdout).toMatch(/✔ capture: 6 handles for files, URLs, a task id and a structured result/);

    // Step 2: compaction removed tool results, and a handle from before it still resolved.
    expect(stdout).toMatch(/compact │ history replaced by a summary/);
    expect(stdout).toMatch(/✔ compaction: 1 summary; the export_table result is gone from state/);
    expect(stdout).toMatch(/model {3}│ calls read_file \{"path":"art_[0-9a-f]{8}"\}\n {2}tool {4}│ read_file ran with \{"path":"\/mnt\/user-data\/outputs\/q3-sales.csv"\}/);

    // Step 3: a different process picked the thread up from the checkpoint file.
    const [, firstPid] = /Phase 1 · process (\d+)/.exec(stdout) ?? [];
    const [, secondPid] = /Phase 2 · new process (\d+)/.exec(stdout) ?? [];
    expect(firstPid).toBeDefined();
    expect(secondPid).toBeDefined();
    expect(secondPid).not.toBe(firstPid);
    expect(stdout).toMatch(/✔ restart: the new process loaded 6 registry entries and \d+ ledger keys from the checkpoint/);

    // Step 4: handles in args, as written and as received (the MCP server echoed its id).
    expect(stdout).toMatch(/calls job_status \{"task_id":"art_[0-9a-f]{8}"\}\n {2}tool {4}│ job_status ran with \{"task_id":"render-q3-7f3a"\}/);
    expect(stdout).toContain("Job render-q3-7f3a finished.");
    expect(stdout).toMatch(/calls send_email \{[^\n]*"attachments":\["art_[0-9a-f]{8}","art_[0-9a-f]{8}"\]/);
    expect(stdout).toContain('"attachments":["/mnt/user-data/outputs/q3-report.pdf","/mnt/user-data/outputs/q3-sales.csv"]');

    // Step 5: the made-up handle was refused and the tool never ran.
    expect(stdout).toMatch(/read_file did not run: the call was refused before the tool\n {2}result {2}│ ERROR The tool was not run: unknown or expired artifact handle art_5ca1ab1e\./);
    expect(stdout).toContain("✔ bad handle rejected");

    // The final registry: every entry, each used by some call.
    const table = stdout.slice(stdout.indexOf("Final registry:"));
    const rows = table.split("\n").filter((l) => /^ {2}art_[0-9a-f]{8} /.test(l));
    expect(rows.map((r) => r.split(/ {2,}/)[4])).toEqual(["query_sales", "export_table", "render_report", "render_report", "render_report", "publish_chart"]);
    expect(rows.every((r) => /call_\w+$/.test(r))).toBe(true);
    expect(stdout).toContain("All steps behaved");
  },
  RUN_TIMEOUT,
);

it(
  "exits non-zero, naming the step, when the restarted process finds no registry",
  async () => {
    tempDir = mkdtempSync(join(tmpdir(), "tool-artifacts-example-test-"));
    const { code, stdout, stderr } = await runExample(["--resume", join(tempDir, "empty.sqlite"), "art_00000000"]);
    expect(code).toBe(1);
    expect(stdout).toMatch(/✘ restart: the new process loaded 0 registry entries/);
    expect(stdout).not.toContain("user    │"); // it stopped before running the turn
    expect(stderr).toMatch(/check\(s\) failed in process \d+:\n {2}- restart: /);
  },
  RUN_TIMEOUT,
);
