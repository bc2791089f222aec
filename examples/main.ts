/**
 * `npm start`: tool-artifacts end to end, offline, across a process restart.
 *
 * Phase 1 (this process): a LangChain.js agent prepares a quarterly report.
 * Its tools (four local ones and an MCP server's) produce a sandbox file, URLs,
 * a remote job id and a structured result; tool-artifacts registers each
 * under a handle. LangChain's summarizationMiddleware compacts the history,
 * and the model still reads a file through a handle whose tool result is gone.
 *
 * Phase 2 (this script re-spawned with `--resume`): a new process builds a
 * fresh agent on a fresh SqliteSaver over the same checkpoint file and
 * continues the thread. Handles in tool arguments are resolved to the real
 * references before the tools run; a made-up handle is refused.
 *
 * The chat model is scripted (there is no network), but like a real model it
 * knows only the handles it is shown: every step reads them from the hidden
 * <durable_context_data> block of the request. Each phase checks its own
 * outcomes and the run exits non-zero naming what did not behave.
 *
 *   npm start                  build the engine, then run this file
 *   tsx examples/main.ts --keep   keep the checkpoint file afterwards
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import type { DynamicStructuredTool } from "@langchain/core/tools";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { MultiServerMCPClient } from "@langchain/mcp-adapters";
import { createAgent, createMiddleware, summarizationMiddleware, tool } from "langchain";
import { z } from "zod";
import { findHandles, isHandle, orderMiddleware, toolArtifactsMiddleware, toolArtifactsStateSchema, type ArtifactEntry } from "../src/index.js";
import { ScriptedChatModel, type ScriptedStep } from "../src/testing/scripted-model.js";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const SELF = fileURLToPath(import.meta.url);
const MCP_SERVER = fileURLToPath(new URL("./mcp-server.ts", import.meta.url));
const THREAD = "q3-report";
/** A handle the model makes up: never minted in this thread. */
const BAD_HANDLE = "art_5ca1ab1e";

// ── checks and printing ─────────────────────────────────────────────────────

const failures: string[] = [];

/** Print one outcome; a failed one makes the process exit non-zero at the end. */
function check(ok: boolean, what: string): void {
  console.log(`  ${ok ? "✔" : "✘"} ${what}`);
  if (!ok) failures.push(what);
}

function heading(title: string): void {
  console.log(`\n── ${title} ${"─".repeat(Math.max(0, 74 - title.length))}`);
}

function oneLine(value: unknown, max = 160): string {
  const text = (typeof value === "string" ? value : JSON.stringify(value)).replace(/\s*\n\s*/g, " ⏎ ");
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r, i) => `  ${r.map((cell, c) => cell.padEnd(widths[c]!)).join("  ").trimEnd()}${i === 0 ? `\n  ${widths.map((w) => "─".repeat(w)).join("  ")}` : ""}`).join("\n");
}

function registryTable(entries: readonly ArtifactEntry[]): string {
  return table([
    ["handle", "type", "display name", "tool", "consumed_by"],
    ...entries.map((e) => [e.handle, e.artifact_type, oneLine(e.display_name, 40), e.tool_name, (e.consumed_by ?? []).join(", ") || "-"]),
  ]);
}

// ── the agent ───────────────────────────────────────────────────────────────

/** The hidden block the projection put in front of the model, if any. */
function contextBlock(messages: readonly BaseMessage[]): string | undefined {
  return messages.find((m) => HumanMessage.isInstance(m) && m.additional_kwargs?.durable_context_data === true)?.text;
}

/** The handle the block lists under `name`, read as a model would read it. */
function handleShown(messages: readonly BaseMessage[], name: string): string {
  const line = contextBlock(messages)
    ?.split("\n")
    .find((l) => l.split(" | ")[2] === name);
  if (line === undefined) throw new Error(`the model was shown no handle for "${name}"`);
  return line.slice(0, "art_xxxxxxxx".length);
}

