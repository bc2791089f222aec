import { afterEach, describe, expect, it } from "vitest";
import { createAgent, createMiddleware, tool } from "langchain";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import { z } from "zod";
import { parseToolArtifactsConfig, ToolArtifactsConfigError, type ToolArtifactsConfigInput } from "../../src/config.js";
import { resolutionMiddleware, RESOLUTION_MIDDLEWARE_NAME } from "../../src/middleware/resolution.js";
import { orderMiddleware } from "../../src/ordering.js";
import { ScriptedChatModel, type ScriptedStep } from "../../src/testing/scripted-model.js";
import type { ArtifactEntry } from "../../src/types.js";
import { tempSqliteSaver, type TempSqliteSaver } from "../support/sqlite.js";

const REPORT = "art_0000a001";
const CHART = "art_0000b002";
const SITE = "art_0000c003";
const GHOST = "art_deadbeef";

function entry(handle: string, real_ref: string, display_name = real_ref.split("/").at(-1)!): ArtifactEntry {
  return { handle, tool_name: "producer", tool_call_id: "call_seed", call_index: 0, artifact_type: "file", display_name, real_ref, created_at: "2025-01-01T00:00:00.000Z" };
}

const SEED = [entry(REPORT, "/mnt/user-data/outputs/report.md"), entry(CHART, "/mnt/user-data/outputs/chart.png"), entry(SITE, "https://example.test/data/site.json?v=2")];
const REFS = Object.fromEntries(SEED.map((e) => [e.handle, e.real_ref]));

/** Real tools that record the arguments they actually ran with. */
function recordingTools() {
  const ran: Array<{ tool: string; args: unknown }> = [];
  const readFile = tool(
    async (args) => {
      ran.push({ tool: "read_file", args });
      return `read ${args.path}`;
    },
    { name: "read_file", description: "Read a file", schema: z.object({ path: z.string() }) },
  );
  const bundle = tool(
    async (args) => {
      ran.push({ tool: "bundle", args });
      return "bundled";
    },
    {
      name: "bundle",
      description: "Bundle files",
      schema: z.object({ files: z.array(z.object({ src: z.string(), label: z.string() })), options: z.object({ note: z.string(), links: z.array(z.string()) }) }),
    },
  );
  return { ran, tools: [readFile, bundle] };
}

/** An inner policy, as a host would write it: it records what it is asked to authorise. */
function authorizationPolicy() {
  const seen: unknown[] = [];
  const middleware = createMiddleware({
    name: "authorization",
    wrapToolCall: (request, handler) => {
      seen.push(request.toolCall.args);
      return handler(request);
    },
  });
  return { seen, middleware };
}

const dbs: TempSqliteSaver[] = [];
afterEach(() => {
  for (const db of dbs.splice(0)) db.cleanup();
});

function buildAgent(script: ScriptedStep[], config: ToolArtifactsConfigInput = {}) {
  const { ran, tools } = recordingTools();
  const policy = authorizationPolicy();
  const db = tempSqliteSaver();
  dbs.push(db);
  // The host lists the policy first; ordering must put resolution outside it.
  const middleware = orderMiddleware([policy.middleware, resolutionMiddleware(parseToolArtifactsConfig(config))]);
  const model = new ScriptedChatModel(script);
  const agent = createAgent({ model, tools, middleware, checkpointer: db.saver });
  return { agent, ran, policy, middleware, model, db };
}

const toolMessages = (messages: BaseMessage[]) => messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m));

