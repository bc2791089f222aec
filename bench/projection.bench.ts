// Projection overhead per model call with a full (1000-entry) registry: what
// the hidden context block costs every request (DESIGN §7).
//   baseline: a plain projection of the same registry: the lines newest first,
//             unredacted and unescaped, within the same budget, in a
//             HumanMessage placed before the history (the least any
//             projection does; the trivial handler alone is printed too)
//   cases:    labels of 60 and of 300 characters (cut to labelMaxChars, 120),
//             each without PII rules and with two (langchain's built-in email
//             rule, redacting, and a custom RegExp detector), and with a
//             conversation summary of 4000 characters as a host section. With
//             built-in and pattern rules (or none) a projection keeps each
//             label and section body as shown, so after the first call those
//             cases cost what no rules cost; the case whose key rule is a
//             function (the host's code, asked on every call) renders every
//             label shown on every call.
// Each case's request, as the handler receives it, is checked before timing.
// Run: npm run bench -- projection
import { AIMessage, HumanMessage, SystemMessage, type BaseMessage } from "@langchain/core/messages";
import { conversationSummarySection, projectionMiddleware } from "../src/middleware/projection.js";
import { currentEntries, MAX_REGISTRY_ENTRIES } from "../src/registry.js";
import type { ArtifactEntry } from "../src/types.js";
import { alternatingRounds, median } from "./rounds.js";

// Per sample: enough calls to rise above the timer, few enough (~2 ms) that
// most samples run between two preemptions on a loaded machine.
const CALLS = 10;
const ROUNDS = 5;

const PII = [{ piiType: "email", strategy: "redact" as const }, { piiType: "api_key", detector: /sk-[A-Za-z0-9]{8,}/g }];

/** A registry at its ceiling; every tenth label holds an email and a key, as a careless tool's file names might. */
function registry(labelChars: number): ArtifactEntry[] {
  return Array.from({ length: MAX_REGISTRY_ENTRIES }, (_, i) => {
    const pii = i % 10 === 0 ? ` for jane.doe${i}@example.com key sk-${String(i).padStart(8, "0")}abcd` : "";
    return {
      handle: `art_${(0x10000000 + i * 2654435761).toString(16).slice(-8)}`,
      tool_name: i % 2 ? "render_chart" : "fetch_report",
      tool_call_id: `call_${i}`,
      call_index: 0,
      artifact_type: "file",
      display_name: `report ${i}${pii} `.padEnd(labelChars - 4, "x") + ".pdf",
      real_ref: `/mnt/user-data/outputs/run-${i}/report-${i}.pdf`,
      mime_type: "application/pdf",
      created_at: "2025-01-01T00:00:00.000Z",
      ...(i % 3 === 0 ? { consumed_by: [`call_${i + 1}`] } : {}),
    };
  });
}

// As after a compaction: summarizationMiddleware's summary leads the history.
const summary = new HumanMessage({ content: "The user asked for the quarterly figures. ".repeat(100).slice(0, 4000), additional_kwargs: { lc_source: "summarization" } });
const history: BaseMessage[] = [summary, new HumanMessage("Summarise the reports."), new AIMessage("Working on it.")];
const request = (entries: ArtifactEntry[]) =>
  ({ messages: history, systemMessage: new SystemMessage("You are a careful analyst."), state: { messages: history, tool_artifacts: entries }, runtime: {} }) as never;

interface Case {
  hook: (req: never, handler: never) => Promise<unknown>;
  req: never;
  labels: number;
  pii: boolean;
  section: boolean;
}
const cases: Record<string, Case> = {};
for (const labels of [60, 300]) {
  for (const pii of [false, true]) {
    for (const section of labels === 60 && pii ? [false, true] : [false]) {
      const mw = projectionMiddleware(pii ? { piiRules: PII } : {}, section ? { sections: [conversationSummarySection()] } : {});
      const name = `${labels}-char labels, ${pii ? "two PII rules" : "no PII rules"}${section ? ", summary section" : ""}`;
      cases[name] = { hook: mw.wrapModelCall! as never, req: request(registry(labels)), labels, pii, section };
    }
  }
}

// The key rule as a function: nothing is kept, every call redacts every label shown.
const keyPattern = /sk-[A-Za-z0-9]{8,}/g;
const keys = (text: string) => [...text.matchAll(keyPattern)].map((m) => ({ text: m[0], start: m.index, end: m.index + m[0].length }));
cases["60-char labels, two PII rules, one a function"] = {
  hook: projectionMiddleware({ piiRules: [PII[0]!, { piiType: "api_key", detector: keys }] }).wrapModelCall! as never,
  req: request(registry(60)),
  labels: 60,
  pii: true,
  section: false,
};

let seen: { messages: BaseMessage[]; systemMessage: SystemMessage } | null = null;
const handler = async (req: typeof seen) => {
  seen = req;
  return req;
};

