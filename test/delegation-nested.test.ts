import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { Command, END, interrupt, isGraphInterrupt, MemorySaver, MessagesAnnotation, START, StateGraph, type BaseCheckpointSaver } from "@langchain/langgraph";
import { createAgent, tool, toolRetryMiddleware, toolStrategy } from "langchain";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { childThreadId, createTaskTool, TASK_TOOL_NAME } from "../src/delegation.js";
import { toolArtifactsMiddleware } from "../src/middleware/index.js";
import { ScriptedChatModel, type ScriptedStep } from "../src/testing/scripted-model.js";
import type { ArtifactEntry } from "../src/types.js";
import { handleShown, handlesShown, handlesShownFor } from "./support/block.js";
import { tempSqliteSaver, type TempSqliteSaver } from "./support/sqlite.js";

const LEAD_INPUT = "/mnt/user-data/lead/input.csv";
const CHILD_OUTPUT = "/mnt/user-data/child/summary.txt";

/** Every checkpoint a saver holds for a thread, in any namespace. */
async function checkpointsOf(saver: BaseCheckpointSaver, threadId: string): Promise<Array<{ ns: string; values: Record<string, unknown> }>> {
  const found: Array<{ ns: string; values: Record<string, unknown> }> = [];
  for await (const t of saver.list({ configurable: { thread_id: threadId } })) {
    found.push({ ns: t.config.configurable?.checkpoint_ns as string, values: t.checkpoint.channel_values });
  }
  return found;
}

type LeadResult = { messages: BaseMessage[]; tool_artifacts: ArtifactEntry[]; __interrupt__?: unknown[] };

const dbs: TempSqliteSaver[] = [];
afterEach(() => {
  for (const db of dbs.splice(0)) db.cleanup();
});

function lastTool(messages: readonly BaseMessage[]): ToolMessage {
  const found = [...messages].reverse().find((m) => ToolMessage.isInstance(m));
  if (!found) throw new Error("no tool message yet");
  return found as ToolMessage;
}

