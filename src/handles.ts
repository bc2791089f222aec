/**
 * Handles in tool-call arguments (DESIGN §6): finding them in string values
 * at any depth, and replacing them by their references.
 */
import { arraySlots, isRecord } from "./types.js";

/**
 * A handle in text: `` `art_xxxxxxxx` `` (the backticks belong to the match,
 * so they go when it is replaced) or a bare `art_xxxxxxxx` with no word
 * character either side. "Word character" is Python's Unicode `\w`
 * (letters, numbers, underscore), so both implementations see the same handles.
 * Group 1 holds a backticked handle, group 2 a bare one. Global, so its
 * `lastIndex` moves with a caller's `test`/`exec`.
 */
export const HANDLE_PATTERN = /`(art_[0-9a-f]{8})`|(?<![\p{L}\p{N}_])(art_[0-9a-f]{8})(?![\p{L}\p{N}_])/gu;

/**
 * Ours, not the exported one: `matchAll` starts at the pattern's `lastIndex`,
 * so a host's `HANDLE_PATTERN.test(...)` would otherwise hide the handles
 * before that point, and a call with an unknown handle would run unrefused.
 */
const PATTERN = new RegExp(HANDLE_PATTERN);

const EXACT_HANDLE = /^art_[0-9a-f]{8}$/;

/** Whether `value` is exactly one handle (no backticks, no surrounding text). */
export function isHandle(value: unknown): value is string {
  return typeof value === "string" && EXACT_HANDLE.test(value);
}

/** Cheap pre-check: most argument strings hold no handle at all. */
function mayHoldHandle(text: string): boolean {
  return text.length >= 12 && text.includes("art_");
}

function collect(text: string, into: Set<string>): void {
  if (!mayHoldHandle(text)) return;
  for (const m of text.matchAll(PATTERN)) into.add(m[1] ?? m[2]!);
}

/**
 * The handles a tool call's arguments hold: tool arguments are a JSON
 * object, and anything else is passed on untouched (DESIGN §6), so its
 * handles are neither resolved nor counted as used by capture.
 */
export function argumentHandles(args: unknown): string[] {
  return isArgumentsObject(args) ? findHandles(args) : [];
}

/** Whether a tool call's arguments are an object, the only arguments that can hold a usable handle. */
export function isArgumentsObject(args: unknown): args is object {
  return isRecord(args);
}

/**
 * The distinct handles in `value`, in order of first appearance: the value
 * itself if it is a string, and every string value nested in objects and
 * arrays (keys are not scanned). Shared and cyclic structures are visited
 * once; depth is unbounded (no recursion).
 */
export function findHandles(value: unknown): string[] {
  const found = new Set<string>();
  if (typeof value === "string") {
    collect(value, found);
    return [...found];
  }
  if (typeof value !== "object" || value === null) return [];
  const seen = new WeakSet<object>();
  // Children are pushed in reverse so they pop in document order.
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node === "string") collect(node, found);
    else if (typeof node === "object" && node !== null && !seen.has(node)) {
      seen.add(node);
      const { length, slots } = slotsOf(node as Visit["src"]);
      for (let i = (slots === null ? length : slots.length) - 1; i >= 0; i--) {
        const child = (node as Record<string | number, unknown>)[slots === null ? i : slots[i]!];
        if (typeof child === "string" || (typeof child === "object" && child !== null)) stack.push(child);
      }
    }
  }
  return [...found];
}

/** Where a handle's replacement comes from; `undefined` leaves the handle as written. */
export type HandleLookup = ((handle: string) => string | undefined) | ReadonlyMap<string, string>;

function replaceIn(text: string, lookup: (handle: string) => string | undefined): string {
  if (!mayHoldHandle(text)) return text;
  // A replacer function: references may contain `$` sequences.
  return text.replace(PATTERN, (match: string, ticked: string | undefined, bare: string | undefined) => lookup(ticked ?? bare!) ?? match);
}

/** How an object's values are read: its own keys, or an array's slots (see arraySlots; `slots` null: every index below `length`). */
interface Slots {
  length: number;
  slots: readonly (string | number)[] | null;
}

