import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));
const fixture = fileURLToPath(new URL("./fixtures/typescript/agent-usage.ts", import.meta.url));

/** The project's tsconfig.json: its compiler options and the files it takes in. */
function projectConfig(): ts.ParsedCommandLine {
  const { config } = ts.readConfigFile(`${root}tsconfig.json`, ts.sys.readFile);
  return ts.parseJsonConfigFileContent(config, ts.sys, root);
}

/** Type-check files with the project's own compiler options; the diagnostics as text. */
function typeCheck(files: string[]): string[] {
  const program = ts.createProgram(files, { ...projectConfig().options, noEmit: true });
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file && d.start !== undefined ? `${d.file.fileName}:${d.file.getLineAndCharacterOfPosition(d.start).line + 1}: ` : "";
    return where + ts.flattenDiagnosticMessageText(d.messageText, "\n");
  });
}

describe("TypeScript users", () => {
  // vitest runs the tests without checking their types: this does, for every
  // file tsconfig.json takes in (src, test, bench, examples).
  it("the project's own files type-check", { timeout: 240_000 }, () => {
    expect(typeCheck(projectConfig().fileNames)).toEqual([]);
  });


  // The README's middleware lists compile with createAgent, and the one form
  // it warns about still fails (an unused @ts-expect-error would be reported).
  it("can write the README's middleware lists", { timeout: 120_000 }, () => {
    expect(typeCheck([fixture])).toEqual([]);
  });
});
