// What the two channels cost a real agent in checkpoints (README, "Checkpoint
// size"). LangGraph writes the whole state in every checkpoint, and the ledger
// (about two keys per tool call) is never trimmed (DESIGN §5), so a long
// thread pays for every tool call it ever made.
//   per ledger size (20k, 100k keys): one invoke of one tool call, on SQLite in
//   memory, with the library (default durability, and `durability: "exit"`),
//   against the same agent without it (baseline); the bytes of the last
//   checkpoint, and the bytes one invoke writes (checkpoints and pending
//   writes). Plus the JSON size of a registry at its 1000-entry ceiling.
// Each agent's state is checked before anything is timed.
// Run: npm run bench -- checkpoint
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { ToolMessage } from "@langchain/core/messages";
import { createAgent, tool } from "langchain";
import { Bench } from "tinybench";
import { z } from "zod";
import { occurrenceKey } from "../src/engine/hash.js";
import { extractArtifacts } from "../src/extract.js";
import { toolArtifactsMiddleware } from "../src/middleware/index.js";
import { toolArtifactsStateSchema } from "../src/registry.js";
import { ScriptedChatModel, type ScriptedStep } from "../src/testing/scripted-model.js";
import type { ArtifactEntry } from "../src/types.js";

const LEDGERS = [20_000, 100_000];
const INVOKES = 5;
const THREAD = "bench-thread";

interface Run {
  invoke(durability?: "async" | "exit"): Promise<{ tool_artifacts?: ArtifactEntry[]; tool_artifact_processed?: string[] }>;
  lastCheckpointBytes(): number;
  /** Bytes the saver holds: every checkpoint and every pending write. */
  storedBytes(): number;
}

/** An agent whose every invoke makes one tool call; with the library, its thread starts with `ledger` keys. */
async function agent(withLibrary: boolean, ledger: number): Promise<Run> {
  const saver = SqliteSaver.fromConnString(":memory:");
  let n = 0;
  const fetch = tool(async () => `Fetched /mnt/user-data/outputs/f${n++}.csv`, { name: "fetch", description: "Fetch a file", schema: z.object({}) });
  const script: ScriptedStep[] = [{ content: "seeded" }];
  for (let i = 0; i < 4 * INVOKES + 8; i++) script.push({ tool_calls: [{ name: "fetch", args: {} }] }, { content: "done" });
  const a = createAgent({
    model: new ScriptedChatModel(script),
    tools: [fetch],
    checkpointer: saver,
    ...(withLibrary ? { stateSchema: toolArtifactsStateSchema, middleware: [...toolArtifactsMiddleware()] } : {}),
  });
  const configurable = { thread_id: THREAD };
  const seed = withLibrary ? { tool_artifact_processed: Array.from({ length: ledger }, (_, i) => occurrenceKey("result", THREAD, `m${i}`, `c${i}`, 0)) } : {};
  await a.invoke({ messages: [{ role: "user", content: "seed" }], ...seed } as never, { configurable });
  const db = (saver as unknown as { db: { prepare(sql: string): { get(): { b: number } } } }).db;
  const sum = (table: string, column: string) => db.prepare(`SELECT coalesce(sum(length(${column})), 0) AS b FROM ${table}`).get().b;
  return {
    invoke: (durability = "async") => a.invoke({ messages: [{ role: "user", content: "go" }] } as never, { configurable, durability } as never) as never,
    lastCheckpointBytes: () => db.prepare("SELECT length(checkpoint) AS b FROM checkpoints ORDER BY checkpoint_id DESC LIMIT 1").get().b,
    storedBytes: () => sum("checkpoints", "checkpoint") + sum("checkpoints", "metadata") + sum("writes", "value"),
  };
}

function check(name: string, ok: boolean): void {
  console.log(`${ok ? "ok  " : "FAIL"} ${name}`);
  if (!ok) process.exit(1);
}