describe("delegation with real nested agents and tool-artifacts middlewares", () => {
  it("keeps registries agent-local across a task round trip", async () => {
    const childToolCalls: string[] = [];
    let childHandle = "";
    const summarise = tool(
      async ({ input }) => {
        childToolCalls.push(input);
        return `Wrote the summary to ${CHILD_OUTPUT}`;
      },
      { name: "summarise", description: "Summarise a file", schema: z.object({ input: z.string() }) },
    );
    const childModel = new ScriptedChatModel([
      (messages) => {
        // The task text is the child's only input; take the path from it as a model would.
        const path = /\/mnt\/user-data\/\S+\.csv/.exec(messages.find((m) => HumanMessage.isInstance(m) && !m.additional_kwargs?.durable_context_data)!.text)![0];
        return { tool_calls: [{ name: "summarise", args: { input: path } }] };
      },
      (messages) => {
        childHandle = handleShown(messages, "summary.txt");
        return { content: `Done. The summary is at ${CHILD_OUTPUT} (handle ${childHandle}).` };
      },
    ]);
    const child = createAgent({ model: childModel, tools: [summarise], middleware: [...toolArtifactsMiddleware()] });

    const reads: string[] = [];
    const makeInput = tool(async () => `Saved ${LEAD_INPUT}`, { name: "make_input", description: "Produce the input", schema: z.object({}) });
    const readFile = tool(
      async ({ path }) => {
        reads.push(path);
        return `contents of ${path}`;
      },
      { name: "read_file", description: "Read a file", schema: z.object({ path: z.string() }) },
    );
    let leadInputHandle = "";
    let leadOutputHandle = "";
    const leadScript: ScriptedStep[] = [
      { tool_calls: [{ name: "make_input", args: {} }] },
      (messages) => {
        leadInputHandle = handleShown(messages, "input.csv");
        return { tool_calls: [{ name: TASK_TOOL_NAME, args: { subagent_type: "summariser", description: `Summarise \`${leadInputHandle}\` into a text file.` } }] };
      },
      // The report echoes the child's handle; the lead tries it.
      () => ({ tool_calls: [{ name: "read_file", args: { path: childHandle } }] }),
      (messages) => {
        leadOutputHandle = handleShown(messages, "summary.txt");
        return { tool_calls: [{ name: "read_file", args: { path: leadOutputHandle } }] };
      },
      { content: "All done." },
    ];
    const leadModel = new ScriptedChatModel(leadScript);
    const lead = createAgent({
      model: leadModel,
      tools: [makeInput, readFile, createTaskTool({ agents: { summariser: child } })],
      middleware: [...toolArtifactsMiddleware()],
      checkpointer: new MemorySaver(),
    });

    const result = (await lead.invoke({ messages: [new HumanMessage("Summarise the input.")] } as never, { configurable: { thread_id: "lead-thread" } })) as unknown as {
      messages: BaseMessage[];
      tool_artifacts: ArtifactEntry[];
      tool_artifact_processed: string[];
    };

    // 1. The lead handle in the task args reached the child as the concrete path.
    const taskCall = result.messages.flatMap((m) => (AIMessage.isInstance(m) ? (m.tool_calls ?? []) : [])).find((c) => c.name === TASK_TOOL_NAME)!;
    expect(taskCall.args.description).toContain(leadInputHandle); // history keeps the handle
    const childTask = childModel.seen[0]!.filter((m) => HumanMessage.isInstance(m) && !m.additional_kwargs?.durable_context_data);
    expect(childTask.map((m) => m.text)).toEqual([`Summarise ${LEAD_INPUT} into a text file.`]);
    expect(childModel.seen[0]!.some((m) => m.text.includes("art_"))).toBe(false); // fresh state: no lead registry shown
    expect(childToolCalls).toEqual([LEAD_INPUT]);

    // 2. The child's captures stay in the child.
    expect(childHandle).toMatch(/^art_[0-9a-f]{8}$/);
    expect(handlesShown(childModel.seen[1]!)).toEqual([childHandle]);
    const leadHandles = result.tool_artifacts.map((e) => e.handle);
    expect(leadHandles).not.toContain(childHandle);
    const leadCallIds = new Set(result.messages.flatMap((m) => (AIMessage.isInstance(m) ? (m.tool_calls ?? []).map((c) => c.id) : [])));
    for (const entry of result.tool_artifacts) expect(leadCallIds.has(entry.tool_call_id)).toBe(true);

    // 3. The report's concrete path is captured by the lead, under a lead handle.
    const reportEntry = result.tool_artifacts.find((e) => e.tool_call_id === taskCall.id)!;
    expect(reportEntry).toMatchObject({ handle: leadOutputHandle, tool_name: TASK_TOOL_NAME, tool_call_id: taskCall.id });
    expect(leadOutputHandle).not.toBe(childHandle);
    // make_input's path, the report's path, and read_file's echo of it (a result of its own).
    expect(result.tool_artifacts.map((e) => [e.tool_name, e.real_ref])).toEqual([
      ["make_input", LEAD_INPUT],
      [TASK_TOOL_NAME, CHILD_OUTPUT],
      ["read_file", CHILD_OUTPUT],
    ]);

    // 4. The child's handle, echoed in the report, is unknown to the lead; the lead's own handle resolves.
    const taskResult = result.messages.find((m) => ToolMessage.isInstance(m) && m.name === TASK_TOOL_NAME) as ToolMessage;
    expect(taskResult.text).toBe(`Done. The summary is at ${CHILD_OUTPUT} (handle ${childHandle}).`);
    const rejected = lastTool(leadModel.seen[3]!);
    expect(rejected.status).toBe("error");
    expect(rejected.name).toBe("read_file");
    expect(rejected.text).toContain(childHandle);
    expect(reads).toEqual([CHILD_OUTPUT]);
    expect(lastTool(leadModel.seen[4]!).text).toBe(`contents of ${CHILD_OUTPUT}`);
    expect(result.messages.at(-1)!.text).toBe("All done.");
  });
});

