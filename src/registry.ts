/**
 * The registry and the processed-occurrence ledger: two reducer channels in
 * durable agent state (DESIGN §1). snake_case channel names because the
 * checkpoints are shared with the Python implementation.
 */
import { ReducedValue, StateSchema } from "@langchain/langgraph";
import { z } from "zod";
import { isHandle } from "./handles.js";
import { isRecord, type ArtifactEntry, type ArtifactUpdate, type TrimDirective } from "./types.js";

/** Absolute ceiling of the registry, whatever the per-agent `maxEntries`. */
export const MAX_REGISTRY_ENTRIES = 1000;

/** Entries of one update looked up by scanning before the registry is indexed. */
const INDEX_AFTER_SCANS = 8;

/** Whether a registry item is an entry (the channel may also hold trim directives or junk from old state). */
export function isEntry(item: unknown): item is ArtifactEntry {
  return isRecord(item) && typeof item.handle === "string";
}

/**
 * Whether a registry item is an entry the middlewares can use: a handle of
 * the handle form (any other is one no tool argument can name, and as raw
 * text it could break a line of the context block) and a string `real_ref`
 * (what resolution substitutes). Capture, resolution and projection all go
 * by this one test, so a malformed entry a checkpoint holds is ignored alike
 * by all three: never shown, never resolved, never counted as known.
 */
export function isUsableEntry(item: unknown): item is ArtifactEntry {
  if (!isEntry(item) || typeof item.real_ref !== "string") return false;
  if (testedHandles.get(item) === item.handle) return true;
  if (!isHandle(item.handle)) return false;
  testedHandles.set(item, item.handle);
  return true;
}

/**
 * Entries `isUsableEntry` has passed, with the handle each had then. The
 * same entry objects come back on every model call (langchain copies the
 * channel's array, not its items), and testing each handle again was most of
 * what a projection cost with a full registry. The handle is compared, so an
 * entry changed in place since is tested anew.
 */
const testedHandles = new WeakMap<object, string>();

/**
 * The usable entries of a stored registry, newest first, one per handle: the
 * latest usable occurrence, as the reducer keeps it (a handle appears twice
 * only in state some other writer left). At most `limit` of them: a refusal
 * lists ten, and should not pay for reading a full registry.
 */
export function currentEntries(stored: unknown, limit = Infinity): ArtifactEntry[] {
  if (!Array.isArray(stored)) return [];
  const seen = new Set<string>();
  const out: ArtifactEntry[] = [];
  for (let i = stored.length - 1; i >= 0 && out.length < limit; i--) {
    const item: unknown = stored[i];
    if (!isUsableEntry(item)) continue;
    // One lookup, not has() then add(): the set grew only for a new handle.
    const known = seen.size;
    if (seen.add(item.handle).size > known) out.push(item);
  }
  return out;
}

/**
 * The tool-call ids that used an entry: the strings of its `consumed_by`.
 * Anything else stored there counts as absent, so it can neither break a
 * round nor be spread into characters.
 */
export function consumersOf(entry: ArtifactEntry): string[] {
  const stored: unknown = entry.consumed_by;
  if (!Array.isArray(stored)) return [];
  return stored.every((id) => typeof id === "string") ? (stored as string[]) : stored.filter((id): id is string => typeof id === "string");
}

function isTrimDirective(item: unknown): item is TrimDirective {
  if (typeof item !== "object" || item === null) return false;
  const { op, keep } = item as { op?: unknown; keep?: unknown };
  return op === "trim_to" && Number.isInteger(keep) && (keep as number) >= 0;
}

/**
 * Registry reducer. Items apply in order: an entry replaces the entry with
 * the same handle in place (latest wins, first-seen order kept) or is
 * appended; `{op: "trim_to", keep: N}` keeps the N most recent entries at
 * that point; anything else (junk another writer left; the type is what a
 * caller should write) is ignored. The 1000-entry ceiling is enforced
 * after the whole update. Items of `existing` that are not entries are
 * dropped, also by an empty update, which otherwise leaves `existing` as it
 * is. Pure: neither argument is mutated.
 */
