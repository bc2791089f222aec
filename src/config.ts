/**
 * Configuration of the tool-artifacts middlewares (DESIGN §10): one zod
 * schema, validated eagerly when a middleware is created, accepted either as
 * the camelCase options object or as a config file's snake_case
 * `tool_artifacts` section (the section the Python implementation reads).
 */
import { resolveRedactionRule, type RedactionRuleConfig } from "langchain";
import { z } from "zod";
import { DEFAULT_SANDBOX_PREFIXES } from "./engine/scan.js";
import { isRecord, misspeltField, nearMiss, sandboxPrefixesProblem } from "./types.js";

/** A configuration value was rejected; `field` names it as the caller wrote it. */
export class ToolArtifactsConfigError extends Error {
  readonly field: string;
  constructor(field: string, detail: string) {
    super(`Invalid tool-artifacts config: ${field}: ${detail}`);
    this.name = "ToolArtifactsConfigError";
    this.field = field;
  }
}

const redactionRuleSchema = z
  .object({
    /** Built-in PII type (`email`, `credit_card`, `ip`, `mac_address`, `url`) or a custom name with a detector. */
    piiType: z.string().min(1),
    /** What happens to a match, as in `piiMiddleware`. @default "redact" */
    strategy: z.enum(["block", "redact", "mask", "hash"]).default("redact"),
    /** Custom detector: a function, a RegExp (global), or a pattern string. */
    detector: z
      .union([
        z.custom<(content: string) => Array<{ text: string; start: number; end: number }>>((v) => typeof v === "function", "expected a function"),
        // Without g, langchain's own loop over `exec` (piiMiddleware's) never
        // ends; with y, it only matches where the last match ended and
        // silently misses the rest.
        z.instanceof(RegExp).refine((r) => r.global && !r.sticky, "a RegExp detector needs the g flag and not the y flag"),
        z.string().min(1),
      ])
      .optional(),
  })
  // A misspelt `strategy` would otherwise silently fall back to "redact".
  .strict()
  .superRefine((rule, ctx) => {
    // langchain looks a built-in type up on a plain object, so "toString" or
    // "constructor" would pass as one, and every model call would then throw.
    if (rule.detector === undefined && rule.piiType in Object.prototype) {
      ctx.addIssue({ code: "custom", message: `Unknown PII type: ${rule.piiType} is no built-in PII type (a name every object inherits): provide a custom detector` });
      return;
    }
    // langchain's own resolution is the authority on what a rule means.
    try {
      resolveRedactionRule(rule);
    } catch (error) {
      ctx.addIssue({ code: "custom", message: error instanceof Error ? error.message : String(error) });
    }
  });

/** Options of `toolArtifactsMiddleware`. */
export const toolArtifactsConfigSchema = z
  .object({
    /**
     * Master switch: when off, none of the three middlewares has a hook, so
     * the agent runs as it would without them.
     * @default true
     */
    enabled: z.boolean().default(true),
    /**
     * Per-agent sliding window of registry entries; capture evicts the oldest
     * beyond it. The registry's absolute ceiling is 1000 regardless.
     * @default 100
     */
    maxEntries: z.number().int().min(10).max(1000).default(100),
    /**
     * Scan plain-text tool results and `text` blocks for sandbox paths and URLs.
     * @default true
     */
    detectRefsInText: z.boolean().default(true),
    /**
     * Show the model the available handles in a durable context block.
     * @default true
     */
    injectModelContext: z.boolean().default(true),
    /**
     * Replace handles in tool-call arguments by their references before the
     * tool runs (requires `enabled`).
     * @default true
     */
    resolveHandlesInArgs: z.boolean().default(true),
    /**
     * PII rules applied to every model-visible label of the context block,
     * in the shape of LangChain's `piiMiddleware` rules.
     * @default []
     */
    piiRules: z.array(redactionRuleSchema).default(() => []),
    /**
     * Path prefixes whose references free-text scanning recognises.
     * @default ["/mnt/user-data/"]
     */
    sandboxPrefixes: z
      .array(
        // Extraction's own check, per prefix so the error names its index:
        // a prefix it refuses would otherwise fail the first tool result.
        z.string().superRefine((prefix, ctx) => {
          const problem = sandboxPrefixesProblem([prefix]);
          if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
        }),
      )
      .default(() => [...DEFAULT_SANDBOX_PREFIXES]),
  })
  // A misspelt switch would otherwise silently leave a behaviour on.
  .strict();

/** The parsed configuration: every field filled. */
export type ToolArtifactsConfig = Omit<z.output<typeof toolArtifactsConfigSchema>, "piiRules"> & {
  piiRules: RedactionRuleConfig[];
};

/** What callers may pass: any subset of the fields. */
export type ToolArtifactsConfigInput = z.input<typeof toolArtifactsConfigSchema>;

