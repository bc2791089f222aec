/**
 * The free-text rules of DESIGN §3 written the obvious way, with RegExp.
 * Two jobs: the oracle the engine scanner is property-tested against (on short
 * inputs, where backtracking is harmless) and the baseline benchmarks compare
 * with. It backtracks quadratically on hostile input; never use it in the library.
 */
import { type ScanRef } from "../../src/types.js";
import { regexpDisplayName as displayName } from "./display-name.js";

/** Python's str.isspace() set, which `\s` means in the reference rules. */
export const PY_WS = "\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const EXTS = "png|jpg|jpeg|gif|html|pdf|csv|json|txt|log|md|xlsx?|docx?|zip";
const URL_RE = new RegExp(`https?://[^${PY_WS}"'\`<>]+\\.(?:${EXTS})(?:[?#][^${PY_WS}"'\`<>]*)?`, "gu");
/** What is stripped from a match's end. */
export const TRAILING_CHARS = ".,;:)]}\"'`";
const TRAILING = new RegExp(`[${TRAILING_CHARS.replace(/[\]\\]/g, "\\$&")}]+$`, "u");

function sandboxRe(prefixes: readonly string[]): RegExp {
  const alts = prefixes.map((p) => p.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")).join("|");
  return new RegExp(`(?:${alts})[^${PY_WS}]+`, "gu");
}

export function regexpScanText(text: string, sandboxPrefixes: readonly string[] = ["/mnt/user-data/"]): ScanRef[] {
  if (typeof text !== "string" || text === "") return [];
  const out: ScanRef[] = [];
  const seen = new Set<string>();
  const take = (m: string) => {
    const ref = m.replace(TRAILING, "");
    if (ref === "" || seen.has(ref)) return;
    seen.add(ref);
    out.push({ type: "file", ref, display: displayName(ref) });
  };
  if (sandboxPrefixes.length > 0) for (const m of text.matchAll(sandboxRe(sandboxPrefixes))) take(m[0]);
  for (const m of text.matchAll(URL_RE)) take(m[0]);
  return out;
}