describe("resolution in a real agent", () => {
  it("resolves bare, backticked and nested handles for parallel calls; policies and tools see real references; history keeps handles", async () => {
    const calls = [
      { name: "read_file", args: { path: REPORT } },
      {
        name: "bundle",
        args: {
          files: [
            { src: `\`${CHART}\``, label: "chart" },
            { src: SITE, label: `from ${REPORT}` },
          ],
          options: { note: `see \`${REPORT}\` and ${CHART}.`, links: [SITE, "plain"] },
        },
      },
    ];
    const { agent, ran, policy, middleware, db } = buildAgent([{ tool_calls: calls }, { content: "done" }]);
    expect(middleware.map((m) => m.name)).toEqual([RESOLUTION_MIDDLEWARE_NAME, "authorization"]);
    const thread = { configurable: { thread_id: "resolve-all" } };

    const result = await agent.invoke({ messages: [new HumanMessage("use the files")], tool_artifacts: SEED }, thread);

    const expectedBundle = {
      files: [
        { src: REFS[CHART], label: "chart" },
        { src: REFS[SITE], label: `from ${REFS[REPORT]}` },
      ],
      options: { note: `see ${REFS[REPORT]} and ${REFS[CHART]}.`, links: [REFS[SITE], "plain"] },
    };
    const byTool = Object.fromEntries(ran.map((r) => [r.tool, r.args]));
    expect(byTool).toEqual({ read_file: { path: REFS[REPORT] }, bundle: expectedBundle });
    expect(policy.seen).toHaveLength(2);
    expect(policy.seen).toEqual(expect.arrayContaining([{ path: REFS[REPORT] }, expectedBundle]));
    expect(toolMessages(result.messages).map((m) => [m.status, m.content])).toEqual(
      expect.arrayContaining([
        ["success", `read ${REFS[REPORT]}`],
        ["success", "bundled"],
      ]),
    );

    // History, in the result and in the checkpoint on disk, still holds what the model wrote.
    const stored = (await agent.graph.withConfig({}).getState(thread)).values.messages as BaseMessage[];
    const fromDisk = (await db.reopen().getTuple(thread))!.checkpoint.channel_values.messages as BaseMessage[];
    for (const messages of [result.messages, stored, fromDisk]) {
      const ai = messages.find((m) => AIMessage.isInstance(m) && (m.tool_calls?.length ?? 0) > 0) as AIMessage;
      expect(ai.tool_calls!.map((c) => c.args)).toEqual(calls.map((c) => c.args));
    }
  });

  it("refuses a call with an unknown handle: error result with the call's id and name, tool not run, policies not asked", async () => {
    const { agent, ran, policy } = buildAgent([{ tool_calls: [{ id: "call_ghost", name: "read_file", args: { path: `\`${GHOST}\`` } }] }, { content: "ok" }]);
    const result = await agent.invoke({ messages: [new HumanMessage("read")], tool_artifacts: SEED }, { configurable: { thread_id: "unknown" } });

    expect(ran).toEqual([]);
    expect(policy.seen).toEqual([]);
    const [refusal] = toolMessages(result.messages);
    expect(refusal!.status).toBe("error");
    expect(refusal!.tool_call_id).toBe("call_ghost");
    expect(refusal!.name).toBe("read_file");
    const text = String(refusal!.content);
    expect(text).toContain(GHOST);
    expect(text).toContain(`Current handles (most recent first): ${SITE}, ${CHART}, ${REPORT}.`);
    expect(text).toMatch(/current handle or a concrete reference/);
    expect(text).toMatch(/do not guess/);
    expect(text).not.toContain("report.md"); // labels are the projection's, under its PII policy
  });

  it("refuses the whole call when only some of its handles are known", async () => {
    const { agent, ran } = buildAgent([{ tool_calls: [{ name: "bundle", args: { files: [{ src: REPORT, label: "a" }], options: { note: GHOST, links: [] } } }] }, { content: "ok" }]);
    const result = await agent.invoke({ messages: [new HumanMessage("bundle")], tool_artifacts: SEED }, { configurable: { thread_id: "partial" } });
    expect(ran).toEqual([]);
    const text = String(toolMessages(result.messages)[0]!.content);
    expect(text).toContain(`handle ${GHOST}.`);
    expect(text).not.toMatch(new RegExp(`handles? ${REPORT}`));
  });

  it("refuses unknown handles with an empty registry too", async () => {
    const { agent, ran } = buildAgent([{ tool_calls: [{ name: "read_file", args: { path: REPORT } }] }, { content: "ok" }]);
    const result = await agent.invoke({ messages: [new HumanMessage("read")] }, { configurable: { thread_id: "empty" } });
    expect(ran).toEqual([]);
    const refusal = toolMessages(result.messages)[0]!;
    expect(refusal.status).toBe("error");
    expect(String(refusal.content)).toContain("No artifact handles are currently available.");
  });

  it("names at most ten missing handles, sorted, then how many more; and the ten most recent current handles", async () => {
    const missing = Array.from({ length: 13 }, (_, i) => `art_${(0xfff0 - i * 7).toString(16).padStart(8, "0")}`);
    const registry = Array.from({ length: 12 }, (_, i) => entry(`art_${(0xa000 + i).toString(16).padStart(8, "0")}`, `/mnt/user-data/f${i}.txt`));
    const { agent } = buildAgent([{ tool_calls: [{ name: "read_file", args: { path: missing.join(" ") } }] }, { content: "ok" }]);
    const result = await agent.invoke({ messages: [new HumanMessage("read")], tool_artifacts: registry }, { configurable: { thread_id: "many" } });
    const text = String(toolMessages(result.messages)[0]!.content);
    const sorted = [...missing].sort();
    expect(text).toContain(`handles ${sorted.slice(0, 10).join(", ")} and 3 more.`);
    for (const h of sorted.slice(10)) expect(text).not.toContain(h);
    const recent = registry.map((e) => e.handle).reverse();
    expect(text).toContain(`Current handles (most recent first): ${recent.slice(0, 10).join(", ")}.`);
    for (const h of recent.slice(10)) expect(text).not.toContain(h);
  });

  it("names exactly ten missing handles without an \"and N more\"", async () => {
    const missing = Array.from({ length: 10 }, (_, i) => `art_${(0xfff0 - i * 7).toString(16).padStart(8, "0")}`);
    const { agent } = buildAgent([{ tool_calls: [{ name: "read_file", args: { path: missing.join(" ") } }] }, { content: "ok" }]);
    const result = await agent.invoke({ messages: [new HumanMessage("read")] }, { configurable: { thread_id: "ten" } });
    const text = String(toolMessages(result.messages)[0]!.content);
    expect(text).toContain(`handles ${[...missing].sort().join(", ")}.`);
    expect(text).not.toMatch(/and \d+ more/);
  });

  it.each<[string, ToolArtifactsConfigInput]>([
    ["resolveHandlesInArgs off", { resolveHandlesInArgs: false }],
    ["the feature disabled", { enabled: false }],
  ])("passes handles through untouched with %s, known or not", async (_label, config) => {
    const args = [{ path: `\`${REPORT}\`` }, { path: GHOST }];
    const { agent, ran, policy } = buildAgent([{ tool_calls: args.map((a) => ({ name: "read_file", args: a })) }, { content: "ok" }], config);
    const result = await agent.invoke({ messages: [new HumanMessage("read")], tool_artifacts: SEED }, { configurable: { thread_id: "off" } });
    expect(ran.map((r) => r.args)).toEqual(expect.arrayContaining(args));
    expect(policy.seen).toEqual(expect.arrayContaining(args));
    expect(toolMessages(result.messages).every((m) => m.status !== "error")).toBe(true);
  });

  it("leaves calls without handles alone", async () => {
    const { agent, ran } = buildAgent([{ tool_calls: [{ name: "read_file", args: { path: "/etc/art_0000a001x" } }] }, { content: "ok" }]);
    await agent.invoke({ messages: [new HumanMessage("read")], tool_artifacts: SEED }, { configurable: { thread_id: "plain" } });
    expect(ran).toEqual([{ tool: "read_file", args: { path: "/etc/art_0000a001x" } }]);
  });

  it("resolves against the registry as it stands at the call, across turns of one thread", async () => {
    const { ran, tools } = recordingTools();
    const model = new ScriptedChatModel([{ tool_calls: [{ name: "read_file", args: { path: REPORT } }] }, { content: "one" }, { tool_calls: [{ name: "read_file", args: { path: "art_0000d004" } }] }, { content: "two" }]);
    const agent = createAgent({ model, tools, middleware: [resolutionMiddleware(parseToolArtifactsConfig())], checkpointer: new MemorySaver() });
    const thread = { configurable: { thread_id: "turns" } };
    await agent.invoke({ messages: [new HumanMessage("first")], tool_artifacts: SEED }, thread);
    await agent.invoke({ messages: [new HumanMessage("second")], tool_artifacts: [entry("art_0000d004", "/mnt/user-data/later.csv")] }, thread);
    expect(ran.map((r) => r.args)).toEqual([{ path: REFS[REPORT] }, { path: "/mnt/user-data/later.csv" }]);
  });
});

