import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { END, MemorySaver, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { createAgent, tool } from "langchain";
import type { ToolRuntime } from "@langchain/core/tools";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ToolArtifactsConfigError } from "../src/config.js";
import { buildChildInitialState, childThreadId, createTaskTool, TASK_TOOL_NAME, type SubAgent } from "../src/delegation.js";
import { toolArtifactsMiddleware } from "../src/middleware/index.js";
import { ScriptedChatModel } from "../src/testing/scripted-model.js";
import type { ArtifactEntry } from "../src/types.js";

/** A tool that records the thread id each of its calls ran under. */
const threadReporter = (threads: unknown[]) =>
  tool(
    async (_input, runtime) => {
      threads.push(runtime.configurable?.thread_id);
      return "ok";
    },
    { name: "who_am_i", description: "Report the thread", schema: z.object({}) },
  );

/** The result of one `task` call a lead makes to `subagentType`. */
async function delegateOnce(agents: Record<string, SubAgent>, subagentType: string): Promise<ToolMessage> {
  const leadModel = new ScriptedChatModel([{ tool_calls: [{ name: TASK_TOOL_NAME, args: { subagent_type: subagentType, description: "do it" } }] }, { content: "ok" }]);
  const lead = createAgent({ model: leadModel, tools: [createTaskTool({ agents })] });
  const result = (await lead.invoke({ messages: [new HumanMessage("go")] } as never)) as unknown as { messages: BaseMessage[] };
  return result.messages.find((m) => ToolMessage.isInstance(m)) as ToolMessage;
}

