// A thread's checkpoint copied under another thread id (the LangGraph API's
// threads.copy does this): ledger keys hash the thread id, so the copy's
// ledger names none of its messages until rekeyLedger gives their keys under
// the new id.
import { afterEach, describe, expect, it } from "vitest";
import { createAgent } from "langchain";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { generateHandle, occurrenceKey } from "../../src/engine/hash.js";
import { rekeyLedger, toolArtifactsMiddleware, toolArtifactsStateSchema } from "../../src/index.js";
import { ScriptedChatModel } from "../../src/testing/scripted-model.js";
import type { ArtifactEntry } from "../../src/types.js";
import { tempSqliteSaver, type TempSqliteSaver } from "../support/sqlite.js";
import { countingExtract, fileTools } from "./fixtures/capture-tools.js";

describe("rekeyLedger", () => {
  const history = [
    new HumanMessage({ id: "h", content: "go" }),
    new AIMessage({ id: "a1", content: "", tool_calls: [{ id: "c1", name: "write_file", args: { name: "x" } }, { id: "c2", name: "read_file", args: { path: "art_00000000" } }] }),
    new ToolMessage({ id: "t1", tool_call_id: "c1", content: "wrote /mnt/user-data/x" }),
    new ToolMessage({ id: "t2", tool_call_id: "c2", content: "refused" }),
    // Not recorded yet (a returnDirect result, say): it stays unrecorded.
    new ToolMessage({ id: "t3", tool_call_id: "c9", content: "wrote /mnt/user-data/y" }),
    // No id: named by its occurrence among the results of its call id.
    new ToolMessage({ tool_call_id: "c1", content: "again" }),
  ];
  const keys = (thread: string) => ({
    t1: occurrenceKey("result", thread, "t1", "c1", 0),
    t2: occurrenceKey("result", thread, "t2", "c2", 0),
    t3: occurrenceKey("result", thread, "t3", "c9", 0),
    idless: occurrenceKey("result", thread, null, "c1", 1),
    c1: occurrenceKey("call", thread, "a1", "c1", 0),
    c2: occurrenceKey("call", thread, "a1", "c2", 1),
  });
  const a = keys("a");
  const b = keys("b");

  it("gives the copy's key for each result and call the ledger records, a pending retry as a retry, and nothing for the rest", () => {
    const ledger = [a.t1, a.t2, a.idless, a.c1, `retry:${a.c2}`, "result:someone-elses"];
    expect(rekeyLedger({ messages: history, tool_artifact_processed: ledger }, "a", "b").sort()).toEqual([b.t1, b.t2, b.idless, b.c1, `retry:${b.c2}`].sort());
  });

  it("reads a retry recorded as earlier builds wrote it, and the plain messages the LangGraph API returns", () => {
    const plain = history.map((m) => ({ ...m.toDict().data, type: m.type }));
    const ledger = [`retry:${a.c2.slice("call:".length)}`];
    expect(rekeyLedger({ messages: plain, tool_artifact_processed: ledger }, "a", "b")).toEqual([`retry:${b.c2}`]);
    expect(rekeyLedger({ messages: plain, tool_artifact_processed: [a.t3, a.c2] }, "a", "b").sort()).toEqual([b.t3, b.c2].sort());
    // LangChain's serialized form (JSON.stringify of the values) reads as the messages.
    const serialized = JSON.parse(JSON.stringify(history)) as unknown[];
    expect(serialized[2]).toMatchObject({ lc: 1, type: "constructor" });
    expect(rekeyLedger({ messages: serialized, tool_artifact_processed: [a.t1, a.idless, a.c1] }, "a", "b").sort()).toEqual([b.t1, b.idless, b.c1].sort());
  });

  it("gives nothing for an empty ledger or the same thread, and names a bad argument", () => {
    expect(rekeyLedger({ messages: history, tool_artifact_processed: [] }, "a", "b")).toEqual([]);
    expect(rekeyLedger({ messages: history }, "a", "b")).toEqual([]);
    expect(rekeyLedger({ messages: history, tool_artifact_processed: [a.t1] }, "a", "a")).toEqual([]);
    expect(() => rekeyLedger(null as never, "a", "b")).toThrow(/rekeyLedger: state must be a thread's state values/);
    // A snapshot, not its values: refused rather than read as an empty history.
    expect(() => rekeyLedger({ values: { messages: history, tool_artifact_processed: [a.t1] } } as never, "a", "b")).toThrow(/a messages array \(getState\(config\)\.values\), got object/);
    expect(() => rekeyLedger({ messages: history }, "", "b")).toThrow(/fromThreadId must be a non-empty string, got ""/);
    expect(() => rekeyLedger({ messages: history }, "a", 7 as never)).toThrow(/toThreadId must be a non-empty string, got number 7/);
  });
});

describe("a thread copied under a new id, on SQLite", () => {
  let db: TempSqliteSaver | undefined;
  afterEach(() => db?.cleanup());

  /** Eleven turns writing one file each (over a window of ten), a read by the newest handle, then a copy of the thread's last checkpoint under "B". */
  async function copiedThread() {
    db = tempSqliteSaver();
    const { received, tools } = fileTools();
    const { scanned, extract } = countingExtract();
    // Each turn: the user's text is "write <name>" or "read <path>"; a tool result since then ends the turn.
    const turn = (messages: BaseMessage[]) => {
      let user = messages.length - 1;
      while (!(HumanMessage.isInstance(messages[user]) && messages[user]!.additional_kwargs?.durable_context_data !== true)) user--;
      if (messages.slice(user + 1).some((m) => ToolMessage.isInstance(m))) return { content: "done" };
      const [verb, arg] = String(messages[user].content).split(" ");
      return { tool_calls: [verb === "write" ? { name: "write_file", args: { name: arg } } : { name: "read_file", args: { path: arg } }] };
    };
    const artifacts = toolArtifactsMiddleware({ maxEntries: 10 }, { capture: { extract } });
    const agent = createAgent({
      model: new ScriptedChatModel(Array.from({ length: 100 }, () => turn)),
      tools,
      stateSchema: toolArtifactsStateSchema,
      middleware: [artifacts.capture, artifacts.resolution, artifacts.projection],
      checkpointer: db.saver,
    });
    const A = { configurable: { thread_id: "A" } };
    const B = { configurable: { thread_id: "B" } };
    for (let i = 1; i <= 11; i++) await agent.invoke({ messages: [{ role: "user", content: `write r${i}.pdf` }] }, A);
    const newest = ((await agent.graph.getState(A)).values.tool_artifacts as ArtifactEntry[]).at(-1)!;
    expect(newest.real_ref).toBe("/mnt/user-data/r11.pdf");
    await agent.invoke({ messages: [{ role: "user", content: `read ${newest.handle}` }] }, A);
    expect(received).toEqual([{ path: "/mnt/user-data/r11.pdf" }]);
    // The copy as a checkpointer copy makes it: the last checkpoint, as it is, under the new id.
    const last = (await db.saver.getTuple(A))!;
    await db.saver.put({ configurable: { thread_id: "B", checkpoint_ns: "" } }, last.checkpoint, last.metadata!);
    const copied = (await agent.graph.getState(B)).values as { tool_artifacts: ArtifactEntry[]; tool_artifact_processed: string[]; messages: BaseMessage[] };
    expect(copied.tool_artifacts).toEqual((await agent.graph.getState(A)).values.tool_artifacts);
    scanned.length = 0;
    received.length = 0;
    return { agent, B, newest, copied, scanned, received };
  }

  it("without rekeying, the copy's next round takes its whole history for new: old handles are pushed out and refused", async () => {
    const { agent, B, newest, scanned, received } = await copiedThread();
    const out = await agent.invoke({ messages: [{ role: "user", content: `read ${newest.handle}` }] }, B);
    expect(scanned).toHaveLength(13); // the 12 earlier results, scanned again, and the new one
    expect(received).toEqual([]);
    const refusal = out.messages.filter((m) => ToolMessage.isInstance(m)).at(-1)!;
    expect(refusal.content).toContain(`unknown or expired artifact handle ${newest.handle}`);
    const refs = (out.tool_artifacts as ArtifactEntry[]).map((e) => e.real_ref);
    expect(refs).toContain("/mnt/user-data/r11.pdf"); // registered again, under another handle
    expect((out.tool_artifacts as ArtifactEntry[]).map((e) => e.handle)).not.toContain(newest.handle);
  });

  it("with rekeyLedger's keys added, the copy scans only what is new and its handles keep resolving", async () => {
    const { agent, B, newest, copied, scanned, received } = await copiedThread();
    const keys = rekeyLedger(copied, "A", "B");
    // 12 results and 12 calls, every one of them recorded in A's ledger.
    expect(keys).toHaveLength(24);
    await agent.graph.updateState(B, { tool_artifact_processed: keys });
    const out = await agent.invoke({ messages: [{ role: "user", content: `read ${newest.handle}` }] }, B);
    expect(scanned).toHaveLength(1); // the new read's result only
    expect(received).toEqual([{ path: "/mnt/user-data/r11.pdf" }]);
    const after = out.tool_artifacts as ArtifactEntry[];
    expect(after.map((e) => e.handle)).toEqual(copied.tool_artifacts.map((e) => e.handle));
    expect(after.at(-1)!.consumed_by).toHaveLength(2); // A's read and the copy's
    // A result the copy makes from here gets a handle of the copy's own thread.
    const more = await agent.invoke({ messages: [{ role: "user", content: "write s1.pdf" }] }, B);
    const s1 = (more.tool_artifacts as ArtifactEntry[]).at(-1)!;
    expect(s1.real_ref).toBe("/mnt/user-data/s1.pdf");
    const result = more.messages.filter((m) => ToolMessage.isInstance(m)).at(-1) as ToolMessage;
    expect(s1.handle).toBe(generateHandle("B", result.tool_call_id, 0, 0, result.id));
    expect(s1.handle).not.toBe(generateHandle("A", result.tool_call_id, 0, 0, result.id));
    expect(copied.tool_artifacts.map((e) => e.handle)).not.toContain(s1.handle);
  });
});
