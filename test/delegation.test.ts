import { HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import { createAgent, tool } from "langchain";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ToolArtifactsConfigError } from "../src/config.js";
import { buildChildInitialState, childThreadId, createTaskTool, TASK_TOOL_NAME } from "../src/delegation.js";
import { ScriptedChatModel } from "../src/testing/scripted-model.js";

/** A tool that records the thread id each of its calls ran under. */
const threadReporter = (threads: unknown[]) =>
  tool(
    async (_input, runtime) => {
      threads.push(runtime.configurable?.thread_id);
      return "ok";
    },
    { name: "who_am_i", description: "Report the thread", schema: z.object({}) },
  );

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

  it("takes the lead's thread id from context.thread_id too, as capture does", async () => {
    const threads: unknown[] = [];
    const whoAmI = threadReporter(threads);
    const child = createAgent({ model: new ScriptedChatModel([{ tool_calls: [{ name: "who_am_i", args: {} }] }, { content: "done" }]), tools: [whoAmI] });
    const leadModel = new ScriptedChatModel([{ tool_calls: [{ name: TASK_TOOL_NAME, args: { subagent_type: "worker", description: "one" }, id: "call_c" }] }, { content: "ok" }]);
    const lead = createAgent({ model: leadModel, tools: [createTaskTool({ agents: { worker: child } })], contextSchema: z.object({ thread_id: z.string() }) });
    await lead.invoke({ messages: [new HumanMessage("go")] } as never, { context: { thread_id: "lead-ctx" } } as never);
    expect(threads).toEqual(["lead-ctx/task/call_c"]);
  });

  it("answers an unknown subagent_type with an error result naming the choices", async () => {
    const child = createAgent({ model: new ScriptedChatModel([{ content: "never" }]), tools: [] });
    const leadModel = new ScriptedChatModel([{ tool_calls: [{ name: TASK_TOOL_NAME, args: { subagent_type: "ghost", description: "boo" } }] }, { content: "ok" }]);
    const lead = createAgent({ model: leadModel, tools: [createTaskTool({ agents: { researcher: child, writer: child } })] });
    const result = (await lead.invoke({ messages: [new HumanMessage("go")] } as never)) as unknown as { messages: BaseMessage[] };
    const error = result.messages.find((m) => ToolMessage.isInstance(m)) as ToolMessage;
    expect(error.status).toBe("error");
    expect(error.name).toBe(TASK_TOOL_NAME);
    expect(error.text).toBe('Unknown subagent_type "ghost". Available: "researcher", "writer".');
  });

  it("answers a child that ends without an answer with an error result", async () => {
    const child = createAgent({ model: new ScriptedChatModel([{ content: "" }]), tools: [] });
    const leadModel = new ScriptedChatModel([{ tool_calls: [{ name: TASK_TOOL_NAME, args: { subagent_type: "mute", description: "say nothing" } }] }, { content: "ok" }]);
    const lead = createAgent({ model: leadModel, tools: [createTaskTool({ agents: { mute: child } })] });
    const result = (await lead.invoke({ messages: [new HumanMessage("go")] } as never)) as unknown as { messages: BaseMessage[] };
    const error = result.messages.find((m) => ToolMessage.isInstance(m)) as ToolMessage;
    expect(error.status).toBe("error");
    expect(error.text).toBe('Sub-agent "mute" finished without a final answer.');
  });
});

describe("childThreadId", () => {
  it("derives from the lead's thread and the call, or marks a lead without one", () => {
    expect(childThreadId("lead", "call_1")).toBe("lead/task/call_1");
    expect(childThreadId(undefined, "call_1")).toBe("detached/task/call_1");
    expect(childThreadId("", "call_1")).toBe("detached/task/call_1");
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
});

describe("createTaskTool", () => {
  it("validates its options eagerly", () => {
    expect(() => createTaskTool({ agents: {} })).toThrow(/at least one sub-agent/);
    expect(() => createTaskTool({ agents: { x: {} as never } })).toThrow(/invoke/);
    expect(() => createTaskTool({ agents: { x: {} as never } })).toThrow(ToolArtifactsConfigError);
    expect(() => createTaskTool({ agents: { x: {} as never } })).toThrow(/: agents\.x: /);
    // A misspelt option is named, not dropped.
    const agent = createAgent({ model: new ScriptedChatModel([]), tools: [] });
    expect(() => createTaskTool({ agents: { a: agent }, descriptin: "x" } as never)).toThrow(expect.objectContaining({ constructor: ToolArtifactsConfigError, field: "descriptin" }));
  });

  it("is a tool named task with {subagent_type, description}", () => {
    const taskTool = createTaskTool({ agents: { researcher: createAgent({ model: new ScriptedChatModel([]), tools: [] }) } });
    expect(taskTool.name).toBe("task");
    expect(taskTool.description).toContain("researcher");
    expect(Object.keys((taskTool.schema as z.ZodObject).shape).sort()).toEqual(["description", "subagent_type"]);
  });
});
