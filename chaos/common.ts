/**
 * Shared by the chaos run, the soak and their workers: a clock every process agrees on, a seeded PRNG,
 * command-line flags, and a fork helper that runs a TypeScript file with tsx and kills it with us.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { killOnExit } from '../test/support/processes';
import { TOPOLOGIES, type TopologyName } from './topologies/topology';

/**
 * Milliseconds on CLOCK_MONOTONIC. Unlike performance.now() (relative to each process' start), this clock
 * is system-wide on Linux, so times taken in different processes compare directly.
 */
export const hr = (): number => Number(process.hrtime.bigint()) / 1e6;

/** hr() minus performance.now(): both read the same monotonic clock, so this offset is constant. */
export const perfToHr = (() => {
  const offset = hr() - performance.now();
  return (perfMs: number): number => perfMs + offset;
})();

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** mulberry32: small, fast, good enough to pick faults and keys reproducibly from a seed. */
export class Prng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0 || 0x9e3779b9;
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** Integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }
  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

/**
 * What a fault run's workers do (`--workload`): take mutexes (the fenced write and its unfenced twin),
 * take a semaphore's permits, take a read-write lock to read or to write, or all of them (the default;
 * the semaphore and the read-write lock are left out where the topology has none, a quorum). `both`,
 * from when there were two, is read as `all`.
 */
export const WORKLOADS = ['all', 'mutex', 'semaphore', 'rw'] as const;
export type WorkloadName = (typeof WORKLOADS)[number];

export interface Flags {
  quick: boolean;
  seed: number;
  /** Seconds, if given. */
  duration: number | undefined;
  /** The lock servers a fault run uses (`--topology`), if given. */
  topology: TopologyName | undefined;
  /** The workloads a fault run runs (`--workload`), if given. */
  workload: WorkloadName | undefined;
  /** The sentinels' down-after-milliseconds (`--sentinel-down-after`), if given. */
  sentinelDownAfter: number | undefined;
}

export function parseFlags(argv: readonly string[]): Flags {
  const flags: Flags = {
    quick: false,
    seed: Date.now() % 1_000_000_000,
    duration: undefined,
    topology: undefined,
    workload: undefined,
    sentinelDownAfter: undefined,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = (): number => {
      const raw = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[++i];
      const n = Number(raw);
      if (!Number.isFinite(n) || n < 0) throw new Error(`${arg} needs a non-negative number, got ${raw}`);
      return n;
    };
    if (arg === '--quick') flags.quick = true;
    else if (arg === '--seed' || arg.startsWith('--seed=')) flags.seed = Math.floor(value());
    else if (arg === '--duration' || arg.startsWith('--duration=')) flags.duration = value();
    else if (arg === '--topology' || arg.startsWith('--topology=')) {
      const raw = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[++i];
      if (!TOPOLOGIES.includes(raw as TopologyName))
        throw new Error(`--topology must be one of ${TOPOLOGIES.join(', ')}, got ${raw}`);
      flags.topology = raw as TopologyName;
    } else if (arg === '--workload' || arg.startsWith('--workload=')) {
      const given = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[++i];
      const raw = given === 'both' ? 'all' : given;
      if (!WORKLOADS.includes(raw as WorkloadName))
        throw new Error(`--workload must be one of ${WORKLOADS.join(', ')}, got ${given}`);
      flags.workload = raw as WorkloadName;
    } else if (arg === '--sentinel-down-after' || arg.startsWith('--sentinel-down-after=')) {
      const ms = value();
      if (!Number.isInteger(ms) || ms < 1)
        throw new Error(`--sentinel-down-after needs a whole number of milliseconds, got ${ms}`);
      flags.sentinelDownAfter = ms;
    } else
      throw new Error(
        `unknown argument ${arg} (expected --quick, --seed N, --duration S, --topology T, --workload W, ` +
          '--sentinel-down-after MS)',
      );
  }
  return flags;
}

/** Runs `file` (TypeScript) in a child Node process with tsx; `args` reach it as CHAOS_ARGS (JSON). */
export function forkTs(file: string, args: unknown, nodeFlags: string[] = []): ChildProcess {
  const child = fork(file, [], {
    execArgv: [...nodeFlags, '--import', 'tsx'],
    env: { ...process.env, CHAOS_ARGS: JSON.stringify(args) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  if (child.pid === undefined) throw new Error(`could not start ${file}`);
  killOnExit(child);
  // A send racing the child's death is reported here; the exit that follows is what we act on.
  child.on('error', () => {});
  return child;
}

/** The child side: its arguments, and a send that never throws once the parent is gone. */
export function childArgs<T>(): T {
  const raw = process.env.CHAOS_ARGS;
  if (raw === undefined)
    throw new Error('CHAOS_ARGS is not set: this file is started by chaos/run.ts or soak.ts');
  return JSON.parse(raw) as T;
}

export function describeError(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

/**
 * What every worker process of these runs does for itself: counts its unhandled rejections and reports
 * each to the parent, exits when the parent goes away, and, when asked to stop, reports what is still
 * open and then ends by itself (anything left running then shows as a hang in the parent).
 */
export function workerLifecycle(): {
  unhandled(): number;
  openResources(): Promise<string[]>;
  leave(): void;
} {
  let unhandled = 0;
  process.on('unhandledRejection', (error: unknown) => {
    unhandled++;
    sendToParent({ type: 'unhandled', kind: 'rejection', message: describeError(error) });
  });
  const onDisconnect = (): void => process.exit(0);
  process.on('disconnect', onDisconnect);
  return {
    unhandled: () => unhandled,
    async openResources() {
      // Let ioredis finish closing its sockets before looking at what is left.
      await sleep(200);
      return process.getActiveResourcesInfo().filter((r) => r !== 'PipeWrap' && r !== 'TTYWrap');
    },
    leave() {
      process.off('disconnect', onDisconnect);
      setTimeout(() => process.disconnect(), 50).unref();
    },
  };
}

export function sendToParent(message: unknown): void {
  if (!process.send || !process.connected) return;
  try {
    process.send(message, (error: Error | null) => {
      // The parent went away; 'disconnect' ends this process.
      void error;
    });
  } catch {
    // Channel closed under us: same as above.
  }
}

export function isRunning(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Writes `data` to chaos/results/<name>-<timestamp>.json and returns the path. */
export function writeResult(name: string, data: unknown): string {
  const dir = join(__dirname, 'results');
  mkdirSync(dir, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const file = join(dir, `${name}-${stamp}.json`);
  writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`);
  return file;
}

/** Least-squares slope of y over x (per unit of x); 0 with fewer than two points. */
export function slope(points: readonly [number, number][]): number {
  const n = points.length;
  if (n < 2) return 0;
  let sx = 0;
  let sy = 0;
  for (const [x, y] of points) {
    sx += x;
    sy += y;
  }
  const mx = sx / n;
  const my = sy / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}
