import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ToolArtifactsConfigError, parseOptions, parseToolArtifactsConfig, toolArtifactsConfigSchema } from "../src/config.js";
import { captureMiddleware, projectionMiddleware, toolArtifactsMiddleware } from "../src/middleware/index.js";
import { createTaskTool } from "../src/delegation.js";

const DEFAULTS = {
  enabled: true,
  maxEntries: 100,
  detectRefsInText: true,
  injectModelContext: true,
  resolveHandlesInArgs: true,
  piiRules: [],
  sandboxPrefixes: ["/mnt/user-data/"],
};

function fieldOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ToolArtifactsConfigError);
    expect((error as Error).message).toContain((error as ToolArtifactsConfigError).field);
    return (error as ToolArtifactsConfigError).field;
  }
  throw new Error("expected the config to be rejected");
}

describe("parseToolArtifactsConfig: camelCase options", () => {
  it("fills every default", () => {
    expect(parseToolArtifactsConfig()).toEqual(DEFAULTS);
    expect(parseToolArtifactsConfig({})).toEqual(DEFAULTS);
    expect(parseToolArtifactsConfig(null)).toEqual(DEFAULTS);
  });

  it("keeps given values", () => {
    const cfg = parseToolArtifactsConfig({ enabled: false, maxEntries: 10, detectRefsInText: false, injectModelContext: false, resolveHandlesInArgs: false, sandboxPrefixes: ["/data/", "/tmp/out/"] });
    expect(cfg).toEqual({ ...DEFAULTS, enabled: false, maxEntries: 10, detectRefsInText: false, injectModelContext: false, resolveHandlesInArgs: false, sandboxPrefixes: ["/data/", "/tmp/out/"] });
    expect(parseToolArtifactsConfig({ maxEntries: 1000 }).maxEntries).toBe(1000);
  });

  it("does not share default arrays between configs", () => {
    const a = parseToolArtifactsConfig();
    a.sandboxPrefixes.push("/x/");
    expect(parseToolArtifactsConfig().sandboxPrefixes).toEqual(["/mnt/user-data/"]);
  });

  it.each([
    [{ maxEntries: 9 }, "maxEntries"],
    [{ maxEntries: 1001 }, "maxEntries"],
    [{ maxEntries: 50.5 }, "maxEntries"],
    [{ maxEntries: "100" }, "maxEntries"],
    [{ enabled: "yes" }, "enabled"],
    [{ detectRefsInText: 1 }, "detectRefsInText"],
    [{ injectModelContext: null }, "injectModelContext"],
    [{ resolveHandlesInArgs: "false" }, "resolveHandlesInArgs"],
    [{ sandboxPrefixes: "/mnt/" }, "sandboxPrefixes"],
    [{ sandboxPrefixes: ["/ok/", ""] }, "sandboxPrefixes[1]"],
    [{ sandboxPrefixes: ["/a\ud800/"] }, "sandboxPrefixes[0]"],
    [{ sandboxPrefixes: ["/ok/", 5] }, "sandboxPrefixes[1]"],
    [{ piiRules: {} }, "piiRules"],
    [{ piiRules: [{ piiType: "email", strategy: "shred" }] }, "piiRules[0].strategy"],
    [{ piiRules: [{ piiType: "email" }, { piiType: "" }] }, "piiRules[1].piiType"],
    [{ piiRules: [{ piiType: "ssn", strategy: "redact" }] }, "piiRules[0]"],
    [{ piiRules: [{ piiType: "ssn", detector: /\d{3}-\d{2}-\d{4}/ }] }, "piiRules[0].detector"],
    // An empty pattern: langchain would take it for no detector at all.
    [{ piiRules: [{ piiType: "secret", detector: "" }] }, "piiRules[0].detector"],
    // Sticky: matches only where the last one ended, so a later secret would be missed.
    [{ piiRules: [{ piiType: "ssn", detector: /\d{3}-\d{2}-\d{4}/y }] }, "piiRules[0].detector"],
    [{ piiRules: [{ piiType: "ssn", detector: /\d{3}-\d{2}-\d{4}/gy }] }, "piiRules[0].detector"],
    [{ maxEntry: 10 }, "maxEntry"],
    [{ piiRules: [{ piiType: "email", stratgy: "block" }] }, "piiRules[0].stratgy"],
  ])("rejects %j naming %s", (input, field) => {
    expect(fieldOf(() => parseToolArtifactsConfig(input as never))).toBe(field);
  });

  it("refuses a sandbox prefix extraction would refuse, saying why, instead of failing the first tool result", () => {
    expect(() => parseToolArtifactsConfig({ sandboxPrefixes: ["/a\ud800/"] })).toThrow(/sandboxPrefixes\[0\]: sandbox prefix "\/a\\ud800\/" has a lone surrogate/);
    expect(() => parseToolArtifactsConfig({ sandboxPrefixes: [""] })).toThrow(/sandboxPrefixes\[0\]: a sandbox prefix must not be empty/);
    // Beside a file's section too.
    expect(fieldOf(() => parseToolArtifactsConfig({ tool_artifacts: {}, sandboxPrefixes: ["/ok/", "/b\udc00"] }))).toBe("sandboxPrefixes[1]");
  });

  it("says why a PII rule is unusable, in langchain's words", () => {
    expect(() => parseToolArtifactsConfig({ piiRules: [{ piiType: "ssn", strategy: "redact" }] })).toThrow(/Unknown PII type: ssn/);
  });

  it("takes no name every object inherits for a built-in PII type, which would fail every model call", () => {
    for (const piiType of ["toString", "constructor", "__proto__", "hasOwnProperty"]) {
      expect(fieldOf(() => parseToolArtifactsConfig({ piiRules: [{ piiType }] }))).toBe("piiRules[0]");
      expect(() => parseToolArtifactsConfig({ piiRules: [{ piiType }] })).toThrow(`Unknown PII type: ${piiType} is no built-in PII type`);
    }
    // With its own detector, any name will do.
    expect(parseToolArtifactsConfig({ piiRules: [{ piiType: "toString", detector: /x/g }] }).piiRules[0]!.piiType).toBe("toString");
  });

  it("accepts langchain's rule shapes: built-in types, pattern strings, global RegExps, functions", () => {
    const fn = (text: string) => (text.includes("secret") ? [{ text: "secret", start: text.indexOf("secret"), end: text.indexOf("secret") + 6 }] : []);
    const cfg = parseToolArtifactsConfig({
      piiRules: [
        { piiType: "email", strategy: "mask" },
        { piiType: "ssn", strategy: "hash", detector: "\\d{3}-\\d{2}-\\d{4}" },
        { piiType: "ticket", strategy: "redact", detector: /TICKET-\d+/g },
        { piiType: "secret", strategy: "block", detector: fn },
        { piiType: "url" },
      ],
    });
    expect(cfg.piiRules.map((r) => [r.piiType, r.strategy])).toEqual([
      ["email", "mask"],
      ["ssn", "hash"],
      ["ticket", "redact"],
      ["secret", "block"],
      ["url", "redact"],
    ]);
    expect(cfg.piiRules[3]!.detector).toBe(fn);
  });

  it("rejects a non-object", () => {
    expect(fieldOf(() => parseToolArtifactsConfig(42 as never))).toBe("(root)");
    expect(fieldOf(() => parseToolArtifactsConfig([] as never))).toBe("(root)");
  });

  it("names the function whose options are no object, not a config's root", () => {
    expect(fieldOf(() => toolArtifactsMiddleware({}, null as never))).toBe("toolArtifactsMiddleware options");
    expect(fieldOf(() => captureMiddleware({}, null as never))).toBe("captureMiddleware options");
    expect(() => projectionMiddleware({}, 5 as never)).toThrow("Invalid tool-artifacts config: projectionMiddleware options: Invalid input: expected object, received number");
    expect(fieldOf(() => createTaskTool(undefined as never))).toBe("createTaskTool options");
  });

  it("names the option an unknown key of any options object was probably meant to be, at any depth", () => {
    const said = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        return (err as Error).message.replace("Invalid tool-artifacts config: ", "");
      }
      return "no error";
    };
    expect(said(() => toolArtifactsMiddleware({}, { captur: {} } as never))).toBe("captur: unknown option; did you mean capture?");
    expect(said(() => toolArtifactsMiddleware({}, { projection: { blockPlacment: "user-turn" } } as never))).toBe("projection.blockPlacment: unknown option; did you mean blockPlacement?");
    expect(said(() => captureMiddleware({}, { extrac: () => [] } as never))).toBe("extrac: unknown option; did you mean extract?");
    expect(said(() => projectionMiddleware({}, { labelMaxChar: 40 } as never))).toBe("labelMaxChar: unknown option; did you mean labelMaxChars?");
    expect(said(() => parseToolArtifactsConfig({ piiRules: [{ piiType: "email", strategy: "redact", detectr: /x/ }] } as never))).toBe("piiRules[0].detectr: unknown option; did you mean detector?");
    // No option near it: the plain message.
    expect(said(() => projectionMiddleware({}, { colour: "red" } as never))).toBe("colour: unknown option");
  });

  it("names the near miss through a nullable object, a record's values and an object inside an object (parseOptions, for any schema)", () => {
    const schema = z
      .object({
        outer: z.object({ inner: z.object({ width: z.number() }).strict() }).strict().nullable(),
        byName: z.record(z.string(), z.object({ height: z.number() }).strict()).optional(),
      })
      .strict();
    const said = (input: unknown) => {
      try {
        parseOptions(schema, input);
      } catch (err) {
        return (err as Error).message.replace("Invalid tool-artifacts config: ", "");
      }
      return "no error";
    };
    expect(said({ outer: { inner: { widht: 1 } } })).toBe("outer.inner.widht: unknown option; did you mean width?");
    expect(said({ outer: null, byName: { a: { heigth: 1 } } })).toBe("byName.a.heigth: unknown option; did you mean height?");
  });

  it("exposes the schema itself", () => {
    expect(toolArtifactsConfigSchema.parse({})).toEqual(DEFAULTS);
  });
});

