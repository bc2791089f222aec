// Resolution overhead per tool call with a full (1000-entry) registry.
//   baseline: the same trivial handler called directly (what a call costs without resolution)
//   cases:    handles of the newest entries, handles of the oldest entries (the lookup
//             walks the registry newest first, so this is its worst case), args without
//             handles, and a refused call (unknown handle).           target ≤ 50 µs
// The hook's output is checked against the expected resolved args before timing.
// Run: npm run bench -- resolution
import { ToolMessage } from "@langchain/core/messages";
import { Bench } from "tinybench";
import { parseToolArtifactsConfig } from "../src/config.js";
import { resolutionMiddleware } from "../src/middleware/resolution.js";
import { MAX_REGISTRY_ENTRIES } from "../src/registry.js";
import type { ArtifactEntry } from "../src/types.js";

// Per sample: enough calls to rise above the timer, few enough (~1 ms) that
// most samples run between two preemptions on a loaded machine, so the
// median shows the cost of the work rather than of the scheduler.
const CALLS = 20;

const handleOf = (i: number) => `art_${(0x10000000 + i * 2654435761).toString(16).slice(-8)}`;
const registry: ArtifactEntry[] = Array.from({ length: MAX_REGISTRY_ENTRIES }, (_, i) => ({
  handle: handleOf(i),
  tool_name: i % 2 ? "render_chart" : "web_fetch",
  tool_call_id: `call_${i}`,
  call_index: 0,
  artifact_type: i % 3 ? "file" : "image",
  display_name: `out-${i}.png`,
  real_ref: i % 2 ? `/mnt/user-data/outputs/run-${i}/out-${i}.png` : `https://cdn.example.test/assets/${i}/page-${i}.html?session=abc`,
  created_at: "2025-01-01T00:00:00.000Z",
}));
const refOf = new Map(registry.map((e) => [e.handle, e.real_ref]));

/** Shaped like a real call: a few handles, bare and backticked, nested among plain fields. */
function argsWith(a: string, b: string, c: string) {
  return {
    title: "Quarterly summary for the board",
    files: [a, `\`${b}\``],
    options: { cover: { src: c, caption: "Figure 1: revenue by region" }, format: "pdf", pages: [1, 2, 3] },
    notes: `Combine ${a} with the chart, keep the original layout.`,
  };
}
function resolvedArgs(a: string, b: string, c: string) {
  const [ra, rb, rc] = [refOf.get(a)!, refOf.get(b)!, refOf.get(c)!];
  return {
    title: "Quarterly summary for the board",
    files: [ra, rb],
    options: { cover: { src: rc, caption: "Figure 1: revenue by region" }, format: "pdf", pages: [1, 2, 3] },
    notes: `Combine ${ra} with the chart, keep the original layout.`,
  };
}

const request = (args: Record<string, unknown>) =>
  ({ toolCall: { id: "call_x", name: "publish", args }, tool: undefined, state: { messages: [], tool_artifacts: registry }, runtime: {} }) as never;
const n = MAX_REGISTRY_ENTRIES;
const cases = {
  newest: { req: request(argsWith(handleOf(n - 1), handleOf(n - 2), handleOf(n - 3))), expect: resolvedArgs(handleOf(n - 1), handleOf(n - 2), handleOf(n - 3)) },
  oldest: { req: request(argsWith(handleOf(0), handleOf(1), handleOf(2))), expect: resolvedArgs(handleOf(0), handleOf(1), handleOf(2)) },
  noHandles: { req: request(argsWith("report.pdf", "chart.png", "cover.png")), expect: argsWith("report.pdf", "chart.png", "cover.png") },
  unknown: { req: request(argsWith(handleOf(0), "art_ffffffff", handleOf(2))), expect: null },
};

const hook = resolutionMiddleware(parseToolArtifactsConfig()).wrapToolCall!;
const result = new ToolMessage({ content: "ok", tool_call_id: "call_x" });
let lastArgs: unknown = null;
const handler = (req: { toolCall: { args: unknown } }) => {
  lastArgs = req.toolCall.args;
  return result;
};

// --- verify ------------------------------------------------------------------
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
for (const [name, c] of Object.entries(cases)) {
  lastArgs = null;
  const out = hook(c.req, handler as never) as ToolMessage;
  const ok = c.expect === null ? out.status === "error" && lastArgs === null && String(out.content).includes("art_ffffffff") : out === result && same(lastArgs, c.expect);
  console.log(`${ok ? "ok  " : "FAIL"} ${name}`);
  if (!ok) process.exit(1);
}

// --- time --------------------------------------------------------------------
const bench = new Bench({ time: 1500, warmupTime: 300 });
let sink = 0;
const timeHook = (req: never) => () => {
  for (let i = 0; i < CALLS; i++) sink += (hook(req, handler as never) as ToolMessage).content.length;
};
bench
  .add("handler called directly", () => {
    for (let i = 0; i < CALLS; i++) sink += handler(cases.newest.req as never).content.length;
  })
  .add("hook: newest handles", timeHook(cases.newest.req))
  .add("hook: oldest handles", timeHook(cases.oldest.req))
  .add("hook: no handles", timeHook(cases.noHandles.req))
  .add("hook: unknown handle (refused)", timeHook(cases.unknown.req));
await bench.run();

const median = (name: string): number => {
  const r = bench.tasks.find((t) => t.name === name)?.result;
  if (!r || !("latency" in r)) throw new Error(`bench task ${name} did not complete (${r?.state})`);
  return r.latency.p50; // ms per CALLS calls
};
const perCall = (ms: number) => (ms * 1000) / CALLS; // µs
const base = perCall(median("handler called directly"));
console.log(`\nmedians per tool call (registry ${registry.length} entries, 3 handles per call, ${sink > 0 ? "results consumed" : ""})`);
console.log(`  handler called directly            ${base.toFixed(3)} µs`);
for (const name of ["hook: newest handles", "hook: oldest handles", "hook: no handles", "hook: unknown handle (refused)"]) {
  const t = perCall(median(name));
  console.log(`  ${name.padEnd(34)} ${t.toFixed(3)} µs   overhead ${(t - base).toFixed(3)} µs (${(t / base).toFixed(1)}× direct; target overhead ≤ 50 µs)`);
}
