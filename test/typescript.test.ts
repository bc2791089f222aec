import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));
const fixture = fileURLToPath(new URL("./fixtures/typescript/agent-usage.ts", import.meta.url));
const commonjs = fileURLToPath(new URL("./fixtures/typescript/commonjs-usage.cts", import.meta.url));
const optionTypes = fileURLToPath(new URL("./fixtures/typescript/option-types.ts", import.meta.url));

/** Type-check files with the project's own compiler options; the diagnostics as text. */
function typeCheck(files: string[], extra: ts.CompilerOptions = {}): string[] {
  const { config } = ts.readConfigFile(`${root}tsconfig.json`, ts.sys.readFile);
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, root);
  const program = ts.createProgram(files, { ...options, ...extra, noEmit: true });
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file && d.start !== undefined ? `${d.file.fileName}:${d.file.getLineAndCharacterOfPosition(d.start).line + 1}: ` : "";
    return where + ts.flattenDiagnosticMessageText(d.messageText, "\n");
  });
}

describe("TypeScript users", () => {
  // The README's middleware lists compile with createAgent, and the one form
  // it warns about still fails (an unused @ts-expect-error would be reported).
  it("can write the README's middleware lists", { timeout: 120_000 }, () => {
    expect(typeCheck([fixture])).toEqual([]);
  });

  it("can pass a value that may be undefined to any optional option under exactOptionalPropertyTypes, and cannot misspell a registry update", { timeout: 120_000 }, () => {
    // The fixture's own diagnostics: a user compiles against declarations, not this project's source.
    expect(typeCheck([optionTypes], { exactOptionalPropertyTypes: true }).filter((d) => d.startsWith(optionTypes))).toEqual([]);
  });

  // The built package (dist/) by name: its require condition's declarations.
  it("can pass the middlewares and state schema to createAgent from CommonJS", { timeout: 120_000 }, () => {
    // Declarations checked too (skipLibCheck off): an import of dist's that
    // resolves nowhere would otherwise make its type any, which fits anywhere.
    // Only the fixture's and dist's diagnostics: langchain's are its own.
    const ours = (d: string) => d.startsWith(commonjs) || d.startsWith(`${root}dist/`);
    expect(typeCheck([commonjs], { skipLibCheck: false }).filter(ours)).toEqual([]);
  });
});