describe("parseToolArtifactsConfig: snake_case config-file section", () => {
  it("maps the five keys", () => {
    const cfg = parseToolArtifactsConfig({
      tool_artifacts: { enabled: false, max_entries: 250, detect_refs_in_text: false, inject_model_context: false, resolve_handles_in_args: false },
    });
    expect(cfg).toEqual({ ...DEFAULTS, enabled: false, maxEntries: 250, detectRefsInText: false, injectModelContext: false, resolveHandlesInArgs: false });
  });

  it("fills defaults for a missing or empty section and ignores other sections and keys", () => {
    expect(parseToolArtifactsConfig({ tool_artifacts: null })).toEqual(DEFAULTS);
    expect(parseToolArtifactsConfig({ tool_artifacts: {} })).toEqual(DEFAULTS);
    expect(parseToolArtifactsConfig({ models: { x: 1 }, tool_artifacts: { max_entries: 20, future_key: true } } as never).maxEntries).toBe(20);
  });

  it("reads the options a file cannot set beside its section, validated; the section's own stay the section's", () => {
    const piiRules = [{ piiType: "email", strategy: "redact" }] as const;
    const fileConfig = { models: { x: 1 }, tool_artifacts: { max_entries: 200 } };
    const cfg = parseToolArtifactsConfig({ ...fileConfig, piiRules: [...piiRules], sandboxPrefixes: ["/workspace/"] });
    expect(cfg).toEqual({ ...DEFAULTS, maxEntries: 200, piiRules, sandboxPrefixes: ["/workspace/"] });
    expect(fieldOf(() => parseToolArtifactsConfig({ tool_artifacts: { max_entries: 200 }, piiRules: "nonsense" } as never))).toBe("piiRules");
  });

  it("refuses the options a file cannot set inside its section, spelt so or nearly: passed over, a file's PII rules would redact nothing", () => {
    const rules = [{ piiType: "email" }];
    for (const key of ["pii_rules", "piiRules", "PII_RULES", "pii_rule"]) {
      expect(fieldOf(() => parseToolArtifactsConfig({ tool_artifacts: { max_entries: 20, [key]: rules } } as never))).toBe(`tool_artifacts.${key}`);
    }
    expect(() => parseToolArtifactsConfig({ tool_artifacts: { sandbox_prefixes: ["/workspace/"] } } as never)).toThrow(
      "Invalid tool-artifacts config: tool_artifacts.sandbox_prefixes: a config file's section cannot set sandboxPrefixes; pass it in code beside the section ({ ...file, sandboxPrefixes })",
    );
    // Given as undefined it is no setting, as everywhere; beside the section it is read.
    expect(parseToolArtifactsConfig({ tool_artifacts: { pii_rules: undefined } } as never)).toEqual(DEFAULTS);
    expect(parseToolArtifactsConfig({ tool_artifacts: {}, piiRules: rules } as never).piiRules).toEqual([{ piiType: "email", strategy: "redact" }]);
  });

  it("refuses the section's own options beside it or in camelCase inside it, which it would otherwise drop", () => {
    // `{...fileConfig, enabled: false}` as a kill switch must not do nothing.
    const fileConfig = { models: { x: 1 }, tool_artifacts: { max_entries: 200 } };
    expect(() => parseToolArtifactsConfig({ ...fileConfig, enabled: false } as never)).toThrow(/enabled: beside a tool_artifacts section, set tool_artifacts\.enabled/);
    expect(fieldOf(() => parseToolArtifactsConfig({ ...fileConfig, maxEntries: 50 } as never))).toBe("maxEntries");
    expect(fieldOf(() => parseToolArtifactsConfig({ tool_artifacts: null, injectModelContext: false } as never))).toBe("injectModelContext");
    expect(() => parseToolArtifactsConfig({ tool_artifacts: { maxEntries: 500 } } as never)).toThrow(/tool_artifacts\.maxEntries: a config file's section spells it max_entries/);
    // An option given as undefined is no option, as everywhere.
    expect(parseToolArtifactsConfig({ ...fileConfig, enabled: undefined } as never)).toEqual({ ...DEFAULTS, maxEntries: 200 });
  });

  it("refuses near misses of its options, in the section and beside it, which would otherwise do nothing", () => {
    const models = { x: 1 };
    expect(() => parseToolArtifactsConfig({ models, tool_artifacts: { enable: false } } as never)).toThrow(/tool_artifacts\.enable: unknown option; did you mean enabled\?/);
    expect(fieldOf(() => parseToolArtifactsConfig({ tool_artifacts: { max_entry: 50 } } as never))).toBe("tool_artifacts.max_entry");
    expect(fieldOf(() => parseToolArtifactsConfig({ tool_artifacts: { "resolve-handles-in-args": false } } as never))).toBe("tool_artifacts.resolve-handles-in-args");
    expect(() => parseToolArtifactsConfig({ models, tool_artifacts: {}, piiRule: [] } as never)).toThrow(/piiRule: unknown option; did you mean piiRules\?/);
    expect(fieldOf(() => parseToolArtifactsConfig({ tool_artifacts: {}, sandbox_prefixes: ["/w/"] } as never))).toBe("sandbox_prefixes");
    // At the edges: two edits of a short option (a transposition), a key three letters shorter than a long one.
    expect(() => parseToolArtifactsConfig({ tool_artifacts: { enabeld: false } } as never)).toThrow(/tool_artifacts\.enabeld: unknown option; did you mean enabled\?/);
    expect(() => parseToolArtifactsConfig({ tool_artifacts: { inject_model_ctxt: false } } as never)).toThrow(/did you mean inject_model_context\?/);
    // Keys far from every option are the file's or Python's, as before; undefined is no key.
    expect(parseToolArtifactsConfig({ models, tool_artifacts: { enabled: false, future_key: 1 }, piiRule: undefined } as never)).toEqual({ ...DEFAULTS, enabled: false });
  });

  it("names the option a near miss was meant to be without a section too, as beside one", () => {
    expect(() => parseToolArtifactsConfig({ piiRule: [] } as never)).toThrow(/piiRule: unknown option; did you mean piiRules\?$/);
    // A key without capitals may be a config file's own: where a file holds the settings is said too.
    expect(() => parseToolArtifactsConfig({ enable: false } as never)).toThrow(/enable: unknown option; did you mean enabled\? \(a config file holds these settings in a tool_artifacts section/);
    expect(() => parseToolArtifactsConfig({ sandboxPrefix: ["/w/"] } as never)).toThrow(/sandboxPrefix: unknown option; did you mean sandboxPrefixes\?$/);
    expect(() => parseToolArtifactsConfig({ maxEntrie: 50, tool_artifacts: undefined } as never)).toThrow(/maxEntrie: unknown option; did you mean maxEntries\?$/);
  });

  it("takes a section that is undefined as no section: the options beside it are read and checked", () => {
    expect(fieldOf(() => parseToolArtifactsConfig({ maxEntries: 5, tool_artifacts: undefined }))).toBe("maxEntries");
    expect(parseToolArtifactsConfig({ maxEntries: 50, enabled: false, tool_artifacts: undefined })).toEqual({ ...DEFAULTS, maxEntries: 50, enabled: false });
    expect(fieldOf(() => parseToolArtifactsConfig({ tool_artifacts: undefined, maxEntry: 10 } as never))).toBe("maxEntry");
  });

  it("says how to pass a config file that has no section, which reads as options with unknown keys", () => {
    const file = { models: { default: "gpt-4o" } } as Record<string, unknown>;
    expect(() => parseToolArtifactsConfig(file as never)).toThrow(
      "Invalid tool-artifacts config: models: unknown option (a config file holds these settings in a tool_artifacts section; for a file that may have none, pass { tool_artifacts: file.tool_artifacts ?? {} })",
    );
    expect(parseToolArtifactsConfig({ tool_artifacts: (file.tool_artifacts as never) ?? {} })).toEqual(DEFAULTS);
    // A misspelt option (camelCase) or an unknown key inside a value is no file's section: the plain message.
    expect(() => parseToolArtifactsConfig({ maxEntrys: 50 } as never)).toThrow(/maxEntrys: unknown option; did you mean maxEntries\?$/);
    expect(() => parseToolArtifactsConfig({ maxTokens: 50 } as never)).toThrow(/maxTokens: unknown option$/);
    // A section's own key without its section: the option it names, and where a file holds it.
    expect(() => parseToolArtifactsConfig({ max_entries: 50 } as never)).toThrow(/max_entries: unknown option; did you mean maxEntries\? \(a config file holds/);
    expect(() => parseToolArtifactsConfig({ piiRules: [{ piiType: "email", strategy: "redact", colour: "red" }] } as never)).toThrow(/piiRules\[0\]\.colour: unknown option$/);
  });

  it("names an unknown key before a bad value listed ahead of it: the typo also leaves its option unset", () => {
    expect(fieldOf(() => parseToolArtifactsConfig({ maxEntries: 5, piiRules: [{ piiType: "email", strat: "x" }] } as never))).toBe("piiRules[0].strat");
  });

  it("names the snake_case field it rejects", () => {
    expect(fieldOf(() => parseToolArtifactsConfig({ tool_artifacts: { max_entries: 5000 } }))).toBe("tool_artifacts.max_entries");
    expect(fieldOf(() => parseToolArtifactsConfig({ tool_artifacts: { resolve_handles_in_args: "no" } }))).toBe("tool_artifacts.resolve_handles_in_args");
    expect(fieldOf(() => parseToolArtifactsConfig({ tool_artifacts: "on" } as never))).toBe("tool_artifacts");
  });
});
