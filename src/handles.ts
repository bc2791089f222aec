/**
 * Handles in tool-call arguments (DESIGN §6): finding them in string values
 * at any depth, and replacing them by their references.
 */

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
  return typeof args === "object" && args !== null && !Array.isArray(args);
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
      const children = Array.isArray(node) ? node : Object.values(node);
      for (let i = children.length - 1; i >= 0; i--) {
        const child = children[i];
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

interface Frame {
  src: Record<string, unknown> | unknown[];
  keys: readonly string[] | null; // null: an array, walked by index
  next: number;
  copy: Record<string, unknown> | unknown[] | null;
  parent: Frame | null;
  slot: string | number;
}

function copyOf(frame: Frame): Record<string, unknown> | unknown[] {
  return (frame.copy ??= Array.isArray(frame.src) ? frame.src.slice() : { ...frame.src });
}

/**
 * `value` with every handle in its string values replaced by `lookup(handle)`
 * (unknown handles stay as written). The input is never modified: changed
 * objects and arrays are copied along the path to the change, unchanged
 * subtrees are shared, and a value without replacements is returned as is.
 */
export function resolveHandles<T>(value: T, lookup: HandleLookup): T {
  if (typeof lookup !== "function" && typeof (lookup as { get?: unknown } | null)?.get !== "function") {
    throw new TypeError("resolveHandles: lookup must be a function or a Map of handle → reference");
  }
  const get = typeof lookup === "function" ? lookup : (handle: string) => lookup.get(handle);
  if (typeof value === "string") return replaceIn(value, get) as T;
  if (typeof value !== "object" || value === null) return value;

  const onPath = new Set<object>([value]);
  const rootSrc = value as unknown as Frame["src"];
  let frame: Frame | null = { src: rootSrc, keys: Array.isArray(rootSrc) ? null : Object.keys(rootSrc), next: 0, copy: null, parent: null, slot: 0 };
  let result: unknown = value;
  while (frame !== null) {
    const length: number = frame.keys === null ? (frame.src as unknown[]).length : frame.keys.length;
    if (frame.next < length) {
      const slot: string | number = frame.keys === null ? frame.next : frame.keys[frame.next]!;
      frame.next++;
      const child = (frame.src as Record<string | number, unknown>)[slot];
      if (typeof child === "string") {
        const replaced = replaceIn(child, get);
        if (replaced !== child) (copyOf(frame) as Record<string | number, unknown>)[slot] = replaced;
      } else if (typeof child === "object" && child !== null && !onPath.has(child)) {
        // A back-reference to an ancestor stays as it is: cyclic input, cyclic output.
        onPath.add(child);
        const src = child as Frame["src"];
        frame = { src, keys: Array.isArray(src) ? null : Object.keys(src), next: 0, copy: null, parent: frame, slot };
      }
      continue;
    }
    onPath.delete(frame.src);
    const done: Frame = frame;
    frame = done.parent;
    if (frame === null) result = done.copy ?? done.src;
    else if (done.copy !== null) (copyOf(frame) as Record<string | number, unknown>)[done.slot] = done.copy;
  }
  return result as T;
}
