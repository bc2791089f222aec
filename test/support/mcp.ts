/**
 * Connect to the fixture MCP server (test/fixtures/mcp-server.ts) as a real
 * stdio child process and load its tools through @langchain/mcp-adapters,
 * exactly as a host application would.
 *
 *   const mcp = await connectFixtureMcp();
 *   try { const message = await mcp.call("render_report"); ... } finally { await mcp.close(); }
 */
import { MultiServerMCPClient } from "@langchain/mcp-adapters";
import type { DynamicStructuredTool } from "@langchain/core/tools";
import { AIMessage, ToolMessage } from "@langchain/core/messages";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const SERVER = fileURLToPath(new URL("../fixtures/mcp-server.ts", import.meta.url));

export interface FixtureMcp {
  client: MultiServerMCPClient;
  tools: DynamicStructuredTool[];
  /** The tool with this MCP name; throws when the server does not offer it. */
  tool(name: string): DynamicStructuredTool;
  /**
   * Call one tool through LangGraph's ToolNode, as an agent does, and return
   * the real ToolMessage (an MCP error result, which mcp-adapters throws, comes
   * back with status "error", as in an agent with no wrapToolCall hook).
   */
  call(name: string, args?: Record<string, unknown>, toolCallId?: string): Promise<ToolMessage>;
  /** Close the client and with it the child process. */
  close(): Promise<void>;
}

export interface FixtureMcpOptions {
  /** mcp-adapters' switch between legacy (`image_url` data URLs) and standard content blocks. */
  useStandardContentBlocks?: boolean;
  /** mcp-adapters' `outputHandling`: where each MCP content type goes, the ToolMessage's content or its artifact. */
  outputHandling?: "content" | "artifact" | Partial<Record<"text" | "image" | "audio" | "resource" | "resource_link", "content" | "artifact">>;
}

export async function connectFixtureMcp(options: FixtureMcpOptions = {}): Promise<FixtureMcp> {
  const client = new MultiServerMCPClient({
    useStandardContentBlocks: options.useStandardContentBlocks ?? false,
    ...(options.outputHandling === undefined ? {} : { outputHandling: options.outputHandling }),
    mcpServers: {
      fixture: {
        transport: "stdio",
        command: process.execPath,
        args: ["--import", "tsx", SERVER],
        cwd: ROOT,
        stderr: "inherit",
        restart: { enabled: false },
      },
    },
  });
  try {
    const tools = await client.getTools();
    return {
      client,
      tools,
      tool(name) {
        const found = tools.find((t) => t.name === name);
        if (!found) throw new Error(`fixture MCP server has no tool "${name}" (has: ${tools.map((t) => t.name).join(", ")})`);
        return found;
      },
      async call(name, args = {}, toolCallId = `call_${name}`) {
        const node = new ToolNode(tools);
        const request = new AIMessage({ content: "", tool_calls: [{ id: toolCallId, name, args }] });
        const { messages } = await node.invoke({ messages: [request] });
        const message = messages?.[0];
        if (messages?.length !== 1 || !ToolMessage.isInstance(message)) throw new Error(`ToolNode did not return one ToolMessage for "${name}"`);
        return message;
      },
      close: () => client.close(),
    };
  } catch (error) {
    await client.close();
    throw error;
  }
}
