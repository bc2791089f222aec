/**
 * extractArtifacts vs the pure-TS baseline (bench/baselines/extract-ts.ts:
 * RegExp scanning, JSON.stringify, a recursive walk, node:crypto handles).
 *
 * 1. Typical messages (1–20 KB text, small structured payloads, content
 *    blocks): results are checked equal to the baseline first, then each side
 *    extracts the whole corpus per iteration; we print the median per message,
 *    messages per second and the ratio (target ≥ 3×).
 * 2. Oversized structured payloads (10^7 nodes; 100 MB of strings): the cost of
 *    rejecting them vs extracting a 1 KB payload (target ≤ 1 ms).
 */
import { deepStrictEqual } from "node:assert/strict";
import { Bench } from "tinybench";
import { alternatingRounds, median } from "./rounds.js";
import { extractArtifacts, type ExtractOptions, type ToolMessageLike } from "../src/extract.js";
import { baselineExtractArtifacts } from "./baselines/extract-ts.js";

const OPTIONS: ExtractOptions = { threadId: "bench-thread", now: () => "2025-01-01T00:00:00.000Z" };

// Deterministic corpus: mulberry32, so every run measures the same messages.
let seed = 0x5eed;
function rand(): number {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
const WORDS = "the tool wrote rows to output file report and checked results while processing data for summary values in region".split(" ");
const EXTS = ["csv", "png", "pdf", "json", "md", "xlsx", "txt", "log"];
const name = () => `${pick(WORDS)}_${Math.floor(rand() * 1000)}.${pick(EXTS)}`;
const sandboxPath = () => `/mnt/user-data/outputs/${pick(WORDS)}/${name()}`;
const url = () => `https://${pick(["cdn", "files", "api"])}.example.com/${pick(WORDS)}/${name()}${rand() < 0.3 ? "?v=2" : ""}`;

/** Log-like prose of about `bytes` bytes with a reference every ~250 words. */
function prose(bytes: number): string {
  const parts: string[] = [];
  let size = 0;
  while (size < bytes) {
    const r = rand();
    const piece = r < 0.002 ? sandboxPath() : r < 0.004 ? url() : r < 0.08 ? `${pick(WORDS)}.\n` : pick(WORDS);
    parts.push(piece);
    size += piece.length + 1;
  }
  return parts.join(" ");
}

function structured(): Record<string, unknown> {
  return {
    status: "ok",
    output: { path: sandboxPath(), rows: Math.floor(rand() * 1e4), columns: [pick(WORDS), pick(WORDS), pick(WORDS)] },
    files: [sandboxPath(), url()],
    task_id: `job-${Math.floor(rand() * 1e6).toString(16)}`,
    meta: { elapsed_ms: rand() * 100, tags: [pick(WORDS), pick(WORDS)], note: prose(120) },
  };
}

type Kind = "text" | "structured" | "blocks" | "data" | "mcp-json";
function typicalMessage(kind: Kind, i: number): ToolMessageLike {
  const base = { tool_call_id: `call_${i}`, name: pick(["shell", "render", "fetch", "export"]), id: `msg_${i}` };
  switch (kind) {
    case "text": // plain-string result of 1–20 KB
      return { ...base, content: prose(1024 + Math.floor(rand() * 19 * 1024)) };
    case "structured": // mcp-adapters shape: structured content in the artifact, short text
      return { ...base, content: [{ type: "text", text: prose(300) }], artifact: [{ type: "mcp_structured_content", data: structured() }] };
    case "blocks": // content blocks around a medium text
      return {
        ...base,
        content: [
          { type: "text", text: prose(2048 + Math.floor(rand() * 4096)) },
          { type: "file", source_type: "url", url: url(), mime_type: "text/csv" },
          { type: "image", url: url(), mimeType: "image/png" },
          { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==" } },
        ],
      };
    case "data": // small result without reference keys: the data fallback
      return { ...base, content: "done", artifact: { structured_content: { rows: i, ok: true, columns: [pick(WORDS), pick(WORDS)] } } };
    case "mcp-json": {
      // What @langchain/mcp-adapters 1.1.4 really returns for one text block
      // plus structuredContent: that block's JSON as the content string; every
      // other message's text is the spec's JSON mirror of the structured result.
      const data = structured();
      const text = i % 2 === 0 ? JSON.stringify(data) : prose(300);
      return { ...base, content: JSON.stringify({ type: "text", text, structuredContent: data }), artifact: [{ type: "mcp_structured_content", data }] };
    }
  }
}

// Two in five messages are long texts, the rest one of each other kind.
const KINDS: readonly Kind[] = ["text", "text", "structured", "blocks", "data"];
const corpus = Array.from({ length: 200 }, (_, i) => typicalMessage(KINDS[i % KINDS.length], i));
const corpusBytes = corpus.reduce((n, m) => n + JSON.stringify(m).length, 0);
// Reported on its own, so that "all" stays the corpus earlier runs measured.
const mcpJson = Array.from({ length: 40 }, (_, i) => typicalMessage("mcp-json", i));

// Correctness before timing.
let entries = 0;
for (const m of mcpJson) deepStrictEqual(extractArtifacts(m, OPTIONS), baselineExtractArtifacts(m, OPTIONS));
for (const m of corpus) {
  const got = extractArtifacts(m, OPTIONS);
  deepStrictEqual(got, baselineExtractArtifacts(m, OPTIONS));
  entries += got.length;
}
console.log(`corpus: ${corpus.length} messages, ${(corpusBytes / 1024).toFixed(0)} KB, ${entries} entries; extractArtifacts == baseline on all (and on ${mcpJson.length} mcp-adapters JSON strings)`);

const ROUNDS = 5;
async function compare(messages: readonly ToolMessageLike[]) {
  const p50 = await alternatingRounds(
    {
      engine: () => {
        for (const m of messages) extractArtifacts(m, OPTIONS);
      },
      baseline: () => {
        for (const m of messages) baselineExtractArtifacts(m, OPTIONS);
      },
    },
    ROUNDS,
    { time: 400, warmupTime: 100 },
  );
  const per = (xs: number[]) => xs.map((x) => x / messages.length);
  return { engine: median(per(p50.engine)), baseline: median(per(p50.baseline)), ratio: median(p50.baseline.map((b, i) => b / p50.engine[i])) };
}

const us = (ms: number) => `${(ms * 1000).toFixed(2)} µs`;
const perSecond = (ms: number) => Math.round(1000 / ms).toLocaleString("en-US");
console.log(`\ntypical messages, median per message (median of ${ROUNDS} alternating rounds); engine = extractArtifacts, baseline = RegExp + JSON.stringify`);
console.log(`  ${"messages".padEnd(26)} ${"engine".padStart(11)} ${"baseline".padStart(11)} ${"engine msg/s".padStart(13)} ${"baseline msg/s".padStart(15)} ${"speed-up".padStart(9)}`);
const groups: Array<[string, readonly ToolMessageLike[]]> = [
  ["all (the corpus above)", corpus],
  ["text 1–20 KB", corpus.filter((_, i) => KINDS[i % KINDS.length] === "text")],
  ["structured (mcp artifact)", corpus.filter((_, i) => KINDS[i % KINDS.length] === "structured")],
  ["blocks + 2–6 KB text", corpus.filter((_, i) => KINDS[i % KINDS.length] === "blocks")],
  ["data fallback", corpus.filter((_, i) => KINDS[i % KINDS.length] === "data")],
  ["mcp-adapters JSON string", mcpJson],
];
for (const [label, messages] of groups) {
  const r = await compare(messages);
  console.log(
    `  ${label.padEnd(26)} ${us(r.engine).padStart(11)} ${us(r.baseline).padStart(11)} ${perSecond(r.engine).padStart(13)} ${perSecond(r.baseline).padStart(15)} ${`${r.ratio.toFixed(2)}×`.padStart(9)}`,
  );
}
console.log("  target: ≥ 3× on the whole corpus");

// Oversized payloads: rejection must cost what a small payload costs.
const small = { rows: Array.from({ length: 40 }, (_, i) => ({ id: i, label: `row ${i}` })) };
const smallBytes = JSON.stringify(small).length;
const nodes10M = { items: new Array(10_000_000).fill(0) };
const strings100MB = { chunks: Array.from({ length: 100 }, (_, i) => String.fromCharCode(97 + (i % 26)).repeat(1024 * 1024)) };
const withPayload = (data: unknown): ToolMessageLike => ({
  tool_call_id: "call_big",
  name: "dump",
  content: "kept: /mnt/user-data/outputs/dump.log",
  artifact: [{ type: "mcp_structured_content", data }],
});
const oversized = [
  [`1 KB payload (${smallBytes} B)`, withPayload(small)],
  ["10^7 nodes", withPayload(nodes10M)],
  ["100 MB of strings", withPayload(strings100MB)],
  ["100 MB under a known key", withPayload({ files: strings100MB.chunks })],
] as const;

const small1 = extractArtifacts(oversized[0][1], OPTIONS);
deepStrictEqual(small1, baselineExtractArtifacts(oversized[0][1], OPTIONS));
for (const [label, m] of oversized.slice(1)) {
  // No structured entry (over budget, or nothing in it can pass a gate); the text is still captured.
  deepStrictEqual(
    extractArtifacts(m, OPTIONS).map((e) => e.real_ref),
    ["/mnt/user-data/outputs/dump.log"],
    `${label}: unexpected structured entries`,
  );
}

const big = new Bench({ time: 1000, warmupTime: 200 });
for (const [label, m] of oversized) big.add(label, () => extractArtifacts(m, OPTIONS));
await big.run();
console.log("\noversized structured payloads vs a 1 KB one, extractArtifacts (median per message):");
for (const t of big.tasks) {
  if (t.result.state !== "completed") throw new Error(`${t.name}: ${t.result.state}`);
  console.log(`  ${t.name.padEnd(26)} ${t.result.latency.p50.toFixed(4).padStart(9)} ms`);
}
console.log("  target: ≤ 1 ms, about the cost of the 1 KB payload");

// The baseline serializes the whole payload before it can reject it; once each, for scale.
console.log("\nbaseline on the same payloads (one run each):");
for (const [label, m] of oversized) {
  const t0 = performance.now();
  baselineExtractArtifacts(m, OPTIONS);
  console.log(`  ${label.padEnd(26)} ${(performance.now() - t0).toFixed(2).padStart(9)} ms`);
}
