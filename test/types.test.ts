import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { regexpDisplayName } from "../bench/baselines/display-name.js";
import { displayName } from "../src/types.js";

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
