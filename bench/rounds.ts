// Shared by the suites that compare sides of one question: tinybench runs in
// alternating short rounds, so drift on a shared machine hits every side alike.
import { Bench, type BenchOptions } from "tinybench";

export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/** Per task, the p50 latency (ms) of each of `rounds` runs with the tasks registered in the given order. */
export async function alternatingRounds<K extends string>(
  tasks: Record<K, () => unknown>,
  rounds: number,
  options: BenchOptions,
): Promise<Record<K, number[]>> {
  const names = Object.keys(tasks) as K[];
  const out = Object.fromEntries(names.map((n) => [n, [] as number[]])) as Record<K, number[]>;
  for (let round = 0; round < rounds; round++) {
    const bench = new Bench(options);
    for (const name of names) bench.add(name, tasks[name] as () => unknown);
    await bench.run();
    for (const t of bench.tasks) {
      if (t.result.state !== "completed") throw new Error(`${t.name}: ${t.result.state}`);
      out[t.name as K].push(t.result.latency.p50);
    }
  }
  return out;
}
