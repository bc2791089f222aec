/**
 * Structured output (`responseFormat`) in real agents on a SQLite
 * checkpointer: the caller gets the references behind the handles the model
 * wrote into its structured response, the history keeps the handles, and the
 * ToolMessage langchain writes for a `toolStrategy` response is recorded but
 * not read as a tool's result (no entries, no consumption), across a reload.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createAgent, providerStrategy, tool, toolStrategy } from "langchain";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { z } from "zod";
import { extractArtifacts } from "../../src/extract.js";
import { toolArtifactsMiddleware } from "../../src/middleware/index.js";
import { markStructuredResponse } from "../../src/middleware/structured.js";
import { isStructuredResponseMessage, STRUCTURED_RESPONSE_MARK } from "../../src/types.js";
import { toolArtifactsStateSchema } from "../../src/registry.js";
import type { ToolArtifactsConfigInput } from "../../src/config.js";
import { ScriptedChatModel, type ScriptedReply } from "../../src/testing/scripted-model.js";
import type { ArtifactEntry } from "../../src/types.js";
import { tempSqliteSaver, type TempSqliteSaver } from "../support/sqlite.js";

const REPORT = "/mnt/user-data/outputs/report.md";
const NEW_URL = "https://example.com/new.pdf";
const UNKNOWN = "art_deadbeef";

const dbs: TempSqliteSaver[] = [];
afterEach(() => {
  for (const db of dbs.splice(0)) db.cleanup();
});

function shownHandle(messages: BaseMessage[]): string {
  const block = messages.find((m) => HumanMessage.isInstance(m) && m.additional_kwargs?.durable_context_data === true);
  const handle = block?.text.match(/art_[0-9a-f]{8}/)?.[0];
  if (handle === undefined) throw new Error("no handle shown to the model");
  return handle;
}

const Report = z.object({ file: z.string(), note: z.string() });

/** What a run returns; `build` spreads `responseFormat` in, which hides `structuredResponse` from the agent's type. */
interface RunState {
  messages: BaseMessage[];
  structuredResponse?: z.infer<typeof Report>;
  tool_artifacts: ArtifactEntry[];
  tool_artifact_processed: string[];
}

/**
 * An agent whose model renders a report, then answers with a structured
 * response naming the report's handle, a new URL and an unknown handle; the
 * second run (a fresh agent and saver on the same file) ends in plain text,
 * so capture reads the first run's messages from the checkpoint.
 */
function run(strategy: "tool" | "provider", config: ToolArtifactsConfigInput = {}) {
  const db = tempSqliteSaver();
  dbs.push(db);
  const format = strategy === "tool" ? toolStrategy(Report) : providerStrategy(Report);
  const schemaName = strategy === "tool" ? (format as unknown as Array<{ name: string }>)[0]!.name : "";
  const answer = (value: object): ScriptedReply => (strategy === "tool" ? { tool_calls: [{ name: schemaName, args: value }] } : { content: JSON.stringify(value) });
  const scanned: string[] = [];
  const extract: typeof extractArtifacts = (message, options) => {
    scanned.push(String((message as { name?: string }).name));
    return extractArtifacts(message, options);
  };
  const render = tool(async () => `Rendered ${REPORT}`, { name: "render", description: "Render the report", schema: z.object({}) });
  const build = (saver: TempSqliteSaver["saver"], script: ConstructorParameters<typeof ScriptedChatModel>[0], structured: boolean) =>
    createAgent({
      model: new ScriptedChatModel(script),
      tools: [render],
      checkpointer: saver,
      stateSchema: toolArtifactsStateSchema,
      ...(structured ? { responseFormat: format } : {}),
      middleware: [...toolArtifactsMiddleware(config, { capture: { extract } })],
    });
  const thread = { configurable: { thread_id: `structured-${strategy}` } };
  return {
    schemaName,
    scanned,
    first: (): Promise<RunState> =>
      build(
        db.saver,
        [{ tool_calls: [{ name: "render", args: {} }] }, (messages) => answer({ file: shownHandle(messages), note: `also ${NEW_URL} and ${UNKNOWN}` })],
        true,
      ).invoke({ messages: [{ role: "user", content: "report" }] }, thread),
    second: (): Promise<RunState> => build(db.reopen(), [{ content: "ok" }], false).invoke({ messages: [{ role: "user", content: "thanks" }] }, thread),
  };
}

