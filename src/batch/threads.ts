/** How many threads to scan an archive with (one where the pool would not pay), and the pool for them. */
import { availableParallelism } from "node:os";
import { ScanPool } from "./pool.js";

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
 * cores, an archive (the CLI's input) is scanned on the calling thread alone.
 * A worker must start and warm up, which on small inputs it does not earn
 * back from a calling thread that scans the archive by itself, on the same
 * two cores. bench/cli.bench.ts compares the two on archives of 85, 127 and
 * 255 MB and 1 GB (the README quotes its runs): mostly below 1× up to 127 MB,
 * mostly above it from 255 MB, so two threads are the default only from 256 MiB.
 */
export const POOL_MIN_ARCHIVE_BYTES = 256 * 1024 * 1024;

/** Threads to scan an archive of `inputBytes` with (undefined: unknown, as for stdin): the core count, or 1 where the pool would not pay. */
export function archiveThreads(inputBytes: number | undefined, cores = availableParallelism()): number {
  if (cores < MIN_CORES_FOR_SHARED_POOL && inputBytes !== undefined && inputBytes < POOL_MIN_ARCHIVE_BYTES) return 1;
  return cores;
}

/**
 * The pool to scan an archive with `threads` threads. The calling thread
 * scans too (scanArchive's `alsoScanHere`), so it is `threads - 1` workers,
 * and none for one thread. The pool starts no worker until it is given a chunk.
 */
export function archivePool(threads: number): ScanPool | undefined {
  return threads > 1 ? new ScanPool({ threads: threads - 1 }) : undefined;
}
