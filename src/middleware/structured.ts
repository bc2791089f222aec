/**
 * Structured output (`createAgent`'s `responseFormat`). LangChain parses the
 * model's structured response inside the model node, after the innermost
 * `wrapModelCall` handler, so no tool ever runs for it: resolution meets it
 * only as the model call's result, and capture only as messages in a later
 * round. The model call's result is then not the `AIMessage` the hook's types
 * promise but `{structuredResponse, messages}` (langchain 1.x's model node;
 * `toolStrategy` puts the calling `AIMessage`, a `ToolMessage` answering the
 * call, and a closing `AIMessage` in `messages`; `providerStrategy` only the
 * model's message). It is recognised by that shape; a result of any other
 * shape passes untouched.
 */
import { ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { isStructuredResponseMessage, STRUCTURED_RESPONSE_MARK } from "../types.js";

/** A model call's result that carries a structured response. */
export interface StructuredModelResult {
  structuredResponse: unknown;
  messages: BaseMessage[];
}

export function structuredResultOf(result: unknown): StructuredModelResult | null {
  if (typeof result !== "object" || result === null || !("structuredResponse" in result)) return null;
  const messages = (result as { messages?: unknown }).messages;
  return Array.isArray(messages) ? (result as StructuredModelResult) : null;
}

/**
 * `result` with the `ToolMessage`s that answer a call made in the same result
 * marked (copies; the rest shared). Only such answers: a structured result
 * holds no tool's output.
 */
export function markStructuredResponse(result: StructuredModelResult): StructuredModelResult {
  const callIds = new Set<string>();
  for (const message of result.messages) {
    // LangChain answers a call without an id under tool_call_id "".
    for (const call of (message as { tool_calls?: Array<{ id?: string }> }).tool_calls ?? []) callIds.add(typeof call.id === "string" ? call.id : "");
  }
  let changed = false;
  const messages = result.messages.map((message) => {
    if (!ToolMessage.isInstance(message) || !callIds.has(message.tool_call_id) || isStructuredResponseMessage(message)) return message;
    changed = true;
    return new ToolMessage({
      id: message.id,
      content: message.content,
      tool_call_id: message.tool_call_id,
      name: message.name,
      status: message.status,
      artifact: message.artifact,
      response_metadata: message.response_metadata,
      metadata: message.metadata,
      additional_kwargs: { ...message.additional_kwargs, [STRUCTURED_RESPONSE_MARK]: true },
    });
  });
  return changed ? { ...result, messages } : result;
}
