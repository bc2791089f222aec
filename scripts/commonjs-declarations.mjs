// Writes a `.d.cts` beside every `.d.ts` in dist/, its relative imports
// pointing at `.cjs` (which TypeScript resolves to the `.d.cts` sibling), for
// the package's `require` condition. A CommonJS TypeScript file that imports
// "langchain" gets langchain's CommonJS declarations; read through the ES
// module declarations, this package's middlewares and state schema would be
// other types (the same classes declared twice) and createAgent would refuse
// them. The JavaScript is the same for both: Node's require loads ES modules.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const RELATIVE_JS = /((?:\bfrom|\bimport)\s*\(?\s*["'])(\.\.?\/[^"']*)\.js(["'])/g;

const dist = process.argv[2] ?? "dist";
for (const file of readdirSync(dist, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".d.ts"))) {
  const path = join(dist, file);
  writeFileSync(path.replace(/\.d\.ts$/, ".d.cts"), readFileSync(path, "utf8").replace(RELATIVE_JS, "$1$2.cjs$3"));
}
