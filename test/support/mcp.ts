/**
 * Connect to the fixture MCP server (test/fixtures/mcp-server.ts) as a real
 * stdio child process and load its tools through @langchain/mcp-adapters,
 * exactly as a host application would.
 *
 *   const mcp = await connectFixtureMcp();
 *   try { const tool = mcp.tool("render_report"); ... } finally { await mcp.close(); }
 */
import { MultiServerMCPClient } from "@langchain/mcp-adapters";
import type { DynamicStructuredTool } from "@langchain/core/tools";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const SERVER = fileURLToPath(new URL("../fixtures/mcp-server.ts", import.meta.url));

export interface FixtureMcp {
  client: MultiServerMCPClient;
  tools: DynamicStructuredTool[];
  /** The tool with this MCP name; throws when the server does not offer it. */
  tool(name: string): DynamicStructuredTool;
  /** Close the client and with it the child process. */
  close(): Promise<void>;
}

export interface FixtureMcpOptions {
  /** mcp-adapters' switch between legacy (`image_url` data URLs) and standard content blocks. */
  useStandardContentBlocks?: boolean;
}

export async function connectFixtureMcp(options: FixtureMcpOptions = {}): Promise<FixtureMcp> {
  const client = new MultiServerMCPClient({
    useStandardContentBlocks: options.useStandardContentBlocks ?? false,
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
      close: () => client.close(),
    };
  } catch (error) {
    await client.close();
    throw error;
  }
}