describe("createTaskTool with real nested agents", () => {
  it("runs each delegation under its own thread, derived from the lead's thread and the call", async () => {
    const threads: unknown[] = [];
    const whoAmI = threadReporter(threads);
    const childModel = new ScriptedChatModel([
      { tool_calls: [{ name: "who_am_i", args: {} }] },
      { content: "first" },
      { tool_calls: [{ name: "who_am_i", args: {} }] },
      { content: "second" },
    ]);
    const child = createAgent({ model: childModel, tools: [whoAmI] });
    const leadModel = new ScriptedChatModel([
      { tool_calls: [{ name: TASK_TOOL_NAME, args: { subagent_type: "worker", description: "one" }, id: "call_task_a" }] },
      { tool_calls: [{ name: TASK_TOOL_NAME, args: { subagent_type: "worker", description: "two" }, id: "call_task_b" }] },
      { content: "done" },
    ]);
    const lead = createAgent({ model: leadModel, tools: [createTaskTool({ agents: { worker: child } })], checkpointer: new MemorySaver() });
    await lead.invoke({ messages: [new HumanMessage("go")] } as never, { configurable: { thread_id: "lead-7" } });

    expect(threads).toEqual(["lead-7/task/call_task_a", "lead-7/task/call_task_b"]);
    expect(threads).toEqual([childThreadId("lead-7", "call_task_a"), childThreadId("lead-7", "call_task_b")]);
    // The second delegation starts fresh too: it never sees the first one's messages.
    expect(childModel.seen[2]!.map((m) => m.text)).toEqual(["two"]);
  });

  it("gives a delegation without a call id (the tool invoked directly) a fresh thread, not the last one's history", async () => {
    const threads: unknown[] = [];
    const childModel = new ScriptedChatModel([{ tool_calls: [{ name: "who_am_i", args: {} }] }, { content: "first" }, { tool_calls: [{ name: "who_am_i", args: {} }] }, { content: "second" }]);
    const child = createAgent({ model: childModel, tools: [threadReporter(threads)], checkpointer: new MemorySaver() });
    const task = createTaskTool({ agents: { worker: child } });
    expect(await task.invoke({ subagent_type: "worker", description: "one" })).toBe("first");
    expect(await task.invoke({ subagent_type: "worker", description: "two" })).toBe("second");
    expect(childModel.seen[2]!.map((m) => m.text)).toEqual(["two"]);
    expect(threads).toHaveLength(2);
    expect(threads[0]).toMatch(/^detached\/task\/no-call-id-[0-9a-f-]{36}$/);
    expect(threads[1]).not.toBe(threads[0]);
  });

  it("passes the lead's stream writer and metadata on: a child tool's custom stream events reach the lead's stream", async () => {
    const seenMetadata: unknown[] = [];
    const progress = tool(
      async (_input, runtime: ToolRuntime) => {
        runtime.writer?.({ progress: "half way" });
        seenMetadata.push([runtime.metadata?.team, runtime.metadata?.thread_id]);
        return "ok";
      },
      { name: "progress", description: "Report progress", schema: z.object({}) },
    );
    const child = createAgent({ model: new ScriptedChatModel([{ tool_calls: [{ name: "progress", args: {} }] }, { content: "done" }]), tools: [progress] });
    const leadModel = new ScriptedChatModel([{ tool_calls: [{ name: TASK_TOOL_NAME, args: { subagent_type: "worker", description: "go" }, id: "call_w" }] }, { content: "ok" }]);
    const lead = createAgent({ model: leadModel, tools: [createTaskTool({ agents: { worker: child } })] });
    const custom: unknown[] = [];
    const stream = await lead.stream({ messages: [new HumanMessage("go")] } as never, { streamMode: ["custom"], subgraphs: true, metadata: { team: "red" }, configurable: { thread_id: "lead-m" } } as never);
    for await (const chunk of stream as AsyncIterable<[string[], string, unknown]>) if (chunk[1] === "custom") custom.push(chunk[2]);
    expect(custom).toEqual([{ progress: "half way" }]);
    // The host's metadata, and the child's own thread id (not the lead's) for tracing.
    expect(seenMetadata).toEqual([["red", "lead-m/task/call_w"]]);
  });

  it("passes the child the host's metadata (not LangGraph's run keys, also in a run forked from a checkpoint), the lead's callbacks and its abort signal", async () => {
    const seen: { metadata: unknown; handlers: unknown; aborted: boolean | undefined }[] = [];
    const controller = new AbortController();
    const child: SubAgent = {
      invoke: async (_input, config) => {
        const { metadata, callbacks, signal } = config as { metadata?: unknown; callbacks?: { handlers?: { name: string }[] }; signal?: AbortSignal };
        // The last delegation aborts the lead's run: the child's signal must hear it.
        if (seen.length === 1) controller.abort();
        seen.push({ metadata, handlers: callbacks?.handlers?.map((h) => h.name), aborted: signal?.aborted });
        return { messages: [new AIMessage("done")] };
      },
    };
    const delegate = { tool_calls: [{ name: TASK_TOOL_NAME, args: { subagent_type: "w", description: "go" } }] };
    const lead = createAgent({ model: new ScriptedChatModel([delegate, { content: "ok" }, delegate, { content: "ok" }]), tools: [createTaskTool({ agents: { w: child } })], checkpointer: new MemorySaver() });
    const handler = new (class extends BaseCallbackHandler {
      name = "host-handler";
    })();
    const run = { metadata: { team: "blue" }, callbacks: [handler] };
    await lead.invoke({ messages: [new HumanMessage("go")] } as never, { ...run, configurable: { thread_id: "lead-meta" } } as never);
    // Forked from the thread's first checkpoint: LangGraph adds checkpoint_id to the run's metadata.
    const history = [];
    for await (const snapshot of lead.graph.getStateHistory({ configurable: { thread_id: "lead-meta" } })) history.push(snapshot);
    const fork = { ...run, signal: controller.signal, configurable: { thread_id: "lead-meta", checkpoint_id: history.at(-1)!.config.configurable!.checkpoint_id } };
    await expect(lead.invoke({ messages: [new HumanMessage("again")] } as never, fork as never)).rejects.toThrow(/abort/i);
    const metadata = { ls_integration: "langchain_create_agent", team: "blue" };
    expect(seen).toEqual([
      { metadata, handlers: ["host-handler"], aborted: false },
      { metadata, handlers: ["host-handler"], aborted: true },
    ]);
  });

  it.each([
    ["from context.thread_id too", { context: { thread_id: "lead-ctx" } }],
    ["past an empty configurable.thread_id to context.thread_id", { configurable: { thread_id: "" }, context: { thread_id: "lead-ctx" } }],
  ])("takes the lead's thread id %s, as capture does", async (_, config) => {
    const threads: unknown[] = [];
    const whoAmI = threadReporter(threads);
    const child = createAgent({ model: new ScriptedChatModel([{ tool_calls: [{ name: "who_am_i", args: {} }] }, { content: "done" }]), tools: [whoAmI] });
    const leadModel = new ScriptedChatModel([{ tool_calls: [{ name: TASK_TOOL_NAME, args: { subagent_type: "worker", description: "one" }, id: "call_c" }] }, { content: "ok" }]);
    const lead = createAgent({ model: leadModel, tools: [createTaskTool({ agents: { worker: child } })], contextSchema: z.object({ thread_id: z.string() }) });
    await lead.invoke({ messages: [new HumanMessage("go")] } as never, config as never);
    expect(threads).toEqual(["lead-ctx/task/call_c"]);
  });

  it("answers an unknown subagent_type with an error result naming the choices", async () => {
    const child = createAgent({ model: new ScriptedChatModel([{ content: "never" }]), tools: [] });
    const error = await delegateOnce({ researcher: child, writer: child }, "ghost");
    expect(error.status).toBe("error");
    expect(error.name).toBe(TASK_TOOL_NAME);
    expect(error.text).toBe('Unknown subagent_type "ghost". Available: "researcher", "writer".');
  });

  it("answers a child that ends without an answer with an error result", async () => {
    const child = createAgent({ model: new ScriptedChatModel([{ content: "" }]), tools: [] });
    const error = await delegateOnce({ mute: child }, "mute");
    expect(error.status).toBe("error");
    expect(error.text).toBe('Sub-agent "mute" finished without a final answer.');
  });

  /** A child graph whose one step writes `messages` and ends. */
  const childEndingWith = (messages: BaseMessage[]) =>
    new StateGraph(MessagesAnnotation)
      .addNode("work", () => ({ messages }))
      .addEdge(START, "work")
      .addEdge("work", END)
      .compile();

  it("answers a child that ends on a failed tool result with an error result", async () => {
    // createAgent never ends on a failed tool; any graph with the same invoke may.
    const child = childEndingWith([
      new AIMessage({ content: "Let me publish it.", tool_calls: [{ id: "call_p", name: "publish", args: {} }] }),
      new ToolMessage({ content: "Error: disk full", tool_call_id: "call_p", name: "publish", status: "error" }),
    ]);
    const error = await delegateOnce({ broken: child }, "broken");
    expect(error.status).toBe("error");
    expect(error.text).toBe('Sub-agent "broken" finished without a final answer.');
  });

  // What @langchain/mcp-adapters makes of an MCP result with no content (its
  // artifact is always a list), with only _meta, or with only audio (which a
  // report does not carry), and artifacts that hold nothing at all.
  it.each([
    ["an empty list", []],
    ["only _meta", [{ type: "mcp_meta", data: { trace: "t1" } }]],
    ["only audio", [{ type: "audio", data: "AAAA", mimeType: "audio/wav" }]],
    ["null", null],
    ["an empty object", {}],
  ])("answers a child that ends on a tool result with no text and an artifact of %s with an error result", async (_, artifact) => {
    const child = childEndingWith([
      new AIMessage({ content: "", tool_calls: [{ id: "call_q", name: "quiet", args: {} }] }),
      new ToolMessage({ content: [], artifact, tool_call_id: "call_q", name: "quiet" }),
    ]);
    const error = await delegateOnce({ quiet: child }, "quiet");
    expect(error.status).toBe("error");
    expect(error.text).toBe('Sub-agent "quiet" finished without a final answer.');
  });

  it("hands back a child's tool result with no text but an artifact the lead can read", async () => {
    const artifact = [{ type: "mcp_meta", data: {} }, { type: "mcp_structured_content", data: { path: "/mnt/user-data/r.csv" } }];
    const child = childEndingWith([
      new AIMessage({ content: "", tool_calls: [{ id: "call_q", name: "quiet", args: {} }] }),
      new ToolMessage({ content: [], artifact, tool_call_id: "call_q", name: "quiet" }),
    ]);
    const report = await delegateOnce({ quiet: child }, "quiet");
    expect(report.status).toBe("success");
    expect(report.artifact).toEqual(artifact);
  });

  it("answers a sub-agent whose result holds no messages with an error result", async () => {
    const error = await delegateOnce({ odd: { invoke: async () => ({ done: true }) } }, "odd");
    expect(error.status).toBe("error");
    expect(error.text).toBe('Sub-agent "odd" finished without a final answer.');
  });

  it("hands back a final answer's image_url block (OpenAI's image shape) with its text", async () => {
    const answer = [{ type: "text", text: "see" }, { type: "image_url", image_url: { url: "https://h.example/a.png" } }];
    const child = createAgent({ model: new ScriptedChatModel([{ content: answer }]), tools: [] });
    const report = await delegateOnce({ painter: child }, "painter");
    expect([report.status, report.content]).toEqual(["success", answer]);
  });

  it("hands back a final answer of text and reasoning blocks as its text", async () => {
    const answer = [{ type: "reasoning", reasoning: "thinking" }, { type: "text", text: "All " }, { type: "text", text: "done." }];
    const child = createAgent({ model: new ScriptedChatModel([{ content: answer }]), tools: [] });
    const report = await delegateOnce({ thinker: child }, "thinker");
    expect([report.status, report.content]).toEqual(["success", "All done."]);
  });
});