/** The report service's own tools, run in this process. */
function localTools() {
  const querySales = tool(
    async ({ quarter }) => [`${quarter}: 42 rows, revenue 1,268,400 EUR.`, { structured_content: { quarter, rows: 42, revenue: 1268400, currency: "EUR" } }],
    {
      name: "query_sales",
      description: "Query the sales totals of a quarter.",
      schema: z.object({ quarter: z.string() }),
      responseFormat: "content_and_artifact",
    },
  );
  const exportTable = tool(async ({ name }) => `Wrote /mnt/user-data/outputs/${name}.csv (42 rows).`, {
    name: "export_table",
    description: "Export the sales table as CSV into the sandbox.",
    schema: z.object({ name: z.string() }),
  });
  const publishChart = tool(async ({ name }) => `Chart published at https://cdn.example.com/charts/${name}.png`, {
    name: "publish_chart",
    description: "Publish a revenue chart.",
    schema: z.object({ name: z.string() }),
  });
  const readFile = tool(async ({ path }) => (path.startsWith("/mnt/user-data/") ? "region,revenue\nnorth,412300\nsouth,856100" : `No such file: ${path}`), {
    name: "read_file",
    description: "Read a file from the sandbox.",
    schema: z.object({ path: z.string() }),
  });
  const sendEmail = tool(async ({ to, subject, attachments }) => `Sent "${subject}" to ${to} with ${attachments.length} attachments.`, {
    name: "send_email",
    description: "Send an email with attachments.",
    schema: z.object({ to: z.string(), subject: z.string(), body: z.string(), attachments: z.array(z.string()) }),
  });
  return [querySales, exportTable, publishChart, readFile, sendEmail];
}

/** The MCP report server as a real stdio child process, its tools through @langchain/mcp-adapters. */
async function connectReportServer(): Promise<{ tools: DynamicStructuredTool[]; close: () => Promise<void> }> {
  const client = new MultiServerMCPClient({
    mcpServers: { reports: { transport: "stdio", command: process.execPath, args: ["--import", "tsx", MCP_SERVER], cwd: ROOT, stderr: "inherit", restart: { enabled: false } } },
  });
  try {
    return { tools: await client.getTools(), close: () => client.close() };
  } catch (error) {
    await client.close();
    throw error;
  }
}

/**
 * A host policy that sits just outside the tools and records the arguments
 * each call runs with. Resolution must run outside such policies (its
 * ordering constraints say so), so this sees real references, never handles.
 */
function argumentAudit(received: Map<string, unknown>) {
  return createMiddleware({
    name: "sandbox-audit",
    wrapToolCall: (request, handler) => {
      received.set(request.toolCall.id ?? "", request.toolCall.args);
      return handler(request);
    },
  });
}

/** A summarizer that, like many, keeps the gist and loses the exact paths, URLs and ids. */
const summaryStep: ScriptedStep = (messages) => {
  const tools = [...new Set([...(messages.at(-1)?.text ?? "").matchAll(/^Tool: (\w+),/gm)].map((m) => m[1]))];
  return { content: `The user wants the Q3 sales report sent out. Tools used so far: ${tools.join(", ") || "none"}.` };
};

function buildAgent(script: ScriptedStep[], checkpointer: SqliteSaver, tools: DynamicStructuredTool[], received: Map<string, unknown>) {
  const model = new ScriptedChatModel(script);
  const summarizer = new ScriptedChatModel(Array<ScriptedStep>(8).fill(summaryStep));
  const artifacts = toolArtifactsMiddleware();
  // The host lists the middlewares in any order; the declared constraints put
  // capture before compaction and resolution outside the audit policy.
  const middleware = orderMiddleware([
    summarizationMiddleware({ model: summarizer, trigger: { messages: 7 }, keep: { messages: 1 } }),
    argumentAudit(received),
    ...artifacts,
  ]);
  const agent = createAgent({ model, tools, checkpointer, stateSchema: toolArtifactsStateSchema, middleware });
  console.log(`  middleware order: ${middleware.map((m) => m.name).join(" → ")}`);
  console.log(`  policy fingerprint: ${artifacts.policyFingerprint}`);
  return { agent, model, summarizer };
}

type Agent = ReturnType<typeof buildAgent>["agent"];

interface ThreadState {
  messages: BaseMessage[];
  tool_artifacts: ArtifactEntry[];
  tool_artifact_processed: string[];
}

const RUN_CONFIG = { configurable: { thread_id: THREAD } };

/** The thread as the checkpointer holds it; empty channels when it holds nothing yet. */
async function threadState(agent: Agent): Promise<ThreadState> {
  const values = (await agent.graph.getState(RUN_CONFIG)).values as Partial<ThreadState>;
  return { messages: values.messages ?? [], tool_artifacts: values.tool_artifacts ?? [], tool_artifact_processed: values.tool_artifact_processed ?? [] };
}

/** What one turn did, for the checks: every call as written, and every result. */
interface Turn {
  written: Map<string, { name: string; args: Record<string, unknown> }>;
  results: Map<string, ToolMessage>;
  compactions: number;
}

