// One capture round at a time: the capture hook called with a state object,
// so each DESIGN §5 rule is checked against exact updates. Real agents are in
// the sibling capture*.test.ts files.
import { describe, expect, it } from "vitest";
import { AIMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { captureMiddleware, type CaptureUpdate } from "../../src/middleware/capture.js";
import { parseToolArtifactsConfig, type ToolArtifactsConfigInput } from "../../src/config.js";
import { generateHandle, occurrenceKey } from "../../src/engine/hash.js";
import { extractArtifacts } from "../../src/extract.js";
import { mergeProcessed, mergeToolArtifacts } from "../../src/registry.js";
import type { ArtifactEntry, ArtifactUpdate } from "../../src/types.js";
import { heapAfterGc } from "../support/heap.js";

const THREAD = "thread-round";

interface State {
  messages: BaseMessage[];
  tool_artifacts: ArtifactEntry[];
  tool_artifact_processed: string[];
}

type Hook = (state: State, runtime: object) => CaptureUpdate | undefined;

function capture(config: ToolArtifactsConfigInput = {}, extract = extractArtifacts) {
  const mw = captureMiddleware(parseToolArtifactsConfig(config), { extract });
  return mw.beforeModel as unknown as Hook;
}

function state(messages: BaseMessage[], registry: ArtifactEntry[] = [], ledger: string[] = []): State {
  return { messages, tool_artifacts: registry, tool_artifact_processed: ledger };
}

/** What the reducers make of an update, as the agent's channels would. */
function apply(s: State, update: CaptureUpdate | undefined): State {
  if (update === undefined) return s;
  return {
    messages: s.messages,
    tool_artifacts: mergeToolArtifacts(s.tool_artifacts, update.tool_artifacts),
    tool_artifact_processed: mergeProcessed(s.tool_artifact_processed, update.tool_artifact_processed),
  };
}

const run = { configurable: { thread_id: THREAD } };

function call(id: string, args: Record<string, unknown>, name = "read") {
  return { id, name, args, type: "tool_call" as const };
}

function ai(id: string | undefined, calls: ReturnType<typeof call>[]) {
  return new AIMessage({ id, content: "", tool_calls: calls });
}

function result(id: string | undefined, toolCallId: string, content: string, status: "success" | "error" = "success") {
  return new ToolMessage({ id, tool_call_id: toolCallId, name: "write", content, status });
}

const resultKey = (messageId: string | null, toolCallId: string, index = 0) => occurrenceKey("result", THREAD, messageId, toolCallId, index);
const callKey = (messageId: string | null, toolCallId: string, position: number) => occurrenceKey("call", THREAD, messageId, toolCallId, position);
const retryKey = (key: string) => `retry:${key}`;
const isEntry = (u: ArtifactUpdate): u is ArtifactEntry => "handle" in u;

describe("capture round", () => {
  it("captures new results, records their keys and settles calls without handles, in one update", () => {
    const hook = capture();
    const s = state([
      ai("ai-1", [call("w1", { name: "a" }, "write"), call("w2", { name: "b" }, "write")]),
      result("tm-1", "w1", "wrote /mnt/user-data/a.txt"),
      result("tm-2", "w2", "wrote /mnt/user-data/b.txt and /mnt/user-data/c.txt"),
    ]);
    const update = hook(s, run)!;

    expect(update.tool_artifacts.filter(isEntry).map((e) => [e.handle, e.real_ref, e.tool_call_id])).toEqual([
      [generateHandle(THREAD, "w1", 0, 0, "tm-1"), "/mnt/user-data/a.txt", "w1"],
      [generateHandle(THREAD, "w2", 0, 0, "tm-2"), "/mnt/user-data/b.txt", "w2"],
      [generateHandle(THREAD, "w2", 0, 1, "tm-2"), "/mnt/user-data/c.txt", "w2"],
    ]);
    expect(update.tool_artifact_processed).toEqual([resultKey("tm-1", "w1"), resultKey("tm-2", "w2"), callKey("ai-1", "w1", 0), callKey("ai-1", "w2", 1)]);

    // The ledger alone decides: the same state again records nothing.
    expect(hook(apply(s, update), run)).toBeUndefined();
  });

  it("records empty and error results without entries", () => {
    const hook = capture();
    const update = hook(
      state([result("tm-e", "c1", "failed writing /mnt/user-data/x.txt", "error"), result("tm-0", "c2", "nothing here")]),
      run,
    )!;
    expect(update.tool_artifacts).toEqual([]);
    expect(update.tool_artifact_processed).toEqual([resultKey("tm-e", "c1"), resultKey("tm-0", "c2")]);
  });

  it("numbers id-less results per tool_call_id, for their keys and their handles", () => {
    const hook = capture();
    const update = hook(
      state([result(undefined, "c1", "/mnt/user-data/one.txt"), result(undefined, "c2", "/mnt/user-data/two.txt"), result(undefined, "c1", "/mnt/user-data/three.txt")]),
      run,
    )!;
    expect(update.tool_artifact_processed).toEqual([resultKey(null, "c1", 0), resultKey(null, "c2", 0), resultKey(null, "c1", 1)]);
    expect(update.tool_artifacts.filter(isEntry).map((e) => [e.handle, e.call_index])).toEqual([
      [generateHandle(THREAD, "c1", 0, 0), 0],
      [generateHandle(THREAD, "c2", 0, 0), 0],
      [generateHandle(THREAD, "c1", 1, 0), 1],
    ]);
  });

  it("keys and seeds a result whose id is empty by that id, as the Python implementation does (only null and undefined are none)", () => {
    const hook = capture();
    const update = hook(state([result(undefined, "c1", "/mnt/user-data/one.txt"), result("", "c1", "/mnt/user-data/two.txt")]), run)!;
    // The empty id is an id: its key's index is 0, and its handle carries it with call index 0.
    expect(update.tool_artifact_processed).toEqual([resultKey(null, "c1", 0), resultKey("", "c1", 0)]);
    expect(update.tool_artifacts.filter(isEntry).map((e) => [e.handle, e.call_index])).toEqual([
      [generateHandle(THREAD, "c1", 0, 0), 0],
      [generateHandle(THREAD, "c1", 0, 0, ""), 0],
    ]);
  });

  it("scans text with the configured detectRefsInText and sandboxPrefixes (DESIGN §3, §10)", () => {
    const text = "wrote /data/out/x.csv and /mnt/user-data/y.csv";
    const off = capture({ detectRefsInText: false })(state([result("tm-1", "w1", text)]), run)!;
    expect(off.tool_artifacts).toEqual([]);
    expect(off.tool_artifact_processed).toEqual([resultKey("tm-1", "w1")]);
    const custom = capture({ sandboxPrefixes: ["/data/"] })(state([result("tm-1", "w1", text)]), run)!;
    expect(custom.tool_artifacts.filter(isEntry).map((e) => e.real_ref)).toEqual(["/data/out/x.csv"]);
  });

  it("skips handles already registered but still records the result", () => {
    const hook = capture();
    const message = result("tm-1", "w1", "/mnt/user-data/a.txt");
    const [entry] = extractArtifacts(message, { threadId: THREAD });
    const registered = { ...entry, display_name: "kept as registered" };
    const update = hook(state([message], [registered]), run)!;
    expect(update.tool_artifacts).toEqual([]);
    expect(update.tool_artifact_processed).toEqual([resultKey("tm-1", "w1")]);
  });

  it("appends the call id to consumed_by of registry and pending entries once, after the captures", () => {
    const hook = capture();
    const old = extractArtifacts(result("tm-0", "w0", "/mnt/user-data/old.txt"), { threadId: THREAD })[0];
    const fresh = generateHandle(THREAD, "w1", 0, 0, "tm-1");
    const s = state(
      [
        ai("ai-1", [call("w1", { name: "new" }, "write")]),
        result("tm-1", "w1", "/mnt/user-data/new.txt"),
        // Uses a handle from the registry and one minted this very round,
        // nested and backticked, and the registry one twice.
        ai("ai-2", [call("r1", { paths: [old.handle, { again: `\`${old.handle}\`` }], other: `see ${fresh}` })]),
      ],
      [old],
      [resultKey("tm-0", "w0")],
    );
    const update = hook(s, run)!;
    const entries = update.tool_artifacts.filter(isEntry);
    expect(entries.map((e) => [e.handle, e.consumed_by])).toEqual([
      [fresh, undefined], // the capture part: the entry as extracted
      [old.handle, ["r1"]], // then the consumption part
      [fresh, ["r1"]],
    ]);
    expect(update.tool_artifact_processed).toEqual([resultKey("tm-1", "w1"), callKey("ai-1", "w1", 0), callKey("ai-2", "r1", 0)]);

    const after = apply(s, update);
    expect(after.tool_artifacts.map((e) => [e.handle, e.consumed_by])).toEqual([
      [old.handle, ["r1"]],
      [fresh, ["r1"]],
    ]);
  });

  it("writes an entry that several calls of the round use once, with all of them in consumed_by", () => {
    const hook = capture();
    const known = extractArtifacts(result("tm-0", "w0", "/mnt/user-data/a.txt"), { threadId: THREAD })[0];
    const s = state([ai("ai-1", [call("r1", { p: known.handle }), call("r2", { p: known.handle })])], [known], [resultKey("tm-0", "w0")]);
    const update = hook(s, run)!;
    expect(update.tool_artifacts).toEqual([{ ...known, consumed_by: ["r1", "r2"] }]);
  });

  it("counts only the handles resolution resolves: args that are no object are passed on raw, so use nothing", () => {
    const hook = capture();
    const known = extractArtifacts(result("tm-0", "w0", "/mnt/user-data/a.txt"), { threadId: THREAD })[0];
    const raw = (id: string, args: unknown) => ({ id, name: "read", args, type: "tool_call" as const }) as ReturnType<typeof call>;
    const s = state([ai("ai-1", [raw("c-string", known.handle), raw("c-array", [known.handle]), call("c-object", { p: known.handle })])], [known], [resultKey("tm-0", "w0")]);
    const update = hook(s, run)!;
    expect(update.tool_artifacts).toEqual([{ ...known, consumed_by: ["c-object"] }]);
    // Only the call that could use a handle gets a key, as in the Python implementation; its index is still its position.
    expect(update.tool_artifact_processed).toEqual([callKey("ai-1", "c-object", 2)]);
    expect(hook(apply(s, update), run)).toBeUndefined();
  });

  it("keys a call whose args become an object in place, as a fresh instance does", () => {
    const hook = capture();
    const known = extractArtifacts(result("tm-0", "w0", "/mnt/user-data/a.txt"), { threadId: THREAD })[0];
    const message = ai("ai-1", [{ id: "c1", name: "read", args: "raw", type: "tool_call" } as unknown as ReturnType<typeof call>]);
    let s = state([result("tm-0", "w0", "/mnt/user-data/a.txt"), message], [known], [resultKey("tm-0", "w0")]);
    // Nothing to key or record, twice: the second round finds the message's memo and the history recorded.
    expect(hook(s, run)).toBeUndefined();
    expect(hook(s, run)).toBeUndefined();
    (message.tool_calls![0] as { args: unknown }).args = { p: known.handle };
    const update = hook(s, run)!;
    expect(update).toEqual(capture()(s, run));
    expect(update.tool_artifact_processed).toEqual([callKey("ai-1", "c1", 0)]);
    s = apply(s, update);
    expect(hook(s, run)).toBeUndefined();
  });

  it("keys calls as the Python implementation does: none for a call without an id; by position, or in an id-less message by the call id's occurrence", () => {
    const hook = capture();
    const noId = { name: "read", args: { p: "x" }, type: "tool_call" as const } as unknown as ReturnType<typeof call>;
    const s = state([
      ai("ai-1", [call("c1", { p: "a" }), noId, call("c2", {})]),
      ai(undefined, [call("c2", { p: "b" }), call("c1", {}), call("c2", {})]),
      ai("ai-3", [call("c1", {})]),
      ai(undefined, [call("c1", { p: "c" })]),
    ]);
    const update = hook(s, run)!;
    expect(update.tool_artifact_processed).toEqual([
      callKey("ai-1", "c1", 0),
      callKey("ai-1", "c2", 2),
      callKey(null, "c2", 1),
      callKey(null, "c1", 1),
      callKey(null, "c2", 2),
      callKey("ai-3", "c1", 0),
      callKey(null, "c1", 3),
    ]);
    expect(hook(apply(s, update), run)).toBeUndefined();
  });

  it("gives a call with an unknown handle exactly one retry, then settles it", () => {
    const hook = capture();
    const known = extractArtifacts(result("tm-0", "w0", "/mnt/user-data/a.txt"), { threadId: THREAD })[0];
    let s = state([ai("ai-1", [call("r1", { a: known.handle, b: "art_deadbeef" })])], [known], [resultKey("tm-0", "w0")]);
    const key = callKey("ai-1", "r1", 0);

    const first = hook(s, run)!;
    expect(first.tool_artifact_processed).toEqual([retryKey(key)]);
    // The resolvable handle is consumed on the first pass, and only then.
    expect(first.tool_artifacts).toEqual([{ ...known, consumed_by: ["r1"] }]);
    s = apply(s, first);

    const second = hook(s, run)!;
    expect(second.tool_artifact_processed).toEqual([key]);
    expect(second.tool_artifacts).toEqual([]);
    s = apply(s, second);

    expect(hook(s, run)).toBeUndefined();
    expect(s.tool_artifact_processed).toEqual([resultKey("tm-0", "w0"), retryKey(key), key]);
  });

  it("writes the retry record as the Python implementation does (retry: and the call key), and settles on either spelling", () => {
    const hook = capture();
    const key = callKey("ai-1", "r1", 0);
    expect(retryKey(key)).toMatch(/^retry:call:[0-9a-f]{64}$/);
    const messages = [ai("ai-1", [call("r1", { a: "art_deadbeef" })])];
    // A ledger Python left after the first miss, and one an earlier build of this package wrote.
    for (const record of [retryKey(key), `retry:${key.slice("call:".length)}`]) {
      expect(hook(state(messages, [], [record]), run)!.tool_artifact_processed).toEqual([key]);
    }
  });

  it("appends one trim directive, last, when the round would pass maxEntries", () => {
    const hook = capture({ maxEntries: 10 });
    const paths = Array.from({ length: 4 }, (_, i) => `/mnt/user-data/f${i}.txt`);
    const registry = Array.from({ length: 8 }, (_, i) => extractArtifacts(result(`tm-old-${i}`, `w${i}`, `/mnt/user-data/old${i}.txt`), { threadId: THREAD })[0]);
    const update = hook(state([result("tm-new", "wn", paths.join(" "))], registry), run)!;
    expect(update.tool_artifacts).toHaveLength(5);
    expect(update.tool_artifacts.at(-1)).toEqual({ op: "trim_to", keep: 10 });
    const after = mergeToolArtifacts(registry, update.tool_artifacts);
    expect(after.map((e) => e.real_ref)).toEqual([...registry.slice(2).map((e) => e.real_ref), ...paths]);

    // At the cap exactly: no directive.
    expect(hook(state([result("tm-new", "wn", paths.slice(0, 2).join(" "))], registry), run)!.tool_artifacts).toHaveLength(2);
  });

  it("puts the trim directive after the consumption part too, so an entry a call used is not brought back past maxEntries", () => {
    const hook = capture({ maxEntries: 10 });
    const registry = Array.from({ length: 10 }, (_, i) => extractArtifacts(result(`tm-old-${i}`, `w${i}`, `/mnt/user-data/old${i}.txt`), { threadId: THREAD })[0]);
    const oldest = registry[0]!;
    // One new result and one call that uses the oldest handle: the round passes the cap.
    const s = state([ai("ai-1", [call("r1", { path: oldest.handle })]), result("tm-new", "r1", "/mnt/user-data/new.txt")], registry);
    const update = hook(s, run)!;
    expect(update.tool_artifacts.at(-1)).toEqual({ op: "trim_to", keep: 10 });
    const after = mergeToolArtifacts(registry, update.tool_artifacts);
    expect(after).toHaveLength(10);
    expect(after.map((e) => e.real_ref)).toEqual([...registry.slice(1).map((e) => e.real_ref), "/mnt/user-data/new.txt"]);
  });

  it("keeps the newest maxEntries of a round that captures more, and records the result (README, maxEntries)", () => {
    const paths = Array.from({ length: 12 }, (_, i) => `/mnt/user-data/f${i}.txt`);
    const s = state([result("tm-1", "w1", paths.join(" "))]);
    const after = apply(s, capture({ maxEntries: 10 })(s, run));
    expect(after.tool_artifacts.map((e) => e.real_ref)).toEqual(paths.slice(2));
    expect(after.tool_artifact_processed).toEqual([resultKey("tm-1", "w1")]);
  });

  it("records nothing when disabled or without a thread id, whatever the state holds", () => {
    const s = state([ai("ai-1", [call("r1", { p: "art_deadbeef" })]), result("tm-1", "r1", "/mnt/user-data/a.txt")]);
    // Disabled, it has no hook at all (no graph step either).
    expect(captureMiddleware(parseToolArtifactsConfig({ enabled: false })).beforeModel).toBeUndefined();
    expect(capture()(s, {})).toBeUndefined();
    expect(capture()(s, { configurable: {} })).toBeUndefined();
    expect(capture()(s, { configurable: { thread_id: "" } })).toBeUndefined();
    // The context is the other source of the thread id.
    expect(capture()(s, { context: { thread_id: THREAD } })!.tool_artifact_processed).toContain(resultKey("tm-1", "r1"));
    // An empty or unusable configured id does not hide the context's.
    for (const thread_id of ["", null, 5]) {
      expect(capture()(s, { configurable: { thread_id }, context: { thread_id: THREAD } } as never)!.tool_artifact_processed).toContain(resultKey("tm-1", "r1"));
    }
    // A usable configured id wins.
    expect(capture()(s, { configurable: { thread_id: THREAD }, context: { thread_id: "other" } })!.tool_artifact_processed).toContain(resultKey("tm-1", "r1"));
  });

  it("keys by the thread: the same messages in another thread are captured there", () => {
    const hook = capture();
    const s = state([result("tm-1", "w1", "/mnt/user-data/a.txt")]);
    const mine = apply(s, hook(s, run));
    const other = hook(mine, { configurable: { thread_id: "another" } })!;
    expect(other.tool_artifact_processed).toEqual([occurrenceKey("result", "another", "tm-1", "w1", 0)]);
    expect(other.tool_artifacts.filter(isEntry)[0].handle).toBe(generateHandle("another", "w1", 0, 0, "tm-1"));
  });

  it("re-keys a message object whose id changed since it was last seen", () => {
    const hook = capture();
    const message = result(undefined, "w1", "/mnt/user-data/a.txt");
    const first = hook(state([message]), run)!;
    expect(first.tool_artifact_processed).toEqual([resultKey(null, "w1", 0)]);
    // As summarization's ensureMessageIds does in place.
    message.id = "assigned-later";
    const second = hook(state([message], [], first.tool_artifact_processed), run)!;
    expect(second.tool_artifact_processed).toEqual([resultKey("assigned-later", "w1")]);
  });

  it("scans each result once as rounds go on, and trusts a ledger rebuilt from scratch", () => {
    let scans = 0;
    const counting: typeof extractArtifacts = (m, o) => {
      scans++;
      return extractArtifacts(m, o);
    };
    const hook = capture({}, counting);
    let s = state([]);
    for (let turn = 0; turn < 5; turn++) {
      s.messages = [...s.messages, ai(`ai-${turn}`, [call(`w${turn}`, { n: turn }, "write")]), result(`tm-${turn}`, `w${turn}`, `/mnt/user-data/${turn}.txt`)];
      s = apply(s, hook(s, run));
    }
    expect(scans).toBe(5);
    expect(s.tool_artifacts).toHaveLength(5);
    // Fresh copies of everything, as after a checkpoint reload: still nothing new.
    const reloaded = structuredClone({ ledger: s.tool_artifact_processed, registry: s.tool_artifacts });
    const copies = s.messages.map((m) => (m.type === "tool" ? result(m.id, (m as ToolMessage).tool_call_id, String(m.content)) : ai(m.id, (m as AIMessage).tool_calls as never)));
    expect(hook(state(copies, reloaded.registry, reloaded.ledger), run)).toBeUndefined();
    expect(scans).toBe(5);
  });

  it("defers to the ledger it is given: the same message objects under an older ledger are processed again", () => {
    const hook = capture();
    const messages = [ai("ai-1", [call("w1", { name: "a" }, "write")]), result("tm-1", "w1", "/mnt/user-data/a.txt")];
    const first = hook(state(messages), run)!;
    const processed = apply(state(messages), first);
    expect(hook(processed, run)).toBeUndefined();
    // Same objects, same array, but the state says nothing was recorded (a
    // fork from an earlier checkpoint): capture follows the state.
    const again = hook(state(messages), run)!;
    expect(again.tool_artifact_processed).toEqual(first.tool_artifact_processed);
    expect(again.tool_artifacts.filter(isEntry).map((e) => e.handle)).toEqual(first.tool_artifacts.filter(isEntry).map((e) => e.handle));
    expect(again.tool_artifacts).toHaveLength(1);
    // And a ledger holding only part of the keys.
    const partial = hook(state(messages, [], [resultKey("tm-1", "w1")]), run)!;
    expect(partial.tool_artifact_processed).toEqual([callKey("ai-1", "w1", 0)]);
  });

  it("looks again wherever the history holds other message objects than last round (as after compaction)", () => {
    const hook = capture();
    let s = state([ai("ai-1", [call("w1", { name: "a" }, "write")]), result("tm-1", "w1", "/mnt/user-data/a.txt")]);
    s = apply(s, hook(s, run));
    expect(hook(s, run)).toBeUndefined();
    // As long as before, but other messages in the same places.
    s = { ...s, messages: [ai("ai-2", [call("w2", { name: "b" }, "write")]), result("tm-2", "w2", "/mnt/user-data/b.txt")] };
    const update = hook(s, run)!;
    expect(update.tool_artifact_processed).toEqual([resultKey("tm-2", "w2"), callKey("ai-2", "w2", 0)]);
    expect(update.tool_artifacts.filter(isEntry).map((e) => e.real_ref)).toEqual(["/mnt/user-data/b.txt"]);
  });

  it("after a reload trusts only what the reloaded ledger holds", () => {
    const hook = capture();
    let s = state([]);
    for (let turn = 0; turn < 4; turn++) {
      s.messages = [...s.messages, result(`tm-${turn}`, `w${turn}`, `/mnt/user-data/${turn}.txt`)];
      s = apply(s, hook(s, run));
    }
    expect(s.tool_artifact_processed).toHaveLength(4);
    // The same ids in new objects, and a ledger that lost one key in the middle.
    const copies = s.messages.map((m) => result(m.id, (m as ToolMessage).tool_call_id, String(m.content)));
    const ledger = s.tool_artifact_processed.filter((_, i) => i !== 1);
    const update = hook(state(copies, [], ledger), run)!;
    expect(update.tool_artifact_processed).toEqual([resultKey("tm-1", "w1")]);
    expect(update.tool_artifacts.filter(isEntry).map((e) => e.real_ref)).toEqual(["/mnt/user-data/1.txt"]);
  });
});

describe("capture round: rules a mutation run found unpinned", () => {
  it("keys and counts a call whose id is not a string by the id's text", () => {
    const hook = capture();
    const known = extractArtifacts(result("tm-0", "w0", "/mnt/user-data/a.txt"), { threadId: THREAD })[0]!;
    const message = new AIMessage({ id: "ai-1", content: "", tool_calls: [{ id: "c1", name: "read", args: { p: known.handle }, type: "tool_call" }] });
    // A provider (or a restored raw state) may hand a numeric id.
    (message.tool_calls![0] as { id: unknown }).id = 7;
    const s = state([message], [known], [resultKey("tm-0", "w0")]);
    const update = hook(s, run)!;
    expect(update.tool_artifact_processed).toEqual([callKey("ai-1", "7", 0)]);
    expect(update.tool_artifacts).toEqual([{ ...known, consumed_by: ["7"] }]);
    expect(hook(apply(s, update), run)).toBeUndefined();
  });

  it.each([undefined, ""])("looks again at a recorded result with id %j: an id assigned in place later re-keys it, as a fresh middleware does", (id) => {
    // Summarization assigns an id where `!msg.id`: the empty one too.
    const hook = capture();
    const message = result(id, "w1", "/mnt/user-data/a.txt");
    let s = state([message]);
    s = apply(s, hook(s, run));
    // Recorded: nothing new, with the same message objects.
    expect(hook(s, run)).toBeUndefined();
    // As summarization's ensureMessageIds does, in place and in the same array.
    message.id = "assigned-later";
    const update = hook(s, run);
    const fresh = capture()(s, run)!;
    expect(update!.tool_artifact_processed).toEqual(fresh.tool_artifact_processed);
    expect(update!.tool_artifact_processed).toEqual([resultKey("assigned-later", "w1")]);
    const handles = (u: CaptureUpdate) => u.tool_artifacts.map((e) => ("handle" in e ? [e.handle, e.real_ref] : e));
    expect(handles(update!)).toEqual(handles(fresh));
    expect(handles(update!)).toEqual([[generateHandle(THREAD, "w1", 0, 0, "assigned-later"), "/mnt/user-data/a.txt"]]);
  });

  it("trims a registry over maxEntries even in a round with nothing new to record", () => {
    const n = 12;
    const messages = Array.from({ length: n }, (_, i) => result(`tm-${i}`, `w${i}`, `/mnt/user-data/f${i}.txt`));
    const registry = messages.map((m) => extractArtifacts(m, { threadId: THREAD })[0]!);
    const ledger = messages.map((_, i) => resultKey(`tm-${i}`, `w${i}`));
    // Everything recorded under a larger cap; the agent now runs with a smaller one.
    expect(capture({ maxEntries: n })(state(messages, registry, ledger), run)).toBeUndefined();
    const update = capture({ maxEntries: 10 })(state(messages, registry, ledger), run);
    expect(update).toEqual({ tool_artifacts: [{ op: "trim_to", keep: 10 }], tool_artifact_processed: [], messages: [] });
    expect(mergeToolArtifacts(registry, update!.tool_artifacts).map((e) => e.real_ref)).toEqual(registry.slice(2).map((e) => e.real_ref));
  });

  it("scans and records a result that appears twice in one history once", () => {
    let scans = 0;
    const counting: typeof extractArtifacts = (m, o) => {
      scans++;
      return extractArtifacts(m, o);
    };
    const message = result("tm-1", "w1", "/mnt/user-data/a.txt");
    const update = capture({}, counting)(state([message, message]), run)!;
    expect(update.tool_artifact_processed).toEqual([resultKey("tm-1", "w1")]);
    expect(update.tool_artifacts).toHaveLength(1);
    expect(scans).toBe(1);
  });

  it("records a call that appears twice in one history once", () => {
    const known = extractArtifacts(result("tm-0", "w0", "/mnt/user-data/a.txt"), { threadId: THREAD })[0]!;
    const message = ai("ai-1", [call("r1", { p: known.handle })]);
    const update = capture()(state([message, message], [known], [resultKey("tm-0", "w0")]), run)!;
    expect(update.tool_artifact_processed).toEqual([callKey("ai-1", "r1", 0)]);
    expect(update.tool_artifacts).toEqual([{ ...known, consumed_by: ["r1"] }]);
  });

  it("numbers an id-less result over the results before it only, a missing tool_call_id counting as empty", () => {
    const noCallId = (id: string | undefined, content: string) => {
      const message = result(id, "x", content);
      (message as { tool_call_id: unknown }).tool_call_id = undefined;
      return message;
    };
    const update = capture()(state([ai("ai-1", [call("c1", { p: "x" })]), noCallId("tm-1", "/mnt/user-data/a.txt"), noCallId(undefined, "/mnt/user-data/b.txt")]), run)!;
    expect(update.tool_artifact_processed).toEqual([resultKey("tm-1", ""), resultKey(null, "", 1), callKey("ai-1", "c1", 0)]);
  });

  it("counts past an AI message without a tool_calls list before an id-less one", () => {
    const bare = ai("ai-0", []);
    (bare as { tool_calls?: unknown }).tool_calls = undefined;
    expect(capture()(state([bare, ai(undefined, [call("c1", { p: "a" })])]), run)!.tool_artifact_processed).toEqual([callKey(null, "c1", 0)]);
  });

  it("keys a call apart from a result that had the same message id in an earlier round, as a fresh middleware does", () => {
    const hook = capture();
    const written = result("shared", "w1", "/mnt/user-data/a.txt");
    let s = state([written]);
    s = apply(s, hook(s, run));
    const handle = generateHandle(THREAD, "w1", 0, 0, "shared");
    s = { ...s, messages: [written, ai("shared", [call("w1", { p: handle })])] };
    const update = hook(s, run)!;
    expect(update).toEqual(capture()(s, run));
    expect(update.tool_artifact_processed).toEqual([callKey("shared", "w1", 0)]);
  });

  it("re-keys a message that comes back under its id with fewer calls, as a fresh middleware does", () => {
    const hook = capture();
    hook(state([ai("ai-1", [call("c1", { p: "a" }), call("c2", { p: "b" })])]), run);
    const s = state([ai("ai-1", [call("c1", { p: "a" })])]);
    const update = hook(s, run)!;
    expect(update).toEqual(capture()(s, run));
    expect(update.tool_artifact_processed).toEqual([callKey("ai-1", "c1", 0)]);
  });
});

describe("capture round: state at its edges", () => {
  it("does not take a ledger as long as the last one, but with another last item, for its extension", () => {
    const hook = capture();
    const messages: BaseMessage[] = [result("tm-1", "w1", "/mnt/user-data/a.txt")];
    const first = hook(state(messages), run)!;
    expect(first.tool_artifact_processed).toEqual([resultKey("tm-1", "w1")]);
    expect(hook(state(messages, first.tool_artifacts as ArtifactEntry[], [resultKey("tm-1", "w1")]), run)).toBeUndefined();
    // Same length as the ledger capture last saw, other content (a fork): tm-1 is not recorded in it.
    const again = hook(state(messages, [], ["some-other-key"]), run);
    expect(again?.tool_artifact_processed).toEqual([resultKey("tm-1", "w1")]);
  });

  it("skips null and non-object entries in messages and still captures the rest", () => {
    const messages = [null, undefined, 42, result("tm-1", "w1", "/mnt/user-data/a.txt")];
    const update = capture()(state(messages as never), run);
    expect(update?.tool_artifact_processed).toEqual([resultKey("tm-1", "w1")]);
  });

  it("reads a messages channel that holds no array as empty, as it reads the other two", () => {
    const hook = capture();
    for (const messages of [{}, 5, "abc"]) expect(hook(state(messages as never), run)).toBeUndefined();
  });

  it("reads a registry channel that holds no array as empty: no trim directive from its length", () => {
    const update = capture()(state([result("tm-1", "w1", "/mnt/user-data/a.txt")], "x".repeat(500) as never), run)!;
    expect(update.tool_artifacts.map((u) => ("op" in u ? u.op : "entry"))).toEqual(["entry"]);
  });
});

describe("capture round: memory", () => {
  it("keeps no earlier round's message list alive during a run that never yields (its work is one job)", () => {
    // A WeakRef keeps its target alive to the end of the job that made or
    // read it: a run whose model and tools never wait (a local model, tests)
    // is one job, so a WeakRef per round would hold every round's list.
    const hook = capture();
    const rounds = 2000;
    let s = state([]);
    const before = heapAfterGc();
    for (let n = 0; n < rounds; n++) {
      // A new list each round, as the messages reducer makes.
      const messages = [...s.messages, ai(`ai-${n}`, [call(`c${n}`, {})]), result(`tool-${n}`, `c${n}`, `wrote /mnt/user-data/f${n}.txt`)];
      s = apply({ ...s, messages }, hook({ ...s, messages }, run));
    }
    const grown = heapAfterGc() - before;
    expect(s.tool_artifact_processed.length).toBe(2 * rounds);
    // The lists of 2, 4, ..., 4000 messages together are 32 MB of pointers;
    // the last one, its messages and what capture keeps are a few MB.
    expect(grown, `${(grown / 1e6).toFixed(1)} MB`).toBeLessThan(16e6);
  });
});