/** What the entry points take: the lists may be read-only too (they are copied). */
type ReadonlyListsInput = Omit<ToolArtifactsConfigInput, "piiRules" | "sandboxPrefixes"> & {
  piiRules?: readonly NonNullable<ToolArtifactsConfigInput["piiRules"]>[number][] | undefined;
  sandboxPrefixes?: readonly string[] | undefined;
};

/** The snake_case section of a config file, mapped onto the camelCase fields. */
const FILE_KEYS = {
  enabled: "enabled",
  max_entries: "maxEntries",
  detect_refs_in_text: "detectRefsInText",
  inject_model_context: "injectModelContext",
  resolve_handles_in_args: "resolveHandlesInArgs",
} as const satisfies Record<string, keyof ToolArtifactsConfigInput>;

/** Every option's name, as code spells it. */
const OPTION_NAMES = Object.keys(toolArtifactsConfigSchema.shape);

/** The options a config file's section has no key for: set in code only. */
const CODE_ONLY_KEYS = OPTION_NAMES.filter((key) => !(Object.values(FILE_KEYS) as string[]).includes(key));

type FileSection = { tool_artifacts?: Partial<Record<keyof typeof FILE_KEYS, unknown>> | null | undefined };

function fieldName(path: readonly PropertyKey[], rename: (key: string) => string, root: string): string {
  let out = "";
  // An empty key is written `[""]`: `agents.` would not show there is one.
  for (const part of path) out += typeof part === "number" ? `[${part}]` : part === "" ? '[""]' : out === "" ? rename(String(part)) : `.${String(part)}`;
  return out === "" ? root : out;
}

interface ParseNames {
  /** A top-level key as the caller wrote it (snake_case for a file's section). */
  rename?: (key: string) => string;
  /** The message for an unknown top-level key. */
  unknownTopLevel?: (key: string) => string;
  /** What the whole input is called when it is itself wrong (`createTaskTool options`). */
  root?: string;
}

/** An unknown option, with the one it probably meant when it is a near miss of one. */
const unknownOption = (meant?: string) => (meant === undefined ? "unknown option" : `unknown option; did you mean ${meant}?`);

/**
 * The keys the object schema at `path` in `schema` knows, through optional,
 * default and nullable wrappers, arrays and records; none where no object
 * schema is there. So an unknown key at any depth can be named with the
 * option it was probably meant to be.
 */
function knownKeysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  let at: unknown = schema;
  for (let i = 0; ; i++) {
    while (at instanceof z.ZodOptional || at instanceof z.ZodDefault || at instanceof z.ZodNullable) at = at.unwrap();
    if (i === path.length) return at instanceof z.ZodObject ? Object.keys(at.shape) : [];
    if (at instanceof z.ZodObject) at = at.shape[String(path[i])];
    else if (at instanceof z.ZodArray) at = at.element;
    else if (at instanceof z.ZodRecord) at = at.valueType;
    else return [];
  }
}

/**
 * `input` parsed by `schema`, or a ToolArtifactsConfigError naming the first
 * unknown key, else the first bad field (`names` says how). For every
 * options object of the package, so that a bad one always fails the same way.
 */
export function parseOptions<S extends z.ZodType>(schema: S, input: unknown, names: ParseNames = {}): z.output<S> {
  const meant = (key: string, path: readonly PropertyKey[]) => unknownOption(nearMiss(key, knownKeysAt(schema, path)));
  const { rename = (k: string) => k, unknownTopLevel = (key: string) => meant(key, []), root = "(root)" } = names;
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  // An unknown key first: a misspelt one (`agent`) also leaves the option
  // it meant missing, which alone would not name the typo.
  const { issues } = result.error;
  const issue = issues.find((i) => i.code === "unrecognized_keys") ?? issues[0]!;
  if (issue.code === "unrecognized_keys") {
    const key = issue.keys[0]!;
    throw new ToolArtifactsConfigError(fieldName([...issue.path, key], rename, root), issue.path.length === 0 ? unknownTopLevel(key) : meant(key, issue.path));
  }
  throw new ToolArtifactsConfigError(fieldName(issue.path, rename, root), issue.message);
}

const parseOrThrow = (input: unknown, rename: (key: string) => string, unknownTopLevel?: (key: string) => string) =>
  parseOptions(toolArtifactsConfigSchema, input, { rename, unknownTopLevel }) as ToolArtifactsConfig;

// Read as the options, a whole config file without a section has keys of its
// own: say what to pass instead, unless the key looks like a misspelt option
// (camelCase, as every option of more than one word is). A near miss of an
// option (`enable`, `piiRule`, a section's `max_entries`) is named too, as
// beside a section.
const unknownWithoutSection = (key: string) => {
  const named = unknownOption(nearMiss(key, OPTION_NAMES));
  return /[A-Z]/.test(key)
    ? named
    : `${named} (a config file holds these settings in a tool_artifacts section; for a file that may have none, pass { tool_artifacts: file.tool_artifacts ?? {} })`;
};

