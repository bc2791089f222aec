/**
 * Capture (DESIGN §5): before every model call, register the references in
 * tool results the ledger has not seen yet, and record which tool calls used
 * which handles.
 *
 * Whether a result or a call was processed is decided by the ledger channel in
 * state and nothing else, so a reloaded checkpoint, a recreated graph, a new
 * process or a compacted history never captures twice. The two caches below
 * only save work: each holds values derived from state that are checked
 * against the state of the round before use, so losing them changes timing,
 * never behaviour.
 */
import { createMiddleware } from "langchain";
import type { BaseMessage } from "@langchain/core/messages";
import { z } from "zod";
import type { ToolArtifactsConfig } from "../config.js";
import { occurrenceKeys, type OccurrenceSeed } from "../engine/hash.js";
import { extractArtifacts } from "../extract.js";
import { findHandles } from "../handles.js";
import { WELL_KNOWN_MIDDLEWARE, withConstraints } from "../ordering.js";
import { toolArtifactsStateSchema } from "../registry.js";
import type { ArtifactEntry, ArtifactUpdate } from "../types.js";

/** What a capture round reads from state (any other channels are ignored). */
export interface CaptureState {
  messages?: readonly BaseMessage[] | null;
  tool_artifacts?: readonly ArtifactEntry[] | null;
  tool_artifact_processed?: readonly string[] | null;
}

/** One round's state update: both channels, capture part then consumption part. */
export interface CaptureUpdate {
  tool_artifacts: ArtifactUpdate[];
  tool_artifact_processed: string[];
}

/** Where the thread id may come from, as LangChain hands it to a hook. */
export interface CaptureRuntime {
  configurable?: { thread_id?: unknown } | null;
  context?: { thread_id?: unknown } | null;
}

export interface CaptureOptions {
  /**
   * Extraction used for each unprocessed result. Defaults to
   * `extractArtifacts`; tests wrap it to count how often a result is scanned.
   */
  extract?: typeof extractArtifacts;
}

/** The ledger prefix of a call's retry record (DESIGN §5). */
export const RETRY_PREFIX = "retry:";
const CALL_PREFIX = "call:";

// One view per thread an agent serves concurrently; beyond this the least
// recently used thread rebuilds its view on its next round.
const MAX_LEDGER_VIEWS = 32;

/** Keys of one message object and the inputs they were hashed from. */
interface KeyMemo {
  threadId: string;
  messageId: string | null;
  index: number;
  toolCallIds: string[];
  keys: string[];
}

/**
 * Occurrence keys per message object. Within one agent run the messages
 * channel hands every round the same objects, so only new messages are hashed;
 * a memo is used only while its inputs still match the message.
 */
const keyMemos = new WeakMap<object, KeyMemo>();

/** A ledger array and the set of its first `length` items. */
interface LedgerView {
  ledger: readonly unknown[];
  length: number;
  members: Set<unknown>;
}

/**
 * Membership of `ledger`. The ledger only grows (its reducer appends), so the
 * thread's previous view is extended by the new tail when the old items are
 * still its prefix, and rebuilt otherwise.
 */
function ledgerMembers(views: Map<string, LedgerView>, threadId: string, ledger: readonly unknown[]): ReadonlySet<unknown> {
  let view = views.get(threadId);
  if (view !== undefined) views.delete(threadId);
  if (view === undefined || !isPrefixOf(view, ledger)) view = { ledger, length: 0, members: new Set() };
  for (let i = view.length; i < ledger.length; i++) view.members.add(ledger[i]);
  view.ledger = ledger;
  view.length = ledger.length;
  views.set(threadId, view);
  if (views.size > MAX_LEDGER_VIEWS) views.delete(views.keys().next().value!);
  return view.members;
}

function isPrefixOf(view: LedgerView, ledger: readonly unknown[]): boolean {
  if (ledger.length < view.length) return false;
  if (ledger === view.ledger) return true;
  const old = view.ledger;
  // Mostly the very same string objects, so this is a pointer compare per item.
  for (let i = 0; i < view.length; i++) if (ledger[i] !== old[i]) return false;
  return true;
}

function threadIdOf(runtime: CaptureRuntime | null | undefined): string | null {
  const id = runtime?.configurable?.thread_id ?? runtime?.context?.thread_id;
  return typeof id === "string" && id !== "" ? id : null;
}

interface ToolCallLike {
  id?: string | null;
  args?: unknown;
}

type MessageLike = BaseMessage & { tool_call_id?: unknown; tool_calls?: readonly ToolCallLike[] };

