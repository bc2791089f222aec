/**
 * Capture (DESIGN §5): before every model call, register the references in
 * tool results the ledger has not seen yet, and record which tool calls used
 * which handles.
 *
 * Whether a result or a call was processed is decided by the ledger channel in
 * state and nothing else, so a reloaded checkpoint, a recreated graph, a new
 * process or a compacted history never captures twice. The per-thread view
 * below only saves work: hashes are pure functions of message fields, and
 * ledger membership is reused only while the ledger in state still holds the
 * ledger it was computed from as its prefix; losing the view changes timing,
 * never behaviour.
 */
import { createMiddleware } from "langchain";
import { coerceMessageLikeToMessage, type BaseMessage, type BaseMessageLike } from "@langchain/core/messages";
import { z } from "zod";
import { parseOptions, parseToolArtifactsConfig, type ToolArtifactsConfig, type ToolArtifactsConfigSource } from "../config.js";
import { KEY_KIND_PREFIX, occurrenceKeys, type OccurrenceSeed } from "../engine/hash.js";
import { extractArtifacts, occurrenceIdOf } from "../extract.js";
import { argumentHandles, isArgumentsObject } from "../handles.js";
import { WELL_KNOWN_MIDDLEWARE, withConstraints } from "../ordering.js";
import { consumersOf, currentEntries, toolArtifactsStateSchema } from "../registry.js";
import { serializedClass } from "../messages.js";
import { describeValue, isRecord, isStructuredResponseMessage, type ArtifactEntry, type ArtifactUpdate } from "../types.js";

/** What a capture round reads from state (any other channels are ignored). */
interface CaptureState {
  messages?: readonly BaseMessage[] | null;
  tool_artifacts?: readonly ArtifactEntry[] | null;
  tool_artifact_processed?: readonly string[] | null;
}

/**
 * What `rekeyLedger` reads: the history (LangChain messages, or their plain
 * form as the LangGraph API returns state) and the ledger.
 */
export interface LedgerState {
  messages?: readonly unknown[] | null;
  tool_artifact_processed?: readonly unknown[] | null;
}

/** One round's state update: both channels, capture part then consumption part. */
export interface CaptureUpdate {
  tool_artifacts: ArtifactUpdate[];
  tool_artifact_processed: string[];
}

/** Where a run's thread id may be, as LangChain hands it to a hook or a tool: what capture and delegation read. */
export interface CaptureRuntime {
  configurable?: { thread_id?: unknown } | null;
  context?: { thread_id?: unknown } | null;
}

/** Options of `captureMiddleware` (the behaviour switches live in `ToolArtifactsConfig`). */
export const captureOptionsSchema = z
  .object({
    /**
     * Extraction used for each unprocessed result. Defaults to
     * `extractArtifacts`; tests wrap it to count how often a result is scanned.
     */
    extract: z.custom<typeof extractArtifacts>((v) => typeof v === "function", "expected a function").optional(),
  })
  .strict();

/** The options of `captureMiddleware` beside its config. */
export type CaptureOptions = z.input<typeof captureOptionsSchema>;

/**
 * A call's retry record in the ledger (DESIGN §5): `retry:` and the call key,
 * as the Python implementation writes it, so that a thread continued by
 * either settles a call after one retry.
 */
const retryRecord = (callKey: string): string => `retry:${callKey}`;
/** The record as earlier builds of this package wrote it (`retry:` and the key's hash alone): still read. */
const earlierRetryRecord = (callKey: string): string => `retry:${callKey.slice(KEY_KIND_PREFIX.call.length)}`;
/** Whether the ledger records the call's one retry, in either form. */
const hasRetryRecord = (ledger: ReadonlySet<unknown>, callKey: string): boolean => ledger.has(retryRecord(callKey)) || ledger.has(earlierRetryRecord(callKey));

// One view per thread an agent serves concurrently, least recently used
// first out; a thread whose view went starts over (rehashing its history
// once). The 16 most recent are always kept, however long their threads;
// beyond them, views are kept up to 1024 in all while they remember at most
// 2^17 items in all (memos and ledger items: room for some sixty threads of a
// thousand messages, a memo and about one ledger item per message). More than 16 long threads served
// strictly in turn evict each other every round; other policies tried
// (dropping the most recent, or not keeping a returning thread's view) did
// better there but worse for the usual agent load, turns of several model
// calls with think time between them (see the README).
const KEPT_THREAD_VIEWS = 16;
const MAX_THREAD_VIEWS = 1024;
const MAX_VIEW_ITEMS = 1 << 17;

