// Capture cost per model turn as the history grows (DESIGN §5), and of a
// wide turn whose parallel calls all name one long-used handle.
//   history: 1k / 10k / 50k messages, every result and call already in the
//   ledger, the registry full (100 entries); the turn adds one AIMessage whose
//   call uses a handle, and one new ToolMessage.
//   next round      the capture hook as a run's next model turn sees it: the same
//                   message objects, a new ledger array holding the same strings
//                   (what the reducers hand over).                 target ≤ 2 ms at 10k
//   after reload    the first round of the next invocation in the same process:
//                   LangGraph hands it the history loaded from the checkpoint,
//                   every message object and ledger string a fresh copy.
//   new process     baseline, nothing reused: the same fresh copies, and a new
//                   middleware instance (a graph recreated in a new process).
// Each update is checked against keys and handles computed independently
// before anything is timed.
// Run: npm run bench -- capture
import { randomUUID } from "node:crypto";
import { Bench } from "tinybench";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { captureMiddleware, type CaptureUpdate } from "../src/middleware/capture.js";
import { parseToolArtifactsConfig } from "../src/config.js";
import { generateHandle, occurrenceKeys, type OccurrenceSeed } from "../src/engine/hash.js";
import { extractArtifacts } from "../src/extract.js";
import type { ArtifactEntry } from "../src/types.js";

const SIZES = [1_000, 10_000, 50_000];
const THREAD = randomUUID();
const config = parseToolArtifactsConfig({});

interface State {
  messages: BaseMessage[];
  tool_artifacts: ArtifactEntry[];
  tool_artifact_processed: string[];
}
type Hook = (state: State, runtime: object) => CaptureUpdate | undefined;
const runtimeOf = (thread: string) => ({ configurable: { thread_id: thread } });
const runtime = runtimeOf(THREAD);
const hookOf = () => captureMiddleware(config).beforeModel as unknown as Hook;

function writeCall(i: number) {
  return new AIMessage({ id: `run-${randomUUID()}`, content: "", tool_calls: [{ id: `call_${i}`, name: "write_file", args: { name: `f${i}.txt` }, type: "tool_call" }] });
}

function writeResult(i: number) {
  return new ToolMessage({ id: randomUUID(), tool_call_id: `call_${i}`, name: "write_file", content: `wrote /mnt/user-data/out/f${i}.txt` });
}

/** A processed history of `size` messages (one human message, then call/result pairs). */
function history(size: number, thread = THREAD): State {
  const messages: BaseMessage[] = [new HumanMessage({ id: randomUUID(), content: "go" })];
  const seeds: OccurrenceSeed[] = [];
  for (let i = 0; messages.length < size; i++) {
    const call = writeCall(i);
    const result = writeResult(i);
    messages.push(call, result);
    seeds.push({ kind: "result", threadId: thread, messageId: result.id, toolCallId: `call_${i}`, index: 0 });
    seeds.push({ kind: "call", threadId: thread, messageId: call.id, toolCallId: `call_${i}`, index: 0 });
  }
  const results = messages.filter((m): m is ToolMessage => m.type === "tool");
  const registry = results.slice(-config.maxEntries).map((m) => extractArtifacts(m, { threadId: thread })[0]);
  return { messages, tool_artifacts: registry, tool_artifact_processed: occurrenceKeys(seeds) };
}

/** The turn under test: a call that uses the newest handle, and a new result. */
function turn(base: State): { state: State; call: AIMessage; result: ToolMessage } {
  const handle = base.tool_artifacts.at(-1)!.handle;
  const call = new AIMessage({ id: `run-${randomUUID()}`, content: "", tool_calls: [{ id: "call_new", name: "read_file", args: { path: handle }, type: "tool_call" }] });
  const result = new ToolMessage({ id: randomUUID(), tool_call_id: "call_new", name: "read_file", content: "wrote /mnt/user-data/out/new.txt" });
  return {
    state: { messages: [...base.messages, call, result], tool_artifacts: base.tool_artifacts, tool_artifact_processed: base.tool_artifact_processed.slice() },
    call,
    result,
  };
}

/** The same history as a checkpoint loaded by a new process holds it: new objects, new strings. */
function reloaded(base: State): State {
  const messages = base.messages.map((m) => {
    if (m instanceof ToolMessage) return new ToolMessage({ id: m.id, tool_call_id: m.tool_call_id, name: m.name, content: m.content });
    if (m instanceof AIMessage) return new AIMessage({ id: m.id, content: m.content, tool_calls: m.tool_calls });
    return new HumanMessage({ id: m.id, content: m.content });
  });
  return { messages, tool_artifacts: structuredClone(base.tool_artifacts), tool_artifact_processed: JSON.parse(JSON.stringify(base.tool_artifact_processed)) };
}

