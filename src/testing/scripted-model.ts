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
import type { ChatResult } from "@langchain/core/outputs";
import type { ToolCall } from "@langchain/core/messages/tool";

export interface ScriptedReply {
  /** Text, or content blocks (a reply with an image, say). Default "". */
  content?: AIMessage["content"];
  tool_calls?: Array<Omit<ToolCall, "id" | "type"> & { id?: string }>;
}

export type ScriptedStep = ScriptedReply | ((messages: BaseMessage[]) => ScriptedReply);

let replyCounter = 0;

export class ScriptedChatModel extends BaseChatModel {
  /** Every message list the model was called with, in call order. */
  readonly seen: BaseMessage[][];
  private readonly script: ScriptedStep[];
  private next = 0;

  constructor(script: ScriptedStep[], params: BaseChatModelParams = {}) {
    super(params);
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

  /** How many scripted steps have been used. */
  get calls(): number {
    return this.next;
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    this.seen.push(messages);
    const step = this.script[this.next++];
    const reply: ScriptedReply = step === undefined ? { content: "done" } : typeof step === "function" ? step(messages) : step;
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
