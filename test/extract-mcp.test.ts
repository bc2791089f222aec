/**
 * Extraction from real ToolMessages: the fixture MCP server runs as a stdio
 * child process, its tools are loaded through @langchain/mcp-adapters and
 * called through LangGraph's ToolNode (test/support/mcp.ts), as an agent would.
 */
import { createRequire } from "node:module";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { createAgent, toolErrorMiddleware, type AgentMiddleware } from "langchain";
import { extractArtifacts } from "../src/extract.js";
import { generateHandle } from "../src/engine/hash.js";
import type { ArtifactEntry } from "../src/types.js";
import { toolArtifactsMiddleware } from "../src/middleware/index.js";
import { toolArtifactsStateSchema } from "../src/registry.js";
import { ScriptedChatModel } from "../src/testing/scripted-model.js";
import { FIXTURE } from "./fixtures/mcp-server.js";
import { connectFixtureMcp, type FixtureMcp } from "./support/mcp.js";

/** Whether langchain marks the error result of a tool that throws `status: "error"` (1.5.14 on; the peer range starts at 1.5.4). */
const [major, minor, patch] = (createRequire(import.meta.url)("langchain/package.json").version as string).split(".").map(Number);
const LANGCHAIN_MARKS_TOOL_ERRORS = major! > 1 || (major === 1 && (minor! > 5 || (minor === 5 && patch! >= 14)));

const THREAD = "thread-mcp";
const NOW = "2025-06-01T00:00:00.000Z";

const extract = (m: ToolMessage, detectRefsInText = true) =>
  extractArtifacts(m, { threadId: THREAD, now: () => NOW, detectRefsInText });
const summary = (entries: ArtifactEntry[]) =>
  entries.map((e) => [e.artifact_type, e.real_ref, e.display_name, e.mime_type ?? null]);

/** Nothing embedded may ever become a reference, whatever shape carried it. */
function expectNoEmbeddedPayload(entries: ArtifactEntry[]): void {
  for (const e of entries) {
    expect(e.real_ref).not.toMatch(/^(data|blob):/i);
    expect(e.real_ref).not.toContain(FIXTURE.embed_blob.blob);
    expect(e.real_ref).not.toContain(FIXTURE.snapshot_image.data);
  }
}

