import { execFile } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { parseToolArtifactsConfig } from "../src/config.js";
import { canonicalJson, policyFingerprint } from "../src/fingerprint.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const MODULE = pathToFileURL(fileURLToPath(new URL("../src/fingerprint.ts", import.meta.url))).href;

// Evaluated verbatim here and in a child process, so detectors (RegExps,
// functions) are the same source in both.
const CASES_SOURCE = `[
  {},
  { injectModelContext: false },
  { maxEntries: 250, sandboxPrefixes: ["/data/", "/mnt/user-data/"] },
  { piiRules: [
    { piiType: "email", strategy: "hash" },
    { piiType: "api_key", strategy: "block", detector: /sk-[a-z0-9]{8}/gi },
    { piiType: "ticket", strategy: "mask", detector: (text) => text.indexOf("T-") < 0 ? [] : [{ text: "T-", start: text.indexOf("T-"), end: text.indexOf("T-") + 2 }] },
    { piiType: "phone", strategy: "redact", detector: "\\\\d{3}-\\\\d{4}" },
  ] },
]`;
const cases = new Function(`return ${CASES_SOURCE}`)() as Array<Parameters<typeof policyFingerprint>[0]>;

describe("policyFingerprint", () => {
  it("is the same in a fresh process", async () => {
    const script = `import { policyFingerprint } from ${JSON.stringify(MODULE)};
const cases = ${CASES_SOURCE};
process.stdout.write(JSON.stringify(cases.map((c) => policyFingerprint(c))));`;
    const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", "--input-type=module", "--eval", script], { cwd: ROOT });
    const here = cases.map((c) => policyFingerprint(c));
    expect(JSON.parse(stdout)).toEqual(here);
    expect(new Set(here).size).toBe(cases.length);
    for (const hex of here) expect(hex).toMatch(/^[0-9a-f]{64}$/);
  });

  it("pins the default policy, so recorded fingerprints never drift silently", () => {
    // If this changes on purpose, bump FINGERPRINT_VERSION in src/fingerprint.ts.
    expect(policyFingerprint({})).toBe("432ff494d6e5030ca5322f77fa691bc8a931e1dcdc3c75e6f8180ab8a85737a0");
  });

  it("fills defaults first: every spelling of one policy agrees", () => {
    const base = policyFingerprint({});
    expect(policyFingerprint()).toBe(base);
    expect(policyFingerprint(parseToolArtifactsConfig({}))).toBe(base);
    expect(policyFingerprint({ tool_artifacts: {} } as never)).toBe(base);
    expect(
      policyFingerprint({
        sandboxPrefixes: ["/mnt/user-data/"],
        resolveHandlesInArgs: true,
        piiRules: [],
        maxEntries: 100,
        injectModelContext: true,
        enabled: true,
        detectRefsInText: true,
      }),
    ).toBe(base);
    expect(policyFingerprint({ tool_artifacts: { inject_model_context: false } } as never)).toBe(policyFingerprint({ injectModelContext: false }));
    // `strategy` defaults to "redact", as in piiMiddleware.
    expect(policyFingerprint({ piiRules: [{ piiType: "email" } as never] })).toBe(policyFingerprint({ piiRules: [{ piiType: "email", strategy: "redact" }] }));
  });

  it("moves with every behaviour switch, limit, prefix and PII rule", () => {
    const email = { piiType: "email", strategy: "redact" } as const;
    const ip = { piiType: "ip", strategy: "redact" } as const;
    const variants = {
      defaults: {},
      enabledOff: { enabled: false },
      textScanOff: { detectRefsInText: false },
      projectionOff: { injectModelContext: false },
      resolutionOff: { resolveHandlesInArgs: false },
      maxEntries101: { maxEntries: 101 },
      otherPrefix: { sandboxPrefixes: ["/data/"] },
      twoPrefixes: { sandboxPrefixes: ["/mnt/user-data/", "/data/"] },
      twoPrefixesSwapped: { sandboxPrefixes: ["/data/", "/mnt/user-data/"] },
      email: { piiRules: [email] },
      emailMasked: { piiRules: [{ ...email, strategy: "mask" }] },
      emailThenIp: { piiRules: [email, ip] },
      ipThenEmail: { piiRules: [ip, email] },
      regex: { piiRules: [{ piiType: "key", strategy: "redact", detector: /sk-\w+/g }] },
      regexOtherSource: { piiRules: [{ piiType: "key", strategy: "redact", detector: /pk-\w+/g }] },
      regexOtherFlags: { piiRules: [{ piiType: "key", strategy: "redact", detector: /sk-\w+/gi }] },
      // Same source and flags, but its own exec decides what it matches.
      regexSubclass: { piiRules: [{ piiType: "key", strategy: "redact", detector: new (class extends RegExp { override exec(s: string) { return s.length > 3 ? super.exec(s) : null; } })("sk-\\w+", "g") }] },
      patternString: { piiRules: [{ piiType: "key", strategy: "redact", detector: "sk-\\w+" }] },
      fn: { piiRules: [{ piiType: "key", strategy: "redact", detector: () => [] }] },
      fnOther: { piiRules: [{ piiType: "key", strategy: "redact", detector: (t: string) => (t ? [] : []) }] },
    } satisfies Record<string, Parameters<typeof policyFingerprint>[0]>;
    const prints = Object.values(variants).map((v) => policyFingerprint(v));
    expect(new Set(prints).size).toBe(prints.length);
    // The middleware exposes this, so the projection switch alone must tell runs apart.
    expect(policyFingerprint(variants.projectionOff)).not.toBe(policyFingerprint(variants.defaults));
  });

  it("rejects a config it cannot fingerprint, naming the field", () => {
    expect(() => policyFingerprint({ maxEntries: 5 })).toThrow(/maxEntries/);
    expect(() => policyFingerprint({ injectModelContex: false } as never)).toThrow(/injectModelContex/);
  });
});

describe("canonicalJson", () => {
  it("sorts keys at every level, drops undefined, spells detectors", () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: null, y: undefined }], c: "x" } })).toBe('{"a":{"c":"x","d":[2,{"z":null}]},"b":1}');
    expect(canonicalJson(/a\/b/gi)).toBe('{"$regexp":{"flags":"gi","source":"a\\\\/b"}}');
    expect(canonicalJson((x: number) => x + 1)).toBe(`{"$function":${JSON.stringify(((x: number) => x + 1).toString())}}`);
    expect(canonicalJson({ a: 1, b: 2 })).toBe(canonicalJson({ b: 2, a: 1 }));
  });
});

describe("canonicalJson: values a host may spoof or JSON may confuse", () => {
  it("spells a function by its source, whatever its own toString says, and a bigint as a string, not as the number", () => {
    const f = () => 1;
    Object.defineProperty(f, "toString", { value: () => "spoofed" });
    expect(canonicalJson(f)).toBe(`{"$function":${JSON.stringify("() => 1")}}`);
    expect(canonicalJson(10n)).toBe('"10"');
  });
});

describe("canonicalJson: numbers JSON cannot write", () => {
  it("spells numbers JSON cannot write as strings, not as null", () => {
    expect(canonicalJson([Infinity, -Infinity, NaN, null])).toBe('["Infinity","-Infinity","NaN",null]');
  });
});
