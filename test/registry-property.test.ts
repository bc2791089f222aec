import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { MAX_REGISTRY_ENTRIES, mergeProcessed, mergeToolArtifacts } from "../src/registry.js";
import type { ArtifactEntry } from "../src/types.js";

// Few distinct handles so replacements are frequent; a version field tells copies apart.
const handleArb = fc.integer({ min: 0, max: 1500 }).map((n) => `art_${n.toString(16).padStart(8, "0")}`);
const entryArb = fc.record({ handle: handleArb, version: fc.nat() }).map(
  ({ handle, version }): ArtifactEntry => ({
    handle,
    tool_name: "t",
    tool_call_id: `c${version}`,
    call_index: version,
    artifact_type: "file",
    display_name: handle,
    real_ref: `/mnt/user-data/${handle}`,
    created_at: "2025-01-01T00:00:00.000Z",
  }),
);
const junkArb = fc.oneof(fc.constant(null), fc.integer(), fc.string(), fc.constant({ op: "trim_to", keep: -3 }), fc.record({ handle: fc.integer() }));
const trimArb = fc.integer({ min: 0, max: 1200 }).map((keep) => ({ op: "trim_to" as const, keep }));
const existingArb = fc.array(entryArb, { maxLength: 1100 }).map((list) => mergeToolArtifacts([], list));
const updateArb = fc.array(fc.oneof({ weight: 8, arbitrary: entryArb }, { weight: 1, arbitrary: trimArb }, { weight: 1, arbitrary: junkArb }), { maxLength: 300 });

/** The reducer's meaning, written the slow obvious way. */
function model(existing: readonly ArtifactEntry[], update: readonly unknown[]): ArtifactEntry[] {
  let list = [...existing];
  for (const item of update) {
    if (typeof item !== "object" || item === null || Array.isArray(item)) continue;
    const rec = item as Record<string, unknown>;
    if (typeof rec.handle === "string") {
      const at = list.findIndex((e) => e.handle === rec.handle);
      if (at >= 0) list[at] = item as ArtifactEntry;
      else list.push(item as ArtifactEntry);
    } else if (rec.op === "trim_to" && Number.isInteger(rec.keep) && (rec.keep as number) >= 0) {
      list = list.slice(Math.max(0, list.length - (rec.keep as number)));
    }
  }
  return update.length === 0 ? list : list.slice(Math.max(0, list.length - MAX_REGISTRY_ENTRIES));
}

describe("mergeToolArtifacts properties", () => {
  it("matches the obvious definition and never exceeds the ceiling", () => {
    fc.assert(
      fc.property(existingArb, updateArb, (existing, update) => {
        const out = mergeToolArtifacts(existing, update as never);
        expect(out.length).toBeLessThanOrEqual(MAX_REGISTRY_ENTRIES);
        expect(out).toEqual(model(existing, update));
      }),
      { numRuns: 200 },
    );
  });

  it("latest wins and first-seen order is kept", () => {
    fc.assert(
      fc.property(existingArb, fc.array(entryArb, { maxLength: 200 }), (existing, update) => {
        const out = mergeToolArtifacts(existing, update as never);
        const byHandle = new Map(out.map((e) => [e.handle, e]));
        expect(byHandle.size).toBe(out.length); // handles unique
        for (const e of update) if (byHandle.has(e.handle)) expect(byHandle.get(e.handle)).toBe([...update].reverse().find((u) => u.handle === e.handle));
        const firstSeen = [...new Set([...existing, ...update].map((e) => e.handle))];
        const kept = new Set(out.map((e) => e.handle));
        expect(out.map((e) => e.handle)).toEqual(firstSeen.filter((h) => kept.has(h)));
      }),
      { numRuns: 200 },
    );
  });

  it("fresh entries survive a trim_to of their own round", () => {
    fc.assert(
      fc.property(existingArb, fc.array(entryArb, { minLength: 1, maxLength: 100 }), fc.integer({ min: 0, max: 900 }), (existing, candidates, slack) => {
        // Fresh means not registered yet (capture skips registered handles); an
        // update of an existing handle keeps its old, first-seen position.
        const known = new Set(existing.map((e) => e.handle));
        const fresh = candidates.filter((e) => !known.has(e.handle));
        fc.pre(fresh.length > 0);
        const distinct = new Set(fresh.map((e) => e.handle)).size;
        const keep = Math.min(MAX_REGISTRY_ENTRIES, distinct + slack);
        const out = mergeToolArtifacts(existing, [...fresh, { op: "trim_to", keep }]);
        const present = new Set(out.map((e) => e.handle));
        for (const e of fresh) expect(present.has(e.handle)).toBe(true);
        expect(out.length).toBeLessThanOrEqual(keep);
      }),
      { numRuns: 500 },
    );
  });

  it("leaves its inputs unchanged", () => {
    fc.assert(
      fc.property(existingArb, updateArb, (existing, update) => {
        const before = JSON.stringify([existing, update]);
        mergeToolArtifacts(existing, update as never);
        expect(JSON.stringify([existing, update])).toBe(before);
      }),
      { numRuns: 100 },
    );
  });
});

describe("mergeProcessed properties", () => {
  const keysArb = fc.array(fc.oneof({ weight: 9, arbitrary: fc.integer({ min: 0, max: 300 }).map((n) => `result:${n}`) }, { weight: 1, arbitrary: junkArb }), { maxLength: 200 });

  it("is the ordered de-duplicated union, whatever chain of merges produced existing", () => {
    fc.assert(
      fc.property(fc.array(keysArb, { maxLength: 6 }), (updates) => {
        let ledger: string[] = [];
        const snapshots: Array<[string[], string]> = [];
        for (const update of updates) {
          snapshots.push([ledger, JSON.stringify(ledger)]);
          ledger = mergeProcessed(ledger, update);
        }
        const expected = [...new Set(updates.flat().filter((k): k is string => typeof k === "string"))];
        expect(ledger).toEqual(expected);
        for (const [snapshot, text] of snapshots) expect(JSON.stringify(snapshot)).toBe(text);
      }),
      { numRuns: 200 },
    );
  });
});