/** The occurrence keys of one message and the fields they were hashed from. */
interface KeyMemo {
  type: "tool" | "ai";
  /** Per-tool_call_id occurrence index of an id-less result, else 0. */
  index: number;
  /** Per position: the call id, or "" for a call that gets no key (countedCallId). */
  toolCallIds: string[];
  /** Per position: the occurrence key, or "" for a call that gets none. */
  keys: string[];
  /** The ledger epoch in which every key was found in the ledger, if any. */
  recordedIn: object | null;
}

/** What capture remembers about one thread between rounds (all re-derivable from state). */
interface ThreadView {
  ledger: readonly unknown[];
  /** The set of the first `length` ledger items. */
  length: number;
  members: Set<unknown>;
  /**
   * Kept while every ledger seen since holds the previous one as its prefix:
   * a key found in the ledger during this epoch is still in it, so a round
   * skips it without a set probe.
   */
  epoch: object;
  /**
   * The first messages of the last round that were recorded in this epoch,
   * as they were then: the same objects at those positions need no look at
   * all. A copy, since the array may be edited in place after capture read
   * it (langchain's contextEditingMiddleware puts cleared results into it),
   * and one copy, cut and extended each round. Stops at the first message
   * without an id or with an empty one, whose id may still be assigned in
   * place (summarization assigns one where `!id`) and so change its key.
   * Weak: a finished thread's history is not kept alive for this;
   * `snapshots` ties the copy's life to the message lists it was taken
   * from. Not a WeakRef to each round's list: a WeakRef keeps its
   * target to the end of the job, and a run that never waits is one job.
   */
  recorded: WeakRef<unknown[]> | null;
  snapshots: WeakMap<readonly unknown[], unknown[]>;
  /**
   * Keys by message id, so a history reloaded from a checkpoint (new objects,
   * same ids) is not hashed again. Id-less messages are hashed every round.
   */
  memos: Map<string, KeyMemo>;
  /** Memos and ledger items as last counted (ThreadViews' bound). */
  items: number;
}

/** The thread views of one capture middleware: least recently used first out, within both bounds. */
class ThreadViews {
  readonly #byThread = new Map<string, ThreadView>();
  /** The views' `items`, summed. */
  #items = 0;

  /**
   * The thread's view, brought up to `ledger`. The ledger only grows (its
   * reducer appends), so the membership set is extended by the new tail when
   * the old items are still its prefix, and rebuilt in a new epoch otherwise.
   */
  visit(threadId: string, ledger: readonly unknown[]): ThreadView {
    let view = this.#byThread.get(threadId);
    if (view !== undefined) {
      this.#byThread.delete(threadId);
      this.#items -= view.items;
    }
    if (view === undefined) view = { ledger, length: 0, members: new Set(), epoch: {}, recorded: null, snapshots: new WeakMap(), memos: new Map(), items: 0 };
    else if (!isPrefixOf(view, ledger)) view = { ledger, length: 0, members: new Set(), epoch: {}, recorded: null, snapshots: new WeakMap(), memos: view.memos, items: 0 };
    for (let i = view.length; i < ledger.length; i++) view.members.add(ledger[i]);
    view.ledger = ledger;
    view.length = ledger.length;
    view.items = 0; // counted by settle, once the round has added its memos
    this.#byThread.set(threadId, view);
    return view;
  }

