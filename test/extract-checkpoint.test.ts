/**
 * A ToolMessage written to a real SQLite checkpoint and read back by a fresh
 * saver (a new connection, as after a process restart) yields the same entries.
 */
import { afterEach, expect, it } from "vitest";
import { ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import type { BaseCheckpointSaver } from "@langchain/langgraph";
import { extractArtifacts } from "../src/extract.js";
import { tempSqliteSaver, type TempSqliteSaver } from "./support/sqlite.js";

const OPTIONS = { threadId: "thread-ckpt", now: () => "2025-03-04T05:06:07.000Z" };

/** One message per source shape DESIGN §4 lists, each with a durable id. */
function toolMessages(): ToolMessage[] {
  return [
    new ToolMessage({
      id: "msg-python",
      tool_call_id: "call-1",
      name: "render",
      content: "Rendered /mnt/user-data/out/report.pdf; preview https://cdn.example.com/p/1.png",
      artifact: { structured_content: { path: "/srv/out/report.pdf", task_id: "job-9" } },
    }),
    new ToolMessage({
      id: "msg-mcp",
      tool_call_id: "call-2",
      name: "export",
      content: [
        { type: "text", text: "see /mnt/user-data/exports/a.csv" },
        { type: "file", source_type: "url", url: "https://files.example.com/a.csv", mime_type: "text/csv" },
        { type: "image", url: "https://img.example.com/a.png", mimeType: "image/png" },
        { type: "image", source: { url: "https://img.example.com/b.jpg", mime_type: "image/jpeg" } },
        { type: "image_url", image_url: { url: "https://img.example.com/c.gif" } },
        { type: "image", source_type: "base64", data: "iVBORw0KGgo=", mime_type: "image/png" },
      ],
      artifact: [{ type: "mcp_structured_content", data: { files: ["/srv/a.csv", "C:\\exports\\a.xlsx"], job_id: "exp-1" } }],
    }),
    new ToolMessage({
      id: "msg-block",
      tool_call_id: "call-3",
      name: "stats",
      content: [{ type: "text", text: "3 rows", structuredContent: { rows: 3, unicode: "naïve ☃ 😀" } }],
    }),
  ];
}

let db: TempSqliteSaver | undefined;
afterEach(() => {
  db?.cleanup();
  db = undefined;
});

function graph(checkpointer: BaseCheckpointSaver, emit: BaseMessage[]) {
  return new StateGraph(MessagesAnnotation)
    .addNode("tools", () => ({ messages: emit }))
    .addEdge(START, "tools")
    .addEdge("tools", END)
    .compile({ checkpointer });
}

it("a ToolMessage that went through a SQLite checkpoint round trip yields the same entries", async () => {
  db = tempSqliteSaver();
  const originals = toolMessages();
  const config = { configurable: { thread_id: OPTIONS.threadId } };
  await graph(db.saver, originals).invoke({ messages: [] }, config);

  const state = await graph(db.reopen(), []).getState(config);
  const restored = state.values.messages as BaseMessage[];
  expect(restored).toHaveLength(originals.length);

  originals.forEach((original, i) => {
    const back = restored[i];
    expect(ToolMessage.isInstance(back)).toBe(true);
    expect(back).not.toBe(original);
    const before = extractArtifacts(original, OPTIONS);
    expect(before.length).toBeGreaterThan(0);
    expect(extractArtifacts(back as ToolMessage, OPTIONS)).toEqual(before);
  });
  expect(extractArtifacts(restored[1] as ToolMessage, OPTIONS).map((e) => e.artifact_type)).toEqual([
    "file", "file", "task", "file", "file", "image", "image", "image",
  ]);
});
