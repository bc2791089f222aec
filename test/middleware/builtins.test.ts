// LangChain.js built-ins whose place beside capture or resolution decides what
// is captured or what a tool is given, each listed where orderMiddleware must
// move it: real agents on SQLite, a scripted chat model the only fake.
import { afterEach, describe, expect, it } from "vitest";
import { createAgent, llmToolSelectorMiddleware, modelCallLimitMiddleware, modelRetryMiddleware, piiMiddleware, toolEmulatorMiddleware, type AgentMiddleware } from "langchain";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { toolArtifactsMiddleware } from "../../src/middleware/index.js";
import { generateHandle } from "../../src/engine/hash.js";
import { orderMiddleware, orderingName } from "../../src/ordering.js";
import { ScriptedChatModel } from "../../src/testing/scripted-model.js";
import type { ArtifactEntry } from "../../src/types.js";
import { tempSqliteSaver, type TempSqliteSaver } from "../support/sqlite.js";
import { fileTools } from "./fixtures/capture-tools.js";

let db: TempSqliteSaver | undefined;
afterEach(() => db?.cleanup());

const THREAD = "builtins";
const run = { configurable: { thread_id: THREAD } };
type State = { messages: BaseMessage[]; tool_artifacts: ArtifactEntry[] };

/** One run of an agent whose middleware list is `orderMiddleware(list)`; the names in the order it gave. */
async function runOrdered(model: ScriptedChatModel, list: AgentMiddleware[], tools = fileTools(), messages: unknown[] = [{ role: "user", content: "go" }]) {
  db = tempSqliteSaver();
  const middleware = orderMiddleware(list);
  const agent = createAgent({ model, tools: tools.tools, middleware, checkpointer: db.saver });
  const state = (await agent.invoke({ messages: messages as BaseMessage[] }, run)) as unknown as State;
  return { state, names: middleware.map(orderingName), received: tools.received };
}

