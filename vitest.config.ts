import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Real agents, SQLite and MCP child processes: generous, never a timing assertion.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
