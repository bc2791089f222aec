import { describe, expect, it } from "vitest";
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
  ])("%s → %s", (ref, name) => expect(displayName(ref)).toBe(name));

  it.each(["http://", "https:", "/", "", "?x=1", "//"])("falls back to the whole reference for %j", (ref) => {
    expect(displayName(ref)).toBe(ref);
  });

  it("treats a last segment shaped like a bare URL scheme as empty", () => {
    expect(displayName("/data/http:")).toBe("/data/http:");
    expect(displayName("/data/a b:")).toBe("a b:");
  });
});
