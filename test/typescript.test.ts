import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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

  // moduleResolution node10 (TypeScript's "node" before 5.0) reads no
  // "exports": the root's declarations come from "types", a subpath's only
  // from "typesVersions". Installed by name, as a user's project has it.
  it("finds both entries' declarations under moduleResolution node10", { timeout: 120_000 }, () => {
    const dir = mkdtempSync(join(tmpdir(), "tool-artifacts-node10-"));
    try {
      mkdirSync(join(dir, "node_modules"));
      symlinkSync(root, join(dir, "node_modules", "tool-artifacts"), "dir");
      const usage = join(dir, "usage.ts");
      writeFileSync(
        usage,
        [
          'import { generateHandle } from "tool-artifacts";',
          'import { ScriptedChatModel } from "tool-artifacts/testing";',
          'export const handle: string = generateHandle("t", "c", 0);',
          "export const model = new ScriptedChatModel([]);",
          // Each would be reported as unused were its import untyped (any).
          "// @ts-expect-error a class needs new",
          "ScriptedChatModel([]);",
          "// @ts-expect-error a thread id is a string",
          'generateHandle(1, "c", 0);',
        ].join("\n"),
      );
      const program = ts.createProgram([usage], { module: ts.ModuleKind.CommonJS, moduleResolution: ts.ModuleResolutionKind.Node10, strict: true, noEmit: true, skipLibCheck: true, types: [] });
      const diagnostics = ts.getPreEmitDiagnostics(program).filter((d) => d.file?.fileName === usage);
      expect(diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
