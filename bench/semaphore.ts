/**
 * The semaphore benchmark: this library's fair semaphore (`acquire(key, { permits: 3 })`) against
 * redis-semaphore 5's `Semaphore` (limit 3, a retry every 10 ms). 4 processes × 10 workers, one key, 3
 * permits; each worker loops: acquire, INCR the holders' counter, hold 20 ms, DECR, release. Each run
 * has its own freshly started redis-server (a free port, never 6379); the libraries run one after the
 * other, 3 rounds in rotated order, and each figure is the median of a library's 3 runs (fairness and
 * holders at once: its worst run). Prints a table and the targets; writes
 * bench/results/<mode>-semaphore-<timestamp>.json and bench/results/latest-semaphore-<mode>.json.
 *
 *   npx tsx bench/semaphore.ts            full: 2 s warm-up + 10 s measured per run (about 2 minutes)
 *   npx tsx bench/semaphore.ts --quick    0.5 s + 4 s per run (under a minute)
 *   options: --libs=nestjs-redis-lock,redis-semaphore  --rounds=N
 *
 * Quick mode exits non-zero only on a correctness failure (more holders than permits at once, a failed
 * acquisition of this library, a library with no complete run); the speed, fairness and command targets
 * are reported, never fatal.
 */
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import type { LoadTiming } from './config';
import { goAll, initAll, openWindow } from './load-run';
import { ChildWorker, Pool } from './processes';
import { startRedis } from './redis-server';
import { formatTargets } from './report';
import {
  analyzeSemaphoreRun,
  combineSemaphoreRuns,
  formatSemaphore,
  formatSemaphoreRuns,
  type SemaphoreRun,
  semaphoreTargets,
} from './semaphore-report';
import {
  type FromSemaphoreWorker,
  HOLDERS_KEY,
  PEER_OPTIONS,
  SEMAPHORE_KEY,
  SEMAPHORE_LIBS,
  type SemaphoreLib,
  type SemaphoreSpec,
  type ToSemaphoreWorker,
  WAIT_TIMEOUT_MS,
} from './semaphore-worker';
import { failOnBroken, headline, libsArg, reportHead, rotate, startLog, writeResults } from './session';

const WORKER = resolve(__dirname, 'semaphore-worker.ts');

/** The scenario of the issue: 4 processes × 10 workers, one key, 3 permits, each permit held 20 ms. */
const SHAPE = { processes: 4, workersPerProcess: 10, permits: 3, holdMs: 20 } as const;

type Mode = 'quick' | 'full';
const TIMING: Record<Mode, LoadTiming> = {
  quick: { rounds: 3, warmMs: 500, measureMs: 4_000, graceMs: 300 },
  full: { rounds: 3, warmMs: 2_000, measureMs: 10_000, graceMs: 1_000 },
};

/** A worker process (bench/semaphore-worker.ts), told by its environment to serve the harness. */
type SemaphoreProcess = ChildWorker<ToSemaphoreWorker, FromSemaphoreWorker>;
const spawn = (): SemaphoreProcess => new ChildWorker(WORKER, { env: { BENCH_SEMAPHORE_WORKER: '1' } });

/** One run of one library: its own redis-server, the workers' loops, Redis' counts at the window's edges. */
async function runOnce(
  pool: Pool<SemaphoreProcess>,
  lib: SemaphoreLib,
  round: number,
  timing: LoadTiming,
): Promise<SemaphoreRun> {
  const redis = await startRedis();
  const load = loadavg()[0];
  try {
    const processes = pool.take(SHAPE.processes);
    await initAll(
      processes,
      (process: number): SemaphoreSpec => ({
        lib,
        port: redis.port,
        process,
        workers: SHAPE.workersPerProcess,
        permits: SHAPE.permits,
        holdMs: SHAPE.holdMs,
      }),
    );
    const { window, executedInWindow } = openWindow([redis], timing);
    const results = await goAll(processes, window);
    const { executed, redisCpuUs } = await executedInWindow();
    return analyzeSemaphoreRun(
      lib,
      round,
      results,
      SHAPE.workersPerProcess,
      { from: window.measureFrom, to: window.measureTo },
      executed,
      redisCpuUs,
      load,
    );
  } catch (error) {
    pool.reset();
    throw error;
  } finally {
    await redis.stop();
  }
}