const median = (b: Bench, name: string): number => {
  const r = b.tasks.find((task) => task.name === name)?.result;
  if (!r || !("latency" in r)) throw new Error(`bench task ${name} did not complete (${r?.state})`);
  return r.latency.p50;
};

const rows: string[] = [];
const writes: string[] = [];
for (const ledger of LEDGERS) {
  const [without, withLib] = [await agent(false, 0), await agent(true, ledger)];
  const state = await withLib.invoke();
  check(`${ledger}: the fetched file is registered`, state.tool_artifacts?.at(-1)?.real_ref === "/mnt/user-data/outputs/f0.csv");
  check(`${ledger}: the ledger holds the seed and the round's result and call keys`, state.tool_artifact_processed?.length === ledger + 2);
  check(`${ledger}: the baseline has no library channels`, !("tool_artifacts" in (await without.invoke())));
  const bytes = withLib.lastCheckpointBytes();
  const baseBytes = without.lastCheckpointBytes();
  const written = async (run: Run, durability?: "async" | "exit") => {
    const before = run.storedBytes();
    await run.invoke(durability);
    return run.storedBytes() - before;
  };
  const [writtenLib, writtenExit, writtenBase] = [await written(withLib), await written(withLib, "exit"), await written(without)];

  const bench = new Bench({ iterations: INVOKES, time: 0, warmupIterations: 1 });
  bench.add("without", async () => void (await without.invoke()));
  bench.add("with", async () => void (await withLib.invoke()));
  bench.add("with, exit", async () => void (await withLib.invoke("exit")));
  await bench.run();
  const [base, lib, exit] = ["without", "with", "with, exit"].map((name) => median(bench, name));
  rows.push(
    `  ${String(ledger).padStart(7)}  ${(bytes / 1e6).toFixed(2).padStart(6)} MB (${(baseBytes / 1e3).toFixed(1)} KB without)  ${lib.toFixed(0).padStart(6)} ms  ${exit.toFixed(0).padStart(6)} ms  ${base.toFixed(0).padStart(5)} ms  ${(lib / base).toFixed(0).padStart(4)}×  ${(exit / base).toFixed(0).padStart(4)}×`,
  );
  writes.push(
    `  ${String(ledger).padStart(7)}  ${(writtenLib / 1e6).toFixed(2).padStart(6)} MB  ${(writtenExit / 1e6).toFixed(2).padStart(6)} MB  ${(writtenBase / 1e3).toFixed(1).padStart(6)} KB  ${(writtenLib / writtenBase).toFixed(0).padStart(5)}×  ${(writtenExit / writtenBase).toFixed(0).padStart(5)}×`,
  );
  globalThis.gc?.();
}

console.log(`\none invoke with one tool call, SQLite in memory, median of ${INVOKES}`);
console.log("  ledger   last checkpoint                  with lib  durability exit  without  with/without  exit/without");
for (const row of rows) console.log(row);
console.log("\nbytes one such invoke writes (checkpoints, their metadata, pending writes)");
console.log("  ledger   with lib  durability exit  without  with/without  exit/without");
for (const row of writes) console.log(row);

// A registry at its ceiling: 1000 sandbox-path entries, half consumed, as JSON.
const registry = Array.from({ length: 1000 }, (_, i) =>
  extractArtifacts(new ToolMessage({ id: `msg-${i}`, tool_call_id: `call_${i}abcdefghijklmnop`, name: "fetch_report", content: `Wrote /mnt/user-data/outputs/run-${i}/report-${i}.csv` }), { threadId: THREAD })[0]!,
);
registry.forEach((e, i) => {
  if (i % 2) e.consumed_by = [`call_${i}xyz`];
});
check("1000 registry entries", registry.length === 1000 && registry.every((e) => e.handle.startsWith("art_")));
console.log(`\nregistry at 1000 entries: ${(JSON.stringify(registry).length / 1e6).toFixed(3)} MB as JSON, in every checkpoint`);
