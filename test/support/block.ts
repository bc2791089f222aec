/**
 * Reading the hidden context block as a real model would: the handles it
 * shows, by the display name in a line's third column.
 */
import { HumanMessage, type BaseMessage } from "@langchain/core/messages";

/** The hidden block among what the model was sent, if any. */
export function hiddenBlock(messages: readonly BaseMessage[]): BaseMessage | undefined {
  return messages.find((m) => HumanMessage.isInstance(m) && m.additional_kwargs?.durable_context_data === true);
}

/** The handles the block lists for a display name, newest first. */
export function handlesShownFor(messages: readonly BaseMessage[], displayName: string): string[] {
  return (hiddenBlock(messages)?.text.split("\n") ?? []).filter((l) => l.split(" | ")[2] === displayName).map((l) => l.slice(0, 12));
}

/** The newest handle the block lists for a display name; throws when there is none. */
export function handleShown(messages: readonly BaseMessage[], displayName: string): string {
  const [handle] = handlesShownFor(messages, displayName);
  if (!handle) throw new Error(`no handle shown for ${displayName}`);
  return handle;
}

/** Every handle the block lists, in its order. */
export function handlesShown(messages: readonly BaseMessage[]): string[] {
  const block = hiddenBlock(messages);
  return block ? [...block.text.matchAll(/^(art_[0-9a-f]{8}) \|/gm)].map((m) => m[1]!) : [];
}