describe("what the lead does with a child's report", () => {
  it("captures the report like any tool result: new paths and URLs get lead handles, an echoed lead path a second one", async () => {
    const CHART = "https://charts.example.com/q3/chart.png";
    const report = `Read ${LEAD_INPUT}. The summary is at ${CHILD_OUTPUT}, the chart at ${CHART}; details on https://charts.example.com/about.`;
    const child = createAgent({ model: new ScriptedChatModel([{ content: report }]), tools: [] });
    const reads: string[] = [];
    const readFile = tool(
      async ({ path }) => {
        reads.push(path);
        return "ok";
      },
      { name: "read_file", description: "Read a file", schema: z.object({ path: z.string() }) },
    );
    const makeInput = tool(async () => `Saved ${LEAD_INPUT}`, { name: "make_input", description: "Produce the input", schema: z.object({}) });
    let firstHandle = "";
    let secondHandle = "";
    const leadModel = new ScriptedChatModel([
      { tool_calls: [{ name: "make_input", args: {} }] },
      (messages) => {
        firstHandle = handleShown(messages, "input.csv");
        return { tool_calls: [{ name: TASK_TOOL_NAME, args: { subagent_type: "reader", description: `Read \`${firstHandle}\`.` } }] };
      },
      (messages) => {
        const shown = handlesShownFor(messages, "input.csv");
        expect(shown).toHaveLength(2);
        secondHandle = shown.find((h) => h !== firstHandle)!;
        return { tool_calls: [{ name: "read_file", args: { path: secondHandle } }] };
      },
      { content: "done" },
    ]);
    const lead = createAgent({
      model: leadModel,
      tools: [makeInput, readFile, createTaskTool({ agents: { reader: child } })],
      middleware: [...toolArtifactsMiddleware()],
      checkpointer: new MemorySaver(),
    });
    const result = (await lead.invoke({ messages: [new HumanMessage("go")] } as never, { configurable: { thread_id: "lead-report" } })) as unknown as LeadResult;

    // Sandbox paths in order, then URLs with an extension; a URL without one is no reference.
    expect(result.tool_artifacts.map((e) => [e.tool_name, e.real_ref])).toEqual([
      ["make_input", LEAD_INPUT],
      [TASK_TOOL_NAME, LEAD_INPUT],
      [TASK_TOOL_NAME, CHILD_OUTPUT],
      [TASK_TOOL_NAME, CHART],
    ]);
    const [fromTool, fromReport] = result.tool_artifacts.filter((e) => e.real_ref === LEAD_INPUT).map((e) => e.handle);
    expect(fromTool).toBe(firstHandle);
    expect(fromReport).toBe(secondHandle);
    expect(secondHandle).not.toBe(firstHandle);
    // The second handle is a lead handle like the first: it resolves to the same file.
    expect(reads).toEqual([LEAD_INPUT]);
  });
});

