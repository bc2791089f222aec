/**
 * The three tool-artifacts middlewares from one validated configuration:
 * capture (`beforeModel`), resolution (`wrapToolCall`, and `wrapModelCall`
 * for a structured response) and projection (`wrapModelCall`), in the order
 * they should sit in an agent.
 */
import { z } from "zod";
import { parseOptions, parseToolArtifactsConfig, type ToolArtifactsConfig, type ToolArtifactsConfigSource } from "../config.js";
import { captureMiddleware, captureOptionsSchema } from "./capture.js";
import { projectionMiddleware, projectionOptionsSchema } from "./projection.js";
import { resolutionMiddleware } from "./resolution.js";

export { captureMiddleware, rekeyLedger, type CaptureOptions, type LedgerState } from "./capture.js";
export { projectionMiddleware, type ProjectionOptions } from "./projection.js";
export { resolutionMiddleware } from "./resolution.js";

// Checked here as a whole, so a bad value is named by its full path
// (`projection.labelMaxChars`) and a projection option given one level up
// (`{ sections }`) fails instead of being dropped.
const toolArtifactsMiddlewareOptionsSchema = z
  .object({
    /** Options of the capture middleware. */
    capture: captureOptionsSchema.optional(),
    /** Budgets and host sections of the projection middleware. */
    projection: projectionOptionsSchema.optional(),
  })
  .strict();

/** The second argument of `toolArtifactsMiddleware`: the capture and projection middlewares' own options. */
export type ToolArtifactsMiddlewareOptions = z.input<typeof toolArtifactsMiddlewareOptionsSchema>;

type Capture = ReturnType<typeof captureMiddleware>;
type Resolution = ReturnType<typeof resolutionMiddleware>;
type Projection = ReturnType<typeof projectionMiddleware>;

/** The middlewares as a tuple to spread into `createAgent`, each also reachable by name. */
export type ToolArtifactsMiddleware = readonly [Capture, Resolution, Projection] & {
  readonly capture: Capture;
  readonly resolution: Resolution;
  readonly projection: Projection;
  /** Stable hash of the behaviour-relevant configuration, to tell runs under different policies apart. */
  readonly policyFingerprint: string;
  /** The validated configuration, every field filled. */
  readonly config: ToolArtifactsConfig;
};

/**
 * Build the tool-artifacts middlewares. The configuration (camelCase options
 * or a config file's `tool_artifacts` section) is validated here, once.
 *
 * TypeScript types a spread of this value as a plain array, so `createAgent`
 * cannot infer the two channels from it: pass `stateSchema:
 * toolArtifactsStateSchema` to the agent for typed `tool_artifacts` state.
 *
 * @throws {ToolArtifactsConfigError} naming the first unknown key, else the
 *   first bad field, of the config or of `options`.
 *
 * @example
 * ```ts
 * const artifacts = toolArtifactsMiddleware({ maxEntries: 200 });
 * const agent = createAgent({
 *   model,
 *   tools,
 *   checkpointer,
 *   stateSchema: toolArtifactsStateSchema,
 *   middleware: orderMiddleware([authorization, summarizationMiddleware({ model, trigger: { tokens: 4000 } }), ...artifacts]),
 * });
 * log.info("artifact policy", artifacts.policyFingerprint);
 * ```
 */
export function toolArtifactsMiddleware(
  config?: ToolArtifactsConfigSource,
  options: ToolArtifactsMiddlewareOptions = {},
): ToolArtifactsMiddleware {
  const parsed = parseToolArtifactsConfig(config);
  parseOptions(toolArtifactsMiddlewareOptionsSchema, options, { root: "toolArtifactsMiddleware options" });
  const capture = captureMiddleware(parsed, options.capture);
  const resolution = resolutionMiddleware(parsed);
  const projection = projectionMiddleware(parsed, options.projection);
  const list: readonly [Capture, Resolution, Projection] = [capture, resolution, projection];
  return Object.assign(list, { capture, resolution, projection, policyFingerprint: projection.policyFingerprint, config: parsed });
}
