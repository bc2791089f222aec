/**
 * Delegation (DESIGN §9). Registries and ledgers are agent-local: a
 * sub-agent starts from a fresh state that carries only its task messages,
 * runs under its own thread id, and hands back only its final answer text.
 * Its `tool_artifacts` / `tool_artifact_processed` never reach the lead, so a
 * child handle echoed in a report is unknown to the lead (resolution rejects
 * it) while the concrete paths in the report are captured by the lead under
 * lead handles. Lead handles in `task` arguments are resolved by the lead's
 * resolution middleware before the tool runs, like any tool's.
 */
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { tool, type ToolRuntime } from "@langchain/core/tools";
import { z } from "zod";
import { parseOptions } from "./config.js";

export const TASK_TOOL_NAME = "task";

/** What delegation needs of a sub-agent: a LangChain.js agent (`createAgent`) or any graph with the same `invoke`. */
export interface SubAgent {
  invoke(input: { messages: BaseMessage[] }, config?: RunnableConfig): Promise<unknown>;
}

/**
 * The initial state of a sub-agent: the task messages and nothing else.
 * Never copies the lead's registry or ledger, whatever the caller holds.
 */
export function buildChildInitialState(taskMessages: string | BaseMessage | readonly BaseMessage[]): { messages: BaseMessage[] } {
  if (typeof taskMessages === "string") return { messages: [new HumanMessage(taskMessages)] };
  const messages: unknown[] = Array.isArray(taskMessages) ? [...taskMessages] : [taskMessages];
  // Caught here, not deep inside the child agent's first step.
  if (!messages.every(isMessageLike)) throw new TypeError("buildChildInitialState: expected a string, a message or an array of messages");
  return { messages: messages as BaseMessage[] };
}

/**
 * What `createAgent` takes as a message: a LangChain.js message, a plain
 * object with content (not a whole state), a [role, content] pair, a string.
 */
const isMessageLike = (m: unknown): boolean =>
  typeof m === "string" ||
  (Array.isArray(m) ? m.length === 2 && typeof m[0] === "string" : typeof m === "object" && m !== null && "content" in m && !("messages" in m));

/**
 * The child's thread id: derived from the lead's thread and the `task` call,
 * so it is stable for one delegation, distinct across delegations, and the
 * child's handles (seeded by its thread id) never coincide with the lead's.
 */
export function childThreadId(parentThreadId: unknown, toolCallId: string): string {
  const parent = typeof parentThreadId === "string" && parentThreadId !== "" ? parentThreadId : "detached";
  return `${parent}/task/${toolCallId}`;
}

/** The final answer of a finished agent: the text of its last AI message. */
function finalAnswer(result: unknown): string | undefined {
  const messages = (result as { messages?: unknown } | null)?.messages;
  if (!Array.isArray(messages)) return undefined;
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (AIMessage.isInstance(message)) return message.text;
  }
  return undefined;
}

export interface TaskToolOptions {
  /** Sub-agents by the name the model passes as `subagent_type`. */
  agents: Record<string, SubAgent>;
  /** Tool description shown to the lead model; the agent names are appended. */
  description?: string;
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
  "Delegate a self-contained task to a sub-agent. It starts fresh: put everything it needs (goal, concrete file paths or artifact handles, constraints) in `description`. It returns its final report as text.";

/**
 * A LangChain.js tool named `task` (`{subagent_type, description}`) that runs
 * the named sub-agent from `buildChildInitialState(description)` under
 * `childThreadId(<lead thread>, <tool call id>)` and returns its final answer.
 * An unknown `subagent_type`, or a child that ends without an answer, gives
 * an error tool result naming the problem; an exception inside the child
 * propagates like any tool's.
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
  const { agents, description } = parseOptions(taskToolOptionsSchema, options) as TaskToolOptions;
  const names = Object.keys(agents);
  const fail = (content: string, toolCallId: string) => new ToolMessage({ content, tool_call_id: toolCallId, name: TASK_TOOL_NAME, status: "error" });

  return tool(
    async ({ subagent_type, description: task }, runtime: ToolRuntime) => {
      const toolCallId = runtime.toolCallId ?? runtime.toolCall?.id ?? "";
      if (!Object.hasOwn(agents, subagent_type)) {
        return fail(`Unknown subagent_type ${JSON.stringify(subagent_type)}. Available: ${names.map((n) => JSON.stringify(n)).join(", ")}.`, toolCallId);
      }
      // Where capture finds the lead's thread id: `configurable`, else `context`.
      const context = runtime.context as { thread_id?: unknown } | undefined;
      const threadId = childThreadId(runtime.configurable?.thread_id ?? runtime.config?.configurable?.thread_id ?? context?.thread_id, toolCallId);
      const result = await agents[subagent_type]!.invoke(buildChildInitialState(task), {
        configurable: { thread_id: threadId },
        callbacks: runtime.callbacks,
        signal: runtime.signal,
      });
      const answer = finalAnswer(result);
      if (answer === undefined || answer.trim() === "") return fail(`Sub-agent ${JSON.stringify(subagent_type)} finished without a final answer.`, toolCallId);
      return answer;
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
