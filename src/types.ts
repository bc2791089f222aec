/** Shapes shared by the engine facade, extraction, the registry and the middleware. */

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
  mime_type?: string;
  created_at: string;
  consumed_by?: string[];
}

/** Registry directive: keep only the N most recent entries (first-seen order). */
export interface TrimDirective {
  op: "trim_to";
  keep: number;
}

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
  if (URL_START.test(ref)) {
    for (let i = 0; i < ref.length; i++) {
      const c = ref.charCodeAt(i);
      if (c === 0x3f /* ? */ || c === 0x23 /* # */) {
        end = i;
        break;
      }
    }
  }
  const backslashToo = DRIVE_START.test(ref);
  const isSeparator = (c: number) => c === 0x2f /* / */ || (backslashToo && c === 0x5c) /* \ */;
  while (end > 0 && isSeparator(ref.charCodeAt(end - 1))) end--;
  let start = end;
  while (start > 0 && !isSeparator(ref.charCodeAt(start - 1))) start--;
  if (start === end) return ref;
  const seg = ref.slice(start, end);
  return ref.charCodeAt(end - 1) === 0x3a /* : */ && /^[a-z][a-z0-9+.-]*:$/i.test(seg) ? ref : seg;
}

const URL_START = /^[a-z][a-z0-9+.-]*:\/\//i;
const DRIVE_START = /^[a-z]:[\\/]/i;

// Both sides of one problem: text reaches the engine as UTF-8, where a lone
// surrogate becomes U+FFFD, so either in a prefix would match the other in
// text, which Python's regex never does (DESIGN §3).
const LONE_SURROGATE_OR_FFFD = /\p{Surrogate}|\ufffd/u;

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
 * Why the scan options `detectRefsInText` and `sandboxPrefixes` (as read
 * from an options object) cannot be used (undefined: they can). The one
 * check behind extraction's, the batch options' and the line path's.
 */
export function scanOptionsProblem(detectRefsInText: unknown, sandboxPrefixes: unknown): string | undefined {
  if (detectRefsInText !== undefined && typeof detectRefsInText !== "boolean") return `options.detectRefsInText must be a boolean (got ${typeof detectRefsInText})`;
  return sandboxPrefixes === undefined ? undefined : sandboxPrefixesProblem(sandboxPrefixes);
}
