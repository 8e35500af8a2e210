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
import { type ChildProcess, fork } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { resolve } from 'node:path';
import { writeAtomically } from './chart';
import { hr, sleepUntil } from './clock';
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
  type ToSemaphoreWorker,
  WAIT_TIMEOUT_MS,
} from './semaphore-worker';

const ROOT = resolve(__dirname, '..');
const WORKER = resolve(__dirname, 'semaphore-worker.ts');
const WORKER_ARGS = (process.env.BENCH_WORKER_ARGS ?? '').split(' ').filter(Boolean);

/** The scenario of the issue: 4 processes × 10 workers, one key, 3 permits, each permit held 20 ms. */
const SHAPE = { processes: 4, workersPerProcess: 10, permits: 3, holdMs: 20 } as const;

type Mode = 'quick' | 'full';
interface Timing {
  rounds: number;
  warmMs: number;
  measureMs: number;
  /** Workers keep acquiring this long after the window, so its last calls wait behind steady load. */
  graceMs: number;
}
const TIMING: Record<Mode, Timing> = {
  quick: { rounds: 3, warmMs: 500, measureMs: 4_000, graceMs: 300 },
  full: { rounds: 3, warmMs: 2_000, measureMs: 10_000, graceMs: 1_000 },
};

type Reply<T extends FromSemaphoreWorker['type']> = Extract<FromSemaphoreWorker, { type: T }>;

/** One worker process (bench/semaphore-worker.ts) and its request/reply channel, one request at a time. */
class Child {
  private readonly child: ChildProcess;
  private pending?: { expect: string; resolve: (m: FromSemaphoreWorker) => void; reject: (e: Error) => void };
  private exited = false;