const registryOf = (state: RunState) => state.tool_artifacts;

describe("structured output", () => {
  for (const strategy of ["tool", "provider"] as const) {
    it(`${strategy}Strategy: the caller gets the references of known handles; the history keeps the handles`, async () => {
      const agent = run(strategy);
      const result = await agent.first();
      const [entry] = registryOf(result);
      expect(entry?.real_ref).toBe(REPORT);
      // Unknown handles stay as written: there is no call to refuse.
      expect(result.structuredResponse).toEqual({ file: REPORT, note: `also ${NEW_URL} and ${UNKNOWN}` });
      const written = { file: entry!.handle, note: `also ${NEW_URL} and ${UNKNOWN}` };
      const last = result.messages.filter((m) => AIMessage.isInstance(m)).at(strategy === "tool" ? -2 : -1) as AIMessage;
      if (strategy === "tool") expect(last.tool_calls?.[0]?.args).toEqual(written);
      else expect(JSON.parse(last.text)).toEqual(written);
    });
  }

  it("toolStrategy: the response's ToolMessage is marked, survives a reload, and gives no entries and no consumption", async () => {
    const agent = run("tool");
    const first = await agent.first();
    const answer = first.messages.filter((m) => ToolMessage.isInstance(m)).at(-1) as ToolMessage;
    expect(answer.name).toBe(agent.schemaName);
    expect(answer.additional_kwargs[STRUCTURED_RESPONSE_MARK]).toBe(true);
    expect(JSON.parse(answer.text).file).toMatch(/^art_[0-9a-f]{8}$/);

    const second = await agent.second();
    const reloaded = second.messages.find((m) => ToolMessage.isInstance(m) && m.tool_call_id === answer.tool_call_id) as ToolMessage;
    expect(reloaded.additional_kwargs[STRUCTURED_RESPONSE_MARK]).toBe(true);
    // Recorded (never offered again), not read: only render's result was scanned.
    expect(agent.scanned).toEqual(["render"]);
    expect(registryOf(second).map((e) => [e.real_ref, e.tool_name, e.consumed_by])).toEqual([[REPORT, "render", undefined]]);
    // Both its keys are in the ledger: the result and the call (settled, not retried).
    expect(second.tool_artifact_processed.filter((k) => k.startsWith("retry:"))).toEqual([]);
    expect(second.tool_artifact_processed).toHaveLength(first.tool_artifact_processed.length + 2);
  });

  it("toolStrategy with a call the model gave no id: its answer is still not read as a tool's result", async () => {
    /** A model whose tool calls carry no id, as some providers' do. */
    class NoCallIds extends ScriptedChatModel {
      override async _generate(messages: BaseMessage[]) {
        const { message } = (await super._generate(messages)).generations[0]!;
        const ai = message as AIMessage;
        const stripped = new AIMessage({ id: ai.id, content: ai.content, tool_calls: ai.tool_calls!.map(({ id: _id, ...call }) => call) });
        return { generations: [{ text: stripped.text, message: stripped }] };
      }
    }
    const db = tempSqliteSaver();
    dbs.push(db);
    const format = toolStrategy(Report);
    const build = (model: ScriptedChatModel, structured: boolean) =>
      createAgent({ model, tools: [], checkpointer: db.saver, stateSchema: toolArtifactsStateSchema, ...(structured ? { responseFormat: format } : {}), middleware: [...toolArtifactsMiddleware()] });
    const thread = { configurable: { thread_id: "no-call-id" } };
    const first = await build(new NoCallIds([{ tool_calls: [{ name: format[0]!.name, args: { file: REPORT, note: "n" } }] }]), true).invoke({ messages: [{ role: "user", content: "report" }] }, thread);
    const answer = first.messages.find((m) => ToolMessage.isInstance(m)) as ToolMessage;
    expect([answer.tool_call_id, answer.additional_kwargs[STRUCTURED_RESPONSE_MARK]]).toEqual(["", true]);
    const second = await build(new ScriptedChatModel([{ content: "ok" }]), false).invoke({ messages: [{ role: "user", content: "thanks" }] }, thread);
    expect(second.tool_artifacts).toEqual([]);
  });

  it("resolveHandlesInArgs off: handles stay in the structured response; the ToolMessage is still not read", async () => {
    const agent = run("tool", { resolveHandlesInArgs: false });
    const first = await agent.first();
    expect(first.structuredResponse?.file).toBe(registryOf(first)[0]!.handle);
    const second = await agent.second();
    expect(agent.scanned).toEqual(["render"]);
    expect(registryOf(second).map((e) => e.real_ref)).toEqual([REPORT]);
  });

  it("enabled off: nothing is resolved or marked", async () => {
    const db = tempSqliteSaver();
    dbs.push(db);
    const format = toolStrategy(Report);
    // The registry holds the handle, so resolution, were it on, would replace it.
    const [known] = extractArtifacts({ tool_call_id: "c0", content: `wrote ${REPORT}` }, { threadId: "off" });
    const model = new ScriptedChatModel([{ tool_calls: [{ name: format[0]!.name, args: { file: known!.handle, note: "n" } }] }]);
    const agent = createAgent({
      model,
      tools: [],
      checkpointer: db.saver,
      stateSchema: toolArtifactsStateSchema,
      responseFormat: format,
      middleware: [...toolArtifactsMiddleware({ enabled: false })],
    });
    const result = await agent.invoke({ messages: [{ role: "user", content: "go" }], tool_artifacts: [known!] }, { configurable: { thread_id: "off" } });
    expect(result.tool_artifacts).toEqual([known]);
    expect(result.structuredResponse).toEqual({ file: known!.handle, note: "n" });
    const answer = result.messages.find((m) => ToolMessage.isInstance(m)) as ToolMessage;
    expect(answer.additional_kwargs[STRUCTURED_RESPONSE_MARK]).toBeUndefined();
  });
});