function check(name: string, ok: boolean): void {
  console.log(`${ok ? "ok  " : "FAIL"} ${name}`);
  if (!ok) process.exit(1);
}

/** The update one turn must produce, derived without the capture code. */
function verify(label: string, update: CaptureUpdate | undefined, t: ReturnType<typeof turn>, thread = THREAD): void {
  const [resultKey, callKey] = occurrenceKeys([
    { kind: "result", threadId: thread, messageId: t.result.id, toolCallId: "call_new", index: 0 },
    { kind: "call", threadId: thread, messageId: t.call.id, toolCallId: "call_new", index: 0 },
  ]);
  const used = t.state.tool_artifacts.at(-1)!;
  const artifacts = update?.tool_artifacts ?? [];
  const [fresh, consumed, trim] = artifacts as [ArtifactEntry, ArtifactEntry, unknown];
  check(
    `${label}: one result key, one settled call`,
    JSON.stringify(update?.tool_artifact_processed) === JSON.stringify([resultKey, callKey]),
  );
  check(
    `${label}: new entry, consumed_by on the used one, trim to ${config.maxEntries}`,
    artifacts.length === 3 &&
      fresh.handle === generateHandle(thread, "call_new", 0, 0, t.result.id) &&
      fresh.real_ref === "/mnt/user-data/out/new.txt" &&
      consumed.handle === used.handle &&
      JSON.stringify(consumed.consumed_by) === '["call_new"]' &&
      JSON.stringify(trim) === JSON.stringify({ op: "trim_to", keep: config.maxEntries }),
  );
}

const median = (b: Bench, name: string): number => {
  const r = b.tasks.find((task) => task.name === name)?.result;
  if (!r || !("latency" in r)) throw new Error(`bench task ${name} did not complete (${r?.state})`);
  return r.latency.p50;
};

/** Medians (ms) per scenario for one history size; each size runs alone so one heap cannot skew the next. */
async function measure(size: number): Promise<{ next: number; reload: number; cold: number }> {
  const base = history(size);

  // Next round: the history was seen by the previous rounds of this run.
  const warmHook = hookOf();
  check(`${size}: processed history records nothing`, warmHook(base, runtime) === undefined);
  let t = turn(base);
  verify(`${size} next round`, warmHook(t.state, runtime), t);

  // After a reload in this process: same middleware, fresh copies of everything.
  const reloadHook = hookOf();
  reloadHook(reloaded(base), runtime);
  let again = turn(reloaded(base));
  verify(`${size} after reload`, reloadHook(again.state, runtime), again);

  // A new process: nothing to reuse.
  let coldHook = hookOf();
  let cold = turn(reloaded(base));
  verify(`${size} new process`, coldHook(cold.state, runtime), cold);

  const rounds = new Bench({ time: 1500, warmupTime: 300 });
  rounds.add("next", () => void warmHook(t.state, runtime), { beforeEach: () => void (t = turn(base)) });
  // Each sample needs a fresh copy of the whole history: few samples.
  const firsts = new Bench({ iterations: 8, time: 0, warmupIterations: 2 });
  firsts.add("reload", () => void reloadHook(again.state, runtime), { beforeEach: () => void (again = turn(reloaded(base))) });
  firsts.add("cold", () => void coldHook(cold.state, runtime), {
    beforeEach: () => {
      coldHook = hookOf();
      cold = turn(reloaded(base));
    },
  });
  await rounds.run();
  await firsts.run();
  return { next: median(rounds, "next"), reload: median(firsts, "reload"), cold: median(firsts, "cold") };
}

const results = new Map<number, { next: number; reload: number; cold: number }>();
for (const size of SIZES) {
  results.set(size, await measure(size));
  globalThis.gc?.();
}

const ms = (v: number) => `${v.toFixed(3).padStart(9)} ms`;

console.log("\nmedian per model turn (one new ToolMessage; history fully processed)");
console.log("  history     next round  per 1k msgs    after reload   new process (baseline)   baseline / next   baseline / reload");
for (const [size, r] of results) {
  const per1k = `${((r.next * 1000) / size).toFixed(4)} ms`;
  console.log(
    `  ${String(size).padStart(7)}  ${ms(r.next)}  ${per1k.padStart(11)}  ${ms(r.reload)}  ${ms(r.cold)}             ${`${(r.cold / r.next).toFixed(0)}×`.padStart(7)}           ${`${(r.cold / r.reload).toFixed(1)}×`.padStart(7)}`,
  );
}
const first = results.get(SIZES[0])!;
console.log("\ngrowth vs 1k (linear = the size ratio)");
for (const size of SIZES.slice(1)) {
  const r = results.get(size)!;
  console.log(`  ${String(size / SIZES[0]).padStart(2)}× history → next round ${(r.next / first.next).toFixed(1)}×, after reload ${(r.reload / first.reload).toFixed(1)}×, new process ${(r.cold / first.cold).toFixed(1)}×`);
}
const at10k = results.get(10_000)!.next;
console.log(`\nnext round at 10k: ${at10k.toFixed(3)} ms (target ≤ 2 ms) ${at10k <= 2 ? "met" : "NOT met"}`);