function parseArgs(argv: string[]) {
  let mode: Mode = 'full';
  let libs: SemaphoreLib[] = [...SEMAPHORE_LIBS];
  let rounds: number | undefined;
  for (const arg of argv) {
    if (arg === '--quick') mode = 'quick';
    else if (arg === '--full') mode = 'full';
    else if (arg.startsWith('--rounds=')) rounds = Number(arg.slice(9));
    else if (arg.startsWith('--libs=')) libs = libsArg(arg, SEMAPHORE_LIBS);
    else
      throw new Error(
        `unknown argument ${arg}; usage: bench/semaphore.ts [--quick] [--rounds=N] [--libs=a,b]`,
      );
  }
  if (rounds !== undefined && !(Number.isInteger(rounds) && rounds > 0))
    throw new Error('--rounds takes an integer from 1');
  return { mode, libs, rounds };
}

async function main(): Promise<void> {
  const { mode, libs, rounds } = parseArgs(process.argv.slice(2));
  const timing = { ...TIMING[mode], ...(rounds ? { rounds } : {}) };
  const started = new Date();
  const log = startLog(`semaphore ${mode}`);
  const pool = new Pool(spawn);
  const runs: SemaphoreRun[] = [];
  const errors = new Map<SemaphoreLib, string[]>(libs.map((lib) => [lib, []]));
  try {
    for (let round = 0; round < timing.rounds; round++) {
      for (const lib of rotate(libs, round)) {
        log(`semaphore, round ${round + 1}/${timing.rounds}: ${lib}`);
        try {
          runs.push(await runOnce(pool, lib, round, timing));
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          log(`  failed: ${message}`);
          errors.get(lib)?.push(message);
        }
      }
    }
  } finally {
    pool.close();
  }

  const metrics = libs.map((lib) =>
    combineSemaphoreRuns(
      lib,
      runs.filter((r) => r.lib === lib),
      errors.get(lib) ?? [],
    ),
  );
  const targets = semaphoreTargets(metrics, SHAPE.permits);
  const { processes, workersPerProcess, permits, holdMs } = SHAPE;
  console.log(headline('nestjs-redis-lock semaphore benchmark', mode, started));
  console.log(
    `\nsemaphore: ${processes} processes x ${workersPerProcess} workers, 1 key, permits ${permits}, ` +
      `each permit held ${holdMs} ms; ${timing.rounds} round(s) of ${timing.measureMs / 1000} s measured ` +
      `(median of the runs; grants, starved and holders: the worst run)\n` +
      `  nestjs-redis-lock: acquire(key, { permits: ${permits}, waitTimeout: ${WAIT_TIMEOUT_MS} }), lease.release()\n` +
      `  redis-semaphore: new Semaphore(client, key, ${permits}, ${JSON.stringify(PEER_OPTIONS)}) per ` +
      `acquisition (its defaults but acquireTimeout), acquire(), release()\n`,
  );
  console.log(formatSemaphore(metrics, permits));
  console.log(`\nRuns:\n${formatSemaphoreRuns(runs)}`);
  console.log(`\nTargets (within this run, reported only; * = correctness):\n${formatTargets(targets)}`);

  const report = {
    ...reportHead(mode, started, new Date()),
    scenario: {
      ...SHAPE,
      key: SEMAPHORE_KEY,
      holdersKey: HOLDERS_KEY,
      waitTimeoutMs: WAIT_TIMEOUT_MS,
      peerOptions: PEER_OPTIONS,
    },
    timing,
    semaphore: metrics,
    runs,
    targets,
  };
  const complete = libs.length === SEMAPHORE_LIBS.length && rounds === undefined;
  writeResults(report, { bench: 'semaphore', mode, started, complete });

  failOnBroken(
    mode,
    targets.filter((t) => t.correctness && !t.pass),
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