function messageIdOf(message: MessageLike): string | null {
  return typeof message.id === "string" && message.id !== "" ? message.id : null;
}

/** Per-tool_call_id counts of the ToolMessages before position `end`. */
function countToolCallIds(messages: readonly MessageLike[], end: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (let j = 0; j < end; j++) {
    const m = messages[j];
    if (m?.type === "tool") {
      const id = String(m.tool_call_id ?? "");
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
  }
  return counts;
}

function memoMatches(memo: KeyMemo | undefined, threadId: string, messageId: string | null, index: number, toolCallIds: readonly string[]): memo is KeyMemo {
  if (memo === undefined || memo.threadId !== threadId || memo.messageId !== messageId || memo.index !== index) return false;
  if (memo.toolCallIds.length !== toolCallIds.length) return false;
  for (let i = 0; i < toolCallIds.length; i++) if (memo.toolCallIds[i] !== toolCallIds[i]) return false;
  return true;
}

/** A tool result or call whose key is not in the ledger (or not hashed yet). */
interface Candidate {
  message: MessageLike;
  memo: KeyMemo;
  /** 0 for a result; the call's position in `tool_calls` for a call. */
  position: number;
}

function isEntry(item: unknown): item is ArtifactEntry {
  return typeof item === "object" && item !== null && typeof (item as { handle?: unknown }).handle === "string";
}

/**
 * The keys of every tool result and tool call in `messages`, hashed in one
 * engine batch for the message objects not seen before; returns those whose
 * key is not in the ledger, in message order.
 */
function unprocessed(messages: readonly MessageLike[], threadId: string, ledger: ReadonlySet<unknown>): { results: Candidate[]; calls: Candidate[] } {
  const results: Candidate[] = [];
  const calls: Candidate[] = [];
  const seeds: OccurrenceSeed[] = [];
  const fresh: Array<[MessageLike, KeyMemo]> = [];
  let perCallId: Map<string, number> | null = null;
  for (let j = 0; j < messages.length; j++) {
    const m = messages[j];
    const type = m?.type;
    if (type === "tool") {
      const toolCallId = String(m.tool_call_id ?? "");
      const messageId = messageIdOf(m);
      // The occurrence index only names an id-less result, so counting starts
      // at the first one (over what came before it).
      let index = 0;
      if (messageId === null || perCallId !== null) {
        perCallId ??= countToolCallIds(messages, j);
        index = perCallId.get(toolCallId) ?? 0;
        perCallId.set(toolCallId, index + 1);
      }
      if (messageId !== null) index = 0;
      let memo = keyMemos.get(m);
      if (!memoMatches(memo, threadId, messageId, index, [toolCallId])) {
        memo = { threadId, messageId, index, toolCallIds: [toolCallId], keys: [] };
        seeds.push({ kind: "result", threadId, messageId, toolCallId, index });
        fresh.push([m, memo]);
      } else if (ledger.has(memo.keys[0])) continue;
      results.push({ message: m, memo, position: 0 });
    } else if (type === "ai") {
      const toolCalls = m.tool_calls;
      if (!Array.isArray(toolCalls) || toolCalls.length === 0) continue;
      const messageId = messageIdOf(m);
      const ids = toolCalls.map((c) => String(c?.id ?? ""));
      let memo = keyMemos.get(m);
      if (!memoMatches(memo, threadId, messageId, 0, ids)) {
        memo = { threadId, messageId, index: 0, toolCallIds: ids, keys: [] };
        for (let p = 0; p < ids.length; p++) seeds.push({ kind: "call", threadId, messageId, toolCallId: ids[p], index: p });
        fresh.push([m, memo]);
        for (let p = 0; p < ids.length; p++) calls.push({ message: m, memo, position: p });
      } else {
        for (let p = 0; p < ids.length; p++) if (!ledger.has(memo.keys[p])) calls.push({ message: m, memo, position: p });
      }
    }
  }
  if (seeds.length === 0) return { results, calls };

  const keys = occurrenceKeys(seeds);
  let k = 0;
  for (const [message, memo] of fresh) {
    memo.keys = keys.slice(k, k + memo.toolCallIds.length);
    k += memo.toolCallIds.length;
    keyMemos.set(message, memo);
  }
  const isNew = (c: Candidate) => !ledger.has(c.memo.keys[c.position]);
  return { results: results.filter(isNew), calls: calls.filter(isNew) };
}

/**
 * One capture round (DESIGN §5): extraction of the unprocessed results,
 * consumption of the unsettled calls, one update concatenating both parts;
 * `undefined` when there is nothing to record.
 */
function captureRound(
  state: CaptureState,
  threadId: string,
  config: ToolArtifactsConfig,
  extract: typeof extractArtifacts,
  views: Map<string, LedgerView>,
): CaptureUpdate | undefined {
  const messages = (state.messages ?? []) as readonly MessageLike[];
  const registry = Array.isArray(state.tool_artifacts) ? state.tool_artifacts : [];
  const ledgerItems = Array.isArray(state.tool_artifact_processed) ? state.tool_artifact_processed : [];
  const ledger = ledgerMembers(views, threadId, ledgerItems);
  const { results, calls } = unprocessed(messages, threadId, ledger);

  const captured: ArtifactEntry[] = [];
  const capturedKeys: string[] = [];
  const settled: string[] = [];
  const consumed = new Map<string, ArtifactEntry>();
  const trimNeeded = () => registry.length + captured.length > config.maxEntries;
  if (results.length === 0 && calls.length === 0) {
    return trimNeeded() ? { tool_artifacts: [{ op: "trim_to", keep: config.maxEntries }], tool_artifact_processed: [] } : undefined;
  }

  // The registry plus this round's captures, handle → latest entry.
  const known = new Map<string, ArtifactEntry>();
  for (const entry of registry) if (isEntry(entry)) known.set(entry.handle, entry);

  const recorded = new Set<string>();
  for (const { message, memo } of results) {
    const key = memo.keys[0];
    if (recorded.has(key)) continue;
    recorded.add(key);
    capturedKeys.push(key);
    const entries = extract(message, {
      threadId,
      callIndex: memo.index,
      detectRefsInText: config.detectRefsInText,
      sandboxPrefixes: config.sandboxPrefixes,
    });
    for (const entry of entries) {
      if (known.has(entry.handle)) continue;
      known.set(entry.handle, entry);
      captured.push(entry);
    }
  }

  for (const { message, memo, position } of calls) {
    const key = memo.keys[position];
    if (recorded.has(key)) continue;
    recorded.add(key);
    const callId = memo.toolCallIds[position];
    let missing = false;
    for (const handle of findHandles(message.tool_calls?.[position]?.args)) {
      const entry = known.get(handle);
      if (entry === undefined) {
        missing = true;
        continue;
      }
      if (callId === "" || entry.consumed_by?.includes(callId)) continue;
      const updated: ArtifactEntry = { ...entry, consumed_by: [...(entry.consumed_by ?? []), callId] };
      known.set(handle, updated);
      consumed.set(handle, updated);
    }
    // A miss may be a handle this round could not see yet: one retry, then
    // the call is settled so an unknown handle is never scanned forever.
    const retry = RETRY_PREFIX + key.slice(CALL_PREFIX.length);
    settled.push(!missing || ledger.has(retry) ? key : retry);
  }

  const artifacts: ArtifactUpdate[] = [...captured, ...consumed.values()];
  if (trimNeeded()) artifacts.push({ op: "trim_to", keep: config.maxEntries });
  return { tool_artifacts: artifacts, tool_artifact_processed: [...capturedKeys, ...settled] };
}

/**
 * The capture middleware: before each model call it registers the files,
 * URLs, task ids and small results of new tool results under handles and
 * records which calls used which handles (DESIGN §5). Runs before any
 * compaction middleware (`constraints.before: ["summarization"]`).
 *
 * The thread id comes from `configurable.thread_id` or `context.thread_id`;
 * without one, or with `enabled` off, it records nothing.
 *
 * @example
 * ```ts
 * const config = parseToolArtifactsConfig({ maxEntries: 200 });
 * const agent = createAgent({ model, tools, checkpointer, middleware: [captureMiddleware(config)] });
 * await agent.invoke({ messages }, { configurable: { thread_id: "t-1" } });
 * ```
 */
export function captureMiddleware(config: ToolArtifactsConfig, options: CaptureOptions = {}) {
  const extract = options.extract ?? extractArtifacts;
  const views = new Map<string, LedgerView>();
  const middleware = createMiddleware({
    name: "tool-artifacts-capture",
    stateSchema: toolArtifactsStateSchema,
    // Declared so LangChain hands the hook `context.thread_id` at all.
    contextSchema: z.object({ thread_id: z.string().optional() }),
    beforeModel: (state, runtime) => {
      if (!config.enabled) return undefined;
      const threadId = threadIdOf(runtime as CaptureRuntime);
      if (threadId === null) return undefined;
      return captureRound(state as CaptureState, threadId, config, extract, views);
    },
  });
  return withConstraints(middleware, { before: [WELL_KNOWN_MIDDLEWARE.summarization] });
}
