import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { createMiddleware, summarizationMiddleware } from "langchain";
import { captureMiddleware } from "../src/middleware/capture.js";
import { ScriptedChatModel } from "../src/testing/scripted-model.js";
import { MiddlewareOrderingError, orderMiddleware, orderingName, withConstraints, type OrderingConstraints } from "../src/ordering.js";

type Mw = { name: string; constraints?: OrderingConstraints };
const mw = (name: string, constraints?: OrderingConstraints): Mw => (constraints ? { name, constraints } : { name });
const names = (list: readonly { name: string }[]) => list.map((m) => m.name);

const POLICIES = ["authorization", "guardrail", "sandbox-audit", "read-before-write", "tool-progress"];
const capture = () => mw("tool-artifacts-capture", { before: ["summarization"] });
const resolution = () => mw("tool-artifacts-resolution", { after: ["tool-receipt"], before: POLICIES });
const projection = () => mw("tool-artifacts-projection");

/** Every (earlier, later) pair a list's constraints demand, by position. */
function violations(list: readonly Mw[]): string[] {
  const bad: string[] = [];
  const pos = (name: string) => list.flatMap((m, i) => (orderingName(m) === name ? [i] : []));
  list.forEach((m, i) => {
    for (const b of m.constraints?.before ?? []) for (const j of pos(b)) if (orderingName(m) !== b && j < i) bad.push(`${m.name} before ${b}`);
    for (const a of m.constraints?.after ?? []) for (const j of pos(a)) if (orderingName(m) !== a && j > i) bad.push(`${m.name} after ${a}`);
  });
  return bad;
}

