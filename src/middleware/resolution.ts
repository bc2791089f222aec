/**
 * Resolution (DESIGN §6): handles in tool-call arguments are replaced by their
 * real references before the tool runs, so every inner middleware (the
 * policies) and the tool see concrete paths and URLs, while the message
 * history keeps the handles the model wrote. A call naming a handle the
 * registry does not hold is refused with an error result the model can act on.
 * A structured response (`responseFormat`) gets its known handles resolved
 * too, and the ToolMessage that records it is marked for capture.
 */
import { createMiddleware, ToolMessage } from "langchain";
import { parseToolArtifactsConfig, ToolArtifactsConfigError, type ToolArtifactsConfigSource } from "../config.js";
import { argumentHandles, findHandles, resolveHandles } from "../handles.js";
import { WELL_KNOWN_MIDDLEWARE, withConstraints } from "../ordering.js";
import { currentEntries, isUsableEntry, registryStateSchema } from "../registry.js";
import { markStructuredResponse, structuredResultOf } from "./structured.js";

export const RESOLUTION_MIDDLEWARE_NAME = "tool-artifacts-resolution";

/** How many handles an error result lists, of the missing ones and of the current ones. */
const LISTED = 10;

/**
 * The references of `wanted` handles: each from the handle's latest usable
 * entry (newest first, as `currentEntries` picks it). One pass over the
 * registry with a set probe is cheaper than indexing 1000 entries per call.
 */
function lookUp(registry: unknown, wanted: readonly string[]): Map<string, string> {
  const want = new Set(wanted);
  const found = new Map<string, string>();
  if (!Array.isArray(registry)) return found; // a channel another writer left unusable
  for (let i = registry.length - 1; i >= 0 && found.size < want.size; i--) {
    const entry = registry[i];
    // The set probe first: the full check runs only for the entries asked for.
    const handle = (entry as { handle?: unknown } | null | undefined)?.handle;
    if (typeof handle === "string" && want.has(handle) && !found.has(handle) && isUsableEntry(entry)) found.set(handle, entry.real_ref);
  }
  return found;
}

/**
 * The refusal shown to the model. Handles only, no display names: this text
 * bypasses the projection's PII policy.
 */
export function unknownHandlesMessage(missing: readonly string[], registry: unknown): string {
  const sorted = [...missing].sort();
  let named = sorted.slice(0, LISTED).join(", ");
  if (sorted.length > LISTED) named += ` and ${sorted.length - LISTED} more`;
  // Only handles a call could use: stored text that is no handle (another
  // writer's junk, an instruction) must not reach the model from here.
  const current = currentEntries(registry, LISTED).map((entry) => entry.handle);
  const available = current.length === 0 ? "No artifact handles are currently available." : `Current handles (most recent first): ${current.join(", ")}.`;
  return (
    `The tool was not run: unknown or expired artifact handle${sorted.length === 1 ? "" : "s"} ${named}. ${available} ` +
    "Use a current handle or a concrete reference (a path, URL or id you were given); do not guess handles."
  );
}

/**
 * The resolution middleware. Resolves tool args when `config.enabled &&
 * config.resolveHandlesInArgs` (otherwise it has no `wrapToolCall` hook);
 * calls whose arguments are not an object or hold no handle pass through
 * untouched. Carries its ordering `constraints`.
 *
 * @example
 * ```ts
 * const config = parseToolArtifactsConfig({ resolveHandlesInArgs: true });
 * const agent = createAgent({ model, tools, middleware: orderMiddleware([authorization, resolutionMiddleware(config)]) });
 * ```
 */
export function resolutionMiddleware(input?: ToolArtifactsConfigSource, options?: never) {
  // It takes no options: ones passed as captureMiddleware and
  // projectionMiddleware take theirs would otherwise be ignored unseen.
  if (options !== undefined) throw new ToolArtifactsConfigError("resolutionMiddleware", "takes no options, only the config");
  const config = parseToolArtifactsConfig(input);
  const active = config.enabled && config.resolveHandlesInArgs;
  const middleware = createMiddleware({
    name: RESOLUTION_MIDDLEWARE_NAME,
    // The registry alone: this hook runs on every model call (see registryStateSchema).
    stateSchema: registryStateSchema,
    // Only the hooks the configuration uses. langchain treats an error a tool
    // throws through any wrapToolCall hook as fatal (unless the agent's
    // ToolNode has handleToolErrors: true), so a hook that could only pass
    // calls on must not be there: with the feature off, nothing changes.
    //
    // A structured response (`responseFormat`) is the agent's answer to its
    // caller, who has no registry: its known handles are resolved the way a
    // tool's args are; unknown ones stay as written (there is no call to
    // refuse). The history keeps what the model wrote. The ToolMessage
    // langchain writes for it is marked for capture whenever the feature is
    // on (it answers no tool); marking here, not in capture, spares capture
    // a hook that would have langchain parse the ledger on every model call.
    wrapModelCall: !config.enabled ? undefined : async (request, handler) => {
      const result = await handler(request);
      let structured = structuredResultOf(result);
      if (structured === null) return result;
      structured = markStructuredResponse(structured);
      const handles = active ? findHandles(structured.structuredResponse) : [];
      const refs = handles.length === 0 ? null : lookUp(request.state.tool_artifacts, handles);
      if (refs !== null && refs.size > 0) structured = { ...structured, structuredResponse: resolveHandles(structured.structuredResponse, refs) };
      // The handler's type claims an AIMessage; a structured result goes back in its own shape.
      return structured as unknown as typeof result;
    },
    wrapToolCall: !active ? undefined : (request, handler) => {
      const { toolCall } = request;
      const args: unknown = toolCall.args;
      const handles = argumentHandles(args);
      if (handles.length === 0) return handler(request);

      const registry: unknown = request.state.tool_artifacts;
      const refs = lookUp(registry, handles);
      if (refs.size < handles.length) {
        return new ToolMessage({
          content: unknownHandlesMessage(
            handles.filter((h) => !refs.has(h)),
            registry,
          ),
          tool_call_id: toolCall.id ?? "",
          name: toolCall.name,
          status: "error",
        });
      }
      return handler({ ...request, toolCall: { ...toolCall, args: resolveHandles(args as Record<string, unknown>, refs) } });
    },
  });
  // Inside the receipt layer (a receipt records what the model asked for),
  // outside every policy (a policy must judge the real reference, not an opaque handle).
  const known = WELL_KNOWN_MIDDLEWARE;
  return withConstraints(middleware, {
    after: [known.toolReceipt],
    // An emulated tool is given what the tool would be: real references, never an unknown handle.
    before: [known.authorization, known.guardrail, known.sandboxAudit, known.readBeforeWrite, known.toolProgress, known.toolEmulator],
  });
}
