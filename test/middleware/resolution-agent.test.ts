/**
 * Resolution as part of the whole: toolArtifactsMiddleware in a real agent on
 * a SQLite checkpointer. Handles are minted by capture from real tool results,
 * shown by projection, read by the model from its context, and resolved
 * before the policies and the tool.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createAgent, createMiddleware, humanInTheLoopMiddleware, tool, toolErrorMiddleware, type AgentMiddleware } from "langchain";
import { Command } from "@langchain/langgraph";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { z } from "zod";
import { resolveHandles } from "../../src/handles.js";
import { toolArtifactsMiddleware } from "../../src/middleware/index.js";
import type { ToolArtifactsConfigError } from "../../src/config.js";
import { policyFingerprint } from "../../src/fingerprint.js";
import { orderMiddleware } from "../../src/ordering.js";
import { toolArtifactsStateSchema } from "../../src/registry.js";
import { ScriptedChatModel } from "../../src/testing/scripted-model.js";
import type { ArtifactEntry } from "../../src/types.js";
import { resultIds } from "../support/result-ids.js";
import { tempSqliteSaver, type TempSqliteSaver } from "../support/sqlite.js";

const REPORT = "/mnt/user-data/outputs/report.md";
const CHART = "/mnt/user-data/outputs/chart.png";

/** The handle the hidden context block shows for a display name. */
function handleFor(messages: BaseMessage[], name: string): string {
  const block = messages.find((m) => HumanMessage.isInstance(m) && m.additional_kwargs?.durable_context_data === true);
  if (!block) throw new Error("no durable context block shown to the model");
  const line = block.text.split("\n").find((l) => l.includes(` | ${name} | `));
  if (!line) throw new Error(`no handle for ${name} in:\n${block.text}`);
  return line.split(" | ")[0]!;
}

const dbs: TempSqliteSaver[] = [];
afterEach(() => {
  for (const db of dbs.splice(0)) db.cleanup();
});

function setup() {
  const ran: Array<{ tool: string; args: unknown }> = [];
  const render = tool(async () => `Rendered ${REPORT} and ${CHART}.`, { name: "render", description: "Render outputs", schema: z.object({}) });
  const publish = tool(
    async (args) => {
      ran.push({ tool: "publish", args });
      return "published";
    },
    { name: "publish", description: "Publish files", schema: z.object({ files: z.array(z.string()), meta: z.object({ cover: z.string() }) }) },
  );
  const authorized: unknown[] = [];
  const authorization = createMiddleware({
    name: "authorization",
    wrapToolCall: (request, handler) => {
      authorized.push(request.toolCall.args);
      return handler(request);
    },
  });
  const db = tempSqliteSaver();
  dbs.push(db);
  return { ran, authorized, tools: [render, publish], authorization, db };
}