describe("childThreadId", () => {
  it("derives from the lead's thread and the call, or marks a lead without one", () => {
    expect(childThreadId("lead", "call_1")).toBe("lead/task/call_1");
    expect(childThreadId(undefined, "call_1")).toBe("detached/task/call_1");
    expect(childThreadId("", "call_1")).toBe("detached/task/call_1");
    // A missing call id would give every delegation of a thread one child thread ("lead/task/undefined").
    expect(() => childThreadId("lead", undefined as never)).toThrow(new TypeError("childThreadId: toolCallId must be a non-empty string (got undefined)"));
    expect(() => childThreadId("lead", "")).toThrow(new TypeError('childThreadId: toolCallId must be a non-empty string (got "")'));
  });
});

describe("buildChildInitialState", () => {
  it("carries only the task messages", () => {
    expect(Object.keys(buildChildInitialState("do it"))).toEqual(["messages"]);
    const state = buildChildInitialState("do it");
    expect(state.messages).toHaveLength(1);
    expect(HumanMessage.isInstance(state.messages[0])).toBe(true);
    expect(state.messages[0]!.text).toBe("do it");

    const given = [new HumanMessage("a"), new HumanMessage("b")];
    const fromList = buildChildInitialState(given);
    expect(fromList).toEqual({ messages: given });
    expect(fromList.messages).not.toBe(given); // a copy: the caller's list is not shared
    expect(buildChildInitialState(given[0]!)).toEqual({ messages: [given[0]] });
  });

  it("makes LangChain messages of message-likes, as createAgent would, and types them so", () => {
    const state = buildChildInitialState([{ role: "user", content: "a" }, ["assistant", "b"], "c", { type: "system", content: "d" }]);
    expect(state.messages.map((m) => [m.getType(), m.text])).toEqual([
      ["human", "a"],
      ["ai", "b"],
      ["human", "c"],
      ["system", "d"],
    ]);
    expect(buildChildInitialState({ role: "user", content: "x" }).messages[0]!.getType()).toBe("human");
    expect(() => buildChildInitialState([{ role: "wizard", content: "x" }])).toThrow(/^buildChildInitialState: Unable to coerce[\s\S]*wizard/);
  });

  it("refuses an empty list and messages without usable content", () => {
    expect(() => buildChildInitialState([])).toThrow(new TypeError("buildChildInitialState: expected at least one message, got an empty array"));
    const noContent = new TypeError("buildChildInitialState: expected each message's content to be a string or an array of content blocks");
    for (const bad of [{ content: null }, { role: "user", content: undefined }, { role: "user", content: 5 }, [["user", null]], [new HumanMessage("a"), { content: null }]]) {
      expect(() => buildChildInitialState(bad as never)).toThrow(noContent);
    }
    // Both forms of LangChain content are usable, an empty text included.
    expect(buildChildInitialState([{ role: "user", content: [{ type: "text", text: "a" }] }, ["user", ""]] as never).messages).toHaveLength(2);
  });

  it("refuses what is no message: a [role, content] list with a third item, a whole state with content", () => {
    const notMessages = new TypeError("buildChildInitialState: expected a string, a message or an array of messages");
    expect(() => buildChildInitialState([["user", "hi", "extra"]] as never)).toThrow(notMessages);
    expect(() => buildChildInitialState({ content: "x", messages: [] } as never)).toThrow(notMessages);
  });

  it("reads a list as createAgent reads its messages input: a lone [role, content] pair goes in a list", async () => {
    const seenBy = async (input: unknown) => {
      const model = new ScriptedChatModel([{ content: "ok" }]);
      await createAgent({ model, tools: [] }).invoke(buildChildInitialState(input as never) as never);
      return model.seen[0]!.map((m) => [m.type, m.text]);
    };
    expect(await seenBy(["user", "summarise it"])).toEqual([
      ["human", "user"],
      ["human", "summarise it"],
    ]);
    expect(await seenBy([["system", "be brief"], ["user", "summarise it"]])).toEqual([
      ["system", "be brief"],
      ["human", "summarise it"],
    ]);
  });
});

