/**
 * Declarative middleware ordering (DESIGN §8). In a LangChain.js agent the
 * first middleware of the list is the outermost `wrapToolCall`/`wrapModelCall`
 * layer and runs its `beforeModel` first, so "before" means "earlier in the
 * list" means "outside". Middlewares state what they must precede or follow,
 * by name; `orderMiddleware` turns any host list into one that honours them.
 */
import { isRecord, unknownOptionProblem } from "./types.js";

/** What a middleware must precede (`before`) or follow (`after`), by name. */
export interface OrderingConstraints {
  before?: readonly string[] | undefined;
  after?: readonly string[] | undefined;
}

/** A constraint stated for a named middleware, possibly by someone else (the host). */
export interface OrderingConstraint extends OrderingConstraints {
  name: string;
}

/** Names the ordering vocabulary relies on. */
export const WELL_KNOWN_MIDDLEWARE = {
  toolReceipt: "tool-receipt",
  authorization: "authorization",
  guardrail: "guardrail",
  sandboxAudit: "sandbox-audit",
  readBeforeWrite: "read-before-write",
  toolProgress: "tool-progress",
  summarization: "summarization",
  // Beyond DESIGN §8's list: LangChain.js built-ins whose place relative to
  // capture, resolution or projection decides what is captured, what a tool
  // is given, or what a model is shown.
  pii: "pii",
  modelCallLimit: "model-call-limit",
  toolEmulator: "tool-emulator",
  llmToolSelector: "llm-tool-selector",
  modelRetry: "model-retry",
} as const;

/** LangChain.js built-ins, by the name they carry, mapped onto the vocabulary. */
const BUILT_IN_ALIASES: Readonly<Record<string, string>> = {
  SummarizationMiddleware: WELL_KNOWN_MIDDLEWARE.summarization,
  ModelCallLimitMiddleware: WELL_KNOWN_MIDDLEWARE.modelCallLimit,
  ToolEmulatorMiddleware: WELL_KNOWN_MIDDLEWARE.toolEmulator,
  LLMToolSelector: WELL_KNOWN_MIDDLEWARE.llmToolSelector,
  modelRetryMiddleware: WELL_KNOWN_MIDDLEWARE.modelRetry,
};

/** A name as constraints match it: a built-in's own name and its alias are the same middleware. */
const canonical = (name: string): string => (Object.hasOwn(BUILT_IN_ALIASES, name) ? BUILT_IN_ALIASES[name]! : name);

/**
 * `piiMiddleware(type)` is named `PIIMiddleware[type]`: one per type, each
 * keeping its own name (a host may order them among themselves) and all of
 * them matched by `pii` as well.
 */
const PII_NAME = /^PIIMiddleware\[.*\]$/s;
const groupsOf = (name: string): readonly string[] => (PII_NAME.test(name) ? [WELL_KNOWN_MIDDLEWARE.pii] : []);

/** The name a middleware is matched by in constraints. */
export function orderingName(middleware: { name: string }): string {
  return canonical(middleware.name);
}

/**
 * A middleware object that may carry its own constraints: as `before` and
 * `after` on itself (DESIGN §8's `{name, before?, after?}`), or as
 * `constraints` (what `withConstraints` adds); both count.
 */
export type Constrained<M> = M & OrderingConstraints & { constraints?: OrderingConstraints | undefined };

/**
 * A copy of `middleware` carrying `constraints` (added to any it already
 * declares); the original object is left alone, since it may be shared.
 *
 * @example
 * ```ts
 * const audit = withConstraints(createMiddleware({ name: "sandbox-audit", wrapToolCall }), { after: ["tool-receipt"] });
 * ```
 */
export function withConstraints<M extends { name: string }>(middleware: Constrained<M>, constraints: OrderingConstraints): M & { constraints: OrderingConstraints } {
  if (typeof middleware !== "object" || middleware === null) throw new TypeError("withConstraints: expected a middleware object");
  // Checked now, where a mistake is made, rather than when the list is ordered.
  carriedBy(middleware, "withConstraints");
  constraintsOf(constraints, "withConstraints: constraints");
  const own = middleware.constraints ?? {};
  return {
    ...middleware,
    constraints: {
      before: [...new Set([...(own.before ?? []), ...(constraints?.before ?? [])])],
      after: [...new Set([...(own.after ?? []), ...(constraints?.after ?? [])])],
    },
  };
}

