/**
 * Bad input to the public entry points, as plain JavaScript (or a cast) can
 * pass it: a TypeError saying what is wrong, at the call that was wrong, never
 * an internal error, a hang, or a quietly wrong result.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { HumanMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import {
  buildChildInitialState,
  displayName,
  extractArtifacts,
  orderMiddleware,
  resolveHandles,
  scanBatch,
  ScanPool,
  scanText,
  withConstraints,
} from "../src/index.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

const message = { type: "tool", tool_call_id: "c", content: "/mnt/user-data/a.txt" };
const mw = (name: string, constraints?: unknown) => ({ name, constraints }) as { name: string };

describe("clear errors for bad input", () => {
  it("scanText and extractArtifacts refuse an empty sandbox prefix, which would make every word a file", () => {
    expect(() => scanText("see /mnt/user-data/a.csv", { sandboxPrefixes: [""] })).toThrow(new TypeError("scanText: a sandbox prefix must not be empty"));
    expect(() => extractArtifacts(message, { threadId: "t", sandboxPrefixes: ["/data/", ""] })).toThrow(new TypeError("extractArtifacts: a sandbox prefix must not be empty"));
    // Also for a result with no text to scan, so whether a call fails does not depend on its content.
    expect(() => extractArtifacts({ ...message, content: "" }, { threadId: "t", sandboxPrefixes: [""] })).toThrow(/a sandbox prefix must not be empty/);
  });

  it("scanText, extractArtifacts and scanBatch refuse a lone string as sandbox prefixes, which would be read letter by letter", async () => {
    expect(() => scanText("see /mnt/user-data/a.csv", { sandboxPrefixes: "/mnt/" as never })).toThrow(new TypeError("scanText: sandboxPrefixes must be an array of strings"));
    expect(() => extractArtifacts(message, { threadId: "t", sandboxPrefixes: "/mnt/" as never })).toThrow(new TypeError("extractArtifacts: sandboxPrefixes must be an array of strings"));
    await expect(scanBatch([{ threadId: "t", message }], { sandboxPrefixes: "/mnt/" as never })).rejects.toThrow(new TypeError("scanBatch: sandboxPrefixes must be an array of strings"));
  });

  it("extractArtifacts checks its hooks, its clock's answer and its switches", () => {
    const call = (options: object) => () => extractArtifacts(message, { threadId: "t", ...options } as never);
    expect(call({ now: 5 })).toThrow(new TypeError("extractArtifacts: options.now must be a function (got number)"));
    expect(call({ now: () => 5 })).toThrow(new TypeError("extractArtifacts: options.now must return a string (ISO-8601), got number"));
    expect(call({ now: () => "yesterday" })).toThrow(new TypeError('extractArtifacts: options.now must return a string (ISO-8601), got "yesterday"'));
    expect(call({ now: () => "yesterday" })).toThrow(/got "yesterday"/); // again: only a time that passed is remembered
    expect(call({ now: () => "2025-01-02" })).toThrow(/got "2025-01-02"/); // a date without a time
    // The shape, but no such month, day or hour: Date.parse takes 2025-02-30 as March 2.
    for (const time of ["2025-13-02T03:04:05Z", "2025-02-30T03:04:05Z", "2025-04-31T03:04:05Z", "2025-02-29T03:04:05Z", "2025-01-02T24:00:00Z"]) {
      expect(call({ now: () => time })).toThrow(`got "${time}"`);
    }
    // UTC only (DESIGN §1): an entry's time is comparable as text.
    expect(call({ now: () => "2025-01-02T03:04:05-05:30" })).toThrow(/got "2025-01-02T03:04:05-05:30"/);
    // toISOString's forms (a leap day, a six-digit year), and Python's isoformat() in UTC, are taken.
    for (const time of ["2025-01-02T03:04:05.000Z", "2024-02-29T23:59:59Z", "+010000-01-01T00:00:00.000Z", "2025-01-02T03:04:05.123456+00:00"]) {
      expect(extractArtifacts(message, { threadId: "t", now: () => time }).map((e) => e.created_at)).toEqual([time]);
    }
    expect(call({ onRejectedPayload: "log" })).toThrow(/options\.onRejectedPayload must be a function/);
    expect(call({ onEngineFailure: {} })).toThrow(/options\.onEngineFailure must be a function/);
    expect(call({ detectRefsInText: "no" })).toThrow(/options\.detectRefsInText must be a boolean \(got string\)/);
    // A string index is shown as the string it is.
    expect(call({ callIndex: "1" })).toThrow('options.callIndex must be a non-negative integer (got "1")');
    expect(call({ now: () => "2025-01-01T00:00:00.000Z", detectRefsInText: false })()).toHaveLength(0);
  });

  it("displayName and resolveHandles name what they need", () => {
    expect(() => displayName(null as never)).toThrow(new TypeError("displayName: ref must be a string (got null)"));
    expect(() => displayName(5 as never)).toThrow(/got number/);
    for (const lookup of [null, {}, "art_00000000"]) expect(() => resolveHandles({ a: "x" }, lookup as never)).toThrow(/lookup must be a function or a Map/);
  });

  it("buildChildInitialState takes a string, a message or messages, not null, a number or a whole state", () => {
    for (const bad of [null, 5, [null], { messages: [new HumanMessage("x")] }]) expect(() => buildChildInitialState(bad as never)).toThrow(TypeError);
    // What createAgent itself takes: messages, plain objects, [role, content] pairs, strings.
    expect(buildChildInitialState([new HumanMessage("x"), { role: "user", content: "y" }, ["user", "z"], "w"] as never).messages).toHaveLength(4);
  });

  it("orderMiddleware and withConstraints refuse malformed lists and constraints instead of dropping the rule", () => {
    // A lone string used to be read letter by letter, so "bb" stayed first.
    expect(() => withConstraints(mw("a"), { before: "bb" } as never)).toThrow(new TypeError("withConstraints: constraints.before must be an array of middleware names"));
    expect(() => orderMiddleware([mw("bb"), mw("a", { before: "bb" })])).toThrow(new TypeError("orderMiddleware: a's constraints.before must be an array of middleware names"));
    expect(() => orderMiddleware([mw("a", { after: [5] })])).toThrow(/a's constraints\.after/);
    expect(() => withConstraints(mw("a"), 5 as never)).toThrow(/constraints must be an object/);
    expect(() => withConstraints(null as never, {})).toThrow(/expected a middleware object/);
    expect(() => orderMiddleware(null as never)).toThrow(/expected an array of middlewares/);
    expect(() => orderMiddleware([mw("a"), null] as never)).toThrow(/item 1 is not a middleware/);
    expect(() => orderMiddleware([mw("a")], { constraints: 5 } as never)).toThrow(/options\.constraints must be an array/);
    expect(() => orderMiddleware([mw("a")], { constraints: [{ before: ["a"] }] } as never)).toThrow(/options\.constraints\[0\] must be an object with a string name/);
    expect(() => orderMiddleware([mw("a")], { constraints: [{ name: "a", before: "b" }] } as never)).toThrow(/options\.constraints\[0\]\.before/);
    // Well-formed ones still work, and undefined lists are fine.
    expect(orderMiddleware([mw("bb"), withConstraints(mw("a"), { before: ["bb"] })]).map((m) => m.name)).toEqual(["a", "bb"]);
    expect(withConstraints(mw("a"), {}).constraints).toEqual({ before: [], after: [] });
    // null means none, as it always has.
    expect(withConstraints(mw("a"), null as never).constraints).toEqual({ before: [], after: [] });
    expect(orderMiddleware([mw("b"), mw("a", null), mw("c", { before: null, after: ["b"] })]).map((m) => m.name)).toEqual(["b", "a", "c"]);
  });

  // Two copies of the package in node_modules, or one loaded by both import
  // and require under tsx: each has its own ScanPool class. The built package
  // under plain Node, its pool module loaded a second time under another URL.
  it("scanBatch says a ScanPool of another copy of the package is one, and which copy to take it from", () => {
    const script = `
      const dist = new URL("./dist/", pathToFileURL(process.cwd() + "/"));
      const { scanBatch, ScanPool } = await import(new URL("index.js", dist));
      const other = await import(new URL("batch/pool.js?copy=2", dist));
      const pool = new other.ScanPool({ threads: 1 });
      const items = [{ threadId: "t", message: { type: "tool", tool_call_id: "c", content: "/mnt/user-data/a.txt" } }];
      const out = { sameClass: other.ScanPool === ScanPool };
      try { await scanBatch(items, { pool }); out.result = "scanned"; } catch (e) { out.result = e.name + ": " + e.message; }
      await pool.close();
      console.log(JSON.stringify(out));`;
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", `import { pathToFileURL } from "node:url";${script}`], { cwd: ROOT, encoding: "utf8" });
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout)).toEqual({
      sameClass: false,
      result:
        "TypeError: scanBatch: options.pool is a ScanPool of another copy of tool-artifacts (another node_modules copy, or the package loaded by both import and require); make it with the ScanPool exported beside this scanBatch",
    });
  });

  it("scanBatch and ScanPool refuse options that are no object, and a pool that is no ScanPool, instead of hanging", async () => {
    const items = Array.from({ length: 40 }, (_, i) => ({ threadId: "t", message: { ...message, tool_call_id: `c${i}` } }));
    await expect(scanBatch(items, null as never)).rejects.toThrow(new TypeError("scanBatch: options must be an object"));
    await expect(scanBatch(items, 5 as never)).rejects.toThrow(new TypeError("scanBatch: options must be an object"));
    await expect(scanBatch(null as never)).rejects.toThrow(new TypeError("scanBatch: items must be an array"));
    await expect(scanBatch(items, { pool: {} as never })).rejects.toThrow(new TypeError("scanBatch: options.pool must be a ScanPool (got object)"));
    expect(() => new ScanPool(null as never)).toThrow(new TypeError("ScanPool: options must be an object"));
    // Checked once, naming the option, not as a failure of every item.
    await expect(scanBatch(items, { createdAt: new Date() } as never)).rejects.toThrow(new TypeError("scanBatch: options.createdAt must be an ISO-8601 string (got a Date: pass date.toISOString())"));
    await expect(scanBatch(items, { createdAt: "" })).rejects.toThrow(new TypeError('scanBatch: options.createdAt must be an ISO-8601 string (got "")'));
    await expect(scanBatch(items, { createdAt: "yesterday" })).rejects.toThrow(new TypeError('scanBatch: options.createdAt must be an ISO-8601 string (got "yesterday")'));
    await expect(scanBatch(items, { detectRefsInText: 1 } as never)).rejects.toThrow(/scanBatch: options\.detectRefsInText must be a boolean/);
    await expect(scanBatch(items, { sandboxPrefixes: [""] })).rejects.toThrow(new TypeError("scanBatch: a sandbox prefix must not be empty"));
    await expect(scanBatch(items, { sandboxPrefixes: ["/\ud800"] })).rejects.toThrow(/scanBatch: sandbox prefix .* has a lone surrogate/);
    expect((await scanBatch(items.slice(0, 2), { pool: null } as never)).entries).toHaveLength(2);
  });

  it("extractArtifacts passes on an option's getter that throws; scanText refuses options that are no object, and a bad prefix list with no text", () => {
    // An option's getter that throws is the caller's error, passed on as it is (it became callIndex 0, or "got undefined").
    const boom = new Error("the host's getter");
    for (const key of ["threadId", "callIndex", "detectRefsInText", "sandboxPrefixes", "now"]) {
      const options = Object.defineProperty({ threadId: "t" }, key, { enumerable: true, get: () => { throw boom; } });
      expect(() => extractArtifacts(message, options as never)).toThrow(boom);
    }
    // A prefix passed bare is no options object; a bad prefix list fails with no text to scan too, as extraction's does.
    expect(() => scanText("see /tmp/q.txt", "/tmp/" as never)).toThrow(new TypeError('scanText: options must be an object {sandboxPrefixes?} (got "/tmp/")'));
    expect(() => scanText("see /tmp/q.txt", ["/tmp/"] as never)).toThrow(new TypeError("scanText: options must be an object {sandboxPrefixes?} (got an array)"));
    expect(() => scanText("", { sandboxPrefixes: 5 } as never)).toThrow(/^scanText: sandboxPrefixes/);
    expect(() => scanText(undefined, { sandboxPrefixes: [""] })).toThrow(new TypeError("scanText: a sandbox prefix must not be empty"));
    expect(scanText("see /mnt/user-data/q.txt", null as never).map((r) => r.ref)).toEqual(["/mnt/user-data/q.txt"]);
  });

  it("extractArtifacts, scanBatch, ScanPool and scanText refuse an option they do not know (a misspelt one would leave the default on)", async () => {
    // With the typo taken silently, text would be scanned: this result's path would be an entry.
    expect(() => extractArtifacts(message, { threadId: "t", detectRefInText: false } as never)).toThrow(
      new TypeError('extractArtifacts: unknown option "detectRefInText" (known: threadId, callIndex, detectRefsInText, sandboxPrefixes, now, onRejectedPayload, onEngineFailure)'),
    );
    expect(() => extractArtifacts(message, undefined as never)).toThrow(new TypeError("extractArtifacts: options must be an object with threadId (got undefined)"));
    expect(() => extractArtifacts(message, null as never)).toThrow(new TypeError("extractArtifacts: options must be an object with threadId (got null)"));
    const items = [{ threadId: "t", message }];
    await expect(scanBatch(items, { detectRefInText: false } as never)).rejects.toThrow(
      new TypeError('scanBatch: unknown option "detectRefInText" (known: pool, poolThreshold, callingThreadScans, signal, detectRefsInText, sandboxPrefixes, createdAt)'),
    );
    expect(() => new ScanPool({ thread: 2 } as never)).toThrow(new TypeError('ScanPool: unknown option "thread" (known: threads, idleTimeoutMs, faults)'));
    expect(() => scanText("see /tmp/q.txt", { sandboxPrefix: ["/tmp/"] } as never)).toThrow(new TypeError('scanText: unknown option "sandboxPrefix" (known: sandboxPrefixes)'));
    expect(scanText("see /tmp/q.txt", { sandboxPrefixes: ["/tmp/"] }).map((r) => r.ref)).toEqual(["/tmp/q.txt"]);
    // A key set to undefined is no option, as everywhere (a host spreading optional settings).
    expect(extractArtifacts(message, { threadId: "t", detectRefInText: undefined } as never)).not.toHaveLength(0);
    expect(scanText("see /mnt/user-data/q.txt", { sandboxPrefix: undefined } as never).map((r) => r.ref)).toEqual(["/mnt/user-data/q.txt"]);
    // Every known option is still taken.
    expect(extractArtifacts(message, { threadId: "t", callIndex: 0, detectRefsInText: true, sandboxPrefixes: ["/mnt/user-data/"], now: () => "2025-01-01T00:00:00.000Z", onRejectedPayload() {}, onEngineFailure() {} })).not.toHaveLength(0);
    expect((await scanBatch(items, { pool: undefined, poolThreshold: 10, callingThreadScans: true, detectRefsInText: true, sandboxPrefixes: ["/mnt/user-data/"], createdAt: "2025-01-01T00:00:00.000Z" })).entries[0]).not.toHaveLength(0);
    await new ScanPool({ threads: 1, idleTimeoutMs: 10, faults: {} }).close();
  });
});