describe("createTaskTool", () => {
  it("validates its options eagerly", () => {
    expect(() => createTaskTool({ agents: {} })).toThrow(/at least one sub-agent/);
    expect(() => createTaskTool({ agents: { x: {} as never } })).toThrow(/invoke/);
    expect(() => createTaskTool({ agents: { x: {} as never } })).toThrow(ToolArtifactsConfigError);
    expect(() => createTaskTool({ agents: { x: {} as never } })).toThrow(/: agents\.x: /);
    const agent = createAgent({ model: new ScriptedChatModel([]), tools: [] });
    // An empty name or description would give the model a choice it cannot name, or nothing to go on.
    expect(() => createTaskTool({ agents: { "": agent } })).toThrow(expect.objectContaining({ name: "ToolArtifactsConfigError", field: 'agents[""]' }));
    expect(() => createTaskTool({ agents: { a: agent }, description: "" })).toThrow(expect.objectContaining({ name: "ToolArtifactsConfigError", field: "description" }));
    // A misspelt option is named, not dropped.
    expect(() => createTaskTool({ agents: { a: agent }, descriptin: "x" } as never)).toThrow(expect.objectContaining({ constructor: ToolArtifactsConfigError, field: "descriptin" }));
    // Also when the option it was meant to be is then missing: the typo is named, not the gap it leaves.
    expect(() => createTaskTool({ agent: { a: agent } } as never)).toThrow(expect.objectContaining({ constructor: ToolArtifactsConfigError, field: "agent", message: "Invalid tool-artifacts config: agent: unknown option; did you mean agents?" }));
  });

  it("is a tool named task with {subagent_type, description}", () => {
    const taskTool = createTaskTool({ agents: { researcher: createAgent({ model: new ScriptedChatModel([]), tools: [] }) } });
    expect(taskTool.name).toBe("task");
    expect(taskTool.description).toContain("researcher");
    expect(Object.keys((taskTool.schema as z.ZodObject).shape).sort()).toEqual(["description", "subagent_type"]);
  });

  it("shows the lead model the host's description, with the agent names after it", () => {
    const agent = createAgent({ model: new ScriptedChatModel([]), tools: [] });
    expect(createTaskTool({ agents: { researcher: agent, writer: agent }, description: "Hand work to a specialist." }).description).toBe(
      "Hand work to a specialist. Available sub-agents: researcher, writer.",
    );
  });
});


