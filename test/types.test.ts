import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { extractArtifacts } from "../src/extract.js";
import { regexpDisplayName } from "../bench/baselines/display-name.js";
import { describeValue, displayName, nearMiss, sameKey, sandboxPrefixesProblem, timestampProblem } from "../src/types.js";

describe("displayName", () => {
  it.each([
    ["/mnt/user-data/a/b.csv", "b.csv"],
    ["https://ex.com/a.png?x=1#f", "a.png"],
    ["https://ex.com/dir/?q=/x/y", "dir"],
    ["C:\\reports\\q3.xlsx", "q3.xlsx"],
    ["C:/reports/q3.xlsx", "q3.xlsx"],
    ["/mnt/user-data/out/", "out"],
    ["/a//", "a"],
    ["/mnt/user-data/../", ".."],
    // In a path, `?`, `#` and `\` are part of a name (DESIGN §3: the last `/` segment).
    ["/mnt/user-data/report#1.csv", "report#1.csv"],
    ["/mnt/user-data/what?.txt", "what?.txt"],
    ["/mnt/user-data/a\\b.txt", "a\\b.txt"],
    ["/mnt/user-data/?x", "?x"],
    ["HTTPS://ex.com/a#b/c.png", "a"],
    ["s3+x.y://bucket/k?v=/1", "k"],
    ["C:\\a/b\\c.txt", "c.txt"],
    // A URL with no path: its authority.
    ["https://x.com/?a=1", "x.com"],
    ["https://h", "h"],
  ])("%s → %s", (ref, name) => expect(displayName(ref)).toBe(name));

  it.each(["http://", "https:", "/", "", "?x=1", "//"])("falls back to the whole reference for %j", (ref) => {
    expect(displayName(ref)).toBe(ref);
  });

  it("treats a last segment shaped like a bare URL scheme as empty", () => {
    expect(displayName("/data/http:")).toBe("/data/http:");
    expect(displayName("/data/a b:")).toBe("a b:");
  });

  it("agrees with the rule written with RegExp (the benches' oracle) on references built from its delimiters", () => {
    const piece = fc.constantFrom("/", "\\", "?", "#", ":", "//", "://", "C:", "c:\\", "http", "s3+x.y", "a", "b.csv", ".", " ", "é", "😀");
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 8 }), (parts) => {
        const ref = parts.join("");
        expect(displayName(ref)).toBe(regexpDisplayName(ref));
      }),
      { numRuns: 3000 },
    );
  });
});

describe("option and field checks", () => {
  it("a sandbox prefix holding U+FFFD is refused (it would match a lone surrogate in text)", () => {
    expect(sandboxPrefixesProblem(["/mnt/\ufffd/"])).toMatch(/lone surrogate or U\+FFFD/);
    expect(() => extractArtifacts({ content: "x", tool_call_id: "c" }, { threadId: "t", sandboxPrefixes: ["/d\ufffd/"] })).toThrow(TypeError);
  });

  it("describeValue cuts a string only past 40 characters", () => {
    expect(describeValue("a".repeat(40))).toBe(JSON.stringify("a".repeat(40)));
    expect(describeValue("a".repeat(41))).toBe(JSON.stringify(`${"a".repeat(40)}…`));
  });

  it("a -00:00 offset is UTC too", () => {
    expect(timestampProblem("2025-01-01T00:00:00-00:00")).toBeUndefined();
    expect(timestampProblem("2025-01-01T00:00:00+00:00")).toBeUndefined();
    expect(timestampProblem("2025-01-01T00:00:00+01:00")).toBeDefined();
  });

  it("toISOString's six-digit form of a year before 0 is accepted", () => {
    const iso = new Date(Date.UTC(-5, 0, 1)).toISOString();
    expect(iso.startsWith("-000005-")).toBe(true);
    expect(timestampProblem(iso)).toBeUndefined();
  });

  it("detectRefsInText null is refused, not taken as the default", () => {
    expect(() => extractArtifacts({ content: "x", tool_call_id: "c" }, { threadId: "t", detectRefsInText: null as never })).toThrow(TypeError);
  });

  it("a key with dashes is the same key as its camelCase", () => {
    expect(sameKey("call-index", "callIndex")).toBe(true);
    expect(nearMiss("max-entrie", ["maxEntries"])).toBe("maxEntries");
  });
});
