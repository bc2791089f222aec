/**
 * A real LangGraph SQLite checkpointer on a temp file, for tests that need a
 * durable checkpoint round trip (and a reload from disk by a fresh saver).
 *
 *   const db = tempSqliteSaver();
 *   try { const graph = builder.compile({ checkpointer: db.saver }); ... } finally { db.cleanup(); }
 */
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TempSqliteSaver {
  saver: SqliteSaver;
  /** The database file; open it again with `reopen()` to prove state came from disk. */
  path: string;
  /** A fresh saver (new connection) on the same file; closed by `cleanup()`. */
  reopen(): SqliteSaver;
  /** Close every connection opened here and delete the temp directory. */
  cleanup(): void;
}

export function tempSqliteSaver(): TempSqliteSaver {
  const dir = mkdtempSync(join(tmpdir(), "tool-artifacts-ckpt-"));
  const path = join(dir, "checkpoints.sqlite");
  const savers = [SqliteSaver.fromConnString(path)];
  return {
    saver: savers[0],
    path,
    reopen() {
      const saver = SqliteSaver.fromConnString(path);
      savers.push(saver);
      return saver;
    },
    cleanup() {
      for (const s of savers) if (s.db.open) s.db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