  constructor() {
    this.child = fork(WORKER, [], {
      cwd: ROOT,
      execArgv: ['--import', 'tsx', ...WORKER_ARGS],
      env: { ...process.env, BENCH_SEMAPHORE_WORKER: '1' },
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child.on('message', (message: FromSemaphoreWorker) => {
      const pending = this.pending;
      if (!pending) return;
      this.pending = undefined;
      if (message.type === 'error') pending.reject(new Error(`worker: ${message.error}`));
      else if (message.type === pending.expect) pending.resolve(message);
      else pending.reject(new Error(`worker answered '${message.type}', expected '${pending.expect}'`));
    });
    this.child.on('exit', (code, signal) => {
      this.exited = true;
      this.pending?.reject(new Error(`worker process exited (code ${code}, signal ${signal})`));
      this.pending = undefined;
    });
  }

  get alive(): boolean {
    return !this.exited;
  }

  request<T extends FromSemaphoreWorker['type']>(
    message: ToSemaphoreWorker,
    expect: T,
    timeoutMs: number,
  ): Promise<Reply<T>> {
    if (this.exited) return Promise.reject(new Error('worker process is gone'));
    return new Promise<Reply<T>>((resolvePromise, reject) => {
      const timer = setTimeout(() => {
        this.pending = undefined;
        reject(new Error(`worker did not answer '${message.type}' within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending = {
        expect,
        resolve: (m) => {
          clearTimeout(timer);
          resolvePromise(m as Reply<T>);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      this.child.send(message);
    });
  }

  kill(): void {
    if (!this.exited) this.child.kill(WORKER_ARGS.length > 0 ? 'SIGTERM' : 'SIGKILL');
  }
}

/** The worker processes, reused from run to run (each run gets fresh clients and library instances). */
class Children {
  private all: Child[] = [];
  take(n: number): Child[] {
    for (let i = 0; i < n; i++) if (!this.all[i]?.alive) this.all[i] = new Child();
    return this.all.slice(0, n);
  }
  /** After a failed run the workers' state is unknown: start over. */
  reset(): void {
    for (const child of this.all) child.kill();
    this.all = [];
  }
}

/** One run of one library: its own redis-server, the workers' loops, Redis' counts at the window's edges. */
async function runOnce(
  children: Children,
  lib: SemaphoreLib,
  round: number,
  timing: Timing,
): Promise<SemaphoreRun> {
  const redis = await startRedis();
  const load = loadavg()[0];
  try {
    const processes = children.take(SHAPE.processes);
    await Promise.all(
      processes.map((child, process) =>
        child.request(
          {
            type: 'init',
            spec: {
              lib,
              port: redis.port,
              process,
              workers: SHAPE.workersPerProcess,
              permits: SHAPE.permits,
              holdMs: SHAPE.holdMs,
            },
          },
          'ready',
          60_000,
        ),
      ),
    );
    const startAt = hr() + 300;
    const measureFrom = startAt + timing.warmMs;
    const measureTo = measureFrom + timing.measureMs;
    const stopAt = measureTo + timing.graceMs;
    const snapshot = async () => {
      const [stats, cpuUs] = await Promise.all([redis.admin.commandStats(), redis.admin.cpuUs()]);
      return { stats, cpuUs };
    };
    const statsFrom = sleepUntil(measureFrom).then(snapshot);
    const statsTo = sleepUntil(measureTo).then(snapshot);
    // Awaited below; if the run fails first, their rejection (the server is gone by then) is not an error.
    for (const pending of [statsFrom, statsTo]) pending.catch(() => {});
    const replies = await Promise.all(
      processes.map((child) =>
        child.request(
          { type: 'go', startAt, measureFrom, measureTo, stopAt },
          'result',
          stopAt - hr() + 60_000,
        ),
      ),
    );
    const before = await statsFrom;
    const after = await statsTo;
    const executed: Record<string, number> = {};
    for (const [name, calls] of Object.entries(after.stats)) {
      const delta = calls - (before.stats[name] ?? 0);
      if (delta > 0) executed[name] = delta;
    }
    return analyzeSemaphoreRun(
      lib,
      round,
      replies.map((r) => r.result),
      SHAPE.workersPerProcess,
      { from: measureFrom, to: measureTo },
      executed,
      after.cpuUs - before.cpuUs,
      load,
    );
  } catch (error) {
    children.reset();
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
    else if (arg.startsWith('--libs=')) {
      libs = arg.slice(7).split(',') as SemaphoreLib[];
      const unknown = libs.filter((l) => !SEMAPHORE_LIBS.includes(l));
      if (unknown.length)
        throw new Error(`unknown libraries: ${unknown.join(', ')} (known: ${SEMAPHORE_LIBS.join(', ')})`);
    } else
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
  const t0 = hr();
  const log = (line: string) =>
    process.stderr.write(`[${((hr() - t0) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);
  log(
    `semaphore ${mode} run on ${cpus().length} CPUs, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  const children = new Children();
  const runs: SemaphoreRun[] = [];
  const errors = new Map<SemaphoreLib, string[]>(libs.map((lib) => [lib, []]));
  try {
    for (let round = 0; round < timing.rounds; round++) {
      // Round r starts from the r-th library, so no library always runs first or last.
      for (const lib of libs.map((_, i) => libs[(i + round) % libs.length])) {
        log(`semaphore, round ${round + 1}/${timing.rounds}: ${lib}`);
        try {
          runs.push(await runOnce(children, lib, round, timing));
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          log(`  failed: ${message}`);
          errors.get(lib)?.push(message);
        }
      }
    }
  } finally {
    children.reset();
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
  console.log(
    `nestjs-redis-lock semaphore benchmark, ${mode} mode, ${started.toISOString()}, ${cpus().length} CPUs ` +
      `(${cpus()[0]?.model ?? 'unknown'}), load average at the end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
  );
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

  const finished = new Date();
  const report = {
    mode,
    startedAt: started.toISOString(),
    finishedAt: finished.toISOString(),
    durationS: (finished.getTime() - started.getTime()) / 1000,
    machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version, loadavgAtEnd: loadavg() },
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
  const json = `${JSON.stringify(report, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v), 2)}\n`;
  const stamp = started.toISOString().replace(/[:.]/g, '-');
  const complete = libs.length === SEMAPHORE_LIBS.length && rounds === undefined;
  const latest = `latest-semaphore-${mode}${complete ? '' : '-partial'}.json`;
  writeAtomically(resolve(ROOT, `bench/results/${mode}-semaphore-${stamp}.json`), json);
  writeAtomically(resolve(ROOT, `bench/results/${latest}`), json);
  console.log(`\nwrote bench/results/${mode}-semaphore-${stamp}.json, bench/results/${latest}`);

  const broken = targets.filter((t) => t.correctness && !t.pass);
  if (mode === 'quick' && broken.length) {
    console.error(`\n${broken.length} correctness check(s) failed`);
    process.exitCode = 1;
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