/** One object or array reachable from the value, read once however many paths lead to it. */
interface Visit {
  src: Record<string, unknown> | unknown[];
  /** Its slots, once it has been read. */
  read: Slots | null;
  /** Its string values that change: slot, then the new string. */
  replaced: (string | number)[] | null;
  /** Its object and array values: slot, then the value's visit. */
  children: (string | number | Visit)[];
  /** The visits holding it as a value. */
  parents: Visit[];
  /** Its copy, once it is known to reach a replacement. */
  copy: Record<string, unknown> | unknown[] | null;
}

function slotsOf(src: Visit["src"]): Slots {
  if (Array.isArray(src)) return arraySlots(src);
  const slots = Object.keys(src);
  return { length: slots.length, slots };
}

function copyOf({ src, read }: Visit): Visit["src"] {
  if (!Array.isArray(src)) return { ...src };
  const { length, slots } = read!;
  if (slots === null) return src.slice(0, length);
  // A long array of holes, copied by the slots it holds (slice would visit every one).
  const copy: unknown[] = [];
  for (const slot of slots as number[]) copy[slot] = src[slot];
  copy.length = length;
  return copy;
}

/**
 * `value` with every handle in its string values replaced by `lookup(handle)`
 * (unknown handles stay as written). The input is never modified: changed
 * objects and arrays are copied along the path to the change, unchanged
 * subtrees are shared, and a value without replacements is returned as is.
 * An object reached by several paths is read and copied once (shared
 * objects can make 2^depth paths), and a cycle through a copied object
 * leads to its copy, so no path from the result reaches an unresolved
 * handle.
 */
export function resolveHandles<T>(value: T, lookup: HandleLookup): T {
  if (typeof lookup !== "function" && typeof (lookup as { get?: unknown } | null)?.get !== "function") {
    throw new TypeError("resolveHandles: lookup must be a function or a Map of handle → reference");
  }
  const get = typeof lookup === "function" ? lookup : (handle: string) => lookup.get(handle);
  if (typeof value === "string") return replaceIn(value, get) as T;
  if (typeof value !== "object" || value === null) return value;

  // Read every reachable object once, noting what changes in it and what it holds.
  const visits = new Map<object, Visit>();
  const visit = (src: object): Visit => {
    const v: Visit = { src: src as Visit["src"], read: null, replaced: null, children: [], parents: [], copy: null };
    visits.set(src, v);
    return v;
  };
  const root = visit(value);
  const pending: Visit[] = [root];
  while (pending.length > 0) {
    const current = pending.pop()!;
    const src = current.src as Record<string | number, unknown>;
    const { length, slots } = (current.read = slotsOf(current.src));
    const count = slots === null ? length : slots.length;
    for (let i = 0; i < count; i++) {
      const slot: string | number = slots === null ? i : slots[i]!;
      const child = src[slot];
      if (typeof child === "string") {
        const changed = replaceIn(child, get);
        if (changed !== child) (current.replaced ??= []).push(slot, changed);
      } else if (typeof child === "object" && child !== null) {
        let seen = visits.get(child);
        if (seen === undefined) pending.push((seen = visit(child)));
        seen.parents.push(current);
        current.children.push(slot, seen);
      }
    }
  }
  // Copy what reaches a replacement: the changed objects and, up every path, what holds them.
  const dirty = [...visits.values()].filter((v) => v.replaced !== null);
  for (const v of dirty) v.copy = copyOf(v);
  for (let i = 0; i < dirty.length; i++) {
    for (const parent of dirty[i]!.parents) {
      if (parent.copy === null) {
        parent.copy = copyOf(parent);
        dirty.push(parent);
      }
    }
  }
  for (const v of dirty) {
    const copy = v.copy as Record<string | number, unknown>;
    const { replaced, children } = v;
    if (replaced !== null) for (let i = 0; i < replaced.length; i += 2) copy[replaced[i] as string | number] = replaced[i + 1];
    for (let i = 0; i < children.length; i += 2) {
      const childCopy = (children[i + 1] as Visit).copy;
      if (childCopy !== null) copy[children[i] as string | number] = childCopy;
    }
  }
  return (root.copy ?? value) as T;
}