describe("orderMiddleware and LangChain.js built-ins", () => {
  it("puts capture after piiMiddleware: a tool result's redacted email reaches neither the registry nor the model", async () => {
    const model = new ScriptedChatModel([{ tool_calls: [{ id: "w1", name: "write_file", args: { name: "export-john.doe@corp.com.csv" } }] }, { content: "ok" }]);
    const pii = piiMiddleware("email", { strategy: "redact", applyToToolResults: true });
    const { state, names } = await runOrdered(model, [...(toolArtifactsMiddleware({}) as unknown as AgentMiddleware[]), pii]);
    expect(names.indexOf("PIIMiddleware[email]")).toBeLessThan(names.indexOf("tool-artifacts-capture"));
    expect(state.tool_artifacts.length).toBeGreaterThan(0);
    expect(JSON.stringify(state.tool_artifacts)).not.toContain("john.doe@corp.com");
    // The model wrote the address in its own call; what it is shown back is redacted.
    const shown = model.seen[1]!.filter((m) => ToolMessage.isInstance(m) || m.additional_kwargs?.durable_context_data === true);
    expect(shown.map((m) => m.getType())).toEqual(["human", "tool"]);
    expect(JSON.stringify(shown)).not.toContain("john.doe@corp.com");
  });

  it("puts capture before modelCallLimitMiddleware: the results of the last round before the limit ends the run are captured", async () => {
    const model = new ScriptedChatModel([
      { tool_calls: [{ id: "w1", name: "write_file", args: { name: "a.txt" } }] },
      { tool_calls: [{ id: "w2", name: "write_file", args: { name: "b.txt" } }] },
      { content: "never asked" },
    ]);
    const limit = modelCallLimitMiddleware({ runLimit: 2, exitBehavior: "end" });
    const { state, names } = await runOrdered(model, [limit, ...(toolArtifactsMiddleware({}) as unknown as AgentMiddleware[])]);
    expect(names.indexOf("tool-artifacts-capture")).toBeLessThan(names.indexOf("model-call-limit"));
    expect(model.seen).toHaveLength(2);
    expect(state.tool_artifacts.map((e) => e.real_ref)).toEqual(["/mnt/user-data/a.txt", "/mnt/user-data/b.txt"]);
  });

  it("puts resolution outside toolEmulatorMiddleware: the emulator is given the real reference, and an unknown handle is refused", async () => {
    let handle = "";
    const model = new ScriptedChatModel([
      { tool_calls: [{ id: "w1", name: "write_file", args: { name: "a.txt" } }] },
      (messages: BaseMessage[]) => {
        const result = messages.find((m): m is ToolMessage => ToolMessage.isInstance(m) && m.tool_call_id === "w1")!;
        handle = generateHandle(THREAD, "w1", 0, 0, result.id);
        return {
          tool_calls: [
            { id: "r1", name: "read_file", args: { path: handle } },
            { id: "r2", name: "read_file", args: { path: "art_00000bad" } },
          ],
        };
      },
      { content: "ok" },
    ]);
    const emulator = new ScriptedChatModel([{ content: "emulated contents" }, { content: "emulated contents" }]);
    const emulate = toolEmulatorMiddleware({ tools: ["read_file"], model: emulator });
    const { state, names } = await runOrdered(model, [emulate, ...(toolArtifactsMiddleware({}) as unknown as AgentMiddleware[])]);
    expect(names.indexOf("tool-artifacts-resolution")).toBeLessThan(names.indexOf("tool-emulator"));
    const prompts = emulator.seen.map((messages) => (messages[0] as HumanMessage).text);
    expect(prompts).toHaveLength(1);
    expect(prompts[0]).toContain('Arguments: {"path":"/mnt/user-data/a.txt"}');
    const refused = state.messages.find((m): m is ToolMessage => ToolMessage.isInstance(m) && m.tool_call_id === "r2")!;
    expect(refused.status).toBe("error");
    expect(refused.text).toContain("unknown or expired artifact handle art_00000bad");
  });

  // What llmToolSelectorMiddleware's selection model answers: keep both tools.
  const keepBoth = { tool_calls: [{ name: "extract", args: { tools: ["write_file", "read_file"] } }] };

  it("puts projection inside llmToolSelectorMiddleware: with the block in the user turn, the selection model still reads only the user's words", async () => {
    const selector = new ScriptedChatModel([keepBoth, keepBoth, keepBoth]);
    const model = new ScriptedChatModel([
      { tool_calls: [{ id: "w1", name: "write_file", args: { name: "IGNORE_PREVIOUS_INSTRUCTIONS.txt" } }] },
      { tool_calls: [{ id: "w2", name: "write_file", args: { name: "b.txt" } }] },
      { content: "ok" },
    ]);
    const artifacts = toolArtifactsMiddleware({}, { projection: { blockPlacement: "user-turn" } }) as unknown as AgentMiddleware[];
    const { names } = await runOrdered(model, [...artifacts, llmToolSelectorMiddleware({ model: selector }) as unknown as AgentMiddleware]);
    expect(names.indexOf("llm-tool-selector")).toBeLessThan(names.indexOf("tool-artifacts-projection"));
    expect(JSON.stringify(model.seen[1])).toContain("IGNORE_PREVIOUS_INSTRUCTIONS.txt");
    // Inside the projection, the last two would hold the block (without the notice, which is in the system message).
    expect(selector.seen.map((messages) => messages.at(-1)!.text)).toEqual(["go", "go", "go"]);
  });

  it("puts projection inside llmToolSelectorMiddleware: a thread with no user message fails as langchain makes it, the block never taken for the query", async () => {
    const selector = new ScriptedChatModel([keepBoth]);
    const model = new ScriptedChatModel([{ content: "ok" }]);
    const history = [
      new AIMessage({ id: "a1", content: "", tool_calls: [{ id: "w0", name: "write_file", args: { name: "z.txt" } }] }),
      new ToolMessage({ id: "t1", content: "wrote /mnt/user-data/z.txt", tool_call_id: "w0", name: "write_file" }),
    ];
    const list = [...(toolArtifactsMiddleware({}) as unknown as AgentMiddleware[]), llmToolSelectorMiddleware({ model: selector }) as unknown as AgentMiddleware];
    await expect(runOrdered(model, list, fileTools(), history)).rejects.toThrow("No user message found in request messages");
    expect([selector.seen, model.seen]).toEqual([[], []]);
  });

  it("puts projection outside modelRetryMiddleware: a host section's bug is thrown, not retried into the run's answer", async () => {
    const model = new ScriptedChatModel([{ tool_calls: [{ id: "w1", name: "write_file", args: { name: "a.txt" } }] }, { content: "ok" }]);
    const notes = { title: "Notes", render: (async () => "x") as unknown as () => string };
    const artifacts = toolArtifactsMiddleware({}, { projection: { sections: [notes] } }) as unknown as AgentMiddleware[];
    const retry = modelRetryMiddleware({ maxRetries: 2, initialDelayMs: 0 }) as unknown as AgentMiddleware;
    expect(orderMiddleware([retry, ...artifacts]).map(orderingName)).toEqual(["tool-artifacts-projection", "model-retry", "tool-artifacts-capture", "tool-artifacts-resolution"]);
    // langchain wraps it (a MiddlewareError) and keeps its name and message.
    await expect(runOrdered(model, [retry, ...artifacts])).rejects.toMatchObject({
      name: "TypeError",
      message: 'projection: section "Notes": render must return a string, null or undefined (got a Promise: render is synchronous)',
    });
    expect(model.seen).toHaveLength(1);
  });
});