describe("where a child's state lives", () => {
  it("keeps the child's checkpoints in the lead's checkpointer under the child's thread id, so an interrupted child resumes there", async () => {
    const leadDb = tempSqliteSaver();
    const childDb = tempSqliteSaver();
    dbs.push(leadDb, childDb);
    const LEAD_THREAD = "lead-hitl";
    const CALL = "call_task_hitl";
    const CHILD_THREAD = childThreadId(LEAD_THREAD, CALL);
    const APPROVED = "/mnt/user-data/child/approved.txt";
    const approve = tool(
      async () => {
        const answer = interrupt("Publish the draft?");
        return `${answer === "yes" ? "Published" : "Dropped"} ${APPROVED}`;
      },
      { name: "approve", description: "Ask a human", schema: z.object({}) },
    );
    // Built twice: the resumed lead and child are fresh objects on a fresh connection, as in a new process.
    const build = (saver: BaseCheckpointSaver, leadScript: ScriptedStep[], childScript: ScriptedStep[]) => {
      const childModel = new ScriptedChatModel(childScript);
      // The child's own checkpointer, which the lead's replaces.
      const child = createAgent({ model: childModel, tools: [approve], middleware: [...toolArtifactsMiddleware()], checkpointer: childDb.saver });
      const lead = createAgent({
        model: new ScriptedChatModel(leadScript),
        tools: [createTaskTool({ agents: { publisher: child } })],
        middleware: [...toolArtifactsMiddleware()],
        checkpointer: saver,
      });
      return { lead, child, childModel };
    };
    const thread = { configurable: { thread_id: LEAD_THREAD } };

    const first = build(
      leadDb.saver,
      [{ tool_calls: [{ name: TASK_TOOL_NAME, args: { subagent_type: "publisher", description: "Publish the draft." }, id: CALL }] }],
      [{ tool_calls: [{ name: "approve", args: {} }] }],
    );
    const paused = (await first.lead.invoke({ messages: [new HumanMessage("go")] } as never, thread)) as unknown as LeadResult;
    expect(paused.__interrupt__).toHaveLength(1);
    const stored = await checkpointsOf(leadDb.saver, CHILD_THREAD);
    expect(stored.length).toBeGreaterThan(0);
    for (const c of stored) expect(c.ns).toMatch(/^tools:/);
    expect(await checkpointsOf(childDb.saver, CHILD_THREAD)).toEqual([]);
    expect((await first.child.graph.getState({ configurable: { thread_id: CHILD_THREAD } })).values).toEqual({});

    let childHandle = "";
    const resumed = build(
      leadDb.reopen(),
      [{ content: "Published." }],
      [
        (messages) => {
          childHandle = handleShown(messages, "approved.txt");
          return { content: `Published ${APPROVED} (${childHandle}).` };
        },
      ],
    );
    const result = (await resumed.lead.invoke(new Command({ resume: "yes" }) as never, thread)) as unknown as LeadResult;

    // The child went on from its checkpoint: its first model step is not run again.
    expect(resumed.childModel.calls).toBe(1);
    expect(resumed.childModel.seen[0]!.filter((m) => m.type !== "system" && !m.additional_kwargs?.durable_context_data).map((m) => [m.type, m.text])).toEqual([
      ["human", "Publish the draft."],
      ["ai", ""],
      ["tool", `Published ${APPROVED}`],
    ]);
    const latest = (await checkpointsOf(leadDb.saver, CHILD_THREAD))[0]!;
    expect((latest.values.tool_artifacts as ArtifactEntry[]).map((e) => e.handle)).toEqual([childHandle]);
    expect(result.tool_artifacts.map((e) => [e.tool_name, e.real_ref])).toEqual([[TASK_TOOL_NAME, APPROVED]]);
    expect(result.messages.at(-1)!.text).toBe("Published.");
  });

  it("pauses the lead under toolRetryMiddleware only when it is told to pass interrupts on, as the README says", async () => {
    const ask = tool(async () => `answer: ${interrupt("Go on?")} /mnt/user-data/child/a.txt`, { name: "ask", description: "Ask a human", schema: z.object({}) });
    const run = async (retry: ReturnType<typeof toolRetryMiddleware>) => {
      const db = tempSqliteSaver();
      dbs.push(db);
      // Asks whenever it is given the task; otherwise reports the answer.
      const childStep: ScriptedStep = (messages) => (messages.at(-1)!.type === "human" ? { tool_calls: [{ name: "ask", args: {} }] } : { content: `done: ${messages.at(-1)!.text}` });
      const child = createAgent({ model: new ScriptedChatModel([childStep, childStep, childStep, childStep]), tools: [ask], middleware: [...toolArtifactsMiddleware()] });
      const lead = createAgent({
        model: new ScriptedChatModel([{ tool_calls: [{ name: TASK_TOOL_NAME, args: { subagent_type: "c", description: "ask" }, id: "call_t" }] }, { content: "ok" }]),
        tools: [createTaskTool({ agents: { c: child } })],
        middleware: [retry, ...toolArtifactsMiddleware()],
        checkpointer: db.saver,
      });
      return (await lead.invoke({ messages: [new HumanMessage("go")] } as never, { configurable: { thread_id: "lead-retry" } })) as unknown as LeadResult;
    };
    // langchain's default retries the interrupt as a failure and ends with an error result.
    const swallowed = await run(toolRetryMiddleware({ maxRetries: 1, initialDelayMs: 0 }));
    expect(swallowed.__interrupt__).toBeUndefined();
    expect(swallowed.messages.find((m) => ToolMessage.isInstance(m))?.text).toBe("Tool 'task' failed after 2 attempts with GraphInterrupt");
    const passedOn = await run(
      toolRetryMiddleware({
        maxRetries: 1,
        initialDelayMs: 0,
        retryOn: (e) => !isGraphInterrupt(e),
        onFailure: (e) => {
          if (isGraphInterrupt(e)) throw e;
          return `failed: ${e.message}`;
        },
      }),
    );
    expect(passedOn.__interrupt__).toHaveLength(1);
  });

  it("resumes a child delegated without a call id from a custom graph's node in its thread, not a new one", async () => {
    let sideEffects = 0;
    const step = tool(async () => `step ${++sideEffects} done`, { name: "step", description: "A side effect", schema: z.object({}) });
    const ask = tool(async () => `answer: ${interrupt("Go on?")}`, { name: "ask", description: "Ask a human", schema: z.object({}) });
    // The child's next step follows from its history, so a resumed child and one that started over are told apart.
    const childModel = new ScriptedChatModel(
      Array.from({ length: 8 }, (): ScriptedStep => (messages) => {
        const last = messages.at(-1)!;
        if (last.type === "human") return { tool_calls: [{ name: "step", args: {} }] };
        if (ToolMessage.isInstance(last) && last.name === "step") return { tool_calls: [{ name: "ask", args: {} }] };
        return { content: `child finished (${last.text})` };
      }),
    );
    const task = createTaskTool({ agents: { worker: createAgent({ model: childModel, tools: [step, ask] }) } });
    const graph = new StateGraph(MessagesAnnotation)
      .addNode("delegate", async () => ({ messages: [new HumanMessage(String(await task.invoke({ subagent_type: "worker", description: "work" })))] }))
      .addEdge(START, "delegate")
      .addEdge("delegate", END)
      .compile({ checkpointer: new MemorySaver() });
    const thread = { configurable: { thread_id: "custom-graph" } };

    const paused = (await graph.invoke({ messages: [] }, thread)) as { __interrupt__?: unknown[] };
    expect(paused.__interrupt__).toHaveLength(1);
    const resumed = (await graph.invoke(new Command({ resume: "yes" }), thread)) as { messages: BaseMessage[]; __interrupt__?: unknown[] };
    expect(resumed.__interrupt__).toBeUndefined();
    expect(resumed.messages.at(-1)!.text).toBe("child finished (answer: yes)");
    // The step before the interrupt ran once: the child went on from its checkpoint.
    expect(sideEffects).toBe(1);
    expect(childModel.calls).toBe(3);
  });

  it("hands back the result of a returnDirect tool the child ended on, which the lead captures", async () => {
    const PUBLISHED = "/mnt/user-data/pub/final.pdf";
    const publish = tool(async () => `Published ${PUBLISHED}`, { name: "publish", description: "Publish", schema: z.object({}), returnDirect: true });
    const childModel = new ScriptedChatModel([{ tool_calls: [{ name: "publish", args: {} }] }]);
    const child = createAgent({ model: childModel, tools: [publish], middleware: [...toolArtifactsMiddleware()] });
    const leadModel = new ScriptedChatModel([{ tool_calls: [{ name: TASK_TOOL_NAME, args: { subagent_type: "publisher", description: "Publish it." } }] }, { content: "ok" }]);
    const db = tempSqliteSaver();
    dbs.push(db);
    const lead = createAgent({ model: leadModel, tools: [createTaskTool({ agents: { publisher: child } })], middleware: [...toolArtifactsMiddleware()], checkpointer: db.saver });
    const result = (await lead.invoke({ messages: [new HumanMessage("go")] } as never, { configurable: { thread_id: "lead-rd" } })) as unknown as LeadResult;
    expect(childModel.calls).toBe(1); // the child really ended on the tool, with no answer after it
    expect(lastTool(result.messages)).toMatchObject({ name: TASK_TOOL_NAME, status: "success", content: `Published ${PUBLISHED}` });
    expect(result.tool_artifacts.map((e) => [e.tool_name, e.real_ref])).toEqual([[TASK_TOOL_NAME, PUBLISHED]]);
  });

  it("hands back the file and image blocks and the artifact of what the child ended on, which the lead captures", async () => {
    const IMAGE = "https://cdn.example.com/charts/final.png";
    const FILE = "https://files.example.com/reports/final.pdf";
    const ANSWER_IMAGE = "https://cdn.example.com/charts/answer.png";
    // A returnDirect tool whose result is blocks and an artifact (as an MCP tool's can be)...
    const publish = tool(async () => [[{ type: "text", text: "Published." }, { type: "image", url: IMAGE, mimeType: "image/png" }], { structured_content: { file: FILE } }], {
      name: "publish",
      description: "Publish",
      schema: z.object({}),
      returnDirect: true,
      responseFormat: "content_and_artifact",
    });
    // ...and a final answer with an image block beside a reasoning block the lead's provider may not take.
    const answer = [{ type: "reasoning", reasoning: "done" }, { type: "text", text: "Here it is." }, { type: "image", url: ANSWER_IMAGE }];
    const publisher = createAgent({ model: new ScriptedChatModel([{ tool_calls: [{ name: "publish", args: {} }] }]), tools: [publish], middleware: [...toolArtifactsMiddleware()] });
    const answerer = createAgent({ model: new ScriptedChatModel([{ content: answer }]), tools: [], middleware: [...toolArtifactsMiddleware()] });
    const leadModel = new ScriptedChatModel([
      { tool_calls: [{ name: TASK_TOOL_NAME, args: { subagent_type: "publisher", description: "Publish it." } }] },
      { tool_calls: [{ name: TASK_TOOL_NAME, args: { subagent_type: "answerer", description: "Show it." } }] },
      { content: "ok" },
    ]);
    const lead = createAgent({ model: leadModel, tools: [createTaskTool({ agents: { publisher, answerer } })], middleware: [...toolArtifactsMiddleware()] });
    const result = (await lead.invoke({ messages: [new HumanMessage("go")] } as never, { configurable: { thread_id: "lead-blocks" } })) as unknown as LeadResult;
    const reports = result.messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m));
    expect(reports.map((m) => [m.name, m.status, m.content])).toEqual([
      [TASK_TOOL_NAME, "success", [{ type: "text", text: "Published." }, { type: "image", url: IMAGE, mimeType: "image/png" }]],
      [TASK_TOOL_NAME, "success", [{ type: "text", text: "Here it is." }, { type: "image", url: ANSWER_IMAGE }]],
    ]);
    expect(reports[0]!.artifact).toEqual({ structured_content: { file: FILE } });
    expect(result.tool_artifacts.map((e) => [e.tool_name, e.artifact_type, e.real_ref])).toEqual([
      [TASK_TOOL_NAME, "file", FILE],
      [TASK_TOOL_NAME, "image", IMAGE],
      [TASK_TOOL_NAME, "image", ANSWER_IMAGE],
    ]);
  });

  it("reports a child's structured response, resolved, not the child's handles", async () => {
    const render = tool(async () => `Rendered ${CHILD_OUTPUT}`, { name: "render", description: "Render", schema: z.object({}) });
    const format = toolStrategy(z.object({ file: z.string() }));
    let childHandle = "";
    const childModel = new ScriptedChatModel([
      { tool_calls: [{ name: "render", args: {} }] },
      (messages) => {
        childHandle = handleShown(messages, "summary.txt");
        return { tool_calls: [{ name: format[0]!.name, args: { file: childHandle } }] };
      },
    ]);
    const child = createAgent({ model: childModel, tools: [render], responseFormat: format, middleware: [...toolArtifactsMiddleware()] });
    const leadModel = new ScriptedChatModel([{ tool_calls: [{ name: TASK_TOOL_NAME, args: { subagent_type: "renderer", description: "Render it." } }] }, { content: "ok" }]);
    const lead = createAgent({ model: leadModel, tools: [createTaskTool({ agents: { renderer: child } })], middleware: [...toolArtifactsMiddleware()], checkpointer: new MemorySaver() });
    const result = (await lead.invoke({ messages: [new HumanMessage("go")] } as never, { configurable: { thread_id: "lead-so" } })) as unknown as LeadResult;
    expect(childHandle).toMatch(/^art_/);
    expect(lastTool(result.messages)).toMatchObject({ name: TASK_TOOL_NAME, status: "success", content: JSON.stringify({ file: CHILD_OUTPUT }) });
    expect(result.tool_artifacts.map((e) => [e.tool_name, e.real_ref])).toEqual([[TASK_TOOL_NAME, CHILD_OUTPUT]]);
  });

  it("reports a child's string structured response as itself, not as a JSON string", async () => {
    const render = tool(async () => `Rendered ${CHILD_OUTPUT}`, { name: "render", description: "Render", schema: z.object({}) });
    const format = toolStrategy(z.string());
    const childModel = new ScriptedChatModel([
      { tool_calls: [{ name: "render", args: {} }] },
      (messages) => ({ tool_calls: [{ name: format[0]!.name, args: `wrote ${handleShown(messages, "summary.txt")}\nand more` as never }] }),
    ]);
    const child = createAgent({ model: childModel, tools: [render], responseFormat: format as never, middleware: [...toolArtifactsMiddleware()] });
    const leadModel = new ScriptedChatModel([{ tool_calls: [{ name: TASK_TOOL_NAME, args: { subagent_type: "renderer", description: "Render it." } }] }, { content: "ok" }]);
    const lead = createAgent({ model: leadModel, tools: [createTaskTool({ agents: { renderer: child } })], middleware: [...toolArtifactsMiddleware()], checkpointer: new MemorySaver() });
    const result = (await lead.invoke({ messages: [new HumanMessage("go")] } as never, { configurable: { thread_id: "lead-so-string" } })) as unknown as LeadResult;
    expect(lastTool(result.messages).content).toBe(`wrote ${CHILD_OUTPUT}\nand more`);
    expect(result.tool_artifacts.map((e) => e.real_ref)).toEqual([CHILD_OUTPUT]);
  });
});