/** A sub-agent that returns `messages` and records the thread id each run was given. */
const answering = (messages: BaseMessage[], threads: unknown[] = []): SubAgent => ({
  invoke: async (_input, config) => {
    threads.push(config?.configurable?.thread_id);
    return { messages };
  },
});

describe("createTaskTool: reports and thread ids, called directly", () => {
  it("reports a lone AI message; an answer of blanks is none; toString is no agent", async () => {
    const run = (agent: SubAgent, subagent_type = "w") => createTaskTool({ agents: { w: agent } }).invoke({ subagent_type, description: "x" });
    expect(await run(answering([new AIMessage("only")]))).toBe("only");
    const blank = (await run(answering([new HumanMessage("x"), new AIMessage("  \n\t ")]))) as ToolMessage;
    expect(ToolMessage.isInstance(blank) && blank.status).toBe("error");
    const inherited = (await run(answering([new AIMessage("a")]), "toString")) as ToolMessage;
    expect([inherited.status, inherited.text]).toEqual(["error", 'Unknown subagent_type "toString". Available: "w".']);
  });

  it("takes the call id a runtime gives as toolCallId without a tool call, as ToolNode gives it", async () => {
    const threads: unknown[] = [];
    const task = createTaskTool({ agents: { w: answering([new AIMessage("a")], threads) } });
    await task.invoke({ subagent_type: "w", description: "x" }, { toolCallId: "call_7", configurable: { thread_id: "lead" } } as never);
    expect(threads).toEqual(["lead/task/call_7"]);
  });

  it("without a call id: no checkpoint_ns gives a fresh thread each time; a namespace's different tasks get different threads", async () => {
    const threads: unknown[] = [];
    const task = createTaskTool({ agents: { w: answering([new AIMessage("a")], threads) } });
    const calls: [string, string][] = [["same", ""], ["same", ""], ["one", "node:1"], ["two", "node:1"], ["one", "node:1"]];
    for (const [description, ns] of calls) await task.invoke({ subagent_type: "w", description }, { configurable: { checkpoint_ns: ns } });
    expect(threads[0]).toMatch(/^detached\/task\/no-call-id-[0-9a-f-]{36}$/);
    expect(threads[1]).not.toBe(threads[0]);
    expect(threads[2]).toMatch(/^detached\/task\/no-call-id-[0-9a-f]{32}$/);
    expect(threads[3]).not.toBe(threads[2]);
    expect(threads[4]).toBe(threads[2]);
  });
});
type LeadResult = { messages: BaseMessage[]; tool_artifacts: ArtifactEntry[] };

