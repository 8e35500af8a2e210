/**
 * A fault run's settings, from the command line: `--quick` (CI: under 60 s, every fault kind of the
 * topology at least once), `--seed N` (the nemesis' choices and the workers' keys; the same seed
 * replays the same plan), `--duration S` (the full run's nemesis phase, 600 s by default), `--topology
 * single|redlock|sentinel` (one lock server, five holding each lock on a majority, or a master with one
 * replica and three sentinels; single by default), `--workload all|mutex|semaphore|rw` (what the
 * workers take: all by default, `both` its old name; the semaphore and the read-write lock left out on
 * redlock, which has neither), `--sentinel-down-after MS` (the sentinels' down-after-milliseconds on the
 * sentinel topology, 500 by default: how long a master may stay silent before they fail over from it;
 * larger values make runs without the failovers they start on their own, from a live but busy master).
 */
import { type Flags, parseFlags, type WorkloadName } from './common';
import type { TopologyName } from './topologies/topology';

/** A workload of locks several callers hold at once (chaos/workloads/shared-locks.ts). */
export interface SharedConfig {
  /** Its keys: distinct from the other workloads', since one key is one kind of lock. */
  keys: string[];
  /** Agents per worker process. */
  agents: number;
  /** The share of grants whose holder abandons its lease (never releases it): it ends by expiry. */
  abandon: number;
}

/** The semaphore workload: agents taking permits on keys of their own. */
export interface SemaphoreConfig extends SharedConfig {
  /** How many holders each key allows at once. */
  permits: number;
}

/** The read-write workload: agents reading (most) or writing keys of their own. */
export interface ReadWriteConfig extends SharedConfig {
  /** The share of calls that write. */
  writes: number;
}

export interface ChaosConfig {
  workers: number;
  /** Mutex agents per worker process (0 when the run has no mutex workload). */
  agents: number;
  /** The mutex keys (none when the run has no mutex workload). */
  keys: string[];
  ttl: number;
  claimWindow: number;
  waitTimeout: number;
  commandTimeout: number;
  /** A quorum's longest wait for one node's reply: at most ttl/3 (the library's rule), so 100 ms. */
  nodeTimeout: number;
  /** The lock's key prefix (the library's default): owner keys are `<prefix>{<lock>}`. */
  lockPrefix: string;
  workMs: [number, number];
  /** Nemesis phase, ms. Quick: bounded so that the whole run stays under 60 s. */
  nemesisMs: number;
  calmMs: number;
  gapMs: [number, number];
  /** Scheduling slack for a loaded 2-core machine. */
  slackMs: number;
  /** The semaphore workload, when the run has it. */
  semaphore?: SemaphoreConfig;
  /** The read-write workload, when the run has it. */
  readWrite?: ReadWriteConfig;
}

/** The sentinels' down-after-milliseconds without `--sentinel-down-after`: the test harness' default. */
export const DEFAULT_SENTINEL_DOWN_AFTER_MS = 500;

export interface RunSettings {
  flags: Flags;
  quick: boolean;
  seed: number;
  topology: TopologyName;
  workload: WorkloadName;
  /** The sentinels' down-after-milliseconds (sentinel topology only). */
  sentinelDownAfterMs: number;
  cfg: ChaosConfig;
  /** The command that replays this run. */
  reproduce: string;
  /**
   * Whole-run budget: quick mode must stay under 60 s (more with a longer `--sentinel-down-after`);
   * past it, something hangs.
   */
  budgetMs: number;
}

export function settingsFrom(argv: readonly string[]): RunSettings {
  const flags = parseFlags(argv);
  const quick = flags.quick;
  const topology = flags.topology ?? 'single';
  const workload = flags.workload ?? 'all';
  // A quorum of independent masters has no semaphores and no read-write locks (both refused there).
  if ((workload === 'semaphore' || workload === 'rw') && topology === 'redlock')
    throw new Error(
      `--workload ${workload} needs one Redis: the redlock topology has no semaphores or read-write locks`,
    );
  if (flags.sentinelDownAfter !== undefined && topology !== 'sentinel')
    throw new Error('--sentinel-down-after needs --topology sentinel');
  const sentinelDownAfterMs = flags.sentinelDownAfter ?? DEFAULT_SENTINEL_DOWN_AFTER_MS;
  const runs = (name: WorkloadName): boolean => workload === 'all' || workload === name;
  const mutex = runs('mutex');
  const semaphore = runs('semaphore') && topology !== 'redlock';
  const readWrite = runs('rw') && topology !== 'redlock';
  const cfg: ChaosConfig = {
    workers: quick ? 3 : 4,
    agents: mutex ? 2 : 0,
    keys: mutex ? Array.from({ length: quick ? 3 : 4 }, (_, i) => `chaos-${i}`) : [],
    ttl: quick ? 500 : 600,
    claimWindow: quick ? 200 : 250,
    waitTimeout: quick ? 3_000 : 4_000,
    commandTimeout: quick ? 1_000 : 1_500,
    nodeTimeout: 100,
    lockPrefix: 'lock:',
    workMs: [20, 120],
    nemesisMs: quick ? 28_000 : Math.round((flags.duration ?? 600) * 1000),
    calmMs: quick ? 3_000 : 10_000,
    gapMs: quick ? [150, 600] : [300, 2_000],
    slackMs: 1_000,
    // More agents than permits on each key, so that some wait in line; abandoned leases hold a permit
    // for a whole ttl, so that waiters also depend on expiry to be served.
    semaphore: semaphore
      ? { keys: ['chaos-sem-0', 'chaos-sem-1'], permits: 3, agents: 3, abandon: 0.1 }
      : undefined,
    // Readers mostly, so that they share the key; one call in four writes, and holds back the readers
    // behind it in line. Abandoned reads and writes hold the key until they expire, as above.
    readWrite: readWrite
      ? { keys: ['chaos-rw-0', 'chaos-rw-1'], agents: 3, writes: 0.25, abandon: 0.1 }
      : undefined,
  };
  const seed = flags.seed;
  const reproduce = `tsx chaos/run.ts${quick ? ' --quick' : ''} --topology ${topology}${
    workload === 'all' ? '' : ` --workload ${workload}`
  } --seed ${seed}${!quick && flags.duration !== undefined ? ` --duration ${flags.duration}` : ''}${
    flags.sentinelDownAfter !== undefined ? ` --sentinel-down-after ${flags.sentinelDownAfter}` : ''
  }`;
  return {
    flags,
    quick,
    seed,
    topology,
    workload,
    sentinelDownAfterMs,
    cfg,
    reproduce,
    // A longer down-after slows each failover by as much: a kill-master still under way when the
    // nemesis stops, and one more while the run heals.
    budgetMs:
      (quick ? 60_000 : cfg.nemesisMs + 120_000) +
      2 * Math.max(0, sentinelDownAfterMs - DEFAULT_SENTINEL_DOWN_AFTER_MS),
  };
}
