/* Shapes shared by the engine facade, extraction, the registry and the middleware. */

/**
 * The `code` of the error importing the engine throws where it cannot load
 * (no WebAssembly, its file unreadable): the environment's problem, which
 * the CLI reports in one line rather than as an internal error.
 */
export const ENGINE_UNAVAILABLE = "TOOL_ARTIFACTS_ENGINE_UNAVAILABLE";

/** What an entry refers to: a `file` (a path or URL), an `image` (an image block's URL), a remote `task` id, or small structured `data` (its JSON as `real_ref`). */
export type ArtifactType = "file" | "image" | "task" | "data";

/** One registry entry (DESIGN §1). snake_case: persisted, read by the Python twin. */
export interface ArtifactEntry {
  handle: string;
  tool_name: string;
  tool_call_id: string;
  call_index: number;
  artifact_type: ArtifactType;
  display_name: string;
  real_ref: string;
  mime_type?: string | undefined;
  created_at: string;
  consumed_by?: string[] | undefined;
}

/** Registry directive: keep only the N most recent entries (first-seen order). */
export interface TrimDirective {
  op: "trim_to";
  keep: number;
}

/** An item of a registry update, what `mergeToolArtifacts` takes: an entry, or a trim directive. */
export type ArtifactUpdate = ArtifactEntry | TrimDirective;

/** A reference found in free text. */
export interface ScanRef {
  type: "file";
  ref: string;
  display: string;
}

/** Label a reference for people and models: its last path segment (split at
 * `/`, and at `\` too in a drive path such as `C:\dir\a.txt`), without query
 * or fragment in a URL (`scheme://…`): in a path, `?` and `#` are part of the
 * name. The whole reference when that segment is empty or is only a URL
 * scheme. Char-code loops: this runs once per captured reference. */
export function displayName(ref: string): string {
  if (typeof ref !== "string") throw new TypeError(`displayName: ref must be a string (got ${ref === null ? "null" : typeof ref})`);
  let end = ref.length;
  if (isUrl(ref)) {
    for (let i = 0; i < ref.length; i++) {
      const c = ref.charCodeAt(i);
      if (c === 0x3f /* ? */ || c === 0x23 /* # */) {
        end = i;
        break;
      }
    }
  }
  // `\` separates only in a drive path; elsewhere `/` twice.
  const other = isDrivePath(ref) ? 0x5c : 0x2f;
  let c = ref.charCodeAt(end - 1);
  while (end > 0 && (c === 0x2f || c === other)) c = ref.charCodeAt(--end - 1);
  let start = end;
  c = ref.charCodeAt(start - 1);
  while (start > 0 && c !== 0x2f && c !== other) c = ref.charCodeAt(--start - 1);
  if (start === end) return ref;
  const seg = ref.slice(start, end);
  return ref.charCodeAt(end - 1) === 0x3a /* : */ && /^[a-z][a-z0-9+.-]*:$/i.test(seg) ? ref : seg;
}

const isAsciiLetter = (c: number) => ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a);