/** The ordering constraints are contradictory; `cycle` lists the names around the loop. */
export class MiddlewareOrderingError extends Error {
  readonly cycle: string[];
  constructor(cycle: string[]) {
    super(`Middleware ordering constraints form a cycle: ${cycle.join(" → ")}. Remove or change one of these before/after constraints.`);
    this.name = "MiddlewareOrderingError";
    this.cycle = cycle;
  }
}

/** The names of a `before` or `after` list; `where` names the constraint for the error a malformed one gets. */
function namesOf(value: unknown, where: string): string[] {
  if (value === undefined || value === null) return [];
  // A lone string would otherwise be read character by character, and the constraint lost.
  if (!Array.isArray(value) || !value.every((n) => typeof n === "string")) throw new TypeError(`${where} must be an array of middleware names`);
  return value.map(canonical);
}

const CONSTRAINT_KEYS = ["before", "after"] as const satisfies readonly (keyof OrderingConstraints)[];
const HOST_CONSTRAINT_KEYS = ["name", ...CONSTRAINT_KEYS] as const satisfies readonly (keyof OrderingConstraint)[];

/**
 * `constraints` checked (an object, if given), with its lists of canonical
 * names. A misspelt key (`befor`) is refused: dropped, it would leave a
 * policy on the wrong side of resolution without a word.
 */
function constraintsOf(value: unknown, where: string, keys: readonly string[] = CONSTRAINT_KEYS): { before: string[]; after: string[] } {
  if (value === undefined || value === null) return { before: [], after: [] };
  if (!isRecord(value)) throw new TypeError(`${where} must be an object {before?, after?}`);
  const unknown = unknownOptionProblem(value, keys);
  if (unknown !== undefined) throw new TypeError(`${where}: ${unknown}`);
  const { before, after } = value as OrderingConstraints;
  return { before: namesOf(before, `${where}.before`), after: namesOf(after, `${where}.after`) };
}

/**
 * The constraints `middleware` carries, checked (`op` names the caller in an
 * error): `before`/`after` on itself and in its `constraints`.
 */
function carriedBy(middleware: Constrained<{ name: string }>, op: string): { before: string[]; after: string[] } {
  const inner = constraintsOf(middleware.constraints, `${op}: ${middleware.name}'s constraints`);
  if (middleware.before === undefined && middleware.after === undefined) return inner;
  const own = constraintsOf({ before: middleware.before, after: middleware.after }, `${op}: ${middleware.name}`);
  return { before: [...own.before, ...inner.before], after: [...own.after, ...inner.after] };
}

/**
 * `list` reordered so every constraint holds: those the middlewares carry
 * (`before`/`after` on the middleware, or in its `.constraints`) and those
 * given in `options.constraints`. Constraints naming
 * middlewares that are not in the list are ignored; a LangChain.js built-in
 * is matched by its own name and by its alias (`SummarizationMiddleware`,
 * `summarization`). Where no constraint
 * speaks the host's order is kept: a list that already satisfies every
 * constraint comes back in the same order, and unconstrained middlewares keep
 * their relative order. The list is taken in order, and a middleware that
 * must follow others not yet placed goes in right after them, brought
 * forward in their own order: what moves is what a constraint names, not the
 * middlewares listed between (`[authorization, toolRetry,
 * ...toolArtifactsMiddleware()]` gives resolution, authorization, toolRetry,
 * capture, projection: the host's own middlewares in its order). The result is typed as the input
 * tuple so `createAgent` still infers the middlewares' state; only the
 * positions may differ.
 *
 * @throws {MiddlewareOrderingError} when the constraints form a cycle, naming it.
 *
 * @example
 * ```ts
 * const agent = createAgent({
 *   model,
 *   tools,
 *   middleware: orderMiddleware([authorization, summarizationMiddleware({ model, trigger }), ...toolArtifactsMiddleware(config)]),
 * });
 * ```
 */