describe("orderMiddleware", () => {
  it("moves resolution inside the receipt layer and outside the policies", () => {
    const out = orderMiddleware([mw("authorization"), mw("tool-progress"), resolution(), mw("tool-receipt"), mw("logging")]);
    expect(names(out)).toEqual(["tool-receipt", "tool-artifacts-resolution", "authorization", "tool-progress", "logging"]);
  });

  it("brings forward what a constraint names rather than moving the host's middlewares between", () => {
    // Resolution must wrap authorization; nothing orders authorization and
    // the retry layer, which the host put inside it (authorization runs once
    // however often the tool is retried), and that stays so.
    const out = orderMiddleware([mw("authorization"), mw("retry"), capture(), resolution(), projection()]);
    expect(names(out)).toEqual(["tool-artifacts-resolution", "authorization", "retry", "tool-artifacts-capture", "tool-artifacts-projection"]);
  });

  it("brings forward several middlewares in the host's order among them", () => {
    const out = orderMiddleware([mw("summarization"), mw("a", { before: ["summarization"] }), mw("b", { before: ["summarization"] })]);
    expect(names(out)).toEqual(["a", "b", "summarization"]);
  });

  it("keeps a list that already satisfies every constraint exactly as given", () => {
    const list = [mw("tool-receipt"), capture(), mw("summarization"), resolution(), ...POLICIES.map((p) => mw(p)), projection()];
    expect(orderMiddleware(list)).toEqual(list);
  });

  it("moves capture before LangChain.js's own summarization middleware, which counts as 'summarization'", () => {
    const summarization = summarizationMiddleware({ model: new ScriptedChatModel([]), trigger: { messages: 50 } });
    expect(summarization.name).toBe("SummarizationMiddleware");
    expect(orderingName(summarization)).toBe("summarization");
    const first = mw("first");
    const out = orderMiddleware([first, summarization, capture(), projection()]);
    expect(names(out)).toEqual(["first", "tool-artifacts-capture", "SummarizationMiddleware", "tool-artifacts-projection"]);
    expect(out[2]).toBe(summarization);
  });

  it("matches a built-in named by its own name in constraints as well as by its alias", () => {
    const summarization = summarizationMiddleware({ model: new ScriptedChatModel([]), trigger: { messages: 50 } });
    const notes = () => mw("notes");
    expect(names(orderMiddleware([summarization, withConstraints(notes(), { before: [summarization.name] })]))).toEqual(["notes", "SummarizationMiddleware"]);
    expect(names(orderMiddleware([notes(), summarization], { constraints: [{ name: summarization.name, before: ["notes"] }] }))).toEqual(["SummarizationMiddleware", "notes"]);
  });

  it("accepts host constraints for middlewares that declare none", () => {
    const out = orderMiddleware([mw("a"), mw("b"), mw("c")], { constraints: [{ name: "c", before: ["a"] }, { name: "b", after: ["c"] }] });
    expect(names(out)).toEqual(["c", "a", "b"]);
  });

  it("ignores constraints naming middlewares that are absent", () => {
    const list = [resolution(), capture(), projection()];
    expect(orderMiddleware(list)).toEqual(list);
    expect(orderMiddleware(list, { constraints: [{ name: "absent", before: ["tool-artifacts-projection"] }] })).toEqual(list);
  });

  it("applies a constraint to every middleware carrying the name", () => {
    const out = orderMiddleware([mw("guardrail"), mw("x"), mw("guardrail"), resolution()]);
    expect(names(out)).toEqual(["tool-artifacts-resolution", "guardrail", "x", "guardrail"]);
  });

  it("returns the same middleware objects, without touching the input list", () => {
    const list = [mw("authorization"), resolution()];
    const copy = [...list];
    const out = orderMiddleware(list);
    expect(list).toEqual(copy);
    expect(out[0]).toBe(list[1]);
  });

  it("names the cycle in a clear error", () => {
    const list = [mw("a", { before: ["b"] }), mw("b", { before: ["c"] }), mw("c", { before: ["a"] }), mw("free")];
    let error: unknown;
    try {
      orderMiddleware(list);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(MiddlewareOrderingError);
    const cycle = (error as MiddlewareOrderingError).cycle;
    expect(cycle[0]).toBe(cycle.at(-1));
    expect(new Set(cycle)).toEqual(new Set(["a", "b", "c"]));
    expect((error as Error).message).toMatch(/cycle: (a|b|c) → (a|b|c) → (a|b|c) → (a|b|c)/);
  });

  it("names only the middlewares of the cycle, not those passed on the way to it", () => {
    // The search for the cycle passes x, d and e first, which lead nowhere (e only to d, already searched).
    const list = [mw("x", { after: ["a"] }), mw("a", { before: ["d", "e", "b"] }), mw("d"), mw("e", { before: ["d"] }), mw("b", { before: ["a"] })];
    expect(() => orderMiddleware(list)).toThrow(expect.objectContaining({ cycle: ["a", "b", "a"] }));
  });

  it("names only the cycle when the search met it from a middleware that leads into it", () => {
    // k leads into b ⇄ c, and c before k closes a larger loop: the search from k meets b again first.
    const list = [mw("k", { before: ["b"] }), mw("b", { before: ["c"] }), mw("c", { before: ["b", "k"] })];
    expect(() => orderMiddleware(list)).toThrow(expect.objectContaining({ cycle: ["b", "c", "b"] }));
  });

  it("names a cycle among the middlewares not placed yet, not one a placed middleware leads to", () => {
    // p is placed first and leads into u ⇄ v; the ordering stops at x ⇄ y, earlier in the list.
    const list = [mw("p", { before: ["u"] }), mw("x", { before: ["y"] }), mw("y", { before: ["x"] }), mw("u", { before: ["v"] }), mw("v", { before: ["u"] })];
    expect(() => orderMiddleware(list)).toThrow(expect.objectContaining({ cycle: ["x", "y", "x"] }));
  });

  it("reports a two-party contradiction between before and after", () => {
    expect(() => orderMiddleware([resolution(), mw("authorization", { before: ["tool-artifacts-resolution"] })])).toThrow(/cycle: .*tool-artifacts-resolution.*authorization|cycle: .*authorization.*tool-artifacts-resolution/);
  });
});

describe("withConstraints", () => {
  it("returns a copy with the constraints added, brand and hooks intact", () => {
    const base = createMiddleware({ name: "sandbox-audit", wrapToolCall: (req, handler) => handler(req) });
    const once = withConstraints(base, { after: ["tool-receipt"] });
    const twice = withConstraints(once, { after: ["tool-receipt", "x"], before: ["tool-progress"] });
    expect((base as { constraints?: unknown }).constraints).toBeUndefined();
    expect(twice.constraints).toEqual({ before: ["tool-progress"], after: ["tool-receipt", "x"] });
    expect(twice.wrapToolCall).toBe(base.wrapToolCall);
    expect(Object.getOwnPropertySymbols(twice)).toEqual(Object.getOwnPropertySymbols(base));
  });
});

describe("orderMiddleware properties", () => {
  // A hidden global rank keeps random constraints acyclic: a middleware may only
  // demand to precede higher ranks and follow lower ones.
  const RANK: Record<string, number> = { "tool-receipt": 0, "tool-artifacts-capture": 1, summarization: 2, "tool-artifacts-resolution": 3, authorization: 4, guardrail: 5, "sandbox-audit": 6, "read-before-write": 7, "tool-progress": 8, "tool-artifacts-projection": 9 };
  const BASE = () => [capture(), resolution(), projection(), mw("tool-receipt"), mw("summarization"), ...POLICIES.map((p) => mw(p))];

  const scenario = fc
    .record({
      baseOrder: fc.shuffledSubarray(BASE(), { minLength: 3 }),
      extensions: fc.array(fc.record({ rank: fc.double({ min: -1, max: 10, noNaN: true }), wantBefore: fc.array(fc.nat(), { maxLength: 3 }), wantAfter: fc.array(fc.nat(), { maxLength: 3 }), at: fc.nat() }), { maxLength: 8 }),
    })
    .map(({ baseOrder, extensions }) => {
      const list: Mw[] = [...baseOrder];
      const rank = new Map(Object.entries(RANK));
      extensions.forEach((ext, k) => {
        const name = `ext-${k}`;
        const known = [...rank.keys()];
        const before = [...new Set(ext.wantBefore.map((i) => known[i % known.length]!).filter((n) => rank.get(n)! > ext.rank))];
        const after = [...new Set(ext.wantAfter.map((i) => known[i % known.length]!).filter((n) => rank.get(n)! < ext.rank))];
        rank.set(name, ext.rank);
        list.splice(ext.at % (list.length + 1), 0, mw(name, before.length || after.length ? { before, after } : undefined));
      });
      return list;
    });

  it("honours every constraint after random insertion of extension middlewares", () => {
    fc.assert(
      fc.property(scenario, (list) => {
        const out = orderMiddleware(list);
        expect([...out].sort((a, b) => a.name.localeCompare(b.name))).toEqual([...list].sort((a, b) => a.name.localeCompare(b.name)));
        expect(violations(out)).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });

  it("is stable: an ordered list is a fixed point, and unconstrained middlewares keep their relative order", () => {
    fc.assert(
      fc.property(scenario, (list) => {
        const out = orderMiddleware(list);
        expect(orderMiddleware(out)).toEqual(out);
        const mentioned = new Set(list.flatMap((m) => (m.constraints ? [m.name, ...(m.constraints.before ?? []), ...(m.constraints.after ?? [])] : [])));
        const free = (l: readonly Mw[]) => names(l).filter((n) => !mentioned.has(n));
        expect(free(out)).toEqual(free(list));
        // Only what must precede another is ever moved forward: the rest keep their order.
        const precedes = (m: Mw) =>
          list.some((o) => o.name !== m.name && ((m.constraints?.before ?? []).includes(o.name) || (o.constraints?.after ?? []).includes(m.name)));
        const staying = (l: readonly Mw[]) => l.filter((m) => !precedes(m)).map((m) => m.name);
        expect(staying(out)).toEqual(staying(list));
      }),
      { numRuns: 300 },
    );
  });
});

describe("withConstraints: constraints the middleware carries", () => {
  it("keeps the `before` constraints the middleware already carries", () => {
    const twice = withConstraints(withConstraints(mw("audit"), { before: ["a"] }), { before: ["b", "a"] });
    expect(twice.constraints).toEqual({ before: ["a", "b"], after: [] });
    // Capture's own constraint survives a host adding one: it still goes before summarization.
    const capture = withConstraints(captureMiddleware(), { after: ["tool-receipt"] });
    expect(capture.constraints).toEqual({ before: ["summarization", "model-call-limit"], after: ["pii", "tool-receipt"] });
    const summarization = summarizationMiddleware({ model: new ScriptedChatModel([]), trigger: { messages: 50 } });
    expect(names(orderMiddleware([summarization, capture]))).toEqual(["tool-artifacts-capture", "SummarizationMiddleware"]);
  });
});

describe("orderMiddleware: constraints on the middleware itself (DESIGN §8's {name, before?, after?})", () => {
  it("honours before and after set on a middleware object, beside those in its constraints", () => {
    // Dropped, the audit would run outside resolution and see handles, not references.
    const audit = { name: "sandbox-audit", after: ["tool-artifacts-resolution"] };
    expect(names(orderMiddleware([audit, resolution()]))).toEqual(["tool-artifacts-resolution", "sandbox-audit"]);
    expect(names(orderMiddleware([{ name: "a" }, { name: "b", before: ["a"] }]))).toEqual(["b", "a"]);
    const both = { name: "c", before: ["a"], constraints: { before: ["b"] } };
    expect(names(orderMiddleware([mw("a"), mw("b"), both]))).toEqual(["c", "a", "b"]);
    // Its constraints' `before` counts beside its own, also where the host's order would not already give it.
    expect(names(orderMiddleware([mw("b"), mw("a"), both]))).toEqual(["c", "b", "a"]);
    // withConstraints keeps them in its copy.
    expect(names(orderMiddleware([mw("a"), mw("b"), withConstraints({ name: "c", before: ["a"] }, { before: ["b"] })]))).toEqual(["c", "a", "b"]);
    expect(() => orderMiddleware([{ name: "a", before: ["b"] }, { name: "b", before: ["a"] }])).toThrow(MiddlewareOrderingError);
  });

  it("refuses a before or after on the middleware that is no list of names", () => {
    expect(() => orderMiddleware([mw("b"), { name: "a", before: "b" } as never])).toThrow(new TypeError("orderMiddleware: a.before must be an array of middleware names"));
    expect(() => orderMiddleware([mw("b"), { name: "a", after: [5] } as never])).toThrow(new TypeError("orderMiddleware: a.after must be an array of middleware names"));
    expect(() => withConstraints({ name: "a", before: "b" } as never, {})).toThrow(new TypeError("withConstraints: a.before must be an array of middleware names"));
  });
});

describe("orderMiddleware: malformed lists and inherited names", () => {
  it("refuses a non-string name, constraints given as an array, and a carried constraint that is no list", () => {
    const raw = (name: unknown, constraints?: unknown) => ({ name, constraints }) as Mw;
    expect(() => orderMiddleware([mw("a"), raw(5)])).toThrow(new TypeError("orderMiddleware: item 1 is not a middleware (an object with a string name)"));
    expect(() => orderMiddleware([raw("a", ["b"]), mw("b")])).toThrow(new TypeError("orderMiddleware: a's constraints must be an object {before?, after?}"));
    expect(() => withConstraints(raw("a", { before: "bb" }), {})).toThrow(new TypeError("withConstraints: a's constraints.before must be an array of middleware names"));
  });

  it("refuses a misspelt key wherever constraints are given, which would leave a policy on the wrong side of resolution", () => {
    const raw = (name: string, constraints: unknown) => ({ name, constraints }) as Mw;
    const typo = { befor: ["tool-artifacts-resolution"] } as OrderingConstraints;
    expect(() => withConstraints(mw("sandbox-audit"), typo)).toThrow(
      new TypeError('withConstraints: constraints: unknown option "befor" (known: before, after)'),
    );
    expect(() => withConstraints(raw("sandbox-audit", typo), {})).toThrow(/^withConstraints: sandbox-audit's constraints: unknown option "befor"/);
    expect(() => orderMiddleware([raw("sandbox-audit", typo), resolution()])).toThrow(/^orderMiddleware: sandbox-audit's constraints: unknown option "befor"/);
    expect(() => orderMiddleware([mw("sandbox-audit"), resolution()], { constraints: [{ name: "sandbox-audit", afterr: ["x"] } as never] })).toThrow(
      new TypeError('orderMiddleware: options.constraints[0]: unknown option "afterr" (known: name, before, after)'),
    );
    expect(() => orderMiddleware([mw("a")], { constraint: [] } as never)).toThrow(new TypeError('orderMiddleware: unknown option "constraint" (known: constraints)'));
    expect(() => orderMiddleware([mw("a")], 5 as never)).toThrow(new TypeError("orderMiddleware: options must be an object {constraints?}"));
    // Spelt right, the same constraint moves the audit inside resolution.
    expect(names(orderMiddleware([mw("sandbox-audit"), resolution()]))).toEqual(["tool-artifacts-resolution", "sandbox-audit"]);
    expect(names(orderMiddleware([mw("a")], null as never))).toEqual(["a"]);
    // A key set to undefined is none, as in every options object of the package.
    expect(names(orderMiddleware([resolution(), raw("logging", { befor: undefined, before: ["tool-artifacts-resolution"] })]))).toEqual(["logging", "tool-artifacts-resolution"]);
  });

  it("takes a middleware named like an Object.prototype member by its name, and a PII type with a line break as pii", () => {
    expect(orderingName({ name: "constructor" })).toBe("constructor");
    expect(() => orderMiddleware([mw("toString", { before: ["b"] }), mw("b", { before: ["toString"] })])).toThrow(expect.objectContaining({ cycle: ["toString", "b", "toString"] }));
    expect(names(orderMiddleware([mw("after-pii", { after: ["pii"] }), mw("PIIMiddleware[a\nb]")]))).toEqual(["PIIMiddleware[a\nb]", "after-pii"]);
  });
});

describe("orderMiddleware: a built-in and its alias", () => {
  it("matches every piiMiddleware (named PIIMiddleware[type]) by pii as well as by its own name, and the other built-ins by their aliases", () => {
    const builtIns = ["ModelCallLimitMiddleware", "ToolEmulatorMiddleware", "LLMToolSelector", "modelRetryMiddleware", "PIIMiddleware[email]"];
    expect(builtIns.map((name) => orderingName({ name }))).toEqual(["model-call-limit", "tool-emulator", "llm-tool-selector", "model-retry", "PIIMiddleware[email]"]);
    // Every one of them is moved ahead of what must follow pii; names merely like theirs are not.
    const list = [mw("after-pii", { after: ["pii"] }), mw("PIIMiddleware[email]"), mw("other"), mw("PIIMiddleware[api key]"), mw("PIIMiddleware"), mw("xPIIMiddleware[url]")];
    expect(names(orderMiddleware(list))).toEqual(["PIIMiddleware[email]", "PIIMiddleware[api key]", "after-pii", "other", "PIIMiddleware", "xPIIMiddleware[url]"]);
    // Nor is a name that only begins like theirs.
    expect(names(orderMiddleware([mw("after-pii", { after: ["pii"] }), mw("PIIMiddleware[url]-audit")]))).toEqual(["after-pii", "PIIMiddleware[url]-audit"]);
    // Each keeps its own name: constraints between two of them, or naming one, still hold.
    const between = [mw("PIIMiddleware[email]"), mw("x", { after: ["PIIMiddleware[email]"] }), mw("PIIMiddleware[url]", { after: ["x"] })];
    expect(names(orderMiddleware(between))).toEqual(["PIIMiddleware[email]", "x", "PIIMiddleware[url]"]);
    const host = [mw("PIIMiddleware[url]"), mw("PIIMiddleware[email]")];
    expect(names(orderMiddleware(host, { constraints: [{ name: "PIIMiddleware[email]", before: ["PIIMiddleware[url]"] }] }))).toEqual(["PIIMiddleware[email]", "PIIMiddleware[url]"]);
  });


  it("ignores a constraint between a built-in's own name and its alias: the same middleware", () => {
    // Both count as `summarization`; a constraint between them is one on itself.
    const list = [mw("SummarizationMiddleware"), mw("summarization", { before: ["SummarizationMiddleware"] })];
    expect(orderMiddleware(list)).toEqual(list);
    const twins = [mw("summarization", { after: ["summarization"] }), mw("SummarizationMiddleware", { after: ["summarization"] })];
    expect(orderMiddleware(twins)).toEqual(twins);
  });
});

describe("orderMiddleware: `after` set on the middleware itself", () => {
  // DESIGN §8's {name, before?, after?} on a middleware: an `after` alone, or beside a `before`, counts.
  it.each([
    ["after alone", { name: "x", after: ["y"] }],
    ["after beside before", { name: "x", before: ["z"], after: ["y"] }],
  ])("%s", (_, x) => {
    const out = orderMiddleware([x, { name: "y" }, { name: "z" }]).map((m) => m.name);
    expect(out.indexOf("y")).toBeLessThan(out.indexOf("x"));
    if ("before" in x) expect(out.indexOf("x")).toBeLessThan(out.indexOf("z"));
  });
});
