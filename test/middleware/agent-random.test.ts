/**
 * Random agent runs checked against what the final history implies. One real
 * agent on a SQLite checkpointer serves three threads at once, turn after
 * turn, and is sometimes replaced by a fresh agent on a reopened file. A
 * random model (the only fake) calls a tool that writes files and a tool that
 * reads a handle, bare, backticked and nested, picking handles the hidden
 * block shows it and, now and then, ones it was shown earlier that may since
 * have left the registry. After every turn, and after one quiet turn more
 * on a fresh agent and connection, each thread's state must hold:
 * - the registry: the last `maxEntries` distinct entries `extractArtifacts`
 *   gives for the thread's tool results, in history order;
 * - each entry's `consumed_by`: the calls whose args name its handle, in order;
 * - a ledger without repeats;
 * - every read of a handle the block showed got that handle's file, in both
 *   places, and every read of one it did not show was refused without the
 *   tool running.
 */
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { ChatResult } from "@langchain/core/outputs";
import { createAgent, tool } from "langchain";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { prng } from "../../bench/corpus.js";
import { extractArtifacts } from "../../src/extract.js";
import { toolArtifactsMiddleware } from "../../src/middleware/index.js";
import { toolArtifactsStateSchema } from "../../src/registry.js";
import { ScriptedChatModel } from "../../src/testing/scripted-model.js";
import type { ArtifactEntry } from "../../src/types.js";
import { tempSqliteSaver, type TempSqliteSaver } from "../support/sqlite.js";

interface State {
  messages: BaseMessage[];
  tool_artifacts: ArtifactEntry[];
  tool_artifact_processed: string[];
}

const HANDLE_LINE = /^(art_[0-9a-f]{8}) \| [^|]+ \| ([^|]+) \|/;

/** One read the model made: the handle, and the display name the block gave it (null: not shown). */
interface Read {
  thread: string;
  call: string;
  handle: string;
  shownAs: string | null;
}

/**
 * Decides each thread's turns with that thread's own generator, so a
 * thread's script does not depend on how the threads interleave.
 */
class RandomModel extends BaseChatModel {
  constructor(
    /** Per thread: its generator, and how many replies it has had (for ids that a rerun repeats). */
    private readonly rngs: Map<string, () => number>,
    private readonly replies: Map<string, number>,
    private readonly everShown: Map<string, string[]>,
    private readonly reads: Read[],
  ) {
    super({});
  }
  _llmType() {
    return "random";
  }
  bindTools() {
    return this;
  }
  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const asked = messages.filter((m) => HumanMessage.isInstance(m) && m.additional_kwargs?.durable_context_data !== true).at(-1)!;
    const thread = asked.text.split(" ")[1]!;
    const r = this.rngs.get(thread)!;
    // Let the other threads' turns run in between.
    await new Promise((done) => setTimeout(done, r() * 5));
    const block = messages.find((m) => HumanMessage.isInstance(m) && m.additional_kwargs?.durable_context_data === true)?.text ?? "";
    const shown = new Map<string, string>();
    for (const line of block.split("\n")) {
      const m = HANDLE_LINE.exec(line);
      if (m) shown.set(m[1]!, m[2]!);
    }
    const ever = this.everShown.get(thread) ?? [];
    for (const h of shown.keys()) if (!ever.includes(h)) ever.push(h);
    this.everShown.set(thread, ever);
    const n = (this.replies.get(thread) ?? 0) + 1;
    this.replies.set(thread, n);
    const id = `${thread}-reply-${n}`;
    const reply = (message: AIMessage): ChatResult => ({ generations: [{ text: "", message }] });
    if (ToolMessage.isInstance(messages.at(-1)) && r() < 0.35) return reply(new AIMessage({ id, content: "done" }));
    const current = [...shown.keys()];
    const calls = Array.from({ length: 1 + Math.floor(r() * 4) }, (_, i) => {
      const call = `${id}-${i}`;
      if (r() < 0.45 || ever.length === 0) return { id: call, name: "make", args: { tag: `${thread}-${id}-${i}`, count: Math.floor(r() * 4) } };
      const handle = r() < 0.8 && current.length > 0 ? current[Math.floor(r() * current.length)]! : ever[Math.floor(r() * ever.length)]!;
      this.reads.push({ thread, call, handle, shownAs: shown.get(handle) ?? null });
      return { id: call, name: "read", args: { path: r() < 0.5 ? handle : `\`${handle}\``, extra: [{ again: handle }] } };
    });
    return reply(new AIMessage({ id, content: "", tool_calls: calls.map((c) => ({ ...c, type: "tool_call" as const })) }));
  }
}

const THREADS = ["T1", "T2", "T3"];
const TURNS = 8;

let db: TempSqliteSaver | undefined;
afterEach(() => {
  db?.cleanup();
  db = undefined;
});