describe.each([
  ["legacy content blocks", false],
  ["standard content blocks", true],
])("MCP tools through @langchain/mcp-adapters (%s)", (_, useStandardContentBlocks) => {
  let mcp: FixtureMcp;
  beforeAll(async () => {
    mcp = await connectFixtureMcp({ useStandardContentBlocks });
  });
  afterAll(async () => {
    await mcp?.close();
  });

  it("structuredContent paths, URLs and a task id become entries in document order", async () => {
    const m = await mcp.call("render_report");
    const s = FIXTURE.render_report.structured;
    const structuredOnly = [
      ["file", s.report.path, "report.pdf", null],
      ["file", s.files[0], "table.csv", null],
      ["file", s.files[1], "q3.png", null],
      ["file", s.url, "index.html", null],
      ["task", s.task_id, s.task_id, null],
    ];
    const entries = extract(m, false);
    expect(summary(entries)).toEqual(structuredOnly);
    expect(entries.map((e) => e.handle)).toEqual(structuredOnly.map((_, i) => generateHandle(THREAD, "call_render_report", 0, i)));
    expect(entries.every((e) => e.tool_name === "render_report" && e.tool_call_id === "call_render_report")).toBe(true);
    // Scanning text adds nothing: the block's prose holds no reference.
    expect(extract(m)).toEqual(entries);
  });

  it("a lone text block with structuredContent arrives as its JSON string and is read as that block", async () => {
    // mcp-adapters 1.1.4 returns that block as an object, not an array, so
    // @langchain/core stringifies it into the ToolMessage content. Scanned as
    // prose, that JSON would register `…/data.csv","size":1234`.
    const m = await mcp.call("stat_file", { path: "/mnt/user-data/in/data.csv" });
    expect(typeof m.content).toBe("string");
    expect(m.content).toContain('"structuredContent"');
    expect(summary(extract(m))).toEqual([["file", "/mnt/user-data/in/data.csv", "data.csv", null]]);
  });

  it("the same block without an artifact still gives its structuredContent", async () => {
    const m = await mcp.call("stat_file", { path: "/mnt/user-data/in/data.csv" });
    const withoutArtifact = { content: m.content, tool_call_id: m.tool_call_id, name: m.name, id: m.id };
    expect(extract(withoutArtifact as ToolMessage, false)).toEqual(extract(m, false));
  });

  it("a text block mirroring structuredContent as JSON (the MCP spec's advice) is not scanned", async () => {
    const m = await mcp.call("export_table");
    const s = FIXTURE.export_table.structured;
    expect(summary(extract(m))).toEqual([
      ["file", s.path, "export.csv", null],
      ["file", s.url, "export.csv", null],
      ["task", s.job_id, s.job_id, null],
    ]);
  });

  it("a resource_link becomes a file entry with its MIME type", async () => {
    const m = await mcp.call("link_resource");
    expect(summary(extract(m))).toEqual([["file", FIXTURE.link_resource.uri, "results.csv", FIXTURE.link_resource.mimeType]]);
  });

  it("an embedded blob resource, which the adapter puts in the artifact, gives its uri and never its data", async () => {
    const m = await mcp.call("embed_blob");
    expect(JSON.stringify(m.artifact)).toContain(FIXTURE.embed_blob.blob); // the blob did arrive
    expect(summary(extract(m))).toEqual([["file", FIXTURE.embed_blob.uri, "archive.zip", FIXTURE.embed_blob.mimeType]]);
  });

  it("a base64 image gives no entry", async () => {
    const m = await mcp.call("snapshot_image");
    expect(JSON.stringify(m.content)).toContain(FIXTURE.snapshot_image.data);
    expect(extract(m)).toEqual([]);
  });

  it("sandbox paths and URLs in plain text become entries, each once", async () => {
    const m = await mcp.call("list_outputs");
    expect(summary(extract(m))).toEqual([
      ["file", "/mnt/user-data/outputs/summary.md", "summary.md", null],
      ["file", "/mnt/user-data/outputs/chart.png", "chart.png", null],
      ["file", "https://example.com/docs/guide.pdf", "guide.pdf", null],
    ]);
  });

  it("a structured result holding only a data: URI gives nothing, not even data", async () => {
    const m = await mcp.call("inline_thumbnail");
    expect(extract(m)).toEqual([]);
  });

  it("a small structured result without known keys becomes one data entry", async () => {
    const m = await mcp.call("table_stats");
    expect(summary(extract(m))).toEqual([
      ["data", JSON.stringify(FIXTURE.table_stats.structured), "table_stats structured result", null],
    ]);
  });

  it("tool arguments reach the server and come back as references", async () => {
    const m = await mcp.call("stat_file", { path: "/mnt/user-data/in/data.csv" });
    expect(extract(m, false).map((e) => e.real_ref)).toEqual(["/mnt/user-data/in/data.csv"]);
  });

  it("an MCP error result becomes an error ToolMessage with no entries", async () => {
    const m = await mcp.call("always_fails");
    expect(m.status).toBe("error");
    expect(extract(m)).toEqual([]);
  });

  it("an MCP error result is thrown by mcp-adapters: beside resolution it fails the run, and toolErrorMiddleware hands it to the model (README, Tool errors)", async () => {
    const run = async (middleware: readonly AgentMiddleware[]) => {
      const model = new ScriptedChatModel([{ tool_calls: [{ id: "call_fails", name: "always_fails", args: {} }] }, { content: "recovered" }]);
      const agent = createAgent({ model, tools: [mcp.tool("always_fails")], middleware: [...middleware], stateSchema: toolArtifactsStateSchema });
      try {
        const result = await agent.invoke({ messages: [new HumanMessage("go")] }, { configurable: { thread_id: THREAD } });
        const answer = result.messages.find((m: BaseMessage) => ToolMessage.isInstance(m)) as ToolMessage;
        return { status: answer.status, last: result.messages.at(-1)!.text, registry: result.tool_artifacts };
      } catch (error) {
        return { threw: (error as Error).message };
      }
    };
    // Without the middleware langchain hands the error to the model; it marks the result an error from 1.5.14 on (README: before, capture reads its text).
    expect(await run([])).toEqual({ status: LANGCHAIN_MARKS_TOOL_ERRORS ? "error" : undefined, last: "recovered", registry: [] });
    expect(await run(toolArtifactsMiddleware())).toEqual({ threw: expect.stringContaining(FIXTURE.always_fails.text) });
    const handled = [...toolArtifactsMiddleware(), toolErrorMiddleware({ onError: (error) => `The tool failed: ${(error as Error).message}` })];
    expect(await run(handled)).toEqual({ status: "error", last: "recovered", registry: [] });
  });

  it("no tool result ever yields blob, base64 or data: content", async () => {
    let entries = 0;
    for (const tool of mcp.tools) {
      const got = extract(await mcp.call(tool.name, { path: "/x" }));
      expectNoEmbeddedPayload(got);
      entries += got.length;
    }
    // The fixture's tools give this many entries in either block form: the check above ran on them.
    expect(entries).toBe(15);
  });

  it("no tool result yields a reference cut out of JSON", async () => {
    let checked = 0;
    for (const tool of mcp.tools) {
      for (const e of extract(await mcp.call(tool.name, { path: "/mnt/user-data/in/data.csv" }))) {
        if (e.artifact_type === "data") continue;
        expect(e.real_ref, tool.name).not.toMatch(/["{}]/);
        checked++;
      }
    }
    expect(checked).toBe(14); // not a vacuous loop: the fixture's references, in either block form
  });
});

// With legacy blocks the adapter reads a moved resource link as a resource (resources/read), which the fixture server does not serve.
describe('outputHandling: "artifact" with standard blocks (the adapter moves content blocks to the artifact)', () => {
  let moved: FixtureMcp;
  let plain: FixtureMcp;
  beforeAll(async () => {
    [moved, plain] = await Promise.all([connectFixtureMcp({ outputHandling: "artifact", useStandardContentBlocks: true }), connectFixtureMcp({ useStandardContentBlocks: true })]);
  });
  afterAll(async () => {
    await Promise.all([moved?.close(), plain?.close()]);
  });

  it("a resource link moved to the artifact is still a file entry with its MIME type", async () => {
    const m = await moved.call("link_resource");
    expect(JSON.stringify(m.artifact)).toContain(FIXTURE.link_resource.uri);
    expect(summary(extract(m))).toEqual([["file", FIXTURE.link_resource.uri, "results.csv", FIXTURE.link_resource.mimeType]]);
  });

  it("every tool gives the same references as with its content in place, and nothing embedded", async () => {
    for (const tool of plain.tools) {
      const refsOf = async (mcp: FixtureMcp) => extract(await mcp.call(tool.name, { path: "/mnt/user-data/in/data.csv" })).map((e) => [e.artifact_type, e.real_ref]);
      const got = await refsOf(moved);
      expect(got.sort(), tool.name).toEqual((await refsOf(plain)).sort());
      expectNoEmbeddedPayload(extract(await moved.call(tool.name, { path: "/x" })));
    }
  });
});
