/**
 * An agent as a node of a host's own StateGraph that declares the artifact
 * channels too (README "An agent inside a graph of your own"): the parent's
 * channels take the agent's whole registry through their reducers, with
 * LangGraph's rules for subgraph output and concurrent writes.
 */
import { HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { END, MessagesValue, START, StateGraph, StateSchema, type LangGraphRunnableConfig } from "@langchain/langgraph";
import { createAgent, humanInTheLoopMiddleware, tool } from "langchain";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { resolveHandles } from "../../src/handles.js";
import { rekeyLedger, toolArtifactsMiddleware } from "../../src/middleware/index.js";
import { toolArtifactsStateSchema } from "../../src/registry.js";
import { ScriptedChatModel, type ScriptedStep } from "../../src/testing/scripted-model.js";
import type { ArtifactEntry } from "../../src/types.js";
import { handleShown, handlesShown } from "../support/block.js";
import { tempSqliteSaver } from "../support/sqlite.js";

const Parent = new StateSchema({ messages: MessagesValue, ...toolArtifactsStateSchema.fields });

function agentWith(script: ScriptedStep[], options: { maxEntries?: number; review?: boolean } = {}) {
  const reads: string[] = [];
  const write = tool(async ({ name }: { name: string }) => `wrote /mnt/user-data/${name}`, { name: "write_file", description: "Write a file", schema: z.object({ name: z.string() }) });
  const read = tool(async ({ path }: { path: string }) => (reads.push(path), `read ${path}`), { name: "read_file", description: "Read a file", schema: z.object({ path: z.string() }) });
  const review = options.review ? [humanInTheLoopMiddleware({ interruptOn: { read_file: true } })] : [];
  const agent = createAgent({
    model: new ScriptedChatModel(script),
    tools: [write, read],
    stateSchema: toolArtifactsStateSchema,
    middleware: [...review, ...toolArtifactsMiddleware({ maxEntries: options.maxEntries })],
  });
  return { graph: agent.graph, reads };
}

const writes = (from: number, n: number): ScriptedStep => ({ tool_calls: Array.from({ length: n }, (_, i) => ({ name: "write_file", args: { name: `f${from + i}.txt` } })) });

describe("an agent inside a graph of your own", () => {
  it("keeps in the parent's channel the entries the agent evicted, while the agent shows and resolves only its window", async () => {
    let shown: string[] = [];
    let evicted: ArtifactEntry | undefined;
    const { graph, reads } = agentWith(
      [
        writes(0, 8),
        { content: "ok" },
        writes(8, 8),
        { content: "ok" },
        (messages: BaseMessage[]) => ((shown = handlesShown(messages)), { content: "ok" }),
        // An entry the parent keeps but the agent evicted, beside one in its window.
        (messages: BaseMessage[]) => ({ tool_calls: [{ name: "read_file", args: { path: evicted!.handle } }, { name: "read_file", args: { path: handleShown(messages, "f15.txt") } }] }),
        { content: "ok" },
      ],
      { maxEntries: 10 },
    );
    const db = tempSqliteSaver();
    try {
      const parent = new StateGraph(Parent).addNode("agent", graph).addEdge(START, "agent").addEdge("agent", END).compile({ checkpointer: db.saver });
      const config = { configurable: { thread_id: "parent-window" } };
      const sizes: number[] = [];
      for (const text of ["a", "b", "c"]) sizes.push(((await parent.invoke({ messages: [new HumanMessage(text)] }, config)).tool_artifacts as ArtifactEntry[]).length);
      expect(sizes).toEqual([8, 16, 16]);
      expect(shown).toHaveLength(10);
      evicted = ((await parent.getState(config)).values.tool_artifacts as ArtifactEntry[])[0];
      expect(evicted!.display_name).toBe("f0.txt");
      expect(shown).not.toContain(evicted!.handle);
      const out = await parent.invoke({ messages: [new HumanMessage("d")] }, config);
      expect(reads).toEqual(["/mnt/user-data/f15.txt"]);
      const refusal = (out.messages as BaseMessage[]).find((m) => m.getType() === "tool" && String(m.content).includes(evicted!.handle));
      expect(String(refusal?.content)).toContain(`unknown or expired artifact handle ${evicted!.handle}`);
    } finally {
      db.cleanup();
    }
  });

  it("keeps one agent's use of a handle when two agents in parallel branches use it (latest wins)", async () => {
    const uses = (): ScriptedStep[] => [(messages: BaseMessage[]) => ({ tool_calls: [{ name: "read_file", args: { path: handleShown(messages, "x.txt") } }] }), { content: "ok" }];
    const a = agentWith(uses());
    const b = agentWith(uses());
    const x: ArtifactEntry = { handle: "art_00000abc", tool_name: "write_file", tool_call_id: "c0", call_index: 0, artifact_type: "file", display_name: "x.txt", real_ref: "/mnt/user-data/x.txt", created_at: "2025-01-02T03:04:05.000Z" };
    const parent = new StateGraph(Parent).addNode("a", a.graph).addNode("b", b.graph).addEdge(START, "a").addEdge(START, "b").addEdge("a", END).addEdge("b", END).compile();
    const out = await parent.invoke({ messages: [new HumanMessage("go")], tool_artifacts: [x] }, { configurable: { thread_id: "parent-parallel" } });
    expect([...a.reads, ...b.reads]).toEqual([x.real_ref, x.real_ref]);
    const calls = (out.messages as BaseMessage[]).flatMap((m) => ("tool_calls" in m ? ((m.tool_calls as { id: string }[] | undefined) ?? []) : [])).map((c) => c.id);
    expect(calls).toHaveLength(2);
    const used = (out.tool_artifacts as ArtifactEntry[]).find((e) => e.handle === x.handle)!.consumed_by!;
    expect(used).toHaveLength(1);
    expect(calls).toContain(used[0]);
  });

  it("holds this run's captures in the agent's namespace while a review pauses it: read them with subgraphs: true", async () => {
    const { graph, reads } = agentWith(
      [{ tool_calls: [{ name: "write_file", args: { name: "a.txt" } }] }, (messages: BaseMessage[]) => ({ tool_calls: [{ name: "read_file", args: { path: handleShown(messages, "a.txt") } }] }), { content: "ok" }],
      { review: true },
    );
    const db = tempSqliteSaver();
    try {
      const parent = new StateGraph(Parent).addNode("agent", graph).addEdge(START, "agent").addEdge("agent", END).compile({ checkpointer: db.saver });
      const config = { configurable: { thread_id: "parent-review" } };
      const paused = await parent.invoke({ messages: [new HumanMessage("go")] }, config);
      const { args } = ((paused as { __interrupt__?: unknown }).__interrupt__ as { value: { actionRequests: { args: { path: string } }[] } }[])[0]!.value.actionRequests[0]!;
      expect((await parent.getState(config)).values.tool_artifacts).toEqual([]);
      const child = (await parent.getState(config, { subgraphs: true })).tasks[0]!.state as { values: { tool_artifacts: ArtifactEntry[] } };
      const lookup = (h: string) => child.values.tool_artifacts.find((e) => e.handle === h)?.real_ref;
      expect(resolveHandles(args, lookup)).toEqual({ path: "/mnt/user-data/a.txt" });
      expect(reads).toEqual([]);
    } finally {
      db.cleanup();
    }
  });

  // The README's advice for a node that runs the agent under a thread id of
  // its own: without the parent's keys, the parent's next agent turn takes
  // the branch's results for new and gives each reference a second handle.
  it.each([
    ["hands over only its own ledger: each reference gets a second handle", false, 4],
    ["hands over the parent's keys too (rekeyLedger): one handle each", true, 2],
  ])("an agent run under a branch thread id %s", async (_, rekey, size) => {
    const branch = agentWith([writes(0, 2), { content: "ok" }]);
    const lead = agentWith([{ content: "ok" }]);
    const parent = new StateGraph(Parent)
      .addNode("branch", async (_state: unknown, config: LangGraphRunnableConfig) => {
        const parentId = config.configurable?.thread_id as string;
        const own = `${parentId}/branch`;
        const out = await branch.graph.invoke({ messages: [new HumanMessage("go")] }, { configurable: { thread_id: own } });
        const keys = rekey ? rekeyLedger(out, own, parentId) : [];
        return { messages: out.messages, tool_artifacts: out.tool_artifacts, tool_artifact_processed: [...out.tool_artifact_processed, ...keys] };
      })
      .addNode("lead", lead.graph)
      .addEdge(START, "branch")
      .addEdge("branch", "lead")
      .addEdge("lead", END)
      .compile();
    const out = await parent.invoke({ messages: [new HumanMessage("go")] }, { configurable: { thread_id: "parent-branch" } });
    const registry = out.tool_artifacts as ArtifactEntry[];
    expect(registry).toHaveLength(size);
    expect(new Set(registry.map((e) => e.real_ref))).toEqual(new Set(["/mnt/user-data/f0.txt", "/mnt/user-data/f1.txt"]));
  });
});
