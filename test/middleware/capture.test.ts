// Capture in real agents: createAgent, a scripted chat model, real tools and a
// SQLite checkpointer on a temp file. Graph recreation in a new process and
// compaction have their own files (capture.restart / capture.compaction).
import { afterEach, describe, expect, it, vi } from "vitest";
import { createAgent } from "langchain";
import { AIMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { captureMiddleware } from "../../src/middleware/capture.js";
import { resolutionMiddleware } from "../../src/middleware/resolution.js";
import { parseToolArtifactsConfig, type ToolArtifactsConfigInput } from "../../src/config.js";
import { generateHandle, occurrenceKey } from "../../src/engine/hash.js";
import { orderMiddleware } from "../../src/ordering.js";
import { ScriptedChatModel, type ScriptedStep } from "../../src/testing/scripted-model.js";
import type { ArtifactEntry } from "../../src/types.js";
import { tempSqliteSaver, type TempSqliteSaver } from "../support/sqlite.js";
import { fileTools } from "./fixtures/capture-tools.js";

const dbs: TempSqliteSaver[] = [];
afterEach(() => {
  for (const db of dbs.splice(0)) db.cleanup();
});

function sqlite() {
  const db = tempSqliteSaver();
  dbs.push(db);
  return db.saver;
}

function agent(script: ScriptedStep[], options: { config?: ToolArtifactsConfigInput; checkpointer?: ReturnType<typeof sqlite> } = {}) {
  const config = parseToolArtifactsConfig(options.config ?? {});
  const t = fileTools();
  const a = createAgent({
    model: new ScriptedChatModel(script),
    tools: t.tools,
    middleware: orderMiddleware([resolutionMiddleware(config), captureMiddleware(config)]),
    checkpointer: options.checkpointer,
  });
  return { agent: a, received: t.received };
}

function toolResults(messages: readonly BaseMessage[]): ToolMessage[] {
  return messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m));
}

/** The handle of a result's first reference, derived as DESIGN §2 says capture mints it. */
const firstHandle = (thread: string, m: ToolMessage) => generateHandle(thread, m.tool_call_id, 0, 0, m.id);

interface Channels {
  messages: BaseMessage[];
  tool_artifacts: ArtifactEntry[];
  tool_artifact_processed: string[];
}

async function invoke(a: ReturnType<typeof agent>["agent"], text: string, thread?: string, context?: Record<string, unknown>): Promise<Channels> {
  const config: Record<string, unknown> = {};
  if (thread !== undefined) config.configurable = { thread_id: thread };
  if (context !== undefined) config.context = context;
  return (await a.invoke({ messages: [{ role: "user", content: text }] }, config as never)) as unknown as Channels;
}

