/**
 * How many threads to scan with, where the pool would not pay. Kept apart
 * from the pool so that the CLI decides without loading Piscina, which it
 * then loads only when it uses more than one thread.
 */
import { availableParallelism } from "node:os";

/**
 * With fewer cores scanBatch's shared pool is not used: by the per-item
 * costs its POOL_THRESHOLD was set from (src/batch/index.ts), workers
 * sharing one core beside the calling thread never catch up with it (0.74×
 * the loop at 4096 items), and the wall-clock runs agree: each worker also
 * JIT-compiles the hot code again, which the single thread gets done on the
 * idle second core. An explicit `pool` is always used.
 */
export const MIN_CORES_FOR_SHARED_POOL = 3;

/**
 * Below this size, on machines with fewer than MIN_CORES_FOR_SHARED_POOL
 * cores, an archive (the CLI's input) is scanned on the calling thread. Each
 * worker takes about 0.1 s to start (measured outside the bench) and more to
 * warm up, which on small inputs the pool does not earn back from a calling
 * thread that scans 190–380 MB/s by itself: on 2 cores bench/cli.bench.ts
 * measured the pool at 0.80–0.86× the calling thread on 85 MB and 1.02–1.14×
 * on 255 MB (whole runs, five full bench runs), and 410.5–480.0 against
 * 306.9–373.2 MB/s (--stats rates) on 1 GB.
 */
export const POOL_MIN_ARCHIVE_BYTES = 256 * 1024 * 1024;

/** Threads to scan an archive of `inputBytes` with (undefined: unknown, as for stdin): the core count, or 1 where the pool would not pay. */
export function archiveThreads(inputBytes: number | undefined, cores = availableParallelism()): number {
  if (cores < MIN_CORES_FOR_SHARED_POOL && inputBytes !== undefined && inputBytes < POOL_MIN_ARCHIVE_BYTES) return 1;
  return cores;
}
