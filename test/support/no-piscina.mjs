// `node --import ./test/support/no-piscina.mjs`: a process in which Piscina
// cannot be loaded, as in an install that lost it.
import { register } from "node:module";

const hooks = `export async function resolve(specifier, context, next) {
  if (specifier === "piscina") throw new Error("Cannot find package 'piscina' (test/support/no-piscina.mjs)");
  return next(specifier, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`);