/**
 * Run one user turn, printing the transcript from the graph's updates as they
 * arrive: the calls as the model wrote them, the arguments the tools ran with,
 * the results, the captures and the compactions.
 */
async function runTurn(agent: Agent, text: string, received: Map<string, unknown>): Promise<Turn> {
  const turn: Turn = { written: new Map(), results: new Map(), compactions: 0 };
  const known = new Set((await threadState(agent)).tool_artifacts.map((e) => e.handle));
  console.log(`  user    │ ${text}`);
  const stream = await agent.stream({ messages: [new HumanMessage(text)] }, { ...RUN_CONFIG, streamMode: "updates" });
  for await (const chunk of stream) {
    for (const [node, update] of Object.entries(chunk as Record<string, { messages?: BaseMessage[]; tool_artifacts?: ArtifactEntry[] } | undefined>)) {
      if (node === "model_request") {
        for (const message of update?.messages ?? []) {
          if (!AIMessage.isInstance(message)) continue;
          if (message.text) console.log(`  model   │ ${oneLine(message.text)}`);
          for (const call of message.tool_calls ?? []) {
            turn.written.set(call.id!, { name: call.name, args: call.args });
            console.log(`  model   │ calls ${call.name} ${oneLine(call.args, 400)}`);
          }
        }
      } else if (node === "tools") {
        for (const message of update?.messages ?? []) {
          if (!ToolMessage.isInstance(message)) continue;
          turn.results.set(message.tool_call_id, message);
          const args = received.get(message.tool_call_id);
          if (args === undefined) console.log(`  tool    │ ${message.name} did not run: the call was refused before the tool`);
          else if (JSON.stringify(args) !== JSON.stringify(turn.written.get(message.tool_call_id)?.args)) console.log(`  tool    │ ${message.name} ran with ${oneLine(args, 400)}  (handles resolved)`);
          console.log(`  result  │ ${message.status === "error" ? "ERROR " : ""}${oneLine(message.text, 240)}`);
        }
      } else if (node.startsWith("SummarizationMiddleware") && update?.messages?.length) {
        turn.compactions++;
        const summary = update.messages.find((m) => HumanMessage.isInstance(m) && m.additional_kwargs?.lc_source === "summarization");
        const kept = update.messages.length - 2; // after the RemoveMessage and the summary
        console.log(`  compact │ history replaced by a summary + ${kept} recent message${kept === 1 ? "" : "s"}: ${oneLine(summary?.text ?? "", 140)}`);
      } else if (node.startsWith("tool-artifacts-capture") && update?.tool_artifacts?.length) {
        for (const entry of update.tool_artifacts) {
          if (typeof entry?.handle !== "string") continue;
          if (known.has(entry.handle)) console.log(`  capture │ ${entry.handle} consumed by ${entry.consumed_by?.join(", ")}`);
          else console.log(`  capture │ ${entry.handle} ${entry.artifact_type.padEnd(4)} ${oneLine(entry.display_name, 60)}  ← ${entry.tool_name}`);
          known.add(entry.handle);
        }
      }
    }
  }
  return turn;
}

// ── phase 1: first process ──────────────────────────────────────────────────

