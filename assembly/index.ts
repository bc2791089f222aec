// The engine's exported ABI and nothing else: numbers in, numbers out.
// Kernels live in their own files; the host (src/engine/) lays out the arena.
export { reserve } from "./memory";
export * from "./sha256";
export * from "./scan";
export * from "./walk";