export function mergeToolArtifacts(existing: readonly ArtifactEntry[] | null | undefined, update: readonly ArtifactUpdate[] | null | undefined): ArtifactEntry[] {
  const base: unknown[] = Array.isArray(existing) ? (existing as unknown[]) : [];
  // Only entries are kept: junk another writer left in the channel would
  // otherwise stay in state, break the lookups below and count towards trims.
  if (!Array.isArray(update) || update.length === 0) return base.every(isEntry) ? base : base.filter(isEntry);

  const out = base.filter(isEntry);
  // Positions are absolute in `out`; trims only advance `start`, so no
  // directive forces a re-index, and a position below `start` means evicted.
  let start = 0;
  // A round updates a handful of entries, mostly recent ones: scanning back
  // from the newest beats indexing up to 1000 handles. Past a few lookups an
  // index pays for itself.
  let index: Map<string, number> | null = null;
  let scans = 0;
  for (const item of update) {
    if (isEntry(item)) {
      if (index === null && ++scans > INDEX_AFTER_SCANS) {
        index = new Map();
        for (let i = start; i < out.length; i++) index.set(out[i]!.handle, i);
      }
      let at = -1;
      if (index !== null) at = index.get(item.handle) ?? -1;
      else for (let i = out.length - 1; i >= start && at < 0; i--) if (out[i]!.handle === item.handle) at = i;
      if (at >= start) out[at] = item;
      else {
        index?.set(item.handle, out.length);
        out.push(item);
      }
    } else if (isTrimDirective(item)) {
      start = Math.max(start, out.length - item.keep);
    }
  }
  start = Math.max(start, out.length - MAX_REGISTRY_ENTRIES);
  return start === 0 ? out : out.slice(start);
}

/**
 * Membership of arrays this module returned, moved forward from each result
 * to the next, so a round costs O(update) instead of rebuilding a set of a
 * ledger that is never trimmed. The recorded length catches arrays someone
 * else grew or shrank in place.
 */
const ledgerMembers = new WeakMap<readonly string[], { set: Set<string>; length: number }>();

/** Ledger reducer: additive, de-duplicated, order kept, never trimmed. Non-strings are ignored. */
export function mergeProcessed(existing: readonly string[] | null | undefined, update: readonly unknown[] | null | undefined): string[] {
  let base = Array.isArray(existing) ? (existing as string[]) : [];
  // No early return for an empty update: a stored ledger this reducer did
  // not write is cleaned then too, as the registry's reducer cleans its junk.
  const updates: readonly unknown[] = Array.isArray(update) ? update : [];

  const cached = ledgerMembers.get(base);
  let seen: Set<string>;
  if (cached !== undefined && cached.length === base.length) {
    seen = cached.set;
    ledgerMembers.delete(base);
  } else {
    seen = new Set();
    for (const key of base) if (typeof key === "string") seen.add(key);
    // A stored ledger with junk or repeats in it (not one this reducer wrote)
    // comes out clean, first occurrences in order, as the registry does.
    if (seen.size !== base.length) base = [...seen];
  }
  const added: string[] = [];
  for (const key of updates) {
    if (typeof key === "string" && !seen.has(key)) {
      seen.add(key);
      added.push(key);
    }
  }
  const out = added.length === 0 ? base : base.concat(added);
  ledgerMembers.set(out, { set: seen, length: out.length });
  return out;
}

/** Documents the stored shape; loose so fields written by a newer twin survive. */
const artifactEntrySchema = z.looseObject({
  handle: z.string(),
  tool_name: z.string(),
  tool_call_id: z.string(),
  call_index: z.number(),
  artifact_type: z.enum(["file", "image", "task", "data"]),
  display_name: z.string(),
  real_ref: z.string(),
  mime_type: z.string().optional(),
  created_at: z.string(),
  consumed_by: z.array(z.string()).optional(),
});

// Updates are validated before they reach the reducer; the reducer is the one
// place that decides what is junk, so the input schemas accept any array and
// never copy its items. Anything else is taken as empty, not refused:
// langchain copies the whole stored state into every invoke's input, so a
// non-array value another writer left in a channel would otherwise fail
// every later run of the thread.
const anyArrayOrEmpty = () => z.array(z.unknown()).catch(() => []);
const registryUpdateSchema = anyArrayOrEmpty() as unknown as z.ZodType<ArtifactUpdate[]>;
const ledgerUpdateSchema = anyArrayOrEmpty() as unknown as z.ZodType<string[]>;

const registryChannel = new ReducedValue(z.array(artifactEntrySchema).default(() => []) as unknown as z.ZodType<ArtifactEntry[]>, {
  inputSchema: registryUpdateSchema,
  reducer: mergeToolArtifacts,
});

/**
 * The two channels, ready for `createMiddleware({ stateSchema })`; agents
 * whose middlewares share this schema share the channels.
 */
export const toolArtifactsStateSchema = new StateSchema({
  tool_artifacts: registryChannel,
  tool_artifact_processed: new ReducedValue(z.array(z.string()).default(() => []) as z.ZodType<string[]>, {
    inputSchema: ledgerUpdateSchema,
    reducer: mergeProcessed,
  }),
});

/**
 * The registry channel alone (the same channel), for middlewares with a
 * `wrapModelCall` that read only the registry: langchain parses such a
 * middleware's whole schema out of state on every model call, and the
 * ledger, never trimmed, would make each call cost O(ledger).
 */
export const registryStateSchema = new StateSchema({ tool_artifacts: registryChannel });