  /** Count what `view` remembers now (after its round added memos), then drop views past the bounds. */
  settle(view: ThreadView): void {
    const items = view.memos.size + view.length;
    this.#items += items - view.items;
    view.items = items;
    for (const [id, other] of this.#byThread) {
      const size = this.#byThread.size;
      if (size <= KEPT_THREAD_VIEWS || (size <= MAX_THREAD_VIEWS && this.#items <= MAX_VIEW_ITEMS)) break;
      if (other === view) continue;
      this.#byThread.delete(id);
      this.#items -= other.items;
    }
  }
}

function isPrefixOf(view: ThreadView, ledger: readonly unknown[]): boolean {
  if (ledger.length < view.length) return false;
  if (ledger === view.ledger) return true;
  const old = view.ledger;
  // Within a run the very same string objects, so a pointer compare per item.
  for (let i = 0; i < view.length; i++) if (ledger[i] !== old[i]) return false;
  return true;
}

/**
 * The thread id as the run gives it: `configurable.thread_id` when it is a
 * non-empty string, else `context.thread_id`, else what `configurable` held
 * (for the warning); not checked further. An empty configured id must not
 * hide a usable one in the context.
 */
export function givenThreadId(runtime: CaptureRuntime | null | undefined): unknown {
  const configured = runtime?.configurable?.thread_id;
  if (typeof configured === "string" && configured !== "") return configured;
  return runtime?.context?.thread_id ?? configured;
}

function threadIdOf(runtime: CaptureRuntime | null | undefined): string | null {
  const id = givenThreadId(runtime);
  return typeof id === "string" && id !== "" ? id : null;
}

interface ToolCallLike {
  id?: string | null;
  args?: unknown;
}

type MessageLike = BaseMessage & { tool_call_id?: unknown; tool_calls?: readonly ToolCallLike[] };

function messageIdOf(message: MessageLike): string | null {
  return occurrenceIdOf(message.id) ?? null;
}

function callIdOf(call: ToolCallLike | undefined): string {
  const id = call?.id;
  return typeof id === "string" ? id : id === null || id === undefined ? "" : String(id);
}

/**
 * The id of a call that gets a ledger key, else "": as the Python
 * implementation keys calls, only those with an id and object arguments
 * (the only ones that can consume a handle), so that a ledger either writes
 * reads the same to the other.
 */
function countedCallId(call: ToolCallLike | undefined): string {
  return isArgumentsObject(call?.args) ? callIdOf(call) : "";
}

/** How many times `id` came before this one (its 0-based occurrence); counts this one for the next. */
function nextCount(counts: Map<string, number>, id: string): number {
  const n = counts.get(id) ?? 0;
  counts.set(id, n + 1);
  return n;
}

/**
 * Per-id counts over the messages before position `end`: of the ToolMessages
 * by tool_call_id, or of the AI messages' counted calls by call id.
 */
function countIds(messages: readonly MessageLike[], end: number, type: "tool" | "ai"): Map<string, number> {
  const counts = new Map<string, number>();
  for (let j = 0; j < end; j++) {
    const m = messages[j];
    if (m?.type !== type) continue;
    if (type === "tool") nextCount(counts, String(m.tool_call_id ?? ""));
    else if (Array.isArray(m.tool_calls)) {
      for (const call of m.tool_calls) {
        const id = countedCallId(call);
        if (id !== "") nextCount(counts, id);
      }
    }
  }
  return counts;
}

// Called for every unsettled message of a round: compares in place, allocates nothing.
function memoFits(memo: KeyMemo, type: "tool" | "ai", toolCallId: string, toolCalls: readonly ToolCallLike[] | undefined): boolean {
  if (memo.type !== type) return false;
  if (toolCalls === undefined) return memo.toolCallIds[0] === toolCallId;
  if (memo.toolCallIds.length !== toolCalls.length) return false;
  for (let p = 0; p < toolCalls.length; p++) if (memo.toolCallIds[p] !== countedCallId(toolCalls[p])) return false;
  return true;
}

/** A tool result or call whose key is not in the ledger (or not hashed yet). */
interface Candidate {
  message: MessageLike;
  memo: KeyMemo;
  /** 0 for a result; the call's position in `tool_calls` for a call. */
  position: number;
}

/** Whether every key of `memo` is in the ledger; if so, remembered for the epoch. */
function isRecorded(memo: KeyMemo, view: ThreadView): boolean {
  if (memo.recordedIn === view.epoch) return true;
  for (const key of memo.keys) if (key !== "" && !view.members.has(key)) return false;
  memo.recordedIn = view.epoch;
  return true;
}

/** The last round's recorded messages as they were (see ThreadView.recorded), or none. */
function lastRecorded(view: ThreadView): unknown[] | undefined {
  return view.recorded?.deref();
}

/** How many leading messages are the same objects as the recorded ones of the last round. */
function recordedPrefix(messages: readonly unknown[], view: ThreadView): number {
  const recorded = lastRecorded(view);
  if (recorded === undefined) return 0;
  const n = Math.min(recorded.length, messages.length);
  let i = 0;
  while (i < n && messages[i] === recorded[i]) i++;
  return i;
}

/**
 * Remember messages[0..count) as recorded, the first `same` of them being
 * the last round's: its copy is cut there and extended, not copied again, so
 * a round costs what is new, not the history's length.
 */
function rememberRecorded(messages: readonly unknown[], view: ThreadView, same: number, count: number): void {
  const last = lastRecorded(view);
  const recorded = last ?? [];
  recorded.length = same;
  for (let j = same; j < count; j++) recorded.push(messages[j]);
  if (recorded !== last) view.recorded = new WeakRef(recorded);
  view.snapshots.set(messages, recorded);
}

/**
 * The tool results and tool calls of `messages` whose keys are not in the
 * ledger, in message order. Keys are hashed in one engine batch, only for
 * messages the thread's view has no keys for.
 */
function unprocessed(messages: readonly MessageLike[], threadId: string, view: ThreadView): { results: Candidate[]; calls: Candidate[] } {
  const seeds: OccurrenceSeed[] = [];
  const fresh: KeyMemo[] = [];
  const freshIds: Array<string | null> = [];
  const open: Candidate[] = [];
  let perCallId: Map<string, number> | null = null;
  let perCall: Map<string, number> | null = null;
  let firstOpen = -1;
  const same = recordedPrefix(messages, view);
  for (let j = same; j < messages.length; j++) {
    const m = messages[j];
    const type = m?.type === "tool" ? "tool" : m?.type === "ai" ? "ai" : null;
    if (type === null) continue;
    const toolCalls = type === "ai" ? m.tool_calls : undefined;
    if (type === "ai" && (!Array.isArray(toolCalls) || toolCalls.length === 0)) continue;
    const toolCallId = type === "tool" ? String(m.tool_call_id ?? "") : "";
    const messageId = messageIdOf(m);
    let memo = messageId === null ? undefined : view.memos.get(messageId);
    if (memo === undefined || !memoFits(memo, type, toolCallId, toolCalls)) {
      let index = 0;
      if (type === "tool" && messageId === null) {
        // Only an id-less result is named by its occurrence index, so the
        // count (over everything before it) starts at the first one.
        perCallId ??= countIds(messages, j, "tool");
        index = perCallId.get(toolCallId) ?? 0;
      }
      const ids = toolCalls === undefined ? [toolCallId] : toolCalls.map(countedCallId);
      memo = { type, index, toolCallIds: ids, keys: [], recordedIn: null };
      // A call's index is its position, or in an id-less message its call
      // id's occurrence index over the counted calls before it (DESIGN §5).
      if (type === "ai" && messageId === null) perCall ??= countIds(messages, j, "ai");
      for (let p = 0; p < ids.length; p++) {
        if (type === "tool") seeds.push({ kind: "result", threadId, messageId, toolCallId: ids[p], index });
        else if (ids[p] !== "") seeds.push({ kind: "call", threadId, messageId, toolCallId: ids[p], index: messageId === null ? nextCount(perCall!, ids[p]) : p });
      }
      fresh.push(memo);
      freshIds.push(messageId);
    }
    // An id-less message counted its own calls above.
    if (type === "ai" && perCall !== null && messageId !== null) for (const id of memo.toolCallIds) if (id !== "") nextCount(perCall, id);
    if (type === "tool" && perCallId !== null) nextCount(perCallId, toolCallId);
    const recorded = memo.keys.length > 0 && isRecorded(memo, view);
    if (!recorded) open.push({ message: m, memo, position: 0 });
    // Looked at again next round: an unrecorded message, an id-less one (its
    // keys depend on what precedes it), one whose id is empty (an id, but
    // summarization replaces it in place, as it assigns a missing one), and
    // one with a call that got no key (its args may yet become an object in
    // place: memoFits sees that).
    if (firstOpen === -1 && (!recorded || !messageId || memo.keys.includes(""))) firstOpen = j;
  }
  rememberRecorded(messages, view, same, firstOpen === -1 ? messages.length : firstOpen);

  // (A message whose calls all go without a key needs no hashing, but its memo still.)
  const keys = seeds.length > 0 ? occurrenceKeys(seeds) : [];
  let k = 0;
  fresh.forEach((memo, i) => {
    memo.keys = memo.toolCallIds.map((id) => (memo.type === "ai" && id === "" ? "" : keys[k++]!));
    const id = freshIds[i];
    if (id !== null) view.memos.set(id, memo);
  });
  pruneMemos(view, messages);
  const results: Candidate[] = [];
  const calls: Candidate[] = [];
  for (const { message, memo } of open) {
    const into = memo.type === "tool" ? results : calls;
    for (let p = 0; p < memo.keys.length; p++) if (memo.keys[p] !== "" && !view.members.has(memo.keys[p])) into.push({ message, memo, position: p });
  }
  return { results, calls };
}

// Memos the history may hold beyond twice its length before a sweep.
const MEMO_SLACK = 256;

/**
 * Drop the memos of messages no longer in the history (compacted away) once
 * they outnumber it: a busy thread under summarization would otherwise keep
 * one per message it ever saw. A sweep costs one pass over the history and
 * comes at most once per MEMO_SLACK new messages.
 */
function pruneMemos(view: ThreadView, messages: readonly MessageLike[]): void {
  if (view.memos.size <= 2 * messages.length + MEMO_SLACK) return;
  const kept = new Map<string, KeyMemo>();
  for (const m of messages) {
    const id = m === null || typeof m !== "object" ? null : messageIdOf(m);
    const memo = id === null ? undefined : view.memos.get(id);
    if (memo !== undefined) kept.set(id!, memo);
  }
  view.memos = kept;
}

/**
 * A handle is 32 bits of a hash, so another reference's may coincide with
 * it: about n in 2^32 for a reference added to a registry of n entries.
 * DESIGN §5 keeps the entry registered first; the later reference gets no
 * handle, which would go unseen. Said each time (it is that rare), naming
 * the calls, not the references, which may hold what logs should not.
 */
function warnHandleTaken(entry: ArtifactEntry, taken: ArtifactEntry): void {
  process.emitWarning(
    `tool-artifacts: the handle ${entry.handle} of a reference from tool call ${JSON.stringify(entry.tool_call_id)} (${JSON.stringify(entry.tool_name)}) is already that of another reference, from tool call ${JSON.stringify(taken.tool_call_id)}; the later reference gets no handle (handles are 8 hex digits, and capture keeps the first)`,
    { code: "TOOL_ARTIFACTS_HANDLE_TAKEN" },
  );
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
  views: ThreadViews,
): CaptureUpdate | undefined {
  const messages = (Array.isArray(state.messages) ? state.messages : []) as readonly MessageLike[];
  const registry = Array.isArray(state.tool_artifacts) ? state.tool_artifacts : [];
  const ledgerItems = Array.isArray(state.tool_artifact_processed) ? state.tool_artifact_processed : [];
  const view = views.visit(threadId, ledgerItems);
  const { results, calls } = unprocessed(messages, threadId, view);
  views.settle(view);

  const captured: ArtifactEntry[] = [];
  const capturedKeys: string[] = [];
  const settled: string[] = [];
  // Per handle a round's calls use: its entry, its consumers as a set (built
  // once a round, so many calls naming one long-used handle cost no more than
  // its list once), and the call ids it gains, in order.
  const uses = new Map<string, { entry: ArtifactEntry; consumers: Set<string>; added: string[] }>();
  const gained: Array<{ entry: ArtifactEntry; added: string[] }> = [];
  const trimNeeded = () => registry.length + captured.length > config.maxEntries;
  if (results.length === 0 && calls.length === 0) {
    return trimNeeded() ? { tool_artifacts: [{ op: "trim_to", keep: config.maxEntries }], tool_artifact_processed: [] } : undefined;
  }

  // The registry plus this round's captures, handle → entry: the entries
  // resolution would resolve, and only those, so a call counts as consuming
  // exactly what it could use.
  const known = new Map<string, ArtifactEntry>();
  for (const entry of currentEntries(registry)) known.set(entry.handle, entry);

  const recorded = new Set<string>();
  // Calls answered by a structured response: no tool ran for them, so they
  // use no handle, and what the model wrote there is no tool's output.
  const structuredCalls = new Set<string>();
  for (const { message, memo } of results) {
    const key = memo.keys[0];
    if (recorded.has(key)) continue;
    recorded.add(key);
    capturedKeys.push(key);
    if (isStructuredResponseMessage(message)) {
      if (memo.toolCallIds[0] !== "") structuredCalls.add(memo.toolCallIds[0]);
      continue;
    }
    const entries = extract(message, {
      threadId,
      callIndex: memo.index,
      detectRefsInText: config.detectRefsInText,
      sandboxPrefixes: config.sandboxPrefixes,
    });
    for (const entry of entries) {
      const taken = known.get(entry.handle);
      if (taken !== undefined) {
        if (taken.real_ref !== entry.real_ref) warnHandleTaken(entry, taken);
        continue;
      }
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
    const args = structuredCalls.has(callId) ? undefined : message.tool_calls?.[position]?.args;
    for (const handle of argumentHandles(args)) {
      const entry = known.get(handle);
      if (entry === undefined) {
        missing = true;
        continue;
      }
      if (callId === "") continue;
      let use = uses.get(handle);
      if (use === undefined) uses.set(handle, (use = { entry, consumers: new Set(consumersOf(entry)), added: [] }));
      if (use.consumers.has(callId)) continue;
      use.consumers.add(callId);
      use.added.push(callId);
      if (use.added.length === 1) gained.push(use);
    }
    // A miss may be a handle this round could not see yet: one retry, then
    // the call is settled so an unknown handle is never scanned forever.
    settled.push(!missing || hasRetryRecord(view.members, key) ? key : retryRecord(key));
  }

  const artifacts: ArtifactUpdate[] = [...captured];
  for (const { entry, added } of gained) artifacts.push({ ...entry, consumed_by: [...consumersOf(entry), ...added] });
  if (trimNeeded()) artifacts.push({ op: "trim_to", keep: config.maxEntries });
  return { tool_artifacts: artifacts, tool_artifact_processed: [...capturedKeys, ...settled] };
}

/**
 * The ledger keys of a history's tool results and keyed tool calls under
 * `threadId`, results then calls, each in message order: what capture would
 * look for in the ledger, from a view of its own (nothing cached).
 */
function historyKeys(messages: readonly MessageLike[], threadId: string): { results: string[]; calls: string[] } {
  const view = new ThreadViews().visit(threadId, []);
  const { results, calls } = unprocessed(messages, threadId, view);
  return { results: results.map((c) => c.memo.keys[0]!), calls: calls.map((c) => c.memo.keys[c.position]!) };
}

const nonEmptyId = (value: unknown, name: string): string => {
  if (typeof value !== "string" || value === "") throw new TypeError(`rekeyLedger: ${name} must be a non-empty string, got ${describeValue(value)}`);
  return value;
};

/**
 * The ledger items a copy of a thread needs under its new thread id.
 *
 * Ledger keys hash the thread id (DESIGN §2), so a thread's state copied
 * under another id (LangGraph's `threads.copy`, a checkpointer's `copy`, a
 * host copying `getState` values) keeps a ledger that names none of the
 * copy's messages: its next round would take every earlier result for new,
 * register its references again under new handles, and push the copied
 * handles out past `maxEntries`. This gives, for each result and call of
 * `state.messages` that the ledger records under `fromThreadId`, the key
 * under `toThreadId` (a call waiting for its one retry keeps waiting); add
 * them to the copy's `tool_artifact_processed` (the channel's reducer
 * appends). What the ledger did not record yet stays unrecorded, so the
 * copy captures it at its next round. The registry needs nothing: handles
 * keep resolving in the copy, and the copy's new results get handles of
 * its own thread.
 *
 * @example
 * ```ts
 * // Thread "a" was copied to "b" (the LangGraph API's threads.copy, say):
 * const b = { configurable: { thread_id: "b" } };
 * const { values } = await agent.graph.getState(b);
 * await agent.graph.updateState(b, { tool_artifact_processed: rekeyLedger(values, "a", "b") });
 * ```
 */
export function rekeyLedger(state: LedgerState, fromThreadId: string, toThreadId: string): string[] {
  // A snapshot passed for its values would give nothing, and the copy would capture its whole history again.
  if (typeof state !== "object" || state === null || !Array.isArray(state.messages)) {
    throw new TypeError(`rekeyLedger: state must be a thread's state values, an object with a messages array (getState(config).values), got ${describeValue(state)}`);
  }
  const from = nonEmptyId(fromThreadId, "fromThreadId");
  const to = nonEmptyId(toThreadId, "toThreadId");
  const messages = state.messages.map(fromSerialized);
  const ledger = new Set<unknown>(Array.isArray(state.tool_artifact_processed) ? state.tool_artifact_processed : []);
  if (ledger.size === 0 || from === to) return [];
  const before = historyKeys(messages, from);
  const after = historyKeys(messages, to);
  const keys = new Set<string>();
  before.results.forEach((key, i) => {
    if (ledger.has(key)) keys.add(after.results[i]!);
  });
  before.calls.forEach((key, i) => {
    if (ledger.has(key)) keys.add(after.calls[i]!);
    else if (hasRetryRecord(ledger, key)) keys.add(retryRecord(after.calls[i]!));
  });
  return [...keys];
}

/**
 * A message in LangChain's serialized form (`JSON.stringify` of a message:
 * `{lc: 1, type: "constructor", …}`) as the message; anything else as it is
 * (capture reads LangChain messages and their plain form alike).
 */
function fromSerialized(message: unknown): MessageLike {
  if (isRecord(message) && serializedClass(message) !== undefined) {
    try {
      return coerceMessageLikeToMessage(message as BaseMessageLike) as MessageLike;
    } catch {
      // not a message after all: read as it is, which gives no keys
    }
  }
  return message as MessageLike;
}

/**
 * The capture middleware: before each model call it registers the files,
 * URLs, task ids and small results of new tool results under handles and
 * records which calls used which handles (DESIGN §5). Runs before any
 * compaction middleware and a model call limit, after PII redaction
 * (`constraints: {before: ["summarization", "model-call-limit"], after: ["pii"]}`).
 *
 * The thread id comes from `configurable.thread_id` or `context.thread_id`;
 * without one, or with `enabled` off, it records nothing.
 *
 * A `ToolMessage` resolution marked as the answer to a structured response
 * (see `./structured.ts`) is recorded, not read.
 *
 * @example
 * ```ts
 * const config = parseToolArtifactsConfig({ maxEntries: 200 });
 * const agent = createAgent({ model, tools, checkpointer, middleware: [captureMiddleware(config)] });
 * await agent.invoke({ messages }, { configurable: { thread_id: "t-1" } });
 * ```
 */
export function captureMiddleware(input?: ToolArtifactsConfigSource, options: CaptureOptions = {}) {
  const config = parseToolArtifactsConfig(input);
  const extract = parseOptions(captureOptionsSchema, options, { root: "captureMiddleware options" }).extract ?? extractArtifacts;
  const views = new ThreadViews();
  let warned = false;
  /** Once per middleware: without a thread id nothing is captured, and the model never sees a handle. */
  const warnNoThreadId = (runtime: CaptureRuntime) => {
    if (warned) return;
    warned = true;
    const given = givenThreadId(runtime);
    process.emitWarning(
      `tool-artifacts: capture needs a non-empty string thread id (configurable.thread_id or context.thread_id), got ${given === undefined ? "none" : given === "" ? "an empty string" : typeof given}; nothing is captured in such runs`,
      { code: "TOOL_ARTIFACTS_NO_THREAD_ID" },
    );
  };
  const middleware = createMiddleware({
    name: "tool-artifacts-capture",
    stateSchema: toolArtifactsStateSchema,
    // Declared so LangChain hands the hook `context.thread_id` at all; any
    // type is accepted so a host's own context never fails validation here.
    contextSchema: z.object({ thread_id: z.unknown().optional() }),
    // Off, no hook at all: each beforeModel hook is a graph step of its own,
    // checkpointed on every model call.
    beforeModel: !config.enabled ? undefined : (state, runtime) => {
      const threadId = threadIdOf(runtime as CaptureRuntime);
      if (threadId === null) {
        warnNoThreadId(runtime as CaptureRuntime);
        return undefined;
      }
      const update = captureRound(state as CaptureState, threadId, config, extract, views);
      // langchain writes a hook's update over the whole state it was given
      // (`{...state, ...update}`), so without this every round that captures
      // writes the whole history back (re-reduced and checkpointed as a
      // pending write); an empty list leaves it as it is.
      return update && { ...update, messages: [] };
    },
  });
  // Before compaction and a call limit's jump to the end (either would take
  // results away unread); after PII redaction of tool results, so what the
  // host redacts never reaches the registry.
  const known = WELL_KNOWN_MIDDLEWARE;
  return withConstraints(middleware, { before: [known.summarization, known.modelCallLimit], after: [known.pii] });
}