describe("toolArtifactsMiddleware", () => {
  it("is [capture, resolution, projection] with named members and the policy fingerprint", () => {
    const artifacts = toolArtifactsMiddleware({ maxEntries: 50 });
    expect(artifacts.map((m) => m.name)).toEqual(["tool-artifacts-capture", "tool-artifacts-resolution", "tool-artifacts-projection"]);
    expect([artifacts.capture, artifacts.resolution, artifacts.projection]).toEqual([...artifacts]);
    expect(artifacts.policyFingerprint).toBe(policyFingerprint({ maxEntries: 50 }));
    expect(artifacts.policyFingerprint).not.toBe(toolArtifactsMiddleware({ maxEntries: 50, injectModelContext: false }).policyFingerprint);
    expect(artifacts.config.maxEntries).toBe(50);
    expect(toolArtifactsMiddleware({ tool_artifacts: { max_entries: 50 } }).policyFingerprint).toBe(artifacts.policyFingerprint);
  });

  it("keeps the ledger out of every model call: no middleware with a wrapModelCall declares it", () => {
    // langchain parses such a middleware's schema out of state on every model
    // call, and the ledger is never trimmed.
    const artifacts = toolArtifactsMiddleware();
    for (const mw of artifacts) {
      const fields = Object.keys((mw.stateSchema as unknown as { fields: object }).fields);
      expect(mw.wrapModelCall === undefined || !fields.includes("tool_artifact_processed"), mw.name).toBe(true);
    }
    expect(artifacts.resolution.wrapModelCall).toBeDefined();
    expect(artifacts.projection.wrapModelCall).toBeDefined();
  });

  it("validates its configuration when created, naming the field", () => {
    expect(() => toolArtifactsMiddleware({ maxEntries: 5 })).toThrow(/maxEntries/);
    expect(() => toolArtifactsMiddleware({ tool_artifacts: { resolve_handles_in_args: "yes" } })).toThrow(/tool_artifacts\.resolve_handles_in_args/);
    // Its options too, by their full path; a projection option given one level up is refused, not dropped.
    const fieldOf = (build: () => unknown) => {
      try {
        build();
      } catch (error) {
        return (error as ToolArtifactsConfigError).field;
      }
      return "no error";
    };
    expect(fieldOf(() => toolArtifactsMiddleware({}, { sections: [] } as never))).toBe("sections");
    expect(fieldOf(() => toolArtifactsMiddleware({}, { projection: { labelMaxChars: 5 } }))).toBe("projection.labelMaxChars");
    expect(fieldOf(() => toolArtifactsMiddleware({}, { projection: { artifactBudgetChars: 300 } }))).toBe("projection.artifactBudgetChars");
    expect(fieldOf(() => toolArtifactsMiddleware({}, { capture: { extract: "extractArtifacts" as never } }))).toBe("capture.extract");
    expect(fieldOf(() => toolArtifactsMiddleware({}, { projection: { artifactBudgetChars: 600 }, capture: {} }))).toBe("no error");
  });

  it("resolves handles minted from real tool results, on a later turn, through the policies, into the tool", async () => {
    const { ran, authorized, tools, authorization, db } = setup();
    let used: { report: string; chart: string } | undefined;
    const model = new ScriptedChatModel([
      { tool_calls: [{ name: "render", args: {} }] },
      { content: "rendered" },
      (messages) => {
        used = { report: handleFor(messages, "report.md"), chart: handleFor(messages, "chart.png") };
        return { tool_calls: [{ id: "call_publish", name: "publish", args: { files: [used.report, `\`${used.chart}\``], meta: { cover: `cover: ${used.chart}` } } }] };
      },
      { content: "published" },
    ]);
    const middleware = orderMiddleware([authorization, ...toolArtifactsMiddleware()]);
    expect(middleware.map((m) => m.name)).toEqual(["tool-artifacts-resolution", "authorization", "tool-artifacts-capture", "tool-artifacts-projection"]);
    // A spread middleware list is typed as an array, so the agent declares the channels for typed state.
    const agent = createAgent({ model, tools, middleware, stateSchema: toolArtifactsStateSchema, checkpointer: db.saver });
    const thread = { configurable: { thread_id: "e2e-thread" } };

    await agent.invoke({ messages: [new HumanMessage("render")] }, thread);
    const result = await agent.invoke({ messages: [new HumanMessage("publish them")] }, thread);

    expect(used!.report).toMatch(/^art_[0-9a-f]{8}$/);
    const resolved = { files: [REPORT, CHART], meta: { cover: `cover: ${CHART}` } };
    expect(ran).toEqual([{ tool: "publish", args: resolved }]);
    expect(authorized).toEqual([{}, resolved]);
    const publishCall = result.messages.flatMap((m: BaseMessage) => (AIMessage.isInstance(m) ? (m.tool_calls ?? []) : [])).find((c: { name: string }) => c.name === "publish")!;
    expect(publishCall.args).toEqual({ files: [used!.report, `\`${used!.chart}\``], meta: { cover: `cover: ${used!.chart}` } });

    // Capture saw the consuming call in the following round.
    const registry = result.tool_artifacts as ArtifactEntry[];
    expect(registry.map((e) => [e.real_ref, e.consumed_by])).toEqual([
      [REPORT, ["call_publish"]],
      [CHART, ["call_publish"]],
    ]);
  });

  it("refuses a handle minted in another thread: handles are thread-local", async () => {
    const { ran, tools, db } = setup();
    let foreign = "";
    const modelA = new ScriptedChatModel([{ tool_calls: [{ id: "call_same", name: "render", args: {} }] }, (messages) => ((foreign = handleFor(messages, "report.md")), { content: "ok" })]);
    const modelB = new ScriptedChatModel([
      { tool_calls: [{ id: "call_same", name: "render", args: {} }] },
      () => ({ tool_calls: [{ id: "call_foreign", name: "publish", args: { files: [foreign], meta: { cover: "none" } } }] }),
      { content: "ok" },
    ]);
    // Stable result ids: both threads' results then share their call id and
    // message id, so only the thread id can tell their handles apart.
    const middleware = orderMiddleware([resultIds(), ...toolArtifactsMiddleware()]);
    await createAgent({ model: modelA, tools, middleware, checkpointer: db.saver }).invoke({ messages: [new HumanMessage("a")] }, { configurable: { thread_id: "thread-a" } });
    const out = await createAgent({ model: modelB, tools, middleware, stateSchema: toolArtifactsStateSchema, checkpointer: db.saver }).invoke({ messages: [new HumanMessage("b")] }, { configurable: { thread_id: "thread-b" } });

    const ownReport = (out.tool_artifacts as ArtifactEntry[]).find((e) => e.real_ref === REPORT)!;
    expect(out.messages.find((m: BaseMessage) => ToolMessage.isInstance(m) && m.tool_call_id === "call_same")!.id).toBe("result-call_same");
    expect(ownReport.handle).not.toBe(foreign);
    expect(ran).toEqual([]);
    const refusal = out.messages.find((m: BaseMessage) => ToolMessage.isInstance(m) && m.tool_call_id === "call_foreign") as ToolMessage;
    expect(refusal.status).toBe("error");
    expect(String(refusal.content)).toContain(foreign);
    expect((out.tool_artifacts as ArtifactEntry[]).map((e) => e.handle)).not.toContain(foreign);
  });

  it("under human review: the reviewer sees handles (the README's snippet shows the files), and approved or edited args are resolved when the call runs", async () => {
    const { ran, tools, db } = setup();
    let used: { report: string; chart: string } | undefined;
    const model = new ScriptedChatModel([
      { tool_calls: [{ name: "render", args: {} }] },
      (messages) => {
        used = { report: handleFor(messages, "report.md"), chart: handleFor(messages, "chart.png") };
        return { tool_calls: [{ name: "publish", args: { files: [used.report], meta: { cover: used.chart } } }] };
      },
      { content: "published once" },
      () => ({ tool_calls: [{ name: "publish", args: { files: [used!.report], meta: { cover: "none" } } }] }),
      { content: "published twice" },
    ]);
    const agent = createAgent({
      model,
      tools,
      middleware: [humanInTheLoopMiddleware({ interruptOn: { publish: true } }), ...toolArtifactsMiddleware()],
      stateSchema: toolArtifactsStateSchema,
      checkpointer: db.saver,
    });
    const thread = { configurable: { thread_id: "review-thread" } };

    const paused = await agent.invoke({ messages: [new HumanMessage("publish the report")] }, thread);
    const [request] = (paused.__interrupt__ as Array<{ value: { actionRequests: Array<{ args: unknown }> } }>)[0]!.value.actionRequests;
    expect(request!.args).toEqual({ files: [used!.report], meta: { cover: used!.chart } });
    // What a review UI can show instead, as the README says.
    const entries = (await agent.graph.getState(thread)).values.tool_artifacts as ArtifactEntry[];
    expect(resolveHandles(request!.args, (h) => entries.find((e) => e.handle === h)?.real_ref)).toEqual({ files: [REPORT], meta: { cover: CHART } });

    await agent.invoke(new Command({ resume: { decisions: [{ type: "approve" }] } }), thread);
    expect(ran).toEqual([{ tool: "publish", args: { files: [REPORT], meta: { cover: CHART } } }]);

    // The reviewer swaps in another handle: that one is resolved.
    await agent.invoke({ messages: [new HumanMessage("again")] }, thread);
    await agent.invoke(new Command({ resume: { decisions: [{ type: "edit", editedAction: { name: "publish", args: { files: [used!.chart], meta: { cover: `\`${used!.report}\`` } } } }] } }), thread);
    expect(ran[1]).toEqual({ tool: "publish", args: { files: [CHART], meta: { cover: REPORT } } });
  });

  describe("a tool that throws", () => {
    /** One turn whose only tool throws; what the run gives back, or what it threw. */
    async function throwingTurn(middleware: readonly AgentMiddleware[]) {
      const { db } = setup();
      const flaky = tool(
        async () => {
          throw new Error(`boom at ${REPORT}`);
        },
        { name: "flaky", description: "Fails", schema: z.object({}) },
      );
      const model = new ScriptedChatModel([{ tool_calls: [{ id: "call_flaky", name: "flaky", args: {} }] }, { content: "recovered" }]);
      const agent = createAgent({ model, tools: [flaky], middleware: [...middleware], stateSchema: toolArtifactsStateSchema, checkpointer: db.saver });
      try {
        const result = await agent.invoke({ messages: [new HumanMessage("try")] }, { configurable: { thread_id: "flaky" } });
        const answer = result.messages.find((m: BaseMessage) => ToolMessage.isInstance(m)) as ToolMessage;
        return { status: answer.status, text: answer.text, last: result.messages.at(-1)!.text, registry: result.tool_artifacts as ArtifactEntry[] };
      } catch (error) {
        return { threw: (error as Error).message };
      }
    }

    it("with the feature off, recovers as it does without the library (no hook that could only pass calls on)", async () => {
      const without = await throwingTurn([]);
      expect(without).toMatchObject({ last: "recovered" });
      expect(await throwingTurn(toolArtifactsMiddleware({ enabled: false }))).toEqual({ ...without, registry: [] });
      expect(toolArtifactsMiddleware({ enabled: false }).every((m) => m.wrapToolCall === undefined && m.wrapModelCall === undefined && m.beforeModel === undefined)).toBe(true);
      const noResolution = toolArtifactsMiddleware({ resolveHandlesInArgs: false });
      expect(noResolution.resolution.wrapToolCall).toBeUndefined();
      // Capture reads the error message like any result. langchain marks it
      // `status: "error"` (1.5.14 on), and an error result gives no entries;
      // before that it is unmarked, and its text is read: the path in it.
      const captured = await throwingTurn(noResolution);
      expect(captured).toEqual({ ...without, registry: expect.any(Array) });
      expect((captured.registry as ArtifactEntry[]).map((e) => e.real_ref)).toEqual(without.status === "error" ? [] : [REPORT]);
    });

    it("with resolution on, fails the run as langchain makes any wrapToolCall hook do, and toolErrorMiddleware turns it into an error result (the README's advice)", async () => {
      expect(await throwingTurn(toolArtifactsMiddleware())).toEqual({ threw: `boom at ${REPORT}` });
      const handled = await throwingTurn([
        ...toolArtifactsMiddleware(),
        toolErrorMiddleware({ onError: (error) => `The tool failed: ${(error as Error).message}` }),
      ]);
      expect(handled).toEqual({ status: "error", text: `The tool failed: boom at ${REPORT}`, last: "recovered", registry: [] });
    });
  });
});
