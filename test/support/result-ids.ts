/**
 * A harness's stable result ids, as README ("What a handle depends on")
 * shows them: each tool result gets the id `result-<tool_call_id>`. Without
 * it LangGraph's reducer gives a result a random id, which seeds its
 * handles, so two runs never share a handle whatever else they share.
 */
import { ToolMessage } from "@langchain/core/messages";
import { createMiddleware } from "langchain";

/**
 * "new message" is README's form: a new ToolMessage with the id and the
 * fields the result was built with. "assigned" only sets `id` on the
 * returned message, which the checkpoint does not keep.
 */
export const resultIds = (form: "new message" | "assigned" = "new message") =>
  createMiddleware({
    name: "result-ids",
    wrapToolCall: async (request, handler) => {
      const out = await handler(request);
      if (!ToolMessage.isInstance(out)) return out;
      const id = `result-${out.tool_call_id}`;
      if (form === "assigned") {
        out.id = id;
        return out;
      }
      return new ToolMessage({ ...out.lc_kwargs, tool_call_id: out.tool_call_id, id });
    },
  });