async function firstProcess(keep: boolean): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "tool-artifacts-example-"));
  const dbFile = join(dir, "checkpoints.sqlite");
  try {
    heading(`Phase 1 · process ${process.pid} · checkpoint ${dbFile}`);
    const expected = await phaseOne(dbFile);
    if (failures.length > 0) return 1;

    heading("Restart");
    console.log(`  process ${process.pid} closed its agent, MCP client and checkpointer; starting a new process on the same checkpoint file`);
    const code = await new Promise<number>((resolve, reject) => {
      const child = spawn(process.execPath, ["--import", "tsx", SELF, "--resume", dbFile, expected.join(",")], { cwd: ROOT, stdio: "inherit" });
      child.on("error", reject);
      child.on("exit", (status, signal) => resolve(status ?? (signal ? 1 : 0)));
    });
    heading("Result");
    console.log(code === 0 ? "  All steps behaved: capture, compaction, restart, resolution, rejection." : `  FAILED: the resumed process exited with code ${code}.`);
    return code;
  } finally {
    if (keep) console.log(`  checkpoint kept at ${dbFile}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

async function phaseOne(dbFile: string): Promise<string[]> {
  const received = new Map<string, unknown>();
  // The checkpointer first: should it fail (a native module that does not load), no MCP server is left running.
  const saver = SqliteSaver.fromConnString(dbFile);
  const mcp = await connectReportServer();
  let csvHandle = "";
  try {
    const { agent, summarizer } = buildAgent(
      [
        {
          tool_calls: [
            { id: "call_query_sales", name: "query_sales", args: { quarter: "Q3" } },
            { id: "call_export_table", name: "export_table", args: { name: "q3-sales" } },
          ],
        },
        {
          tool_calls: [
            { id: "call_render_report", name: "render_report", args: { quarter: "Q3" } },
            { id: "call_publish_chart", name: "publish_chart", args: { name: "q3-revenue" } },
          ],
        },
        // The export's result has been compacted away by now; its handle is all that is left.
        (messages) => {
          csvHandle = handleShown(messages, "q3-sales.csv");
          return { tool_calls: [{ id: "call_read_csv", name: "read_file", args: { path: csvHandle } }] };
        },
        { content: "The Q3 numbers, CSV and chart are ready; the PDF is still rendering. I will send everything once the render job is done." },
      ],
      saver,
      [...localTools(), ...mcp.tools],
      received,
    );
    console.log(`  MCP server "reports" (stdio child process) offers: ${mcp.tools.map((t) => t.name).join(", ")}`);
    console.log();
    const turn = await runTurn(agent, "Prepare the Q3 sales report: the numbers, a CSV export, the rendered report and a revenue chart.", received);
    const state = await threadState(agent);

    console.log();
    const types = new Set(state.tool_artifacts.map((e) => (e.artifact_type === "file" && /^https?:/.test(e.real_ref) ? "url" : e.artifact_type)));
    check((["file", "url", "task", "data"] as const).every((t) => types.has(t)), `capture: ${state.tool_artifacts.length} handles for files, URLs, a task id and a structured result (${[...types].join(", ")})`);
    check(
      ["q3-report.pdf", "render-q3-7f3a", "index.html"].every((name) => state.tool_artifacts.some((e) => e.tool_name === "render_report" && e.display_name === name)),
      "capture: the MCP tool's structured result and resource link gave the report file, the job id and the dashboard URL",
    );
    const unclean = state.tool_artifacts.filter((e) => e.artifact_type !== "data" && /[\s"'{}<>]/.test(e.real_ref));
    check(unclean.length === 0, `capture: every reference is a clean path, URL or id${unclean.length ? ` (not: ${unclean.map((e) => e.real_ref).join(" ; ")})` : ""}`);
    const toolCallIds = state.messages.filter((m) => ToolMessage.isInstance(m)).map((m) => (m as ToolMessage).tool_call_id);
    const exportCall = [...turn.written].find(([, c]) => c.name === "export_table")?.[0];
    check(
      turn.compactions > 0 && summarizer.calls > 0 && exportCall !== undefined && !toolCallIds.includes(exportCall),
      `compaction: ${turn.compactions} summary; the export_table result is gone from state (${toolCallIds.length} tool messages left) while the registry keeps ${state.tool_artifacts.length} entries`,
    );
    const readCall = [...turn.written].find(([, c]) => c.name === "read_file")?.[0] ?? "";
    check(
      isHandle(csvHandle) && JSON.stringify(received.get(readCall)) === JSON.stringify({ path: "/mnt/user-data/outputs/q3-sales.csv" }),
      `resolution after compaction: read_file {"path":"${csvHandle}"} ran with {"path":"/mnt/user-data/outputs/q3-sales.csv"}`,
    );
    console.log();
    console.log(registryTable(state.tool_artifacts));
    return state.tool_artifacts.map((e) => e.handle);
  } finally {
    saver.db.close();
    await mcp.close();
  }
}

// ── phase 2: the restarted process ──────────────────────────────────────────

async function phaseTwo(dbFile: string, expected: string[]): Promise<void> {
  heading(`Phase 2 · new process ${process.pid} · fresh SqliteSaver on the same file`);
  const received = new Map<string, unknown>();
  const saver = SqliteSaver.fromConnString(dbFile);
  const mcp = await connectReportServer();
  try {
    const { agent, model } = buildAgent(
      [
        (messages) => ({ tool_calls: [{ id: "call_job_status", name: "job_status", args: { task_id: handleShown(messages, "render-q3-7f3a") } }] }),
        (messages) => ({
          tool_calls: [
            {
              id: "call_send_email",
              name: "send_email",
              args: {
                to: "finance@example.com",
                subject: "Q3 sales report",
                attachments: [handleShown(messages, "q3-report.pdf"), handleShown(messages, "q3-sales.csv")],
                body: `Dashboard: \`${handleShown(messages, "index.html")}\`. Chart: ${handleShown(messages, "q3-revenue.png")}. Totals: ${handleShown(messages, "query_sales structured result")}`,
              },
            },
          ],
        }),
        // A handle the model misremembers from an earlier quarter.
        { tool_calls: [{ id: "call_read_q2", name: "read_file", args: { path: BAD_HANDLE } }] },
        { content: "Sent the Q3 report to finance. The Q2 file handle I tried is not valid here; send me the path if you need it compared." },
      ],
      saver,
      [...localTools(), ...mcp.tools],
      received,
    );

    const loaded = await threadState(agent);
    const handles = loaded.tool_artifacts.map((e) => e.handle);
    check(
      JSON.stringify(handles) === JSON.stringify(expected) && loaded.tool_artifact_processed.length > 0,
      `restart: the new process loaded ${handles.length} registry entries and ${loaded.tool_artifact_processed.length} ledger keys from the checkpoint (${loaded.messages.length} messages)`,
    );
    if (failures.length > 0) return; // nothing to continue from
    console.log();
    const turn = await runTurn(agent, "The render should be done. Check the job, then email the report, the CSV, the dashboard link, the chart and the totals to finance@example.com.", received);
    const state = await threadState(agent);

    console.log("\n  What the model was shown in its first call after the restart:");
    for (const line of (contextBlock(model.seen[0] ?? []) ?? "(no block)").split("\n")) console.log(`    ${line}`);
    console.log();

    const byName = (name: string) => [...turn.written].filter(([, c]) => c.name === name).map(([id]) => id);
    const refOf = (name: string) => state.tool_artifacts.find((e) => e.display_name === name)?.real_ref;
    const [jobCall] = byName("job_status");
    check(
      received.get(jobCall ?? "") !== undefined && JSON.stringify(received.get(jobCall!)) === JSON.stringify({ task_id: "render-q3-7f3a" }) && turn.results.get(jobCall!)?.text.includes("render-q3-7f3a") === true,
      "resolution: the MCP tool job_status got the task id render-q3-7f3a for its handle (the server echoed it)",
    );
    const [mailCall] = byName("send_email");
    const mail = received.get(mailCall ?? "") as { attachments?: string[]; body?: string } | undefined;
    check(
      JSON.stringify(mail?.attachments) === JSON.stringify([refOf("q3-report.pdf"), refOf("q3-sales.csv")]) &&
        mail?.body === `Dashboard: ${refOf("index.html")}. Chart: ${refOf("q3-revenue.png")}. Totals: ${refOf("query_sales structured result")}` &&
        findHandles(mail).length === 0,
      "resolution: send_email got the concrete paths, URLs and JSON totals for the five handles the model wrote",
    );
    const [badCall] = byName("read_file");
    const refusal = turn.results.get(badCall ?? "");
    check(
      !handles.includes(BAD_HANDLE) && refusal?.status === "error" && refusal.text.includes(BAD_HANDLE) && !received.has(badCall!),
      `bad handle rejected: read_file {"path":"${BAD_HANDLE}"} did not run; the model got an error naming the handle`,
    );
    const unique = new Set(state.tool_artifacts.map((e) => e.handle));
    const consumed = state.tool_artifacts.filter((e) => (e.consumed_by?.length ?? 0) > 0);
    check(
      unique.size === state.tool_artifacts.length && expected.every((h) => unique.has(h)) && consumed.length === expected.length,
      `registry: no handle twice, every phase-1 handle kept, ${consumed.length} of ${state.tool_artifacts.length} consumed`,
    );

    console.log("\n  Final registry:");
    console.log(registryTable(state.tool_artifacts));
  } finally {
    saver.db.close();
    await mcp.close();
  }
}

// ── entry ───────────────────────────────────────────────────────────────────

async function main(argv: string[]): Promise<number> {
  const resume = argv.indexOf("--resume");
  if (resume === -1) return firstProcess(argv.includes("--keep"));
  const [dbFile, handles] = argv.slice(resume + 1);
  if (!dbFile || handles === undefined) throw new Error("usage: main.ts --resume <checkpoint file> <handle,handle,…>");
  await phaseTwo(dbFile, handles.split(",").filter(Boolean));
  return failures.length > 0 ? 1 : 0;
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  console.error(`\nexample failed in process ${process.pid}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exitCode = 1;
}
if (failures.length > 0) {
  console.error(`\nexample: ${failures.length} check(s) failed in process ${process.pid}:\n${failures.map((f) => `  - ${f}`).join("\n")}`);
  process.exitCode = 1;
}