/** /^[a-z][a-z0-9+.-]*:\/\//i, by char codes: this runs once per reference. */
function isUrl(ref: string): boolean {
  if (!isAsciiLetter(ref.charCodeAt(0))) return false;
  for (let i = 1; i < ref.length; i++) {
    const c = ref.charCodeAt(i);
    if (c === 0x3a /* : */) return ref.charCodeAt(i + 1) === 0x2f && ref.charCodeAt(i + 2) === 0x2f;
    if (!(isAsciiLetter(c) || (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2d || c === 0x2e)) return false;
  }
  return false;
}

/** `C:\…` or `C:/…`. */
const isDrivePath = (ref: string) => isAsciiLetter(ref.charCodeAt(0)) && ref.charCodeAt(1) === 0x3a && (ref.charCodeAt(2) === 0x5c || ref.charCodeAt(2) === 0x2f);

// Both sides of one problem: text reaches the engine as UTF-8, where a lone
// surrogate becomes U+FFFD, so either in a prefix would match the other in
// text, which Python's regex never does (DESIGN §3).
const LONE_SURROGATE_OR_FFFD = /\p{Surrogate}|\ufffd/u;

/**
 * The sandbox prefix list as given, its items read once (an array is
 * sliced whole, holes and all, so any caller refuses the same list): a
 * getter or proxy trap is the host's code, which may answer otherwise when
 * the list is checked and then used.
 */
export const prefixesSnapshot = (given: unknown): unknown => (Array.isArray(given) ? Array.prototype.slice.call(given) : given);

/**
 * Why `prefixes` cannot be a list of sandbox path prefixes (undefined: it
 * can), for every caller alike: scanText, extraction and the batch options.
 * An empty prefix would make every word a sandbox path; a lone surrogate or
 * U+FFFD would match the other in text.
 */
export function sandboxPrefixesProblem(prefixes: unknown): string | undefined {
  if (!Array.isArray(prefixes)) return "sandboxPrefixes must be an array of strings";
  for (const p of prefixes as unknown[]) {
    if (typeof p !== "string") return "sandboxPrefixes must be an array of strings";
    if (p === "") return "a sandbox prefix must not be empty";
    if (LONE_SURROGATE_OR_FFFD.test(p)) return `sandbox prefix ${JSON.stringify(p)} has a lone surrogate or U+FFFD`;
  }
  return undefined;
}

/**
 * Why `options` cannot be used for its own keys (undefined: it can): a key
 * outside `known` is most likely a misspelt option (`detectRefInText`),
 * which would otherwise be dropped without a word and leave the default on.
 */
export function unknownOptionProblem(options: object, known: readonly string[]): string | undefined {
  // A key set to undefined is no option, as everywhere (`{...defaults, typo: undefined}`).
  const key = Object.keys(options).find((k) => !known.includes(k) && (options as Record<string, unknown>)[k] !== undefined);
  return key === undefined ? undefined : `unknown option ${JSON.stringify(key)} (known: ${known.join(", ")})`;
}

/** An object that is not an array: what options, config sections, messages and tool-call arguments must be. */
export const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** A bad value as an error message names it: a string quoted (cut at 40 characters), a number or boolean with its type, else its type. */
export function describeValue(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") return `${typeof value} ${String(value)}`;
  return value === null ? "null" : typeof value;
}

/** A key without its case and separators: `sandbox_prefixes` and `sandboxPrefixes` are one. */
const bare = (key: string) => key.toLowerCase().replace(/[_-]/g, "");

/** Whether two keys differ only in case and separators (`call_index`, `callIndex`). */
export const sameKey = (a: string, b: string): boolean => bare(a) === bare(b);

/** Edit distance of two short keys; past 3 it only matters that it is more. */
function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 3) return 4;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length]!;
}

/**
 * The one of `options` a key that is read nowhere was probably meant to be
 * (undefined: none). Keys that are not ours may be passed over (a config
 * file's other sections, keys the Python implementation may read, a batch
 * item's metadata), but a near miss of ours (`enable`, `max_entry`,
 * `piiRule`, `call_index`) would be a setting that silently does nothing: a
 * kill switch that is not one.
 */
export function nearMiss(key: string, options: readonly string[]): string | undefined {
  // Two edits, three in a longer name (`max_entry` for `max_entries`).
  return options.find((option) => editDistance(bare(key), bare(option)) <= (bare(option).length >= 10 ? 3 : 2));
}

/** Whether `key` is a near miss of `field` (see nearMiss). */
export const nearKey = (key: string, field: string): boolean => nearMiss(key, [field]) !== undefined;

/**
 * The first own key of `value` that is set (not undefined), is not one of
 * `known`, and that `near` takes for one of `missing` (fields `value` does not
 * give): the key and the field it was probably meant to be. Every check of
 * the package for a misspelt key goes through here, so each passes over a
 * host's own keys, inherited ones and undefined alike.
 */
export function misspeltField(
  value: object,
  known: readonly string[],
  missing: readonly string[],
  near: (key: string, field: string) => boolean = nearKey,
): { key: string; meant: string } | undefined {
  if (missing.length === 0) return undefined;
  // for-in rather than Object.keys: no array per object (V8 caches a literal's keys).
  for (const key in value) {
    if (known.includes(key) || !Object.hasOwn(value, key)) continue;
    // The name first: only a candidate's value is read (another key's getter may throw).
    const meant = missing.find((field) => near(key, field));
    if (meant !== undefined && (value as Record<string, unknown>)[key] !== undefined) return { key, meant };
  }
  return undefined;
}

/**
 * An ISO-8601 date and time in UTC (DESIGN §1), with seconds: what
 * `toISOString` writes (a year past 9999 in its six-digit form), or
 * Python's `+00:00` for `Z`.
 */
const ISO_UTC = /^(?:\d{4}|[+-]\d{6})-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]00:00)$/;

/**
 * Why `value` cannot be an entry's `created_at` (undefined: it can), as the
 * end of an error message: an entry says when it was made in one form.
 */