export function orderMiddleware<const T extends readonly Constrained<{ name: string }>[]>(list: T, options: { constraints?: readonly OrderingConstraint[] | undefined } = {}): T {
  if (!Array.isArray(list)) throw new TypeError("orderMiddleware: expected an array of middlewares");
  list.forEach((mw: unknown, i) => {
    if (typeof mw !== "object" || mw === null || typeof (mw as { name?: unknown }).name !== "string") {
      throw new TypeError(`orderMiddleware: item ${i} is not a middleware (an object with a string name)`);
    }
  });
  const given: unknown = options ?? {};
  if (typeof given !== "object" || given === null) throw new TypeError("orderMiddleware: options must be an object {constraints?}");
  const unknown = unknownOptionProblem(given, ["constraints"]);
  if (unknown !== undefined) throw new TypeError(`orderMiddleware: ${unknown}`);
  const hostConstraints: unknown = (given as { constraints?: unknown }).constraints ?? [];
  if (!Array.isArray(hostConstraints)) throw new TypeError("orderMiddleware: options.constraints must be an array of {name, before?, after?}");
  const n = list.length;
  const byName = new Map<string, number[]>();
  const names = list.map(orderingName);
  names.forEach((name, i) => {
    for (const key of [name, ...groupsOf(name)]) {
      const at = byName.get(key);
      if (at === undefined) byName.set(key, [i]);
      else at.push(i);
    }
  });

  const successors: Array<Set<number>> = Array.from({ length: n }, () => new Set());
  const edge = (from: number, to: number) => {
    if (names[from] !== names[to]) successors[from]!.add(to);
  };
  const declare = (subjects: readonly number[], c: { before: string[]; after: string[] }) => {
    for (const other of c.before) for (const j of byName.get(other) ?? []) for (const i of subjects) edge(i, j);
    for (const other of c.after) for (const j of byName.get(other) ?? []) for (const i of subjects) edge(j, i);
  };
  list.forEach((mw, i) => declare([i], carriedBy(mw, "orderMiddleware")));
  hostConstraints.forEach((c: unknown, k) => {
    const name = (c as OrderingConstraint | null)?.name;
    if (typeof name !== "string") throw new TypeError(`orderMiddleware: options.constraints[${k}] must be an object with a string name`);
    declare(byName.get(canonical(name)) ?? [], constraintsOf(c, `orderMiddleware: options.constraints[${k}]`, HOST_CONSTRAINT_KEYS));
  });

  const predecessors: number[][] = Array.from({ length: n }, () => []);
  successors.forEach((next, i) => {
    for (const j of next) predecessors[j]!.push(i);
  });
  const placed = new Array<boolean>(n).fill(false);
  const onPath = new Array<boolean>(n).fill(false);
  const out: Array<T[number]> = [];
  // In the host's order, each middleware goes in once the ones it must follow
  // are in, those brought forward (in the host's order) just before it: what
  // moves is what a constraint names, not the middlewares between.
  const place = (i: number) => {
    if (placed[i]) return;
    if (onPath[i]) throw new MiddlewareOrderingError(findCycle(successors, placed).map((k) => names[k]!));
    onPath[i] = true;
    for (const j of predecessors[i]!.sort((a, b) => a - b)) place(j);
    onPath[i] = false;
    placed[i] = true;
    out.push(list[i]!);
  };
  for (let i = 0; i < n; i++) place(i);
  // Typed as the input list: createAgent infers the agent's state from the
  // middleware tuple type, and every element is still there (in another order).
  return out as unknown as T;
}

/** A cycle among the unplaced middlewares (one exists when none is ready), first node repeated at the end. */
function findCycle(successors: ReadonlyArray<ReadonlySet<number>>, placed: readonly boolean[]): number[] {
  const state = new Array<0 | 1 | 2>(successors.length).fill(0); // 0 new, 1 on the path, 2 done
  const path: number[] = [];
  const visit = (i: number): number[] | null => {
    state[i] = 1;
    path.push(i);
    for (const j of successors[i]!) {
      if (placed[j]) continue;
      if (state[j] === 1) return [...path.slice(path.indexOf(j)), j];
      if (state[j] === 0) {
        const found = visit(j);
        if (found) return found;
      }
    }
    path.pop();
    state[i] = 2;
    return null;
  };
  for (let i = 0; i < successors.length; i++) {
    if (!placed[i] && state[i] === 0) {
      const found = visit(i);
      if (found) return found;
    }
  }
  return [];
}
