/**
 * What the lock-kind benchmarks (bench/semaphore.ts, bench/read-write.ts) share around their runs: the
 * arguments, the worker processes (bench/kind-worker.ts), one run of one variant (its own freshly
 * started redis-server, the workers' loops, Redis' counts at the window's edges), the rounds with the
 * variants in rotated order, and the report: headline, table, runs, targets, results file, exit code.
 * A scenario says what its variants take and how its figures are shown (`KindBench`).
 */
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import type { LoadTiming, Mode } from './config';
import {
  analyzeKindRun,
  combineKindRuns,
  formatKindRuns,
  type KindMetrics,
  type KindRun,
} from './kind-report';
import type { FromKindWorker, KindSpec, ToKindWorker } from './kind-worker';
import { goAll, initAll, openWindow } from './load-run';
import { ChildWorker, Pool } from './processes';
import { startRedis } from './redis-server';
import { formatTargets, type Target } from './report';
import { failOnBroken, headline, libsArg, reportHead, rotate, startLog, writeResults } from './session';

const WORKER = resolve(__dirname, 'kind-worker.ts');

/** Per run: smoke (CI), quick and full. */
export const KIND_TIMING: Record<Mode, LoadTiming> = {
  smoke: { rounds: 1, warmMs: 200, measureMs: 1_200, graceMs: 200 },
  quick: { rounds: 3, warmMs: 500, measureMs: 4_000, graceMs: 300 },
  full: { rounds: 3, warmMs: 2_000, measureMs: 10_000, graceMs: 1_000 },
};

/** A lock-kind scenario: its variants (each run on its own redis-server), their shape and their report. */
export interface KindBench<V extends string> {
  /** The results files' and the progress log's name ('semaphore'); the script is bench/<name>.ts. */
  name: string;
  /** The report's first words. */
  title: string;
  variants: readonly V[];
  shape: { processes: number; workersPerProcess: number; holdMs: number };
  /** What every process of a variant takes: the library, the key and the sides of its acquisitions. */
  lock(variant: V): Pick<KindSpec, 'lib' | 'key' | 'sides'>;
  /** The lines under the headline that say what runs. */
  describe(timing: LoadTiming): string;
  /** The figures, one column per variant (in `variants` order, those that ran). */
  table(metrics: KindMetrics[]): string;
  targets(metrics: KindMetrics[]): Target[];
  /** The results file's description of the scenario. */
  scenario: object;
}

/** A worker process (bench/kind-worker.ts), told by its environment to serve the harness. */
type KindProcess = ChildWorker<ToKindWorker, FromKindWorker>;
const spawn = (): KindProcess => new ChildWorker(WORKER, { env: { BENCH_KIND_WORKER: '1' } });

/** One run of one variant: its own redis-server, the workers' loops, Redis' counts at the window's edges. */
async function runOnce<V extends string>(
  bench: KindBench<V>,
  pool: Pool<KindProcess>,
  variant: V,
  round: number,
  timing: LoadTiming,
): Promise<KindRun> {
  const redis = await startRedis();
  const load = loadavg()[0];
  const lock = bench.lock(variant);
  const { processes: count, workersPerProcess, holdMs } = bench.shape;
  try {
    const processes = pool.take(count);
    await initAll(
      processes,
      (process: number): KindSpec => ({
        ...lock,
        port: redis.port,
        process,
        workers: workersPerProcess,
        holdMs,
        seed: round + 1,
      }),
    );
    const { window, executedInWindow } = openWindow([redis], timing);
    const results = await goAll(processes, window);
    return analyzeKindRun(
      variant,
      round,
      lock.sides.map((s) => s.name),
      results,
      workersPerProcess,
      { from: window.measureFrom, to: window.measureTo },
      await executedInWindow(),
      load,
    );
  } catch (error) {
    pool.reset();
    throw error;
  } finally {
    await redis.stop();
  }
}

function parseArgs<V extends string>(bench: KindBench<V>, argv: string[]) {
  let mode: Mode = 'full';
  let variants: V[] = [...bench.variants];
  let rounds: number | undefined;
  for (const arg of argv) {
    if (arg === '--quick') mode = 'quick';
    else if (arg === '--smoke') mode = 'smoke';
    else if (arg === '--full') mode = 'full';
    else if (arg.startsWith('--rounds=')) rounds = Number(arg.slice(9));
    else if (arg.startsWith('--libs=')) {
      // In the scenario's order: the table's ratio is its first variant's over its second's.
      const chosen = libsArg(arg, bench.variants);
      variants = bench.variants.filter((v) => chosen.includes(v));
    } else
      throw new Error(
        `unknown argument ${arg}; usage: bench/${bench.name}.ts [--smoke|--quick] [--rounds=N] ` +
          `[--libs=${bench.variants.join(',')}]`,
      );
  }
  if (rounds !== undefined && !(Number.isInteger(rounds) && rounds > 0))
    throw new Error('--rounds takes an integer from 1');
  return { mode, variants, rounds };
}

async function main<V extends string>(bench: KindBench<V>): Promise<void> {
  const { mode, variants, rounds } = parseArgs(bench, process.argv.slice(2));
  const timing = { ...KIND_TIMING[mode], ...(rounds ? { rounds } : {}) };
  const started = new Date();
  const log = startLog(`${bench.name} ${mode}`);
  const pool = new Pool(spawn);
  const runs: KindRun[] = [];
  const errors = new Map<V, string[]>(variants.map((variant) => [variant, []]));
  try {
    for (let round = 0; round < timing.rounds; round++) {
      for (const variant of rotate(variants, round)) {
        log(`${bench.name}, round ${round + 1}/${timing.rounds}: ${variant}`);
        try {
          runs.push(await runOnce(bench, pool, variant, round, timing));
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          log(`  failed: ${message}`);
          errors.get(variant)?.push(message);
        }
      }
    }
  } finally {
    pool.close();
  }

  const metrics = variants.map((variant) =>
    combineKindRuns(
      variant,
      bench.lock(variant).sides.map((s) => s.name),
      runs.filter((r) => r.variant === variant),
      errors.get(variant) ?? [],
    ),
  );
  const targets = bench.targets(metrics);
  console.log(headline(bench.title, mode, started));
  console.log(`\n${bench.describe(timing)}\n`);
  console.log(bench.table(metrics));
  console.log(`\nRuns:\n${formatKindRuns(runs)}`);
  if (mode === 'smoke')
    console.log(
      `\nGated targets (smoke: no speed measured):\n${formatTargets(targets.filter((t) => t.correctness))}`,
    );
  else console.log(`\nTargets (within this run, reported only; * = correctness):\n${formatTargets(targets)}`);

  const report = {
    ...reportHead(mode, started, new Date()),
    scenario: { ...bench.shape, ...bench.scenario },
    timing,
    metrics,
    runs,
    targets,
  };
  const complete = variants.length === bench.variants.length && rounds === undefined;
  writeResults(report, { bench: bench.name, mode, started, complete });

  failOnBroken(
    mode,
    targets.filter((t) => t.correctness && !t.pass),
  );
}

/** Runs the scenario with the process' arguments; an error ends the process with code 1. */
export function runKindBench<V extends string>(bench: KindBench<V>): void {
  main(bench).catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
