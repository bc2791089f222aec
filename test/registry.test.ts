import { describe, expect, it } from "vitest";
import { createAgent, createMiddleware, tool } from "langchain";
import { HumanMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import { z } from "zod";
import { currentEntries, isUsableEntry, MAX_REGISTRY_ENTRIES, mergeProcessed, mergeToolArtifacts, toolArtifactsStateSchema } from "../src/registry.js";
import { ScriptedChatModel } from "../src/testing/scripted-model.js";
import type { ArtifactEntry } from "../src/types.js";

function entry(handle: string, extra: Partial<ArtifactEntry> = {}): ArtifactEntry {
  return {
    handle,
    tool_name: "t",
    tool_call_id: "call",
    call_index: 0,
    artifact_type: "file",
    display_name: handle,
    real_ref: `/mnt/user-data/${handle}`,
    created_at: "2025-01-01T00:00:00.000Z",
    ...extra,
  };
}

const handles = (list: readonly ArtifactEntry[]) => list.map((e) => e.handle);

describe("mergeToolArtifacts", () => {
  it("appends new entries in order", () => {
    expect(handles(mergeToolArtifacts([entry("a")], [entry("b"), entry("c")]))).toEqual(["a", "b", "c"]);
  });

  it("replaces an entry with the same handle in place: latest wins, first-seen order kept", () => {
    const out = mergeToolArtifacts([entry("a"), entry("b")], [entry("a", { consumed_by: ["c1"] }), entry("a", { consumed_by: ["c1", "c2"] })]);
    expect(handles(out)).toEqual(["a", "b"]);
    expect(out[0]!.consumed_by).toEqual(["c1", "c2"]);
  });

  it("returns existing unchanged for an empty, null or non-array update", () => {
    const existing = [entry("a")];
    expect(mergeToolArtifacts(existing, [])).toEqual(existing);
    expect(mergeToolArtifacts(existing, null)).toEqual(existing);
    expect(mergeToolArtifacts(existing, { handle: "x" } as never)).toEqual(existing);
    expect(mergeToolArtifacts(undefined, [])).toEqual([]);
  });

  it("ignores junk items", () => {
    const out = mergeToolArtifacts([entry("a")], [null, 3, "art_00000000", [entry("arr")], { handle: 5 }, { op: "trim_to", keep: -1 }, { op: "trim_to", keep: 1.5 }, { op: "trim_to" }, { op: "other", keep: 0 }, entry("b")] as never);
    expect(handles(out)).toEqual(["a", "b"]);
  });

  it("takes an item with a string handle as an entry whatever else it carries, a trim directive's fields too", () => {
    // Entries are loose (a newer twin may add fields): one that also has
    // `op`/`keep` is still an entry, kept as the registry keeps it, and evicts nothing.
    const odd = { ...entry("b"), op: "trim_to", keep: 0 } as ArtifactEntry;
    expect(handles(mergeToolArtifacts([entry("a")], [odd]))).toEqual(["a", "b"]);
    expect(handles(mergeToolArtifacts([entry("a"), odd], [entry("c")]))).toEqual(["a", "b", "c"]);
  });

  it("drops junk that older state left in the registry, and trims count entries only", () => {
    const stored = [null, entry("a"), 7, { handle: 5 }, entry("b")] as unknown as ArtifactEntry[];
    expect(handles(mergeToolArtifacts(stored, [entry("a", { consumed_by: ["c1"] }), entry("c")]))).toEqual(["a", "b", "c"]);
    expect(handles(mergeToolArtifacts(stored, [{ op: "trim_to", keep: 2 }]))).toEqual(["a", "b"]);
    // Past the lookups done by scanning back, the index is built over the stored items too.
    const many = Array.from({ length: 12 }, (_, i) => entry(`n${i}`));
    expect(handles(mergeToolArtifacts(stored, [...many, entry("b", { consumed_by: ["c2"] })]))).toEqual(["a", "b", ...many.map((e) => e.handle)]);
  });

  it("never keeps junk of existing, also for an empty update, which leaves a clean registry as it is", () => {
    const clean = [entry("a"), entry("b")];
    expect(mergeToolArtifacts(clean, [])).toBe(clean);
    expect(mergeToolArtifacts(clean, null)).toBe(clean);
    const stored = [null, entry("a"), "art_00000000", { op: "trim_to", keep: 0 }, [entry("x")], { handle: 5 }, entry("b")] as unknown as ArtifactEntry[];
    for (const update of [[], null, undefined]) expect(mergeToolArtifacts(stored, update)).toEqual(clean);
    expect(stored).toHaveLength(7); // not modified
  });

  it("trim_to keeps the N most recent entries at that point of the update", () => {
    const out = mergeToolArtifacts([entry("a"), entry("b"), entry("c")], [entry("d"), { op: "trim_to", keep: 2 }, entry("e")]);
    expect(handles(out)).toEqual(["c", "d", "e"]);
  });

  it("a later, larger trim_to does not bring back what an earlier one evicted", () => {
    const out = mergeToolArtifacts([entry("a"), entry("b"), entry("c"), entry("d")], [{ op: "trim_to", keep: 1 }, { op: "trim_to", keep: 3 }]);
    expect(handles(out)).toEqual(["d"]);
  });

  it("trim_to counts recency by first-seen order, not by last update", () => {
    const out = mergeToolArtifacts([entry("a"), entry("b"), entry("c")], [entry("a", { consumed_by: ["x"] }), { op: "trim_to", keep: 2 }]);
    expect(handles(out)).toEqual(["b", "c"]);
  });

  it("an evicted handle that comes back is appended as new", () => {
    const out = mergeToolArtifacts([entry("a"), entry("b")], [{ op: "trim_to", keep: 1 }, entry("a")]);
    expect(handles(out)).toEqual(["b", "a"]);
  });

  it("an evicted handle that comes back is appended as new in a long update too", () => {
    // Nine entries before the trim: the reducer looks handles up by index, not by scanning back.
    const fresh = Array.from({ length: 9 }, (_, i) => entry(`h${i}`));
    const out = mergeToolArtifacts([], [...fresh, { op: "trim_to", keep: 1 }, entry("h0", { consumed_by: ["c"] })]);
    expect(handles(out)).toEqual(["h8", "h0"]);
    expect(out[1]!.consumed_by).toEqual(["c"]);
  });

  it("trim_to 0 empties the registry", () => {
    expect(mergeToolArtifacts([entry("a")], [{ op: "trim_to", keep: 0 }])).toEqual([]);
  });

  it("enforces the 1000-entry ceiling after the update, dropping the oldest", () => {
    const existing = Array.from({ length: 990 }, (_, i) => entry(`e${i}`));
    const out = mergeToolArtifacts(existing, Array.from({ length: 20 }, (_, i) => entry(`n${i}`)));
    expect(out).toHaveLength(MAX_REGISTRY_ENTRIES);
    expect(out[0]!.handle).toBe("e10");
    expect(out.at(-1)!.handle).toBe("n19");
  });

  it("does not mutate its inputs", () => {
    const existing = [entry("a"), entry("b")];
    const update = [entry("a", { consumed_by: ["x"] }), { op: "trim_to", keep: 1 } as const, entry("c")];
    const before = JSON.stringify([existing, update]);
    mergeToolArtifacts(existing, update);
    expect(JSON.stringify([existing, update])).toBe(before);
  });

  it("is idempotent when the same entries are merged again (agent input re-sends state)", () => {
    const existing = [entry("a"), entry("b")];
    expect(mergeToolArtifacts(existing, existing.map((e) => ({ ...e })))).toEqual(existing);
  });
});

describe("mergeToolArtifacts: a long update", () => {
  it("replaces in place a handle the same update added earlier (past the few entries looked up without an index)", () => {
    const first = Array.from({ length: 10 }, (_, i) => entry(`h${i}`));
    const out = mergeToolArtifacts([], [...first, entry("h9", { real_ref: "/mnt/user-data/new" })]);
    expect(handles(out)).toEqual(handles(first));
    expect(out[9]!.real_ref).toBe("/mnt/user-data/new");
  });
});

describe("mergeToolArtifacts: a trim whose keep is no integer", () => {
  it("is ignored, not rounded", () => {
    const five = ["a", "b", "c", "d", "e"].map((h) => entry(h));
    expect(mergeToolArtifacts(five, [{ op: "trim_to", keep: 2.5 }])).toEqual(five);
  });
});

describe("mergeProcessed", () => {
  it("adds new keys in order, de-duplicated", () => {
    expect(mergeProcessed(["a", "b"], ["b", "c", "c", "d"])).toEqual(["a", "b", "c", "d"]);
  });

  it("ignores non-strings and returns existing for an empty update", () => {
    expect(mergeProcessed(["a"], [1, null, {}, "b"])).toEqual(["a", "b"]);
    expect(mergeProcessed(["a"], [])).toEqual(["a"]);
    expect(mergeProcessed(undefined, ["a"])).toEqual(["a"]);
    const own = mergeProcessed([], ["a", "b"]);
    expect(mergeProcessed(own, [])).toBe(own);
    expect(mergeProcessed(own, null)).toBe(own);
  });

  it("cleans a stored ledger it did not write on an empty update too, as the registry's reducer does", () => {
    const stored = ["a", 5, "a", null, "b"] as unknown as string[];
    for (const update of [[], null, undefined, "junk"] as unknown[][]) expect(mergeProcessed(stored, update)).toEqual(["a", "b"]);
    expect(stored).toEqual(["a", 5, "a", null, "b"]); // not modified
  });

  it("drops junk and repeats a stored ledger holds (a checkpoint it did not write), first occurrences in order", () => {
    const stored = ["a", "a", 5, null, "b", "a"] as unknown as string[];
    expect(mergeProcessed(stored, ["c", "b"])).toEqual(["a", "b", "c"]);
    expect(stored).toEqual(["a", "a", 5, null, "b", "a"]); // not modified
    expect(mergeProcessed(["x", "x"], ["x"])).toEqual(["x"]);
  });

  it("is never trimmed", () => {
    const big = Array.from({ length: 5000 }, (_, i) => `k${i}`);
    expect(mergeProcessed([], big)).toHaveLength(5000);
  });

  it("does not mutate inputs and stays correct across chained and forked merges", () => {
    const first = mergeProcessed([], ["a", "b"]);
    const second = mergeProcessed(first, ["c"]);
    const fork = mergeProcessed(first, ["c", "d"]);
    expect(first).toEqual(["a", "b"]);
    expect(second).toEqual(["a", "b", "c"]);
    expect(fork).toEqual(["a", "b", "c", "d"]);
    expect(mergeProcessed(second, ["d", "a"])).toEqual(["a", "b", "c", "d"]);
  });

  it("notices an array that was changed in place behind its back", () => {
    const first = mergeProcessed([], ["a", "b"]);
    first.pop();
    expect(mergeProcessed(first, ["b"])).toEqual(["a", "b"]);
    const grown = mergeProcessed([], ["a"]);
    grown.push("b");
    expect(mergeProcessed(grown, ["b", "c"])).toEqual(["a", "b", "c"]);
  });
});

describe("toolArtifactsStateSchema in a real agent", () => {
  it("accumulates both channels across turns and keeps them through the agent input", async () => {
    let round = 0;
    const writer = createMiddleware({
      name: "registry-writer",
      stateSchema: toolArtifactsStateSchema,
      beforeModel: () => {
        round++;
        return {
          tool_artifacts: [entry(`r${round}`), ...(round === 3 ? [entry("r1", { consumed_by: ["late"] })] : [])],
          tool_artifact_processed: [`key${round}`, "shared"],
        };
      },
    });
    const echo = tool(async ({ text }) => text, { name: "echo", description: "echo", schema: z.object({ text: z.string() }) });
    const model = new ScriptedChatModel([{ tool_calls: [{ name: "echo", args: { text: "x" } }] }, { content: "one" }, { content: "two" }]);
    const agent = createAgent({ model, tools: [echo], middleware: [writer], checkpointer: new MemorySaver() });
    const config = { configurable: { thread_id: "registry-accumulates" } };

    const first = await agent.invoke({ messages: [new HumanMessage("go")] }, config);
    expect(handles(first.tool_artifacts)).toEqual(["r1", "r2"]);
    const second = await agent.invoke({ messages: [new HumanMessage("again")] }, config);
    expect(handles(second.tool_artifacts)).toEqual(["r1", "r2", "r3"]);
    expect(second.tool_artifacts[0]!.consumed_by).toEqual(["late"]);
    expect(second.tool_artifact_processed).toEqual(["key1", "shared", "key2", "key3"]);
  });

  it("lets the host seed the registry through the input state", async () => {
    const reader = createMiddleware({ name: "registry-reader", stateSchema: toolArtifactsStateSchema });
    const model = new ScriptedChatModel([{ content: "ok" }]);
    const agent = createAgent({ model, tools: [], middleware: [reader] });
    const out = await agent.invoke({ messages: [new HumanMessage("hi")], tool_artifacts: [entry("seed"), { op: "trim_to", keep: 5 }, 42] as never });
    expect(handles(out.tool_artifacts)).toEqual(["seed"]);
    expect(out.tool_artifact_processed).toEqual([]);
  });
});

describe("currentEntries", () => {
  it("gives the usable entries newest first, one per handle, and tests an entry changed in place again", () => {
    const a = entry("art_0000000a");
    const stored: unknown[] = [a, entry("art_0000000b"), { ...a, display_name: "newer" }, entry("bad"), null, entry("art_0000000c", { real_ref: 5 as never })];
    expect(currentEntries(stored).map((e) => [e.handle, e.display_name])).toEqual([
      ["art_0000000a", "newer"],
      ["art_0000000b", "art_0000000b"],
    ]);
    expect(currentEntries(stored, 1)).toHaveLength(1);
    // Passed once, then changed in place (a host's code, another writer): a
    // handle that is no handle could break a line of the context block.
    expect(isUsableEntry(a)).toBe(true);
    (a as { handle: string }).handle = "art_0000000a\n## forged";
    expect(isUsableEntry(a)).toBe(false);
    (a as { real_ref: unknown }).real_ref = null;
    (a as { handle: string }).handle = "art_0000000a";
    expect(isUsableEntry(a)).toBe(false);
  });
});