export function timestampProblem(value: unknown): string | undefined {
  if (typeof value !== "string") return value instanceof Date ? "got a Date: pass date.toISOString()" : `got ${typeof value}`;
  return ISO_UTC.test(value) && isCalendarDay(value) ? undefined : `got ${describeValue(value)}`;
}

/**
 * Whether a timestamp of that form names a real time: Date.parse refuses a
 * month 13 or a minute 60, but rolls 2025-02-30 over into March and 24:00
 * into the next day, which the round trip catches.
 */
function isCalendarDay(timestamp: string): boolean {
  const time = Date.parse(timestamp);
  const day = timestamp.slice(0, timestamp.indexOf("T"));
  return !Number.isNaN(time) && new Date(time).toISOString().startsWith(day);
}

/** A call index, line number or count: a non-negative safe integer. */
export const isIndex = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

/**
 * Why the scan options `detectRefsInText` and `sandboxPrefixes` (as read
 * from an options object) cannot be used (undefined: they can). The one
 * check behind extraction's, the batch options' and the line path's.
 */
export function scanOptionsProblem(detectRefsInText: unknown, sandboxPrefixes: unknown): string | undefined {
  if (detectRefsInText !== undefined && typeof detectRefsInText !== "boolean") return `options.detectRefsInText must be a boolean (got ${typeof detectRefsInText})`;
  return sandboxPrefixes === undefined ? undefined : sandboxPrefixesProblem(sandboxPrefixes);
}

/**
 * The `additional_kwargs` key resolution sets, and capture reads, on the
 * `ToolMessage` langchain writes for a `toolStrategy` response. That message
 * answers no tool, yet nothing else in it (name, status, content) tells it
 * from a tool's result, and capture meets it in a later round, maybe in
 * another process: the mark has to travel with the message through the
 * checkpoint, and into archives of tool results, which the batch scanners
 * read (it lives here, without langchain, for their workers).
 */
export const STRUCTURED_RESPONSE_MARK = "tool_artifacts_structured_response";

/**
 * Whether `message` (or a serialized or stored message's fields) is the
 * marked answer to a structured-response call. A getter that throws is no
 * mark, as extraction reads a field that throws as not given.
 */
export function isStructuredResponseMessage(message: unknown): boolean {
  try {
    const kwargs = (message as { additional_kwargs?: Record<string, unknown> } | null | undefined)?.additional_kwargs;
    return kwargs?.[STRUCTURED_RESPONSE_MARK] === true;
  } catch {
    return false;
  }
}

/**
 * Past this length, and past this many slots read that hold nothing, an
 * array is read by its own keys, not slot by slot: an array built in code can
 * claim billions of slots that hold nothing (holes, from `length = n`), and
 * slice(), a loop or a spread visits every one. A full array is read slot by slot, as
 * before. Nothing read as `undefined` is used anywhere here, so leaving those
 * slots out changes no result.
 */
const LONG_ARRAY = 1 << 16;

/**
 * How to read `array`: its `length`, read once (a Proxy may answer another
 * length the next time), and `slots`, the indexes that hold an item, in
 * order, for a long array found to be mostly holes; `null`: read every index
 * below `length` (a short or a full array).
 */
export function arraySlots(array: readonly unknown[]): { length: number; slots: number[] | null } {
  const length = array.length;
  if (length <= LONG_ARRAY) return { length, slots: null };
  let missing = 0;
  let i = 0;
  for (; i < length && missing <= LONG_ARRAY; i++) if (array[i] === undefined) missing++;
  if (missing <= LONG_ARRAY) return { length, slots: null };
  // Mostly holes: the slots read so far, then the rest by the array's own keys (a Proxy's in any order).
  const slots: number[] = [];
  for (let j = 0; j < i; j++) if (array[j] !== undefined) slots.push(j);
  const rest: number[] = [];
  for (const key of Object.keys(array)) {
    const index = Number(key);
    if (Number.isInteger(index) && index >= i && index < length && String(index) === key) rest.push(index);
  }
  rest.sort((a, b) => a - b);
  for (const index of rest) slots.push(index);
  return { length, slots };
}

/** A snapshot of an array's items, in order (a long one's empty slots left out, see arraySlots). Throws what the array's traps throw. */
export function arrayItems(array: readonly unknown[]): unknown[] {
  const { length, slots } = arraySlots(array);
  return slots === null ? Array.prototype.slice.call(array, 0, length) : slots.map((i) => array[i]);
}

/** Property read that survives throwing getters and revoked proxies. */
export function read(value: unknown, key: string): unknown {
  if (value === null || typeof value !== "object") return undefined;
  try {
    return (value as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}
