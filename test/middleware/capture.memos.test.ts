// Capture's per-thread memo of occurrence keys (hashes by message id) must not
// outgrow the history: under compaction a busy thread sees ever new messages
// while its history stays short. Observed through the hashing it saves: a
// message whose memo was dropped is hashed again when it comes back.
import { describe, expect, it, vi } from "vitest";
import { AIMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import type { OccurrenceSeed } from "../../src/engine/hash.js";

const hashed: string[] = [];
vi.mock("../../src/engine/hash.js", async (importOriginal) => {
  const original = await importOriginal<typeof import("../../src/engine/hash.js")>();
  return {
    ...original,
    occurrenceKeys: (seeds: OccurrenceSeed[]) => {
      for (const seed of seeds) hashed.push(String(seed.messageId));
      return original.occurrenceKeys(seeds);
    },
  };
});

const { captureMiddleware } = await import("../../src/middleware/capture.js");
const { mergeProcessed, mergeToolArtifacts } = await import("../../src/registry.js");

interface State {
  messages: BaseMessage[];
  tool_artifacts: unknown[];
  tool_artifact_processed: string[];
}
type Hook = (state: State, runtime: object) => { tool_artifacts: unknown[]; tool_artifact_processed: string[] } | undefined;

/** A call and its result, `n`-th of the thread. */
const turn = (n: number): BaseMessage[] => [
  new AIMessage({ id: `ai-${n}`, content: "", tool_calls: [{ id: `c${n}`, name: "ls", args: {} }] }),
  new ToolMessage({ id: `tool-${n}`, tool_call_id: `c${n}`, name: "ls", content: `wrote /mnt/user-data/f${n}.txt` }),
];

describe("capture's memo of occurrence keys", () => {
  it("is swept of messages compacted away once they outnumber the history", () => {
    const hook = captureMiddleware({ maxEntries: 1000 }).beforeModel as unknown as Hook;
    const runtime = { configurable: { thread_id: "memos" } };
    let state: State = { messages: [], tool_artifacts: [], tool_artifact_processed: [] };
    const round = (messages: BaseMessage[]) => {
      state = { ...state, messages };
      const update = hook(state, runtime);
      if (update !== undefined) {
        state = {
          messages,
          tool_artifacts: mergeToolArtifacts(state.tool_artifacts as never, update.tool_artifacts as never),
          tool_artifact_processed: mergeProcessed(state.tool_artifact_processed, update.tool_artifact_processed),
        };
      }
    };
    const first = turn(0);
    round(first);
    // Seen again while remembered: not hashed again.
    hashed.length = 0;
    round([...turn(1), ...first]);
    expect(hashed).toEqual(["ai-1", "tool-1"]);
    // A history of ten turns sliding over 400 (as summarization keeps it short).
    for (let n = 2; n < 400; n++) round(Array.from({ length: 10 }, (_, k) => turn(Math.max(0, n - k))).flat());
    hashed.length = 0;
    round(first);
    // Its memo was swept with the other compacted ones: hashed again, and
    // still recorded (the ledger, not the memo, says what was processed).
    expect(hashed).toEqual(["ai-0", "tool-0"]);
    expect(state.tool_artifacts).toHaveLength(400);
  });

  it("keeps, when it is swept, the memos of the messages still in the history", () => {
    const hook = captureMiddleware({ maxEntries: 1000 }).beforeModel as unknown as Hook;
    const runtime = { configurable: { thread_id: "memos-kept" } };
    let ledger: string[] = [];
    hashed.length = 0;
    // A history of ten turns sliding over 400: sweeps come and go, and each
    // round hashes its new turn only, never the nine turns it still holds.
    for (let n = 0; n < 400; n++) {
      const messages = Array.from({ length: Math.min(10, n + 1) }, (_, k) => turn(n - k)).flat();
      const update = hook({ messages, tool_artifacts: [], tool_artifact_processed: ledger }, runtime);
      ledger = mergeProcessed(ledger, update?.tool_artifact_processed ?? []);
    }
    expect(hashed).toHaveLength(2 * 400);
  });

  it("is swept past null and non-object entries in the history, as a round reads them", () => {
    const hook = captureMiddleware({}).beforeModel as unknown as Hook;
    const runtime = { configurable: { thread_id: "memos-null" } };
    // One new turn a round beside a null and a string: 200 rounds pass the sweep's threshold of a short history.
    const recorded = Array.from({ length: 200 }, (_, n) => {
      const messages = [null, "text", ...turn(n)] as unknown as BaseMessage[];
      return hook({ messages, tool_artifacts: [], tool_artifact_processed: [] }, runtime)?.tool_artifact_processed.length;
    });
    expect(recorded.every((count) => count === 2)).toBe(true);
  });

  it("is kept for many threads served in turn, not only the last few", () => {
    const hook = captureMiddleware({}).beforeModel as unknown as Hook;
    const threads = Array.from({ length: 100 }, (_, t) => ({
      runtime: { configurable: { thread_id: `thread-${t}` } },
      state: { messages: [] as BaseMessage[], tool_artifacts: [] as unknown[], tool_artifact_processed: [] as string[] },
    }));
    const round = (thread: (typeof threads)[number], messages: BaseMessage[]) => {
      const update = hook({ ...thread.state, messages }, thread.runtime);
      thread.state = {
        messages,
        tool_artifacts: mergeToolArtifacts(thread.state.tool_artifacts as never, (update?.tool_artifacts ?? []) as never),
        tool_artifact_processed: mergeProcessed(thread.state.tool_artifact_processed, update?.tool_artifact_processed ?? []),
      };
    };
    // Ten turns of history each; ids are per thread.
    const history = (t: number, turns: number) => Array.from({ length: turns }, (_, n) => turn(1000 * t + n)).flat();
    threads.forEach((thread, t) => round(thread, history(t, 10)));
    hashed.length = 0;
    // The next turn of every thread, in the same order: only the new messages are hashed.
    threads.forEach((thread, t) => round(thread, history(t, 11)));
    expect(hashed).toHaveLength(2 * threads.length);
    expect(threads.every((thread) => thread.state.tool_artifacts.length === 11)).toBe(true);

    // Past 1024 threads the least recently served one starts over: its history is hashed again.
    for (let t = 100; t < 1100; t++) hook({ messages: turn(1000 * t), tool_artifacts: [], tool_artifact_processed: [] }, { configurable: { thread_id: `thread-${t}` } });
    hashed.length = 0;
    round(threads[99]!, history(99, 12)); // among the 1024 most recent: only its new turn
    expect(hashed).toEqual(["ai-99011", "tool-99011"]);
    round(threads[0]!, history(0, 12)); // the least recent: all of it
    expect(hashed).toHaveLength(2 + 24);
  });

  it("keeps the 16 most recent threads however long, and past them bounds what all remember", () => {
    const hook = captureMiddleware({}).beforeModel as unknown as Hook;
    // Long ledgers stand for long threads: a view remembers its ledger's items.
    const ledger = (t: number) => Array.from({ length: 100_000 }, (_, i) => `result:${t}:${i}`);
    const ledgers = [0, 1, 2].map(ledger);
    const visit = (t: number, turns: number) =>
      hook(
        { messages: Array.from({ length: turns }, (_, n) => turn(1000 * t + n)).flat(), tool_artifacts: [], tool_artifact_processed: ledgers[t] ?? [] },
        { configurable: { thread_id: `long-${t}` } },
      );
    for (const t of [0, 1, 2]) visit(t, 1);
    hashed.length = 0;
    // Three threads over 2^18 items in all, served in turn: each hashes only its new turn.
    for (const t of [0, 1, 2]) visit(t, 2);
    expect(hashed).toHaveLength(6);
    // Fourteen more threads: the oldest long ones, beyond the 16 most recent and
    // over the bound, go; the next round of thread 0 hashes all of it again.
    for (let t = 3; t < 17; t++) visit(t, 1);
    hashed.length = 0;
    visit(0, 3);
    expect(hashed).toHaveLength(6);
  });

  it("keeps a hot set of threads warm while threads it dropped come back between them", () => {
    const hook = captureMiddleware({}).beforeModel as unknown as Hook;
    // Twelve hot threads served in turn, and after each lap one of forty cold
    // ones, whose views come and go: each returning one must not cost the hot
    // threads theirs (20,000 ledger items each: past the item bound, so no
    // more than the 16 views kept however long).
    const ledger = Array.from({ length: 20_000 }, (_, i) => `result:${i}`);
    const histories = new Map<string, number>();
    const startedOver = (thread: string) => {
      const turns = (histories.get(thread) ?? 0) + 1;
      histories.set(thread, turns);
      hashed.length = 0;
      hook(
        { messages: Array.from({ length: turns }, (_, n) => turn(n)).flat(), tool_artifacts: [], tool_artifact_processed: ledger },
        { configurable: { thread_id: thread } },
      );
      return hashed.length > 2;
    };
    let cold = 0;
    let hotStarts = 0;
    let coldReturnStarts = 0;
    for (let lap = 0; lap < 60; lap++) {
      for (let t = 0; t < 12; t++) if (startedOver(`hot-${t}`) && lap > 0) hotStarts++;
      if (startedOver(`cold-${cold % 40}`) && cold >= 40) coldReturnStarts++;
      cold++;
    }
    // Sixty cold visits: twenty of the forty came back after their views were dropped.
    expect(coldReturnStarts).toBe(20);
    expect(hotStarts).toBe(0);
  });

  it("starts a thread that comes back for a turn of several model calls over once, not at every call", () => {
    const hook = captureMiddleware({}).beforeModel as unknown as Hook;
    // Seventeen long threads (10,000 ledger items each), each served once: the
    // first one's view goes. It then comes back for a turn of twelve steps.
    const ledger = Array.from({ length: 10_000 }, (_, i) => `result:${i}`);
    const step = (thread: string, n: number) => {
      hashed.length = 0;
      hook(
        { messages: Array.from({ length: n }, (_, k) => turn(k)).flat(), tool_artifacts: [], tool_artifact_processed: ledger },
        { configurable: { thread_id: thread } },
      );
      return hashed.length > 2;
    };
    for (let t = 0; t < 17; t++) step(`burst-${t}`, 1);
    const startedOver: boolean[] = [];
    for (let k = 0; k < 12; k++) startedOver.push(step("burst-0", 2 + k));
    expect(startedOver.filter(Boolean)).toHaveLength(1);
    expect(startedOver[0]).toBe(true);
  });
});

describe("capture's thread views at their bounds (README, What capture remembers between rounds)", () => {
  const turns = (t: number, count: number) => Array.from({ length: count }, (_, n) => turn(1000 * t + n)).flat();
  /** A capture whose rounds report whether the thread started over (hashed more than its new turn). */
  const served = () => {
    const hook = captureMiddleware({}).beforeModel as unknown as Hook;
    return (thread: string, t: number, count: number, ledger: string[]) => {
      hashed.length = 0;
      hook({ messages: turns(t, count), tool_artifacts: [], tool_artifact_processed: ledger }, { configurable: { thread_id: thread } });
      return hashed.length > 2;
    };
  };

  it("keeps 16 long threads' views, however much they remember", () => {
    const serve = served();
    // 16 × 10,000 ledger items: past the item bound, so only the 16 kept however long remain.
    const ledger = Array.from({ length: 10_000 }, (_, i) => `result:${i}`);
    for (let t = 0; t < 16; t++) serve(`long-${t}`, t, 1, ledger);
    const startedOver = Array.from({ length: 16 }, (_, t) => serve(`long-${t}`, t, 2, ledger));
    expect(startedOver.filter(Boolean)).toHaveLength(0);
  });

  it("keeps more than 16 views while they remember 2^17 items in all, and not one item more", () => {
    // Each view remembers its two memos (a call and its result) and its ledger's items.
    const views = (lastLedger: number) => {
      const serve = served();
      const ledgers = Array.from({ length: 17 }, (_, t) => Array.from({ length: t < 16 ? 7_700 : lastLedger }, (_, i) => `result:${t}:${i}`));
      ledgers.forEach((ledger, t) => serve(`thread-${t}`, t, 1, ledger));
      return serve("thread-0", 0, 2, ledgers[0]!);
    };
    const exact = 2 ** 17 - 17 * 2 - 16 * 7_700;
    expect(views(exact)).toBe(false);
    expect(views(exact + 1)).toBe(true);
  });

  it("counts what the views it dropped remembered out: once long threads went, short ones are kept past 16 again", () => {
    const serve = served();
    const ledger = Array.from({ length: 10_000 }, (_, i) => `result:${i}`);
    // Seventeen long threads: past the bounds, the oldest views go until they are back within 2^17 items.
    for (let t = 0; t < 17; t++) serve(`long-${t}`, t, 1, ledger);
    // Forty short threads: far within the bounds, all kept.
    for (let t = 0; t < 40; t++) serve(`short-${t}`, 100 + t, 1, []);
    const startedOver = Array.from({ length: 40 }, (_, t) => serve(`short-${t}`, 100 + t, 2, []));
    expect(startedOver.filter(Boolean)).toHaveLength(0);
  });
});

describe("a remembered key", () => {
  it("is not reused for a result whose id now names another call's result (replaced under the same id): it captures what a fresh capture does", () => {
    const runtime = { configurable: { thread_id: "replaced" } };
    const a1 = new AIMessage({ id: "a1", content: "", tool_calls: [{ id: "c1", name: "t", args: {} }] });
    const a2 = new AIMessage({ id: "a2", content: "", tool_calls: [{ id: "c2", name: "t", args: {} }] });
    const hook = captureMiddleware({}).beforeModel as unknown as Hook;
    const first = hook({ messages: [a1, new ToolMessage({ id: "m1", tool_call_id: "c1", name: "t", content: "/mnt/user-data/a.csv" })], tool_artifacts: [], tool_artifact_processed: [] }, runtime)!;
    const state: State = {
      messages: [a1, a2, new ToolMessage({ id: "m1", tool_call_id: "c2", name: "t", content: "/mnt/user-data/b.csv" })],
      tool_artifacts: mergeToolArtifacts([], first.tool_artifacts as never),
      tool_artifact_processed: mergeProcessed([], first.tool_artifact_processed),
    };
    const fresh = (captureMiddleware({}).beforeModel as unknown as Hook)(state, runtime);
    const again = hook(state, runtime);
    expect(again?.tool_artifacts.map((e) => (e as { real_ref?: string }).real_ref)).toContain("/mnt/user-data/b.csv");
    const stable = (u: typeof again) => JSON.stringify(u, (key, value: unknown) => (key === "created_at" ? undefined : value));
    expect(stable(again)).toBe(stable(fresh));
  });
});
