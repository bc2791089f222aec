// Graph recreation in a new process on the same SQLite file: the ledger in
// the checkpoint is the only memory capture has, so nothing already
// processed is scanned again, no handle is minted twice, and a pending retry
// is settled by the next process.
import { afterEach, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { createAgent } from "langchain";
import { ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { captureMiddleware } from "../../src/middleware/capture.js";
import { resolutionMiddleware } from "../../src/middleware/resolution.js";
import { parseToolArtifactsConfig } from "../../src/config.js";
import { generateHandle, occurrenceKey } from "../../src/engine/hash.js";
import { orderMiddleware } from "../../src/ordering.js";
import { toolArtifactsMiddleware, toolArtifactsStateSchema } from "../../src/index.js";
import { ScriptedChatModel } from "../../src/testing/scripted-model.js";
import type { ArtifactEntry } from "../../src/types.js";
import { resultIds } from "../support/result-ids.js";
import { tempSqliteSaver, type TempSqliteSaver } from "../support/sqlite.js";
import { countingExtract, fileTools } from "./fixtures/capture-tools.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CHILD = fileURLToPath(new URL("./fixtures/capture-restart-child.ts", import.meta.url));
const THREAD = "restart";

interface ChildResult {
  scanned: string[];
  received: unknown[];
  tool_artifacts: ArtifactEntry[];
  tool_artifact_processed: string[];
}

async function child(dbFile: string, mode: "write" | "idle"): Promise<ChildResult> {
  const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", CHILD, dbFile, THREAD, mode], { cwd: ROOT, timeout: 60_000 });
  const line = stdout.split("\n").find((l) => l.startsWith("RESULT "));
  if (line === undefined) throw new Error(`child printed no result:\n${stdout}`);
  return JSON.parse(line.slice("RESULT ".length)) as ChildResult;
}

let db: TempSqliteSaver | undefined;
afterEach(() => db?.cleanup());

it("captures nothing twice when a new process recreates the graph on the same SQLite file", async () => {
  db = tempSqliteSaver();
  const config = parseToolArtifactsConfig({});
  const { scanned, extract } = countingExtract();
  const { tools } = fileTools();

  // This process: two parallel writes, then one read by handle and one by an
  // unknown handle (refused, so its call is left with a pending retry).
  const model = new ScriptedChatModel([
    { tool_calls: [{ id: "w1", name: "write_file", args: { name: "a.txt" } }, { id: "w2", name: "write_file", args: { name: "b.txt" } }] },
    (messages: BaseMessage[]) => {
      const a = messages.find((m): m is ToolMessage => ToolMessage.isInstance(m) && m.tool_call_id === "w1")!;
      return {
        tool_calls: [
          { id: "r1", name: "read_file", args: { path: generateHandle(THREAD, "w1", 0, 0, a.id) } },
          { id: "r2", name: "read_file", args: { path: "art_deadbeef" } },
        ],
      };
    },
    { content: "done" },
  ]);
  const agent = createAgent({ model, tools, middleware: orderMiddleware([resolutionMiddleware(config), captureMiddleware(config, { extract })]), checkpointer: db.saver });
  const before = (await agent.invoke({ messages: [{ role: "user", content: "write and read" }] }, { configurable: { thread_id: THREAD } })) as unknown as {
    messages: BaseMessage[];
    tool_artifacts: ArtifactEntry[];
    tool_artifact_processed: string[];
  };
  expect(scanned).toEqual(["w1", "w2", "r1", "r2"]);
  const r2Call = occurrenceKey("call", THREAD, before.messages[4].id, "r2", 1);
  expect(before.tool_artifact_processed).toHaveLength(8);
  expect(before.tool_artifact_processed.at(-1)).toBe(`retry:${r2Call}`);
  expect(before.tool_artifact_processed).not.toContain(r2Call);

  // A new process, a new graph, a new saver on the same file, one more turn.
  const after = await child(db.path, "write");
  expect(after.scanned).toEqual(["w3", "r3"]); // only the new results
  expect(after.received).toEqual([{ path: "/mnt/user-data/b.txt" }]);
  const handles = after.tool_artifacts.map((e) => e.handle);
  expect(new Set(handles).size).toBe(handles.length);
  expect(after.tool_artifacts.map((e) => [e.real_ref, e.consumed_by])).toEqual([
    ["/mnt/user-data/a.txt", ["r1"]],
    ["/mnt/user-data/b.txt", ["r3"]],
    ["/mnt/user-data/c.txt", undefined],
  ]);
  expect(after.tool_artifacts.slice(0, 1)).toEqual(before.tool_artifacts.slice(0, 1));
  // The ledger only grew: the retried call settled first, then the new turn.
  expect(after.tool_artifact_processed.slice(0, 8)).toEqual(before.tool_artifact_processed);
  expect(after.tool_artifact_processed[8]).toBe(r2Call);
  expect(after.tool_artifact_processed).toHaveLength(13);

  // Once more, a turn without tools: nothing scanned, nothing recorded.
  const idle = await child(db.path, "idle");
  expect(idle.scanned).toEqual([]);
  expect(idle.tool_artifact_processed).toEqual(after.tool_artifact_processed);
  expect(idle.tool_artifacts).toEqual(after.tool_artifacts);
});

it("keeps a harness's handles when each result gets an id of its own, as README shows: the same in a fresh checkpointer, each result captured once", async () => {
  // README ("What a handle depends on"): the id goes on a new ToolMessage,
  // since a message is stored from the fields it was built with; an id only
  // assigned to the returned message is gone from the checkpoint, and the
  // reducer's random id at the next run makes it a new result.
  const { tools } = fileTools();
  /** One episode in a fresh checkpointer: a write, then a second turn after a restart (a fresh saver and agent on the file). */
  const episode = async (form: "new message" | "assigned") => {
    const episodeDb = tempSqliteSaver();
    try {
      const agentOn = (saver: TempSqliteSaver["saver"], model: ScriptedChatModel) =>
        createAgent({ model, tools, stateSchema: toolArtifactsStateSchema, checkpointer: saver, middleware: orderMiddleware([resultIds(form), ...toolArtifactsMiddleware()]) });
      const config = { configurable: { thread_id: THREAD } };
      const first = agentOn(episodeDb.saver, new ScriptedChatModel([{ tool_calls: [{ id: "w1", name: "write_file", args: { name: "a.txt" } }] }, { content: "done" }]));
      await first.invoke({ messages: [{ role: "user", content: "write a.txt" }] }, config);
      const second = agentOn(episodeDb.reopen(), new ScriptedChatModel([{ content: "nothing else" }]));
      const state = await second.invoke({ messages: [{ role: "user", content: "anything else?" }] }, config);
      return state.tool_artifacts.map((e) => e.handle);
    } finally {
      episodeDb.cleanup();
    }
  };
  const stable = generateHandle(THREAD, "w1", 0, 0, "result-w1");
  expect(await episode("new message")).toEqual([stable]);
  expect(await episode("new message")).toEqual([stable]);
  // The assigned id: captured under it, then again under the reducer's random id.
  const assigned = await episode("assigned");
  expect(assigned).toHaveLength(2);
  expect(assigned[0]).toBe(stable);
});