describe("capture in an agent", () => {
  it("keeps the first of two references whose handles coincide, and says so, naming their calls; a reference registered already is skipped without a word", async () => {
    // 8 hex digits are 32 bits: this pair was found among the handles of
    // calls call_0 … call_399999 (results tool_0 …) of thread "collide".
    const thread = "collide";
    const [first, second] = [17884, 128635].map((i) => ({ call: `call_${i}`, id: `tool_${i}` }));
    const handle = generateHandle(thread, first!.call, 0, 0, first!.id);
    expect(generateHandle(thread, second!.call, 0, 0, second!.id)).toBe(handle);
    const history = [
      new AIMessage({ id: "ai-1", content: "", tool_calls: [{ id: first!.call, name: "write_file", args: { name: "a.txt" } }, { id: second!.call, name: "write_file", args: { name: "b.txt" } }] }),
      new ToolMessage({ id: first!.id, tool_call_id: first!.call, name: "write_file", content: "wrote /mnt/user-data/a.txt" }),
      new ToolMessage({ id: second!.id, tool_call_id: second!.call, name: "write_file", content: "wrote /mnt/user-data/b.txt" }),
    ];
    const said = `tool-artifacts: the handle ${handle} of a reference from tool call "call_128635" ("write_file") is already that of another reference, from tool call "call_17884"; the later reference gets no handle (handles are 8 hex digits, and capture keeps the first)`;
    const warn = vi.spyOn(process, "emitWarning").mockImplementation(() => {});
    try {
      const { agent: a } = agent([], { checkpointer: sqlite() });
      const state = (await a.invoke({ messages: history }, { configurable: { thread_id: thread } })) as unknown as Channels;
      expect(state.tool_artifacts.map((e) => [e.handle, e.real_ref])).toEqual([[handle, "/mnt/user-data/a.txt"]]);
      expect(warn.mock.calls).toEqual([[said, { code: "TOOL_ARTIFACTS_HANDLE_TAKEN" }]]);
      // The ledger holds both results: a later round reads neither again.
      await invoke(a, "again", thread);
      expect(warn).toHaveBeenCalledTimes(1);

      // A registry given with the thread (another writer's) that holds a.txt's entry, and no ledger: a.txt is read again, and skipped quietly.
      const { agent: b } = agent([], { checkpointer: sqlite() });
      const seeded = (await b.invoke({ messages: history, tool_artifacts: state.tool_artifacts } as never, { configurable: { thread_id: thread } })) as unknown as Channels;
      expect(seeded.tool_artifacts).toEqual(state.tool_artifacts);
      expect(warn.mock.calls).toEqual([[said, { code: "TOOL_ARTIFACTS_HANDLE_TAKEN" }], [said, { code: "TOOL_ARTIFACTS_HANDLE_TAKEN" }]]);
    } finally {
      warn.mockRestore();
    }
  });

  it("captures parallel tool calls under distinct handles and records which later calls consumed them", async () => {
    const thread = "parallel";
    let minted: string[] = [];
    const { agent: a, received } = agent(
      [
        { tool_calls: [{ id: "w1", name: "write_file", args: { name: "a.txt" } }, { id: "w2", name: "write_file", args: { name: "b.txt" } }] },
        (messages) => {
          minted = toolResults(messages).map((m) => firstHandle(thread, m));
          return {
            tool_calls: [
              { id: "r1", name: "read_file", args: { path: minted[0] } },
              { id: "r2", name: "read_file", args: { path: `\`${minted[1]}\``, also: [{ p: minted[0] }] } },
            ],
          };
        },
        { content: "done" },
      ],
      { checkpointer: sqlite() },
    );
    const state = await invoke(a, "write two files, then read them", thread);

    expect(new Set(minted).size).toBe(2);
    expect(state.tool_artifacts.map((e) => [e.handle, e.real_ref, e.tool_call_id, e.consumed_by])).toEqual([
      [minted[0], "/mnt/user-data/a.txt", "w1", ["r1", "r2"]],
      [minted[1], "/mnt/user-data/b.txt", "w2", ["r2"]],
    ]);
    // Resolution gave the tools the references.
    expect(received).toEqual([{ path: "/mnt/user-data/a.txt" }, { path: "/mnt/user-data/b.txt", also: [{ p: "/mnt/user-data/a.txt" }] }]);

    // The ledger: each round's results, then its calls; every call settled, nothing twice.
    const [writes, reads] = [state.messages[1], state.messages[4]];
    const results = toolResults(state.messages);
    const result = (m: ToolMessage) => occurrenceKey("result", thread, m.id, m.tool_call_id, 0);
    expect(state.tool_artifact_processed).toEqual([
      result(results[0]),
      result(results[1]),
      occurrenceKey("call", thread, writes.id, "w1", 0),
      occurrenceKey("call", thread, writes.id, "w2", 1),
      result(results[2]),
      result(results[3]),
      occurrenceKey("call", thread, reads.id, "r1", 0),
      occurrenceKey("call", thread, reads.id, "r2", 1),
    ]);
  });

  it("writes its channels, never the history: a round that captures leaves messages as they are, unwritten", async () => {
    const thread = "writes";
    const { agent: a } = agent([{ tool_calls: [{ id: "w1", name: "write_file", args: { name: "a.txt" } }] }, { content: "done" }], { checkpointer: sqlite() });
    const updates: Array<Record<string, unknown>> = [];
    const input = { messages: [{ role: "user", content: "write it" }] };
    for await (const chunk of await a.stream(input as never, { configurable: { thread_id: thread }, streamMode: "updates" })) updates.push(chunk as Record<string, unknown>);
    const captured = updates
      .flatMap((chunk) => Object.entries(chunk))
      .filter(([node, update]) => node.startsWith("tool-artifacts-capture") && (update as Channels | null)?.tool_artifacts?.length)
      .map(([, update]) => update as Channels);
    expect(captured).toHaveLength(1);
    // langchain writes a hook's update over the state it was given: without
    // the empty list, the whole history would be written back each such round.
    expect(captured[0]!.messages).toEqual([]);
    const state = (await a.graph.getState({ configurable: { thread_id: thread } })).values as Channels;
    expect(state.messages.map((m) => m.getType())).toEqual(["human", "ai", "tool", "ai"]);
    expect(state.tool_artifacts.map((e) => e.real_ref)).toEqual(["/mnt/user-data/a.txt"]);
  });

  it("settles a call with an unknown handle after exactly one retry, across invocations", async () => {
    const thread = "unknown-handle";
    const { agent: a, received } = agent([{ tool_calls: [{ id: "r1", name: "read_file", args: { path: "art_deadbeef" } }] }, { content: "that handle is unknown" }, { content: "ok" }, { content: "ok" }], {
      checkpointer: sqlite(),
    });

    const first = await invoke(a, "read art_deadbeef", thread);
    expect(received).toEqual([]); // resolution refused to run the tool
    const [refusal] = toolResults(first.messages);
    expect(refusal.status).toBe("error");
    const callKey = occurrenceKey("call", thread, first.messages[1].id, "r1", 0);
    const retry = `retry:${callKey}`;
    const resultKey = occurrenceKey("result", thread, refusal.id, "r1", 0);
    expect(first.tool_artifact_processed).toEqual([resultKey, retry]);
    expect(first.tool_artifacts).toEqual([]);

    const second = await invoke(a, "anything else?", thread);
    expect(second.tool_artifact_processed).toEqual([resultKey, retry, callKey]);

    // Settled: later rounds leave the ledger alone.
    const third = await invoke(a, "still there?", thread);
    expect(third.tool_artifact_processed).toEqual([resultKey, retry, callKey]);
  });

  it("keeps a per-agent sliding window of maxEntries: the oldest go, the fresh stay", async () => {
    const script: ScriptedStep[] = [
      { tool_calls: [{ name: "make_files", args: { tag: "first", count: 8 } }] },
      { tool_calls: [{ name: "make_files", args: { tag: "second", count: 6 } }] },
      { tool_calls: [{ name: "make_files", args: { tag: "third", count: 12 } }] },
      { content: "done" },
    ];
    const checkpointer = sqlite();
    const small = agent(script, { config: { maxEntries: 10 }, checkpointer });
    const large = agent(script, { config: { maxEntries: 25 }, checkpointer });
    // Both at once in one process, on one checkpointer: each keeps its own cap.
    const [s, l] = await Promise.all([invoke(small.agent, "make files", "cap-10"), invoke(large.agent, "make files", "cap-25")]);

    const refs = (tag: string, from: number, to: number) => Array.from({ length: to - from }, (_, i) => `/mnt/user-data/${tag}-${from + i}.txt`);
    expect(s.tool_artifacts.map((e) => e.real_ref)).toEqual(refs("third", 2, 12));
    expect(l.tool_artifacts.map((e) => e.real_ref)).toEqual([...refs("first", 1, 8), ...refs("second", 0, 6), ...refs("third", 0, 12)]);
    // Eviction never touches the ledger: every result and call is still recorded.
    expect(s.tool_artifact_processed).toHaveLength(6);
    expect(l.tool_artifact_processed).toHaveLength(6);
  });

  it("records nothing when disabled, whatever the tools return", async () => {
    const { agent: a } = agent([{ tool_calls: [{ name: "write_file", args: { name: "a.txt" } }] }, { content: "done" }], {
      config: { enabled: false },
      checkpointer: sqlite(),
    });
    const state = await invoke(a, "write", "disabled");
    expect(toolResults(state.messages)).toHaveLength(1);
    expect(state.tool_artifacts).toEqual([]);
    expect(state.tool_artifact_processed).toEqual([]);
  });

  it("records nothing without a thread id, and takes one from the context", async () => {
    const script: ScriptedStep[] = [{ tool_calls: [{ name: "write_file", args: { name: "a.txt" } }] }, { content: "done" }];
    const warn = vi.spyOn(process, "emitWarning").mockImplementation(() => {});
    try {
      const unthreaded = agent(script).agent;
      const none = await invoke(unthreaded, "write");
      expect(toolResults(none.messages)).toHaveLength(1);
      expect(none.tool_artifacts).toEqual([]);
      expect(none.tool_artifact_processed).toEqual([]);
      // Said once per middleware (the run above called the hook twice), naming what it got.
      await invoke(unthreaded, "write", undefined, { thread_id: 7 });
      expect(warn.mock.calls).toEqual([
        [expect.stringMatching(/^tool-artifacts: capture needs a non-empty string thread id .*, got none;/), { code: "TOOL_ARTIFACTS_NO_THREAD_ID" }],
      ]);
      await invoke(agent(script).agent, "write", undefined, { thread_id: 7 });
      expect(warn.mock.calls[1]![0]).toMatch(/got number;/);
      await invoke(agent(script).agent, "write", "");
      expect(warn.mock.calls[2]![0]).toMatch(/got an empty string;/);
    } finally {
      warn.mockRestore();
    }

    const viaContext = await invoke(agent(script).agent, "write", undefined, { thread_id: "from-context" });
    const [written] = toolResults(viaContext.messages);
    expect(viaContext.tool_artifacts.map((e) => e.handle)).toEqual([firstHandle("from-context", written)]);
  });
});
