/**
 * tool-artifacts: durable handles for the references an agent's tools produce.
 * The public contract (DESIGN §12); everything else is internal.
 */
export { generateHandle, generateHandles, generateResultHandles, occurrenceKey, occurrenceKeys, type HandleSeed, type OccurrenceKind, type OccurrenceSeed } from "./engine/hash.js";
export { scanText, type ScanOptions as ScanTextOptions } from "./engine/scan.js";
export { extractArtifacts, type ExtractOptions, type ToolMessageLike } from "./extract.js";
export type { WalkRejection } from "./engine/serialize.js";
export {
  scanBatch,
  closeSharedPool,
  ScanPool,
  POOL_THRESHOLD,
  type BatchItem,
  type BatchItemError,
  type BatchResult,
  type ScanBatchOptions,
  type ScanPoolOptions,
} from "./batch/index.js";
export { mergeToolArtifacts, mergeProcessed, toolArtifactsStateSchema, MAX_REGISTRY_ENTRIES } from "./registry.js";
export {
  toolArtifactsConfigSchema,
  parseToolArtifactsConfig,
  ToolArtifactsConfigError,
  type ToolArtifactsConfig,
  type ToolArtifactsConfigInput,
  type ToolArtifactsConfigSource,
} from "./config.js";
export { findHandles, resolveHandles, isHandle, HANDLE_PATTERN, type HandleLookup } from "./handles.js";
export {
  toolArtifactsMiddleware,
  captureMiddleware,
  rekeyLedger,
  resolutionMiddleware,
  projectionMiddleware,
  type ToolArtifactsMiddleware,
  type ToolArtifactsMiddlewareOptions,
  type ProjectionOptions,
  type CaptureOptions,
  type LedgerState,
} from "./middleware/index.js";
export { conversationSummarySection, stateTextSection, type ContextSection, type SectionView } from "./middleware/projection.js";
export {
  orderMiddleware,
  withConstraints,
  MiddlewareOrderingError,
  WELL_KNOWN_MIDDLEWARE,
  type OrderingConstraints,
  type OrderingConstraint,
} from "./ordering.js";
export { policyFingerprint } from "./fingerprint.js";
export { createTaskTool, buildChildInitialState, childThreadId, TASK_TOOL_NAME, type SubAgent, type TaskToolOptions } from "./delegation.js";
export { displayName, type ArtifactEntry, type ArtifactType, type ArtifactUpdate, type TrimDirective, type ScanRef } from "./types.js";
