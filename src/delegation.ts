/**
 * Delegation (DESIGN §9). Registries and ledgers are agent-local: a
 * sub-agent starts from a fresh state that carries only its task messages
 * and hands back only its report. Its `tool_artifacts` /
 * `tool_artifact_processed` never reach the lead, so a child handle echoed in
 * a report is unknown to the lead (resolution rejects it) while the concrete
 * paths in the report are captured by the lead under lead handles. Lead
 * handles in `task` arguments are resolved by the lead's resolution
 * middleware before the tool runs, like any tool's.
 *
 * Where the child's state lives: invoked inside the lead's tool, the child
 * runs as a LangGraph subgraph of the lead's run, so LangGraph lends it the
 * lead's checkpointer. Its checkpoints go there, under its thread id
 * (`childThreadId`) and a `checkpoint_ns` of the lead's tools node
 * (`tools:<task id>`); a checkpointer the child was created with is used only
 * when the lead has none. This is what lets an `interrupt()` inside the child
 * pause the lead, and resuming the lead continue the child where it stopped.
 */
import { randomUUID } from "node:crypto";
import { AIMessage, coerceMessageLikeToMessage, HumanMessage, ToolMessage, type BaseMessage, type BaseMessageLike } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { tool, type ToolRuntime } from "@langchain/core/tools";
import { z } from "zod";
import { parseOptions } from "./config.js";
import { sha256Hex } from "./engine/hash.js";
import { givenThreadId, type CaptureRuntime } from "./middleware/capture.js";
import { describeValue } from "./types.js";

/** The name of the tool `createTaskTool` makes, as the model calls it. */
export const TASK_TOOL_NAME = "task";

/** What delegation needs of a sub-agent: a LangChain.js agent (`createAgent`) or any graph with the same `invoke`. */
export interface SubAgent {
  invoke(input: { messages: BaseMessage[] }, config?: RunnableConfig): Promise<unknown>;
}

/**
 * The initial state of a sub-agent: the task messages and nothing else.
 * Never copies the lead's registry or ledger, whatever the caller holds.
 *
 * A string is one human message. An array is the message list itself, read
 * as `createAgent` reads its `messages` input: `["user", "text"]` is two
 * human messages, and a single [role, content] pair goes in a list,
 * `[["user", "text"]]`. Each comes back as a LangChain.js message, made as
 * LangChain makes one from it. An empty list, a message whose content is
 * neither a string nor an array of content blocks, and one LangChain cannot
 * make a message of (an unknown role) throw a TypeError.
 */
