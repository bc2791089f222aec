/**
 * Policy fingerprint (DESIGN §7): a stable hash of the behaviour-relevant
 * configuration, so a host can tell runs under different policies apart
 * (e.g. record it next to a checkpoint or a trace). Same policy, same hex,
 * in any process; any switch, limit, prefix or PII rule of the config that
 * changes what the middlewares do changes it. Two limits: a function
 * detector is known by its source text, so closures that differ only in
 * what they captured (a factory's detectors) and bound functions (all
 * `[native code]`) share a fingerprint, and a build that rewrites the text
 * (a minifier) changes it; and the projection's own options (budgets,
 * sections) are not config and are not in it.
 */
import { parseToolArtifactsConfig, type ToolArtifactsConfigSource } from "./config.js";
import { sha256Hex } from "./engine/hash.js";

/** Bumped when the meaning of a field changes, so old fingerprints never collide with new ones. */
const FINGERPRINT_VERSION = 1;

/**
 * JSON with object keys sorted at every level, `undefined` members dropped,
 * and the values JSON cannot write (detectors) spelled deterministically: a
 * RegExp by source and flags, a function by its source text.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "string" || typeof value === "boolean") return JSON.stringify(value);
  if (typeof value === "number") return Number.isFinite(value) ? JSON.stringify(value) : JSON.stringify(String(value));
  if (typeof value === "bigint") return JSON.stringify(value.toString());
  if (value instanceof RegExp) {
    // A subclass's own exec decides what it matches (projection runs it).
    const exec = value.exec === RegExp.prototype.exec ? undefined : Function.prototype.toString.call(value.exec);
    return canonicalJson({ $regexp: { source: value.source, flags: value.flags, exec } });
  }
  if (typeof value === "function") return canonicalJson({ $function: Function.prototype.toString.call(value) });
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object") {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record)
      .filter((key) => record[key] !== undefined)
      .sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`).join(",")}}`;
  }
  return JSON.stringify(String(value));
}

/**
 * The fingerprint of a configuration: hex SHA-256 of the canonical JSON of
 * every behaviour field, after defaults are filled (so `{}` and the spelled-out
 * defaults agree). Fields are picked by name, so a field added to the
 * config later moves the fingerprint only once it is listed here.
 *
 * @example
 * ```ts
 * policyFingerprint(parseToolArtifactsConfig({ injectModelContext: false })) !== policyFingerprint({});
 * ```
 */
export function policyFingerprint(config: ToolArtifactsConfigSource = {}): string {
  const parsed = parseToolArtifactsConfig(config);
  const policy = {
    version: FINGERPRINT_VERSION,
    enabled: parsed.enabled,
    maxEntries: parsed.maxEntries,
    detectRefsInText: parsed.detectRefsInText,
    injectModelContext: parsed.injectModelContext,
    resolveHandlesInArgs: parsed.resolveHandlesInArgs,
    // Order matters for both: rules apply in turn, prefixes scan in turn.
    piiRules: parsed.piiRules.map(({ piiType, strategy, detector }) => ({ piiType, strategy, detector })),
    sandboxPrefixes: parsed.sandboxPrefixes,
  };
  return sha256Hex(canonicalJson(policy));
}
