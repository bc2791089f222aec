import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import { createAgent, tool } from "langchain";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createTaskTool, TASK_TOOL_NAME } from "../src/delegation.js";
import { toolArtifactsMiddleware } from "../src/middleware/index.js";
import { ScriptedChatModel, type ScriptedStep } from "../src/testing/scripted-model.js";
import type { ArtifactEntry } from "../src/types.js";

const LEAD_INPUT = "/mnt/user-data/lead/input.csv";
const CHILD_OUTPUT = "/mnt/user-data/child/summary.txt";

/** The handle the hidden context block lists for a display name (what a real model would read). */
function handleShown(messages: readonly BaseMessage[], displayName: string): string {
  const block = messages.find((m) => HumanMessage.isInstance(m) && m.additional_kwargs?.durable_context_data === true);
  const line = block?.text.split("\n").find((l) => l.split(" | ")[2] === displayName);
  if (!line) throw new Error(`no handle shown for ${displayName}`);
  return line.slice(0, 12);
}

function handlesShown(messages: readonly BaseMessage[]): string[] {
  const block = messages.find((m) => HumanMessage.isInstance(m) && m.additional_kwargs?.durable_context_data === true);
  return block ? [...block.text.matchAll(/^(art_[0-9a-f]{8}) \|/gm)].map((m) => m[1]!) : [];
}

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
