/**
 * The example's MCP server: a small report service that examples/main.ts
 * starts as a stdio child process and reaches through @langchain/mcp-adapters.
 *
 *   node --import tsx examples/mcp-server.ts
 *
 * `render_report` answers the way real MCP tools do, with a structured
 * result: the report file, its web view and the id of the background job that
 * finishes it. `job_status` takes that id back, so the example can show a
 * handle resolved into the arguments of a tool in another process.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "reports", version: "1.0.0" });

server.registerTool(
  "render_report",
  { description: "Render the quarterly sales report. Rendering finishes in a background job.", inputSchema: { quarter: z.string() } },
  async ({ quarter }) => {
    const q = quarter.toLowerCase();
    return {
      content: [
        { type: "text", text: `Rendering the ${quarter} report in the background.` },
        { type: "resource_link", uri: `https://reports.example.com/${q}/index.html`, name: "Dashboard", mimeType: "text/html" },
      ],
      structuredContent: { report: { path: `/mnt/user-data/outputs/${q}-report.pdf`, pages: 12 }, task_id: `render-${q}-7f3a` },
    };
  },
);

server.registerTool("job_status", { description: "Status of a background render job.", inputSchema: { task_id: z.string() } }, async ({ task_id }) => ({
  // Echo the id as received: the example shows it arrived resolved.
  content: [{ type: "text", text: `Job ${task_id} finished.` }],
}));

await server.connect(new StdioServerTransport());