describe("createTaskTool: reports with artifacts, and call-less delegations", () => {
  it("hands back a string report together with the artifact of the returnDirect tool the child ended on, even with no text", async () => {
    const FILE = "https://files.example.com/reports/final.pdf";
    const QUIET = "https://files.example.com/reports/quiet.pdf";
    const publisherTool = (name: string, text: string, file: string) =>
      tool(async () => [text, { structured_content: { file } }], { name, description: "Publish", schema: z.object({}), returnDirect: true, responseFormat: "content_and_artifact" });
    const child = (name: string, text: string, file: string) =>
      createAgent({ model: new ScriptedChatModel([{ tool_calls: [{ name, args: {} }] }]), tools: [publisherTool(name, text, file)], middleware: [...toolArtifactsMiddleware()] });
    const leadModel = new ScriptedChatModel([
      { tool_calls: [{ name: TASK_TOOL_NAME, args: { subagent_type: "loud", description: "Publish it." } }] },
      { tool_calls: [{ name: TASK_TOOL_NAME, args: { subagent_type: "quiet", description: "Publish it quietly." } }] },
      { content: "ok" },
    ]);
    const lead = createAgent({
      model: leadModel,
      tools: [createTaskTool({ agents: { loud: child("publish", "Published.", FILE), quiet: child("publish_quietly", "", QUIET) } })],
      middleware: [...toolArtifactsMiddleware()],
    });
    const result = (await lead.invoke({ messages: [new HumanMessage("go")] } as never, { configurable: { thread_id: "lead-artifact" } })) as unknown as LeadResult;
    const reports = result.messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m));
    expect(reports.map((m) => [m.name, m.status, m.content, m.artifact])).toEqual([
      [TASK_TOOL_NAME, "success", "Published.", { structured_content: { file: FILE } }],
      // No text, but an artifact: a report all the same.
      [TASK_TOOL_NAME, "success", "", { structured_content: { file: QUIET } }],
    ]);
    expect(result.tool_artifacts.map((e) => [e.tool_name, e.real_ref])).toEqual([
      [TASK_TOOL_NAME, FILE],
      [TASK_TOOL_NAME, QUIET],
    ]);
  });

  it("gives call-less delegations of one task to two sub-agents from one graph node two threads", async () => {
    const threads: unknown[] = [];
    const worker = () => createAgent({ model: new ScriptedChatModel([{ tool_calls: [{ name: "who_am_i", args: {} }] }, { content: "done" }]), tools: [threadReporter(threads)] });
    const task = createTaskTool({ agents: { a: worker(), b: worker() } });
    const graph = new StateGraph(MessagesAnnotation)
      .addNode("delegate", async () => {
        const first = await task.invoke({ subagent_type: "a", description: "same work" });
        const second = await task.invoke({ subagent_type: "b", description: "same work" });
        return { messages: [new HumanMessage(`${String(first)} ${String(second)}`)] };
      })
      .addEdge(START, "delegate")
      .addEdge("delegate", END)
      .compile({ checkpointer: new MemorySaver() });
    await graph.invoke({ messages: [] }, { configurable: { thread_id: "custom-two" } });
    expect(threads).toHaveLength(2);
    for (const t of threads) expect(t).toMatch(/^custom-two\/task\/no-call-id-[0-9a-f]{32}$/);
    expect(threads[1]).not.toBe(threads[0]);
  });
});
