// Compaction by LangChain.js's own summarizationMiddleware: old tool results
// leave the history, the registry and the ledger stay, and a handle minted
// before compaction still resolves afterwards.
import { afterEach, expect, it } from "vitest";
import { ClearToolUsesEdit, contextEditingMiddleware, createAgent, summarizationMiddleware } from "langchain";
import { ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { captureMiddleware } from "../../src/middleware/capture.js";
import { resolutionMiddleware } from "../../src/middleware/resolution.js";
import { parseToolArtifactsConfig } from "../../src/config.js";
import { generateHandle, occurrenceKey } from "../../src/engine/hash.js";
import { orderMiddleware, orderingName } from "../../src/ordering.js";
import { ScriptedChatModel } from "../../src/testing/scripted-model.js";
import type { ArtifactEntry } from "../../src/types.js";
import { tempSqliteSaver, type TempSqliteSaver } from "../support/sqlite.js";
import { countingExtract, fileTools } from "./fixtures/capture-tools.js";

let db: TempSqliteSaver | undefined;
afterEach(() => db?.cleanup());

const THREAD = "compaction";

it("keeps the registry and the ledger through summarization, and resolves a handle minted before it", async () => {
  db = tempSqliteSaver();
  const config = parseToolArtifactsConfig({});
  const { scanned, extract } = countingExtract();
  const { received, tools } = fileTools();
  let early: { handle: string; result: ToolMessage } | undefined;
  const model = new ScriptedChatModel([
    { tool_calls: [{ id: "w-a", name: "write_file", args: { name: "a.txt" } }] },
    (messages: BaseMessage[]) => {
      const result = messages.find((m): m is ToolMessage => ToolMessage.isInstance(m) && m.tool_call_id === "w-a")!;
      early = { handle: generateHandle(THREAD, "w-a", 0, 0, result.id), result };
      return { tool_calls: [{ id: "w-b", name: "write_file", args: { name: "b.txt" } }] };
    },
    { tool_calls: [{ id: "w-c", name: "write_file", args: { name: "c.txt" } }] },
    // By now the history is compacted: only the handle can name a.txt.
    () => ({ tool_calls: [{ id: "r-a", name: "read_file", args: { path: early!.handle } }] }),
    { content: "done" },
  ]);
  const summaryModel = new ScriptedChatModel([{ content: "Wrote a.txt, b.txt and c.txt." }]);
  const summarization = summarizationMiddleware({ model: summaryModel, trigger: { messages: 6 }, keep: { messages: 2 } });

  // The host lists summarization first; the constraints put capture ahead of it.
  const middleware = orderMiddleware([summarization, resolutionMiddleware(config), captureMiddleware(config, { extract })]);
  const names = middleware.map(orderingName);
  expect(names.indexOf("tool-artifacts-capture")).toBeLessThan(names.indexOf("summarization"));

  const agent = createAgent({ model, tools, middleware, checkpointer: db.saver });
  const state = (await agent.invoke({ messages: [{ role: "user", content: "write three files, then read the first" }] }, { configurable: { thread_id: THREAD } })) as unknown as {
    messages: BaseMessage[];
    tool_artifacts: ArtifactEntry[];
    tool_artifact_processed: string[];
  };

  // Compaction happened and took the early results with it.
  expect(summaryModel.calls).toBe(1);
  expect(state.messages[0].content).toContain("Wrote a.txt, b.txt and c.txt.");
  const remaining = state.messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m)).map((m) => m.tool_call_id);
  expect(remaining).not.toContain("w-a");
  expect(remaining).not.toContain("w-b");

  // The registry did not forget, and nothing was captured twice.
  expect(state.tool_artifacts.map((e) => e.real_ref)).toEqual(["/mnt/user-data/a.txt", "/mnt/user-data/b.txt", "/mnt/user-data/c.txt"]);
  expect(scanned).toEqual(["w-a", "w-b", "w-c", "r-a"]); // each result once
  expect(state.tool_artifact_processed).toHaveLength(8); // four results, four calls
  expect(state.tool_artifact_processed).toContain(occurrenceKey("result", THREAD, early!.result.id, "w-a", 0));

  // The pre-compaction handle resolved, and the call that used it is recorded.
  expect(received).toEqual([{ path: "/mnt/user-data/a.txt" }]);
  expect(state.tool_artifacts.find((e) => e.handle === early!.handle)?.consumed_by).toEqual(["r-a"]);
});

it("captures a result that langchain's context editing clears in place, as a fresh process would, and resolves its handle", async () => {
  // ClearToolUsesEdit replaces old results inside the request's messages
  // array, which in a round where capture wrote nothing is the state's own
  // array: the one capture read that round.
  db = tempSqliteSaver();
  const config = parseToolArtifactsConfig({});
  const capture = captureMiddleware(config); // one instance for the whole thread, as a host keeps it
  const editing = () =>
    contextEditingMiddleware({ edits: [new ClearToolUsesEdit({ trigger: { tokens: 300 }, keep: { messages: 1 }, placeholder: "archived to /mnt/user-data/archive-a.txt" })] });
  const run = { configurable: { thread_id: THREAD } };
  const first = fileTools();
  const writeTwo = new ScriptedChatModel([
    { tool_calls: [{ id: "w1", name: "write_file", args: { name: "a.txt" } }] },
    { tool_calls: [{ id: "w2", name: "write_file", args: { name: "b.txt" } }] },
    { content: "ok" },
  ]);
  await createAgent({ model: writeTwo, tools: first.tools, middleware: [capture, resolutionMiddleware(config), editing()], checkpointer: db.saver }).invoke(
    { messages: [{ role: "user", content: "write two" }] },
    run,
  );

  // A long message crosses the trigger in a round with nothing new to capture.
  const second = fileTools();
  let archive: string | undefined;
  const readArchive = new ScriptedChatModel([
    { tool_calls: [{ id: "w3", name: "write_file", args: { name: "c.txt" } }] },
    (messages: BaseMessage[]) => {
      const cleared = messages.find((m): m is ToolMessage => ToolMessage.isInstance(m) && m.tool_call_id === "w1")!;
      expect(cleared.content).toBe("archived to /mnt/user-data/archive-a.txt");
      archive = generateHandle(THREAD, "w1", 0, 0, cleared.id);
      return { tool_calls: [{ id: "r1", name: "read_file", args: { path: archive } }] };
    },
    { content: "ok" },
  ]);
  const state = (await createAgent({ model: readArchive, tools: second.tools, middleware: [capture, resolutionMiddleware(config), editing()], checkpointer: db.saver }).invoke(
    { messages: [{ role: "user", content: "x".repeat(2000) }] },
    run,
  )) as unknown as { tool_artifacts: ArtifactEntry[] };

  expect(second.received).toEqual([{ path: "/mnt/user-data/archive-a.txt" }]);
  const entry = state.tool_artifacts.find((e) => e.handle === archive);
  expect(entry).toMatchObject({ real_ref: "/mnt/user-data/archive-a.txt", tool_call_id: "w1", consumed_by: ["r1"] });
});