// Threads served in turn, more than capture keeps views for: 20 threads of
// 5k messages, each view 10k items, past the 2^17-item bound (all but the 16
// kept views must go). A lap is one round of each thread, in the same order;
// the baseline is a lap where every round starts over (a new instance each).
const IN_TURN = 20;
const IN_TURN_SIZE = 5_000;
async function threadsInTurn(): Promise<{ lap: number; cold: number }> {
  const threads = Array.from({ length: IN_TURN }, () => randomUUID());
  const bases = threads.map((thread) => history(IN_TURN_SIZE, thread));
  const hook = hookOf();
  let laps = bases.map(turn);
  const lap = (serve: (thread: number) => Hook) => laps.map((t, i) => serve(i)(t.state, runtimeOf(threads[i]!)));
  // The first laps make the views and settle which are kept; the updates are checked on the third.
  for (let n = 0; n < 3; n++) {
    laps = bases.map(turn);
    const updates = lap(() => hook);
    if (n === 2) updates.forEach((update, i) => verify(`in turn, thread ${i}`, update, laps[i]!, threads[i]));
  }
  const bench = new Bench({ iterations: 12, time: 0, warmupIterations: 2 });
  bench.add("lap", () => void lap(() => hook), { beforeEach: () => void (laps = bases.map(turn)) });
  bench.add("cold", () => void lap(() => hookOf()), { beforeEach: () => void (laps = bases.map(turn)) });
  await bench.run();
  return { lap: median(bench, "lap"), cold: median(bench, "cold") };
}
const inTurn = await threadsInTurn();
console.log(`
${IN_TURN} threads of ${IN_TURN_SIZE} messages served in turn (median per lap, ${IN_TURN} rounds)`);
console.log(`  one instance ${ms(inTurn.lap)}   every round starting over (baseline) ${ms(inTurn.cold)}   ${(inTurn.cold / inTurn.lap).toFixed(1)}×`);
globalThis.gc?.();

// Wide turns: 150 parallel calls all naming one handle that earlier calls
// used CONSUMERS times. Consumption must not cost calls × consumers
// (DESIGN §5); the entry gains all 150 in one update.
const WIDTH = 150;
const CONSUMERS = [150, 1_500, 15_000];
async function wideTurn(consumers: number): Promise<number> {
  const used: ArtifactEntry = { ...history(4).tool_artifacts.at(-1)!, consumed_by: Array.from({ length: consumers }, (_, i) => `call_old_${i}`) };
  const calls = Array.from({ length: WIDTH }, (_, i) => ({ id: `call_wide_${i}`, name: "read_file", args: { path: used.handle, part: i }, type: "tool_call" as const }));
  const human = new HumanMessage({ id: randomUUID(), content: "go" });
  const turnState = (): State => ({ messages: [human, new AIMessage({ id: `run-${randomUUID()}`, content: "", tool_calls: calls })], tool_artifacts: [used], tool_artifact_processed: [] });
  let state = turnState();
  const ai = state.messages[1]!;
  const hook = hookOf();
  const update = hook(state, runtime);
  const keys = occurrenceKeys(calls.map((c, i) => ({ kind: "call" as const, threadId: THREAD, messageId: ai.id!, toolCallId: c.id, index: i })));
  check(
    `${consumers} consumers: one updated entry gaining the ${WIDTH} calls in order, ${WIDTH} calls settled`,
    update?.tool_artifacts.length === 1 &&
      JSON.stringify((update.tool_artifacts[0] as ArtifactEntry).consumed_by) === JSON.stringify([...used.consumed_by!, ...calls.map((c) => c.id)]) &&
      JSON.stringify(update.tool_artifact_processed) === JSON.stringify(keys),
  );
  // Each sample is a new turn (a new AI message, so its 150 call keys are
  // hashed) over the same consumers: the round's whole work every time.
  const bench = new Bench({ time: 1000, warmupTime: 200 });
  bench.add("wide", () => void hook(state, runtime), { beforeEach: () => void (state = turnState()) });
  await bench.run();
  return median(bench, "wide");
}
const wide = new Map<number, number>();
for (const consumers of CONSUMERS) wide.set(consumers, await wideTurn(consumers));
console.log(`\na turn of ${WIDTH} parallel calls naming one handle, by how many calls used it before (median per round)`);
for (const [consumers, t] of wide) console.log(`  ${String(consumers).padStart(6)} consumers  ${ms(t)}   ${(t / wide.get(CONSUMERS[0])!).toFixed(1)}× the ${CONSUMERS[0]}-consumer round`);