describe("markStructuredResponse", () => {
  it("counts only the mark true: capture skips a marked message, so a stray 1 or \"true\" must not hide a tool result", () => {
    for (const mark of [1, "true", {}]) expect(isStructuredResponseMessage({ additional_kwargs: { [STRUCTURED_RESPONSE_MARK]: mark } })).toBe(false);
    expect(isStructuredResponseMessage({ additional_kwargs: { [STRUCTURED_RESPONSE_MARK]: true } })).toBe(true);
  });

  it("marks a copy of the answer that keeps every field of the original", () => {
    const call = new AIMessage({ id: "ai-1", content: "", tool_calls: [{ id: "call-1", name: "Answer", args: { a: 1 } }] });
    const answer = new ToolMessage({
      id: "tool-1",
      content: "Returning structured response",
      tool_call_id: "call-1",
      name: "Answer",
      status: "success",
      artifact: { kept: true },
      metadata: { source: "host" },
      response_metadata: { r: 1 },
      additional_kwargs: { k: 2 },
    });
    const other = new ToolMessage({ id: "tool-2", content: "x", tool_call_id: "call-elsewhere" });
    const { messages } = markStructuredResponse({ messages: [call, answer, other] } as never) as unknown as { messages: BaseMessage[] };
    const marked = messages[1] as ToolMessage;
    expect(marked).not.toBe(answer);
    expect(messages[2]).toBe(other);
    expect({ ...marked.toDict().data, additional_kwargs: undefined }).toEqual({ ...answer.toDict().data, additional_kwargs: undefined });
    expect(marked.metadata).toEqual({ source: "host" });
    expect(marked.additional_kwargs).toEqual({ k: 2, [STRUCTURED_RESPONSE_MARK]: true });
  });

  it("marks the answer to a call without an id, which langchain writes under tool_call_id \"\"", () => {
    const call = new AIMessage({ content: "", tool_calls: [{ name: "Answer", args: { a: 1 } }] });
    const answer = new ToolMessage({ content: "{}", tool_call_id: "", name: "Answer" });
    const { messages } = markStructuredResponse({ messages: [call, answer] } as never) as unknown as { messages: BaseMessage[] };
    expect(isStructuredResponseMessage(messages[1])).toBe(true);
  });
});
