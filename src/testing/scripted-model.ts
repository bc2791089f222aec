/**
 * A scripted chat model for tests and the offline example: the one fake that
 * stands in for a provider, since there is no network.
 *
 * Unlike `FakeToolCallingModel`, every reply gets a fresh message id (and tool
 * calls fresh ids, unique across processes that continue one thread), so the
 * messages reducer never replaces an earlier turn in a multi-turn thread.
 * A step is either a fixed reply or a function of the messages the model was
 * shown (so a test can read handles out of the hidden context block).
 */
import { BaseChatModel, type BaseChatModelParams } from "@langchain/core/language_models/chat_models";
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import type { BaseLanguageModelInput, StructuredOutputMethodOptions } from "@langchain/core/language_models/base";
import { assembleStructuredOutputPipeline, createFunctionCallingParser } from "@langchain/core/language_models/structured_output";
import type { ChatResult } from "@langchain/core/outputs";
import type { Runnable } from "@langchain/core/runnables";
import type { ToolCall } from "@langchain/core/messages/tool";
import { isRecord, unknownOptionProblem } from "../types.js";

/** One scripted answer of the model: its text or blocks, and the tool calls it makes (ids given when left out). */
export interface ScriptedReply {
  /** Text, or content blocks (a reply with an image, say). Default "". */
  content?: AIMessage["content"] | undefined;
  tool_calls?: Array<Omit<ToolCall, "id" | "type"> & { id?: string | undefined }> | undefined;
}

/** A step of the script: a fixed reply, or a function of the messages the model is shown that returns one. */
export type ScriptedStep = ScriptedReply | ((messages: BaseMessage[]) => ScriptedReply);

let replyCounter = 0;

const REPLY_KEYS: readonly string[] = ["content", "tool_calls"] satisfies readonly (keyof ScriptedReply)[];
const CALL_KEYS: readonly string[] = ["name", "args", "id", "type"];

/** `reply` checked: a misspelt key (`toolCalls`) would give an empty reply and a test that passes for the wrong reason. */
function checkedReply(reply: unknown, where: string): ScriptedReply {
  if (!isRecord(reply)) throw new TypeError(`ScriptedChatModel: ${where} must be a reply {content?, tool_calls?}`);
  const unknown = unknownOptionProblem(reply, REPLY_KEYS);
  if (unknown !== undefined) throw new TypeError(`ScriptedChatModel: ${where}: ${unknown}`);
  const { content, tool_calls: calls } = reply as ScriptedReply;
  if (content !== undefined && typeof content !== "string" && !Array.isArray(content)) throw new TypeError(`ScriptedChatModel: ${where}.content must be a string or content blocks`);
  if (calls !== undefined && !Array.isArray(calls)) throw new TypeError(`ScriptedChatModel: ${where}.tool_calls must be an array`);
  calls?.forEach((call, i) => {
    const at = `${where}.tool_calls[${i}]`;
    if (typeof call !== "object" || call === null || typeof call.name !== "string") throw new TypeError(`ScriptedChatModel: ${at} must be {name, args, id?}`);
    // Any value: a structured response of a string schema is a call whose args are a string.
    if (call.args === undefined) throw new TypeError(`ScriptedChatModel: ${at}.args is missing`);
    const other = unknownOptionProblem(call, CALL_KEYS);
    if (other !== undefined) throw new TypeError(`ScriptedChatModel: ${at}: ${other}`);
  });
  return reply as ScriptedReply;
}

/**
 * A chat model that answers from a script, one step per call, in order; once
 * the script runs out it answers "done" with no tool calls (so an agent
 * ends). Calls with no id get one.
 *
 * @example
 * ```ts
 * const model = new ScriptedChatModel([
 *   { tool_calls: [{ name: "fetch_report", args: { year: 2024 } }] },
 *   (messages) => ({ content: `read ${messages.length} messages` }),
 * ]);
 * const agent = createAgent({ model, tools: [fetchReport] });
 * ```
 */
export class ScriptedChatModel extends BaseChatModel {
  /** Every message list the model was called with, in call order. */
  readonly seen: BaseMessage[][];
  private readonly script: ScriptedStep[];
  private next = 0;

  constructor(script: ScriptedStep[], params: BaseChatModelParams = {}) {
    super(params);
    if (!Array.isArray(script)) throw new TypeError("ScriptedChatModel: script must be an array of replies or functions of the messages");
    script.forEach((step, i) => {
      if (typeof step !== "function") checkedReply(step, `script[${i}]`);
    });
    this.script = script;
    this.seen = [];
  }

  _llmType(): string {
    return "scripted";
  }

  /** Tools are whatever the agent binds; the script decides the calls. */
  bindTools(): this {
    return this;
  }

  /**
   * Structured output as a provider's tool calling gives it: the args of the
   * reply's call named as the schema (`config.name`, else core's "extract"),
   * checked against the schema. Core's own implementation takes only an
   * AIMessageChunk (a streamed reply), which a scripted reply is not, so
   * `llmToolSelectorMiddleware`, say, would fail on this model. Typed
   * loosely (`any`): one signature standing for core's six overloads.
   */
  withStructuredOutput(schema: Record<string, any>, config?: StructuredOutputMethodOptions<boolean>): Runnable<BaseLanguageModelInput, any> {
    const parser = createFunctionCallingParser(schema, config?.name ?? "extract");
    return assembleStructuredOutputPipeline(this, parser, config?.includeRaw, "StructuredOutput");
  }

  /** How many replies it has given, the "done" ones after the script ran out included. */
  get calls(): number {
    return this.next;
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    this.seen.push(messages);
    const step = this.script[this.next++];
    const reply = step === undefined ? { content: "done" } : typeof step === "function" ? checkedReply(step(messages), `script[${this.next - 1}]'s reply`) : step;
    const id = `scripted-${process.pid}-${++replyCounter}`;
    const message = new AIMessage({
      id,
      content: reply.content ?? "",
      tool_calls: (reply.tool_calls ?? []).map((tc, i) => ({
        ...tc,
        id: tc.id ?? `call_${process.pid}_${replyCounter}_${i}`,
        type: "tool_call" as const,
      })),
    });
    return { generations: [{ text: message.text, message }] };
  }
}