describe("the resolution hook on its own", () => {
  const hook = (config: ToolArtifactsConfigInput = {}) => resolutionMiddleware(parseToolArtifactsConfig(config)).wrapToolCall!;
  const request = (args: unknown, registry: unknown = SEED) => ({ toolCall: { id: "c1", name: "t", args: args as Record<string, unknown> }, tool: undefined, state: { messages: [], tool_artifacts: registry }, runtime: {} }) as never;
  const passThrough = (seen: unknown[]) => (req: unknown) => {
    seen.push(req);
    return new ToolMessage({ content: "ran", tool_call_id: "c1" });
  };
  /** The hook's answer to a call with `args` against `registry`, and the requests that reached the tool. */
  const called = async (args: unknown, registry: unknown[]) => {
    const seen: unknown[] = [];
    const result = (await hook()(request(args, registry), passThrough(seen) as never)) as ToolMessage;
    return { seen, result };
  };
  /** A call naming REPORT against a registry in which nothing makes it a known handle: refused, and the tool never runs. */
  const refusedAsUnknown = async (registry: unknown[]) => {
    const { seen, result } = await called({ path: REPORT }, registry);
    expect(seen).toEqual([]);
    expect(result.status).toBe("error");
    expect(String(result.content)).toContain(`unknown or expired artifact handle ${REPORT}.`);
    expect(String(result.content)).toContain("No artifact handles are currently available.");
  };

  it("refuses the call with its error result, not a TypeError, when the registry channel is null or undefined", async () => {
    for (const registry of [null, undefined]) {
      const req = { toolCall: { id: "c1", name: "t", args: { path: REPORT } }, tool: undefined, state: { messages: [], tool_artifacts: registry }, runtime: {} } as never;
      const out = (await hook()(req, (() => {
        throw new Error("tool ran");
      }) as never)) as ToolMessage;
      expect(out.status).toBe("error");
      expect(String(out.content)).toContain(REPORT);
      expect(String(out.content)).toContain("No artifact handles are currently available.");
    }
  });

  it("passes a model result with a messages list but no structuredResponse through untouched (no mark on its ToolMessage)", async () => {
    const { wrapModelCall } = resolutionMiddleware(parseToolArtifactsConfig({}));
    const call = new AIMessage({ content: "", tool_calls: [{ id: "s1", name: "t", args: { file: REPORT } }] });
    const answer = new ToolMessage({ content: "/mnt/user-data/a.txt", tool_call_id: "s1", name: "t" });
    const result = { messages: [call, answer] };
    const out = await wrapModelCall!({ state: { messages: [], tool_artifacts: [] }, runtime: {}, messages: [] } as never, (async () => result) as never);
    expect(out).toBe(result);
    expect(answer.additional_kwargs).toEqual({});
  });

  it("takes a repeated handle's latest entry when a call names several handles", async () => {
    const [A, B] = ["art_0000000a", "art_0000000b"];
    const registry = [entry(B, "/mnt/user-data/b.txt"), entry(A, "/mnt/user-data/a-old.txt"), entry(A, "/mnt/user-data/a-new.txt")];
    const seen: { toolCall: { args: unknown } }[] = [];
    await hook()({ toolCall: { id: "c1", name: "t", args: { a: A, b: B } }, tool: undefined, state: { messages: [], tool_artifacts: registry }, runtime: {} } as never, passThrough(seen) as never);
    expect(seen[0]!.toolCall.args).toEqual({ a: "/mnt/user-data/a-new.txt", b: "/mnt/user-data/b.txt" });
  });

  it("hands over the very same request for non-object args and args without handles", async () => {
    for (const args of [REPORT, [REPORT], null, { path: "/x" }]) {
      const seen: unknown[] = [];
      const req = request(args);
      await hook()(req, passThrough(seen));
      expect(seen).toEqual([req]);
      expect(seen[0]).toBe(req);
    }
  });

  it("never modifies the request it was given", async () => {
    const args = { path: REPORT, list: [CHART] };
    const req = request(args);
    const seen: Array<{ toolCall: { args: unknown } }> = [];
    await hook()(req, passThrough(seen) as never);
    expect(seen[0]!.toolCall.args).toEqual({ path: REFS[REPORT], list: [REFS[CHART]] });
    expect(args).toEqual({ path: REPORT, list: [CHART] });
  });

  it("takes config as toolArtifactsMiddleware does: defaults filled, bad values named, a file's section read", async () => {
    const resolved = async (config: Parameters<typeof resolutionMiddleware>[0]) => {
      const { wrapToolCall } = resolutionMiddleware(config);
      // Off, there is no hook at all: langchain runs the call as without it.
      if (wrapToolCall === undefined) return "no hook";
      const seen: Array<{ toolCall: { args: unknown } }> = [];
      await wrapToolCall(request({ path: REPORT }), passThrough(seen) as never);
      return seen[0]!.toolCall.args;
    };
    // Unparsed, or nothing at all: on by default, as a parsed config is.
    for (const config of [undefined, {}, { maxEntries: 50 }]) expect(await resolved(config)).toEqual({ path: REFS[REPORT] });
    expect(await resolved({ tool_artifacts: { resolve_handles_in_args: false } })).toBe("no hook");
    expect(() => resolutionMiddleware({ maxEntries: 5 })).toThrow(ToolArtifactsConfigError);
    expect(() => resolutionMiddleware({ resolveHandlesInArg: false } as never)).toThrow(/resolveHandlesInArg/);
    // Options, as the other middlewares take, would be ignored unseen.
    const withOptions = resolutionMiddleware as (config: unknown, options: unknown) => unknown;
    expect(() => withOptions({}, { maxEntries: 5 })).toThrow("Invalid tool-artifacts config: resolutionMiddleware: takes no options, only the config");
    expect(() => withOptions({}, null)).toThrow(ToolArtifactsConfigError);
    expect(withOptions({}, undefined)).toHaveProperty("name", "tool-artifacts-resolution");
  });

  it("refuses a call without an id with an error result whose tool_call_id is empty, as langchain answers one", async () => {
    const seen: unknown[] = [];
    const req = { toolCall: { name: "t", args: { path: GHOST } }, tool: undefined, state: { messages: [], tool_artifacts: SEED }, runtime: {} } as never;
    const refusal = (await hook()(req, passThrough(seen) as never)) as ToolMessage;
    expect(seen).toEqual([]);
    expect([refusal.status, refusal.tool_call_id, refusal.name]).toEqual(["error", "", "t"]);
  });

  it("declares its ordering constraints", () => {
    expect(resolutionMiddleware(parseToolArtifactsConfig()).constraints).toEqual({
      after: ["tool-receipt"],
      before: ["authorization", "guardrail", "sandbox-audit", "read-before-write", "tool-progress", "tool-emulator"],
    });
  });

  it("does not resolve a handle whose only registry item is no entry (an array holding an entry's fields)", async () => {
    // Capture, resolution and projection share one usable-entry test: what projection never shows must not resolve.
    await refusedAsUnknown([Object.assign([], entry(REPORT, "/mnt/user-data/secret.txt"))]);
  });

  it("refuses a handle whose only entry has no string real_ref (a malformed checkpoint entry): the tool never sees the raw handle", async () => {
    // An entry without a usable reference is not a known handle: counted as known, it would let the call run with the handle as written.
    for (const real_ref of [undefined, null, 42, { path: "/mnt/user-data/report.md" }]) {
      await refusedAsUnknown([{ ...entry(REPORT, "/mnt/user-data/report.md"), real_ref }]);
    }
  });

  it("lists the one current handle when the registry holds exactly one", async () => {
    const { seen, result } = await called({ path: GHOST }, [entry(REPORT, "/mnt/user-data/report.md")]);
    expect(seen).toEqual([]);
    expect(String(result.content)).toContain(`Current handles (most recent first): ${REPORT}.`);
    expect(String(result.content)).not.toContain("No artifact handles are currently available.");
  });

  it("passes a model result with a structuredResponse but no messages list through untouched", async () => {
    // Only langchain's `{structuredResponse, messages: [...]}` is a structured result; other shapes are the host's.
    const { wrapModelCall } = resolutionMiddleware(parseToolArtifactsConfig());
    const state = { messages: [], tool_artifacts: SEED };
    for (const result of [{ structuredResponse: { file: REPORT } }, { structuredResponse: { file: REPORT }, messages: "none" }]) {
      expect(await wrapModelCall!({ state, runtime: {}, messages: [] } as never, (async () => result) as never)).toBe(result);
    }
    // The shape it does take: resolved.
    const call = new AIMessage({ content: "", tool_calls: [{ id: "s1", name: "Answer", args: { file: REPORT } }] });
    const answer = new ToolMessage({ content: "ok", tool_call_id: "s1", name: "Answer" });
    const out = await wrapModelCall!({ state, runtime: {}, messages: [] } as never, (async () => ({ structuredResponse: { file: REPORT }, messages: [call, answer] })) as never);
    expect((out as unknown as { structuredResponse: unknown }).structuredResponse).toEqual({ file: REFS[REPORT] });
  });
});