// --- verify ------------------------------------------------------------------
function check(name: string, ok: boolean): void {
  console.log(`${ok ? "ok  " : "FAIL"} ${name}`);
  if (!ok) process.exit(1);
}
for (const [name, c] of Object.entries(cases)) {
  seen = null;
  await c.hook(c.req, handler as never);
  const block = seen!.messages[0]!.content as string;
  const lines = block.split("\n").filter((l) => l.startsWith("art_"));
  const entries = (c.req as unknown as { state: { tool_artifacts: ArtifactEntry[] } }).state.tool_artifacts;
  check(
    `${name}: notice, then the block, then the history; newest handle first`,
    String(seen!.systemMessage.content).includes("untrusted data") &&
      seen!.messages.length === history.length + 1 &&
      block.startsWith("<durable_context_data>") &&
      lines[0]!.startsWith(`${entries.at(-1)!.handle} | file | report ${MAX_REGISTRY_ENTRIES - 1} `),
  );
  check(`${name}: labels cut to 120 characters`, lines.every((l) => l.split(" | ")[2]!.length <= 120) && (c.labels < 120 || lines.some((l) => l.split(" | ")[2]!.endsWith("…"))));
  const shownPii = lines.filter((l) => /report \d*0 /.test(l));
  check(
    `${name}: the emails and keys of the shown lines ${c.pii ? "redacted" : "shown"}`,
    shownPii.length > 0 && shownPii.every((l) => (c.pii ? l.includes("[REDACTED_EMAIL]") && l.includes("[REDACTED_API_KEY]") && !l.includes("@") : l.includes("@example.com"))),
  );
  check(`${name}: ${c.section ? "the summary follows the handles" : "no summary"}`, block.includes("## Conversation summary") === c.section);
}

/** The baseline: what the block costs with no escaping, redaction, cutting or notice. */
async function plainProjection(req: never) {
  const { state, messages, systemMessage } = req as unknown as { state: { tool_artifacts: ArtifactEntry[] }; messages: BaseMessage[]; systemMessage: SystemMessage };
  const lines: string[] = [];
  let used = 0;
  for (let i = state.tool_artifacts.length - 1; i >= 0; i--) {
    const e = state.tool_artifacts[i]!;
    const line = `${e.handle} | ${e.artifact_type} | ${e.display_name} | ${e.mime_type} | ${e.consumed_by?.length ? "consumed" : "available"} | ${e.tool_name}`;
    if (used + line.length + 1 > 4000) break;
    used += line.length + 1;
    lines.push(line);
  }
  const hidden = new HumanMessage({ content: `<durable_context_data>\n${lines.join("\n")}\n</durable_context_data>`, additional_kwargs: { hide_from_ui: true } });
  return handler({ systemMessage, messages: [hidden, ...messages] });
}
const plainReq = cases["60-char labels, no PII rules"]!.req;
check("the plain projection shows as many lines of 60-character labels", ((await plainProjection(plainReq))!.messages[0]!.content as string).split("\n").length > 30);

// --- time --------------------------------------------------------------------
let sink = 0;
const tasks: Record<string, () => Promise<void>> = {
  "handler called directly": async () => {
    for (let i = 0; i < CALLS; i++) sink += (await handler(plainReq))!.messages.length;
  },
  "plain projection (baseline)": async () => {
    for (let i = 0; i < CALLS; i++) sink += (await plainProjection(plainReq))!.messages.length;
  },
  // Part of every case: the usable entries, one per handle, newest first, which the count of those left out needs in full.
  "the registry pass alone": async () => {
    for (let i = 0; i < CALLS; i++) sink += currentEntries((plainReq as unknown as { state: { tool_artifacts: unknown } }).state.tool_artifacts).length;
  },
};
for (const [name, c] of Object.entries(cases)) {
  tasks[name] = async () => {
    for (let i = 0; i < CALLS; i++) sink += ((await c.hook(c.req, handler as never)) as { messages: unknown[] }).messages.length;
  };
}
const out = await alternatingRounds(tasks, ROUNDS, { time: 300, warmupTime: 100 });

const perCall = (name: string) => (median(out[name]!) * 1000) / CALLS; // µs
const base = perCall("plain projection (baseline)");
console.log(`\nmedians per model call over ${ROUNDS} alternating rounds (registry ${MAX_REGISTRY_ENTRIES} entries, default 4000-character budget${sink > 0 ? "" : "; nothing consumed"})`);
console.log(`  ${"handler called directly".padEnd(48)} ${perCall("handler called directly").toFixed(1).padStart(7)} µs`);
console.log(`  ${"plain projection (baseline)".padEnd(48)} ${base.toFixed(1).padStart(7)} µs`);
console.log(`  ${"the registry pass alone".padEnd(48)} ${perCall("the registry pass alone").toFixed(1).padStart(7)} µs`);
for (const name of Object.keys(cases)) {
  const t = perCall(name);
  console.log(`  ${name.padEnd(48)} ${t.toFixed(1).padStart(7)} µs   ${(t / base).toFixed(1)}× the plain projection`);
}
