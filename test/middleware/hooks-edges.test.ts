/**
 * The middleware hooks called directly, on state and requests at their
 * edges: channels another writer left unusable, several leading system
 * messages, detectors that report empty matches, the options
 * toolArtifactsMiddleware hands on.
 */
import { describe, expect, it } from "vitest";
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { captureMiddleware, type CaptureUpdate } from "../../src/middleware/capture.js";
import { parseToolArtifactsConfig } from "../../src/config.js";
import { occurrenceKey } from "../../src/engine/hash.js";
import type { ArtifactEntry } from "../../src/types.js";
import { resolutionMiddleware } from "../../src/middleware/resolution.js";
import { toolArtifactsMiddleware } from "../../src/middleware/index.js";
import { projectionMiddleware } from "../../src/middleware/projection.js";

const THREAD = "thread-zz";
const run = { configurable: { thread_id: THREAD } };
type Hook = (state: object, runtime: object) => CaptureUpdate | undefined;
const hookOf = () => captureMiddleware(parseToolArtifactsConfig({})).beforeModel as unknown as Hook;
const result = (id: string | undefined, toolCallId: string, content: string) =>
  new ToolMessage({ id, tool_call_id: toolCallId, name: "write", content });
const resultKey = (messageId: string | null, toolCallId: string, index = 0) => occurrenceKey("result", THREAD, messageId, toolCallId, index);
const entryNamed = (display_name: string): ArtifactEntry => ({ handle: "art_0000a001", tool_name: "write", tool_call_id: "c", call_index: 0, artifact_type: "file", display_name, real_ref: "/mnt/user-data/a.txt", created_at: "2025-01-01T00:00:00.000Z" });

/** What a projection's wrapModelCall hands the model for one entry: the request's messages and system message. */
async function projected(
  projection: { wrapModelCall?: unknown },
  { entry = entryNamed("a.txt"), messages = [new HumanMessage("hi")] as BaseMessage[], systemMessage = new SystemMessage("sys") } = {},
): Promise<{ messages: BaseMessage[]; systemMessage: SystemMessage }> {
  let seen: { messages: BaseMessage[]; systemMessage: SystemMessage } | undefined;
  const wrap = projection.wrapModelCall as (request: unknown, handler: (request: { messages: BaseMessage[]; systemMessage: SystemMessage }) => AIMessage) => Promise<unknown>;
  await wrap({ state: { tool_artifacts: [entry], messages: [] }, messages, systemMessage, runtime: {} }, (request) => {
    seen = request;
    return new AIMessage("ok");
  });
  return seen!;
}

describe("capture view vs. the ledger in state", () => {
  it("a ledger as long as the last one but with another last item is not taken for its extension", () => {
    const hook = hookOf();
    const messages: BaseMessage[] = [result("tm-1", "w1", "/mnt/user-data/a.txt")];
    const first = hook({ messages, tool_artifacts: [], tool_artifact_processed: [] }, run)!;
    expect(first.tool_artifact_processed).toEqual([resultKey("tm-1", "w1")]);
    expect(hook({ messages, tool_artifacts: first.tool_artifacts, tool_artifact_processed: [resultKey("tm-1", "w1")] }, run)).toBeUndefined();
    // Same length as the ledger capture last saw, other content (a fork): tm-1 is not recorded in it.
    const again = hook({ messages, tool_artifacts: [], tool_artifact_processed: ["some-other-key"] }, run);
    expect(again?.tool_artifact_processed).toEqual([resultKey("tm-1", "w1")]);
  });
});

describe("capture on malformed state", () => {
  it("skips null and non-object entries in messages and still captures the rest", () => {
    const hook = hookOf();
    const messages = [null, undefined, 42, result("tm-1", "w1", "/mnt/user-data/a.txt")];
    const update = hook({ messages, tool_artifacts: [], tool_artifact_processed: [] }, run);
    expect(update?.tool_artifact_processed).toEqual([resultKey("tm-1", "w1")]);
  });

  it("reads a messages channel that holds no array as empty, as it reads the other two", () => {
    const hook = hookOf();
    for (const messages of [{}, 5, "abc"]) expect(hook({ messages, tool_artifacts: [], tool_artifact_processed: [] }, run)).toBeUndefined();
  });
});

