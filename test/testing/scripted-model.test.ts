import { describe, expect, it } from "vitest";
import { HumanMessage } from "@langchain/core/messages";
import { z } from "zod";
import { ScriptedChatModel } from "../../src/testing/scripted-model.js";

describe("ScriptedChatModel", () => {
  it("refuses a script that is no list, and a reply with a misspelt key, when made: an empty reply would pass a test for the wrong reason", () => {
    expect(() => new ScriptedChatModel(undefined as never)).toThrow(new TypeError("ScriptedChatModel: script must be an array of replies or functions of the messages"));
    expect(() => new ScriptedChatModel("hello" as never)).toThrow(TypeError);
    expect(() => new ScriptedChatModel([{ content: "a" }, "b" as never])).toThrow(new TypeError("ScriptedChatModel: script[1] must be a reply {content?, tool_calls?}"));
    expect(() => new ScriptedChatModel([{ tool_calls: [{ name: "t", arguments: {} }] } as never])).toThrow(new TypeError("ScriptedChatModel: script[0].tool_calls[0].args is missing"));
    expect(() => new ScriptedChatModel([{ tool_calls: [{ name: "t", args: {}, callId: "c" }] } as never])).toThrow('script[0].tool_calls[0]: unknown option "callId"');
    expect(() => new ScriptedChatModel([{ tool_calls: "t" } as never])).toThrow(new TypeError("ScriptedChatModel: script[0].tool_calls must be an array"));
    expect(() => new ScriptedChatModel([{ content: 5 } as never])).toThrow(new TypeError("ScriptedChatModel: script[0].content must be a string or content blocks"));
    expect(() => new ScriptedChatModel([{ toolCalls: [{ name: "t", args: {} }] } as never])).toThrow(
      new TypeError('ScriptedChatModel: script[0]: unknown option "toolCalls" (known: content, tool_calls)'),
    );
  });

  it("refuses a function step's bad reply when it is called", async () => {
    const model = new ScriptedChatModel([() => ({ text: "x" }) as never]);
    await expect(model.invoke([new HumanMessage("go")])).rejects.toThrow('ScriptedChatModel: script[0]\'s reply: unknown option "text"');
  });

  it("answers in order, then done with no tool calls, each reply and call with a fresh id", async () => {
    const model = new ScriptedChatModel([{ tool_calls: [{ name: "t", args: { a: 1 } }] }, (messages) => ({ content: `saw ${messages.length}` })]);
    const first = await model.invoke([new HumanMessage("go")]);
    const second = await model.invoke([new HumanMessage("go"), new HumanMessage("again")]);
    const third = await model.invoke([new HumanMessage("go")]);
    expect(first.tool_calls).toEqual([{ name: "t", args: { a: 1 }, id: expect.stringMatching(/^call_/), type: "tool_call" }]);
    expect([second.content, third.content, third.tool_calls]).toEqual(["saw 2", "done", []]);
    expect(new Set([first.id, second.id, third.id]).size).toBe(3);
    expect(model.calls).toBe(3);
  });

  it("gives structured output from the reply's call named as the schema, checked against it, as a provider's tool calling does", async () => {
    const model = new ScriptedChatModel([
      { tool_calls: [{ name: "extract", args: { tools: ["read_file"] } }] },
      { tool_calls: [{ name: "other", args: { tools: ["x"] } }, { name: "pick", args: { tools: ["write_file"] } }] },
      { tool_calls: [{ name: "pick", args: { tools: [1] } }] },
      { tool_calls: [{ name: "pick", args: { tools: ["a"] } }] },
    ]);
    const schema = z.object({ tools: z.array(z.string()) });
    await expect(model.withStructuredOutput(schema).invoke("go")).resolves.toEqual({ tools: ["read_file"] });
    await expect(model.withStructuredOutput(schema, { name: "pick" }).invoke("go")).resolves.toEqual({ tools: ["write_file"] });
    await expect(model.withStructuredOutput(schema, { name: "pick" }).invoke("go")).rejects.toThrow("expected string");
    const { raw, parsed } = await model.withStructuredOutput(schema, { name: "pick", includeRaw: true }).invoke("go");
    expect([parsed, raw.id]).toEqual([{ tools: ["a"] }, expect.stringMatching(/^scripted-/)]);
  });
});