describe("random agent runs: three threads at once, restarts between turns", () => {
  for (const seed of [1, 2, 3]) {
    it(`seed ${seed}: registry, consumption, ledger and resolution agree with the history`, async () => {
      const r = prng(seed);
      const rngs = new Map(THREADS.map((t, i) => [t, prng(seed * 100 + i)]));
      const everShown = new Map<string, string[]>();
      const reads: Read[] = [];
      const received = new Map<string, { path: string; extra: { again: string }[] }>();
      const make = tool(async ({ tag, count }) => Array.from({ length: count }, (_, i) => `/mnt/user-data/${tag}-${i}.txt`).join("\n") || "nothing written", {
        name: "make",
        description: "Writes files",
        schema: z.object({ tag: z.string(), count: z.number() }),
      });
      const read = tool(
        async (args, config) => {
          received.set(config.toolCall!.id!, args);
          return "read";
        },
        { name: "read", description: "Reads a file", schema: z.object({ path: z.string(), extra: z.array(z.object({ again: z.string() })) }) },
      );
      const maxEntries = 10 + Math.floor(r() * 10);
      db = tempSqliteSaver();
      const agentOn = (checkpointer: TempSqliteSaver["saver"], model: BaseChatModel) =>
        createAgent({ model, tools: [make, read], middleware: [...toolArtifactsMiddleware({ maxEntries })], stateSchema: toolArtifactsStateSchema, checkpointer });
      /**
       * The registry a thread's state must hold, from its history: every
       * result and call is captured by the end of a turn (its last model
       * call came after them). Returns how many distinct entries the history gives.
       */
      const checkRegistry = (t: string, state: State, when: string): number => {
        const distinct = new Map<string, ArtifactEntry>();
        for (const m of state.messages) {
          if (!ToolMessage.isInstance(m)) continue;
          for (const e of extractArtifacts(m, { threadId: t })) if (!distinct.has(e.handle)) distinct.set(e.handle, e);
        }
        const expected = [...distinct.values()].slice(-maxEntries);
        expect(state.tool_artifacts.map((e) => [e.handle, e.real_ref, e.tool_call_id]), `${t} ${when}`).toEqual(expected.map((e) => [e.handle, e.real_ref, e.tool_call_id]));
        const callsNaming = new Map<string, string[]>();
        for (const m of state.messages) {
          if (!AIMessage.isInstance(m)) continue;
          for (const call of m.tool_calls ?? []) {
            for (const h of new Set(JSON.stringify(call.args).match(/art_[0-9a-f]{8}/g) ?? [])) callsNaming.set(h, [...(callsNaming.get(h) ?? []), call.id!]);
          }
        }
        for (const e of state.tool_artifacts) expect(e.consumed_by ?? [], `${t} ${when} ${e.handle}`).toEqual(callsNaming.get(e.handle) ?? []);
        expect(new Set(state.tool_artifact_processed).size, `${t} ${when}: ledger repeats`).toBe(state.tool_artifact_processed.length);
        return distinct.size;
      };

      const replies = new Map<string, number>();
      let agent = agentOn(db.saver, new RandomModel(rngs, replies, everShown, reads));
      for (let turn = 0; turn < TURNS; turn++) {
        if (r() < 0.3) agent = agentOn(db.reopen(), new RandomModel(rngs, replies, everShown, reads));
        const states = await Promise.all(
          THREADS.map((t) => agent.invoke({ messages: [new HumanMessage(`turn ${t} ${turn}`)] }, { configurable: { thread_id: t }, recursionLimit: 200 })),
        );
        states.forEach((state, i) => checkRegistry(THREADS[i]!, state as unknown as State, `after turn ${turn}`));
      }
      // A quiet turn more, on a fresh agent and connection: the state read back from disk.
      const quiet = agentOn(db.reopen(), new ScriptedChatModel(THREADS.map(() => ({ content: "bye" }))));
      let refused = 0;
      for (const t of THREADS) {
        const state = (await quiet.invoke({ messages: [new HumanMessage(`turn ${t} end`)] }, { configurable: { thread_id: t } })) as unknown as State;
        expect(checkRegistry(t, state, "at the end"), `${t}: the run made fewer files than the window holds`).toBeGreaterThan(maxEntries);

        for (const { call, handle, shownAs } of reads.filter((x) => x.thread === t)) {
          const answer = state.messages.find((m) => ToolMessage.isInstance(m) && m.tool_call_id === call) as ToolMessage;
          if (shownAs === null) {
            refused++;
            expect(answer.status, `${call} ${handle}`).toBe("error");
            expect(received.has(call)).toBe(false);
          } else {
            const got = received.get(call);
            expect(got?.path.split("/").pop(), `${call} ${handle}`).toBe(shownAs);
            expect(got!.extra[0]!.again).toBe(got!.path);
          }
        }
      }
      expect(reads.length - refused, "reads of shown handles").toBeGreaterThan(0);
      expect(refused, "reads of handles no longer shown").toBeGreaterThan(0);
    }, 120_000);
  }
});
