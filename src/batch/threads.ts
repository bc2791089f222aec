/** How many threads to scan with, where the pool would not pay. */
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
 * cores, an archive (the CLI's input) is scanned on the calling thread alone.
 * A worker takes about 0.1 s to start (measured outside the bench) and more
 * to warm up, which on small inputs it does not earn back from a calling
 * thread that scans 190–380 MB/s by itself, on the same two cores. With the
 * calling thread scanning beside one worker, bench/cli.bench.ts measured
 * 0.82–1.02× the calling thread alone on 85 MB, 0.93–1.02× on 127 MB (ten
 * runs) and 0.94–1.20× on 255 MB (whole runs, fifteen bench runs; 1.08× or
 * more in thirteen), and 1.06–1.63× on 1 GB (--stats rates). Alternating whole runs
 * outside the bench had put the break-even lower (1.02× on 127 MB), but the
 * bench did not confirm it, so two threads are the default only from
 * 256 MiB. (Before, with the calling thread only handing out chunks to two
 * workers: 0.80–0.86× on 85 MB, 1.02–1.14× on 255 MB.)
 */
export const POOL_MIN_ARCHIVE_BYTES = 256 * 1024 * 1024;

/** Threads to scan an archive of `inputBytes` with (undefined: unknown, as for stdin): the core count, or 1 where the pool would not pay. */
export function archiveThreads(inputBytes: number | undefined, cores = availableParallelism()): number {
  if (cores < MIN_CORES_FOR_SHARED_POOL && inputBytes !== undefined && inputBytes < POOL_MIN_ARCHIVE_BYTES) return 1;
  return cores;
}