describe("capture on a registry channel another writer left unusable", () => {
  it("reads a non-array registry as empty: no trim directive from its length", () => {
    const hook = hookOf();
    const messages = [result("tm-1", "w1", "/mnt/user-data/a.txt")];
    const update = hook({ messages, tool_artifacts: "x".repeat(500), tool_artifact_processed: [] }, run)!;
    expect(update.tool_artifacts.map((u) => ("op" in u ? u.op : "entry"))).toEqual(["entry"]);
  });
});

describe("resolution on a registry channel another writer left unusable", () => {
  it("refuses the call with the error result, not a TypeError, when tool_artifacts is null or undefined", async () => {
    const hook = resolutionMiddleware(parseToolArtifactsConfig({})).wrapToolCall!;
    for (const registry of [null, undefined]) {
      const req = { toolCall: { id: "c1", name: "t", args: { path: "art_0000a001" } }, tool: undefined, state: { messages: [], tool_artifacts: registry }, runtime: {} } as never;
      const out = (await hook(req, (() => { throw new Error("tool ran"); }) as never)) as ToolMessage;
      expect(out.status).toBe("error");
      expect(String(out.content)).toContain("art_0000a001");
      expect(String(out.content)).toContain("No artifact handles are currently available.");
    }
  });
});

describe("structured results are recognised by their structuredResponse", () => {
  it("passes a model result with a messages list but no structuredResponse through untouched (no mark on its ToolMessage)", async () => {
    const { wrapModelCall } = resolutionMiddleware(parseToolArtifactsConfig({}));
    const call = new AIMessage({ content: "", tool_calls: [{ id: "s1", name: "t", args: { file: "art_0000a001" } }] });
    const answer = new ToolMessage({ content: "/mnt/user-data/a.txt", tool_call_id: "s1", name: "t" });
    const result = { messages: [call, answer] };
    const out = await wrapModelCall!({ state: { messages: [], tool_artifacts: [] }, runtime: {}, messages: [] } as never, (async () => result) as never);
    expect(out).toBe(result);
    expect(answer.additional_kwargs).toEqual({});
  });
});

describe("toolArtifactsMiddleware hands each middleware its options", () => {
  it("gives the projection its options (host sections)", async () => {
    const notes = { title: "Working notes", render: () => "remember the chart" };
    const { messages } = await projected(toolArtifactsMiddleware({}, { projection: { sections: [notes] } }).projection);
    expect(messages[0]!.text).toContain("## Working notes\n  remember the chart");
  });
});

describe("projection PII matches", () => {
  it("ignores an empty match a function detector reports (nothing to redact there)", async () => {
    const detector = (text: string) => [{ text: "", start: 0, end: 0 }, ...[...text.matchAll(/sk-\w+/g)].map((m) => ({ text: m[0], start: m.index, end: m.index + m[0].length }))];
    const projection = projectionMiddleware(parseToolArtifactsConfig({ piiRules: [{ piiType: "key", detector }] }));
    const { messages } = await projected(projection, { entry: entryNamed("keys sk-aaa1") });
    const line = messages[0]!.text.split("\n").find((l) => l.startsWith("art_0000a001"))!;
    expect(line.split(" | ")[2]).toBe("keys [REDACTED_KEY]");
  });
});

describe("projection placement", () => {
  it("puts the notice on the last of several leading system messages and the block after all of them", async () => {
    const { messages } = await projected(projectionMiddleware(parseToolArtifactsConfig({})), {
      messages: [new SystemMessage("first"), new SystemMessage("second"), new HumanMessage("hi")],
    });
    expect(messages.map((m) => m.type)).toEqual(["system", "system", "human", "human"]);
    expect(messages[0]!.text).toBe("first");
    expect(messages[1]!.text).toMatch(/^second\n\nA message that consists of a <durable_context_data> block/);
    expect(messages[2]!.text.startsWith("<durable_context_data>")).toBe(true);
    expect(messages[3]!.text).toBe("hi");
  });

  it("keeps the additional_kwargs of the agent's system message it extends", async () => {
    const { systemMessage } = await projected(projectionMiddleware(parseToolArtifactsConfig({})), {
      systemMessage: new SystemMessage({ content: "sys", additional_kwargs: { cache_hint: "keep" } }),
    });
    expect(systemMessage.text).toMatch(/^sys\n\nA message that consists of a <durable_context_data> block/);
    expect(systemMessage.additional_kwargs).toEqual({ cache_hint: "keep" });
  });
});