export function buildChildInitialState(taskMessages: BaseMessageLike | readonly BaseMessageLike[]): { messages: BaseMessage[] } {
  if (typeof taskMessages === "string") return { messages: [new HumanMessage(taskMessages)] };
  const messages: unknown[] = Array.isArray(taskMessages) ? [...taskMessages] : [taskMessages];
  // Caught here, not deep inside the child agent's first step or at the
  // provider, which rejects a call with no messages or with null content.
  if (messages.length === 0) throw new TypeError("buildChildInitialState: expected at least one message, got an empty array");
  if (!messages.every(isMessageLike)) throw new TypeError("buildChildInitialState: expected a string, a message or an array of messages");
  if (!messages.every((m) => isContent(contentOf(m)))) {
    throw new TypeError("buildChildInitialState: expected each message's content to be a string or an array of content blocks");
  }
  try {
    return { messages: messages.map((m) => coerceMessageLikeToMessage(m as BaseMessageLike)) };
  } catch (error) {
    throw new TypeError(`buildChildInitialState: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * What `createAgent` takes as a message: a LangChain.js message, a plain
 * object with content (not a whole state), a [role, content] pair, a string.
 */
const isMessageLike = (m: unknown): boolean =>
  typeof m === "string" ||
  (Array.isArray(m) ? m.length === 2 && typeof m[0] === "string" : typeof m === "object" && m !== null && "content" in m && !("messages" in m));

/** The content of a message-like (see `isMessageLike`). */
const contentOf = (m: unknown): unknown => (typeof m === "string" ? m : Array.isArray(m) ? m[1] : (m as { content: unknown }).content);

/** The two forms of LangChain.js message content. */
const isContent = (content: unknown): boolean => typeof content === "string" || Array.isArray(content);

/**
 * The child's thread id: the `configurable.thread_id` its run sees. Derived
 * from the lead's thread (`detached` for a lead without one) and the `task`
 * call, so it is stable for one delegation (an interrupted child resumes
 * under it), distinct across delegations, and the child's handles (seeded by
 * its thread id) never coincide with the lead's. It keys checkpoints in the
 * lead's checkpointer (the child runs as a subgraph of the lead's run, which
 * lends it the lead's checkpointer), not a thread of a checkpointer
 * of the child's own: `child.graph.getState({configurable: {thread_id}})`
 * finds nothing (or throws, for a child without a checkpointer),
 * `leadCheckpointer.list({configurable: {thread_id}})` lists them.
 */
export function childThreadId(parentThreadId: unknown, toolCallId: string): string {
  if (typeof toolCallId !== "string" || toolCallId === "") throw new TypeError(`childThreadId: toolCallId must be a non-empty string (got ${describeValue(toolCallId)})`);
  const parent = typeof parentThreadId === "string" && parentThreadId !== "" ? parentThreadId : "detached";
  return `${parent}/task/${toolCallId}`;
}

/** What a finished agent hands the lead: its text, or blocks that hold more, and a tool result's artifact. */
interface Report {
  content: string | Array<Record<string, unknown>>;
  artifact?: unknown;
}

/**
 * The blocks of a report that mean something as the lead's tool result: text
 * and the references extraction reads (files and images). Others (reasoning,
 * tool calls, a provider's own blocks) are the child's business, and a
 * provider may refuse them in a tool result.
 */
const REPORT_BLOCK_TYPES: ReadonlySet<unknown> = new Set(["text", "file", "image", "image_url"]);

/** A message's content as a report: its text, unless it has file or image blocks, which then go as they are. */
function reportContent(message: AIMessage | ToolMessage): Report["content"] {
  if (!Array.isArray(message.content)) return message.text;
  const blocks = (message.content as unknown[]).filter(
    (b): b is Record<string, unknown> => typeof b === "object" && b !== null && REPORT_BLOCK_TYPES.has((b as { type?: unknown }).type),
  );
  return blocks.some((b) => b.type !== "text") ? blocks : message.text;
}

/**
 * The report of a finished agent: its structured response (`responseFormat`;
 * JSON unless it is a string), else the AI or tool message it ended on: its
 * text, with its file and image blocks when it has any (so the lead captures
 * those references too), and a tool result's artifact. The structured
 * response is the one its resolution resolved: the message text holds the
 * child's handles, which mean nothing to the lead.
 * `createAgent` ends on a tool message only after a `returnDirect` tool
 * succeeded, and that result is the output the child was built to give (the
 * AI message before it only asked for the call). An agent that ended on a
 * failed tool result has no report.
 */
function finalReport(result: unknown): Report | undefined {
  const structured = (result as { structuredResponse?: unknown } | null)?.structuredResponse;
  // A string is the report itself: as JSON its newlines would be `\n` escapes
  // glued to the path before them in the lead's scan.
  if (structured !== undefined) return { content: typeof structured === "string" ? structured : JSON.stringify(structured) };
  const messages = (result as { messages?: unknown } | null)?.messages;
  if (!Array.isArray(messages)) return undefined;
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (AIMessage.isInstance(message)) return { content: reportContent(message) };
    if (ToolMessage.isInstance(message)) return message.status === "error" ? undefined : { content: reportContent(message), artifact: message.artifact };
  }
  return undefined;
}

/**
 * Items of @langchain/mcp-adapters' artifact list that hold nothing for the
 * lead: a result's `_meta`, and audio, which neither a model nor extraction reads.
 */
const SILENT_ARTIFACT_ITEMS: ReadonlySet<unknown> = new Set(["mcp_meta", "audio"]);

/**
 * Whether an artifact holds nothing for the lead: none, an empty object, or
 * a list of nothing but silent items (the adapters give every result a list).
 */
const emptyArtifact = (artifact: unknown): boolean =>
  artifact == null ||
  (Array.isArray(artifact)
    ? artifact.every((item) => SILENT_ARTIFACT_ITEMS.has((item as { type?: unknown } | null)?.type))
    : typeof artifact === "object" && Object.keys(artifact).length === 0);

/**
 * Whether a report says nothing: blank text and an empty artifact. Content
 * is a block list only when it holds a file or image (`reportContent`).
 */
const emptyReport = ({ content, artifact }: Report): boolean => emptyArtifact(artifact) && typeof content === "string" && content.trim() === "";

/** The options of `createTaskTool`; unknown keys are refused. */
export interface TaskToolOptions {
  /** Sub-agents by the name the model passes as `subagent_type`. */
  agents: Record<string, SubAgent>;
  /** Tool description shown to the lead model; the agent names are appended. */
  description?: string | undefined;
}

const taskToolOptionsSchema = z.object({
  agents: z
    .record(z.string().min(1), z.custom<SubAgent>((v) => typeof (v as SubAgent | null)?.invoke === "function", "expected an agent with invoke()"))
    .refine((agents) => Object.keys(agents).length > 0, "at least one sub-agent is required"),
  description: z.string().min(1).optional(),
})
  // A misspelt option would otherwise be dropped without a word.
  .strict();

const DEFAULT_DESCRIPTION =
  "Delegate a self-contained task to a sub-agent. It starts fresh: put everything it needs (goal, concrete file paths or artifact handles, constraints) in `description`. It returns its final report as text (JSON when it gives structured output).";

/** Run metadata the host set: not the keys LangGraph fills in for each run and node. */
function hostMetadata(metadata: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (metadata === undefined) return undefined;
  return Object.fromEntries(Object.entries(metadata).filter(([key]) => !/^(?:thread_id|checkpoint_ns|checkpoint_id|langgraph_.*)$/.test(key)));
}

/**
 * What stands for the call id of a delegation without one (a script, a custom
 * graph's node). Inside a graph, the node's task (its `checkpoint_ns`) and
 * the delegation's arguments: the node runs again, with the same task, when
 * the graph resumes after an `interrupt()` in the child, and the child must
 * continue in its thread, not start over. Outside a graph, a random UUID:
 * each delegation a thread of its own rather than the last one's history.
 */
function uncalledDelegation(runtime: ToolRuntime, subagentType: string, task: string): string {
  const ns = runtime.configurable?.checkpoint_ns ?? runtime.config?.configurable?.checkpoint_ns;
  if (typeof ns !== "string" || ns === "") return randomUUID();
  return sha256Hex(JSON.stringify([ns, subagentType, task])).slice(0, 32);
}

/**
 * A LangChain.js tool named `task` (`{subagent_type, description}`) that runs
 * the named sub-agent from `buildChildInitialState(description)` under
 * `childThreadId(<lead thread>, <tool call id>)` and returns its report: its
 * structured response when it has one (`responseFormat`; as JSON unless it is
 * a string), else the text of its final AI message, or of the tool result it
 * ended on when its last step was a `returnDirect` tool; with that message's
 * file and image blocks, and the tool result's artifact, when it has them.
 * The report is an ordinary tool result of the lead, so the lead's capture
 * scans it.
 * An unknown `subagent_type`, or a child that ends without a report (blank
 * text, or a failed tool result), gives an error tool result naming the
 * problem; an exception inside the child propagates like any tool's, and an
 * `interrupt()` inside it pauses the lead.
 *
 * @example
 * ```ts
 * const researcher = createAgent({ model, tools: [search], middleware: [...toolArtifactsMiddleware(config)] });
 * const lead = createAgent({
 *   model,
 *   tools: [createTaskTool({ agents: { researcher } })],
 *   middleware: [...toolArtifactsMiddleware(config)],
 * });
 * ```
 */
export function createTaskTool(options: TaskToolOptions) {
  const { agents, description } = parseOptions(taskToolOptionsSchema, options, { root: "createTaskTool options" }) as TaskToolOptions;
  const names = Object.keys(agents);
  const fail = (content: string, toolCallId: string) => new ToolMessage({ content, tool_call_id: toolCallId, name: TASK_TOOL_NAME, status: "error" });

  return tool(
    async ({ subagent_type, description: task }, runtime: ToolRuntime) => {
      const toolCallId = runtime.toolCallId ?? runtime.toolCall?.id ?? "";
      const delegation = toolCallId !== "" ? toolCallId : `no-call-id-${uncalledDelegation(runtime, subagent_type, task)}`;
      if (!Object.hasOwn(agents, subagent_type)) {
        return fail(`Unknown subagent_type ${JSON.stringify(subagent_type)}. Available: ${names.map((n) => JSON.stringify(n)).join(", ")}.`, toolCallId);
      }
      // The lead's thread id as capture reads it, so the child's thread is derived from the thread the lead's entries are under.
      const configurable = { thread_id: runtime.configurable?.thread_id ?? runtime.config?.configurable?.thread_id };
      const threadId = childThreadId(givenThreadId({ configurable, context: runtime.context as CaptureRuntime["context"] }), delegation);
      const result = await agents[subagent_type]!.invoke(buildChildInitialState(task), {
        configurable: { thread_id: threadId },
        callbacks: runtime.callbacks,
        signal: runtime.signal,
        // The lead's run metadata, less what LangGraph derives from the lead's
        // own run (its thread id would tag the child's runs as the lead's).
        metadata: hostMetadata(runtime.metadata ?? runtime.config?.metadata),
        // The lead's stream writer: without it LangGraph gives the child one of
        // its own, and the child's custom stream events reach nobody.
        ...(runtime.writer ? { writer: runtime.writer } : {}),
      } as RunnableConfig);
      const report = finalReport(result);
      if (report === undefined || emptyReport(report)) return fail(`Sub-agent ${JSON.stringify(subagent_type)} finished without a final answer.`, toolCallId);
      if (typeof report.content === "string" && report.artifact === undefined) return report.content;
      return new ToolMessage({ content: report.content as ToolMessage["content"], artifact: report.artifact, tool_call_id: toolCallId, name: TASK_TOOL_NAME, status: "success" });
    },
    {
      name: TASK_TOOL_NAME,
      description: `${description ?? DEFAULT_DESCRIPTION} Available sub-agents: ${names.join(", ")}.`,
      schema: z.object({
        subagent_type: z.string().describe(`Which sub-agent runs the task: one of ${names.join(", ")}.`),
        description: z.string().describe("The complete task for the sub-agent, including every concrete reference it needs."),
      }),
    },
  );
}
