/**
 * What a host's UI sees when it streams an agent (README "What streams
 * show"): the block is model input only, registry updates fold with the
 * channel's reducer, and state keeps the handles the tools never see.
 */
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import type { LangGraphRunnableConfig } from "@langchain/langgraph";
import { createAgent, tool } from "langchain";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { toolArtifactsMiddleware } from "../../src/middleware/index.js";
import { mergeProcessed, mergeToolArtifacts } from "../../src/registry.js";
import { ScriptedChatModel } from "../../src/testing/scripted-model.js";
import type { ArtifactEntry } from "../../src/types.js";
import { handleShown } from "../support/block.js";
import { tempSqliteSaver } from "../support/sqlite.js";

const REPORT = "/mnt/user-data/outputs/report.md";

describe("streaming an agent with the artifact middlewares", () => {
  it("streams no block, updates that fold into the state, and handles in state but real references at the tool", async () => {
    const render = tool(async () => `Rendered ${REPORT}`, { name: "render", description: "Render the report", schema: z.object({}) });
    const publish = tool(
      async ({ path }: { path: string }, config: LangGraphRunnableConfig) => {
        config.writer?.({ publishing: path });
        return "published";
      },
      { name: "publish", description: "Publish a file", schema: z.object({ path: z.string() }) },
    );
    let handle = "";
    const model = new ScriptedChatModel([
      { tool_calls: [{ id: "c_render", name: "render", args: {} }] },
      (messages) => {
        handle = handleShown(messages, "report.md");
        return { tool_calls: [{ id: "c_publish", name: "publish", args: { path: handle } }] };
      },
      { content: "done" },
    ]);
    const db = tempSqliteSaver();
    try {
      const agent = createAgent({ model, tools: [render, publish], systemPrompt: "You publish reports.", middleware: [...toolArtifactsMiddleware()], checkpointer: db.saver });
      const config = { configurable: { thread_id: "stream-1" } };
      const chunks: [string, unknown][] = [];
      let registry: ArtifactEntry[] = [];
      let ledger: string[] = [];
      let updatesOfReport = 0;
      for await (const [mode, chunk] of await agent.stream({ messages: [new HumanMessage("go")] }, { ...config, streamMode: ["updates", "messages", "custom", "values"] })) {
        chunks.push([mode, chunk]);
        if (mode !== "updates") continue;
        for (const update of Object.values(chunk as Record<string, { tool_artifacts?: ArtifactEntry[]; tool_artifact_processed?: string[] } | undefined>)) {
          if (update?.tool_artifacts) {
            registry = mergeToolArtifacts(registry, update.tool_artifacts);
            updatesOfReport += update.tool_artifacts.filter((e) => e.real_ref === REPORT).length;
          }
          if (update?.tool_artifact_processed) ledger = mergeProcessed(ledger, update.tool_artifact_processed);
        }
      }
      // Only the model's requests hold the block and the notice; no chunk of any mode does.
      expect(model.seen[1]!.some((m) => m.additional_kwargs?.durable_context_data === true)).toBe(true);
      expect(JSON.stringify(chunks)).not.toContain("durable_context_data");
      expect(JSON.stringify(chunks)).not.toContain("<durable_context_data>");

      const state = (await agent.graph.getState(config)).values as { tool_artifacts: ArtifactEntry[]; tool_artifact_processed: string[]; messages: BaseMessage[] };
      // The entry came twice, as registered and as used: folded, it is one entry, as in state.
      expect(updatesOfReport).toBe(2);
      expect(registry).toEqual(state.tool_artifacts);
      expect(ledger).toEqual(state.tool_artifact_processed);
      expect(state.tool_artifacts.map((e) => [e.handle, e.real_ref, e.consumed_by])).toEqual([[handle, REPORT, ["c_publish"]]]);
      // The history keeps the handle the model wrote; the tool, and what it streamed, had the file.
      const call = state.messages.find((m): m is AIMessage => AIMessage.isInstance(m) && m.tool_calls?.[0]?.name === "publish");
      expect(call?.tool_calls?.[0]?.args).toEqual({ path: handle });
      expect(chunks.filter(([mode]) => mode === "custom").map(([, c]) => c)).toEqual([{ publishing: REPORT }]);
    } finally {
      db.cleanup();
    }
  });
});