/** Throws for the first key of `given` (one set, as everywhere, is not undefined) that is a near miss of one of `options`. */
function refuseNearMisses(given: object, options: readonly string[], field: (key: string) => string): void {
  const found = misspeltField(given, options, options);
  if (found !== undefined) throw new ToolArtifactsConfigError(field(found.key), unknownOption(found.meant));
}

/**
 * What every entry point takes as config: the camelCase options, a file's
 * `tool_artifacts` section, an already parsed config, or nothing (defaults).
 */
export type ToolArtifactsConfigSource = Parameters<typeof parseToolArtifactsConfig>[0];

/**
 * Validate and complete a configuration. Accepts the camelCase options
 * (`{ maxEntries: 50 }`), nothing (all defaults), or a config-file object
 * with a snake_case section (`{ tool_artifacts: { max_entries: 50 } }`; other
 * top-level sections and unknown keys of the section, which the Python
 * implementation may read, are ignored, unless near misses of an option).
 * The options a file cannot set (`piiRules`, `sandboxPrefixes`) are refused
 * in the section, spelt so or nearly (`pii_rules`), and read beside it
 * (`{ ...fileConfig, piiRules }`); the section's own options there, or
 * camelCase in it, are refused.
 *
 * @throws {ToolArtifactsConfigError} naming the offending field as written.
 *
 * @example
 * ```ts
 * parseToolArtifactsConfig({ maxEntries: 200, piiRules: [{ piiType: "email", strategy: "redact" }] });
 * const file = JSON.parse(readFileSync("agent.json", "utf8"));
 * parseToolArtifactsConfig({ tool_artifacts: file.tool_artifacts ?? {} }); // or the whole file, when it has the section
 * ```
 */
export function parseToolArtifactsConfig(input?: (ReadonlyListsInput & FileSection) | null): ToolArtifactsConfig {
  if (input === undefined || input === null) return parseOrThrow({}, (k) => k);
  if (!isRecord(input)) throw new ToolArtifactsConfigError("(root)", "expected an object");
  const { tool_artifacts: section, ...options } = input as FileSection;
  // No section, or one that is undefined (`{...options, tool_artifacts: file.tool_artifacts}`
  // for a file without one): the object is read and checked as the options.
  if (section === undefined) return parseOrThrow(options, (k) => k, unknownWithoutSection);
  if (section !== null && !isRecord(section)) throw new ToolArtifactsConfigError("tool_artifacts", "expected an object");
  const camel: Record<string, unknown> = {};
  // Errors name a field as it was written: snake_case for the section's.
  const back = new Map<string, string>();
  for (const [snake, key] of Object.entries(FILE_KEYS)) {
    // The section's options beside it (`{...fileConfig, enabled: false}`), or
    // camelCase inside it, would otherwise be dropped without a word: a kill
    // switch that does nothing. Which of two values was meant is not ours to guess.
    if (key !== snake && section && Object.hasOwn(section, key)) throw new ToolArtifactsConfigError(`tool_artifacts.${key}`, `a config file's section spells it ${snake}`);
    if (Object.hasOwn(input, key) && (input as Record<string, unknown>)[key] !== undefined) {
      throw new ToolArtifactsConfigError(key, `beside a tool_artifacts section, set tool_artifacts.${snake} instead (or pass the options without a section)`);
    }
    if (section && Object.hasOwn(section, snake) && section[snake as keyof typeof FILE_KEYS] !== undefined) {
      camel[key] = section[snake as keyof typeof FILE_KEYS];
      back.set(key, `tool_artifacts.${snake}`);
    }
  }
  // A code-only option in the section, spelt so or nearly: passed over, a file's
  // PII rules would leave every label unredacted without a word.
  const codeOnly = misspeltField(section ?? {}, [], CODE_ONLY_KEYS);
  if (codeOnly !== undefined) {
    const { key, meant } = codeOnly;
    throw new ToolArtifactsConfigError(`tool_artifacts.${key}`, `a config file's section cannot set ${meant}; pass it in code beside the section ({ ...file, ${meant} })`);
  }
  if (section) refuseNearMisses(section, Object.keys(FILE_KEYS), (key) => `tool_artifacts.${key}`);
  refuseNearMisses(options, OPTION_NAMES, (key) => key);
  // The options a file cannot set are read beside its section
  // (`{...fileConfig, piiRules}`) and validated, not dropped with the other
  // sections of the file.
  for (const key of CODE_ONLY_KEYS) {
    const value = (input as Record<string, unknown>)[key];
    if (Object.hasOwn(input, key) && value !== undefined) camel[key] = value;
  }
  return parseOrThrow(camel, (k) => back.get(k) ?? k);
}
