/**
 * Tool results for the batch and CLI benchmarks, built from the realistic
 * documents of bench/corpus.ts: half plain-text results (shell sessions,
 * pages), the rest content blocks, MCP structured content (search results,
 * some over the node budget) and small data results. Deterministic.
 */
import type { BatchItem } from "../src/batch/index.js";
import { generateCorpus } from "./corpus.js";

export interface ToolResultCorpus {
  items: BatchItem[];
  /** The items as archive lines (`{thread_id, message}` JSON, newline-terminated). */
  lines: string[];
  bytes: number;
}

export function toolResults(chars: number, seed = 7): ToolResultCorpus {
  const docs = generateCorpus({ chars, seed, docChars: [1_000, 24_000] });
  const items = docs.map((doc, i): BatchItem => {
    const threadId = `thread-${i % 13}`;
    const base = { type: "tool", id: `msg-${i}`, tool_call_id: `call_${i}`, name: doc.kind === "json" ? "web_search" : doc.kind === "shell" ? "shell" : "fetch" };
    if (doc.kind === "json") {
      return { threadId, message: { ...base, content: [{ type: "text", text: "search done" }], artifact: [{ type: "mcp_structured_content", data: JSON.parse(doc.text) }] } };
    }
    switch (i % 4) {
      case 0:
        return {
          threadId,
          message: {
            ...base,
            content: [
              { type: "text", text: doc.text },
              { type: "image", url: `https://cdn.example.com/img/${i}.png`, mimeType: "image/png" },
              { type: "file", source_type: "url", url: `https://files.example.com/${i}.csv`, mime_type: "text/csv" },
            ],
          },
        };
      case 1:
        return { threadId, message: { ...base, content: doc.text.slice(0, 200), artifact: { structured_content: { rows: i, ok: true, columns: ["a", "b"] } } } };
      default:
        return { threadId, message: { ...base, content: doc.text } };
    }
  });
  const lines = items.map((item) => JSON.stringify({ thread_id: item.threadId, message: item.message }) + "\n");
  return { items, lines, bytes: lines.reduce((n, l) => n + Buffer.byteLength(l), 0) };
}
