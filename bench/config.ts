/** The scenarios, the libraries each one runs, and how long each part lasts in each mode. */
import { type LibName, OURS, OURS_NODE_REDIS } from './ipc';

/**
 * full: the figures in docs/benchmarks.md. quick: every library, a few seconds each (speed printed, not
 * gated). smoke (CI): this library only (on both clients), about a second per scenario, long enough to
 * show a lost update, an overlap, a crash or a command too many, which are gated; no speed is claimed.
 */
export type Mode = 'smoke' | 'quick' | 'full';

/** The libraries a smoke run keeps: this library's, on either client. */
export const SMOKE_LIBS: LibName[] = [OURS, OURS_NODE_REDIS];

export const PEERS: LibName[] = ['redlock', 'redlock-retry-inf', 'redis-semaphore'];
/** The peers over several masters (scenario 7): redlock as users run it under contention (retrying until
 * granted), and redis-semaphore's RedlockMutex. */
export const REDLOCK_PEERS: LibName[] = ['redlock-retry-inf', 'redis-semaphore'];
export const CONTENDED_LIBS: LibName[] = ['nestjs-redis-lock', ...PEERS];
/** Open loop: the peers at their defaults and tuned to a 10 ms retry (redis-semaphore's default already
 * retries every 10 ms); retrying forever has no place where every request has a deadline. */
export const OPEN_LIBS: LibName[] = [OURS, 'redlock', 'redlock-10ms', 'redis-semaphore'];

export interface LoadScenario {
  kind: 'load';
  /** 8: the shape of one open-loop run of scenario 8 (bench/run.ts openScenario). */
  id: 1 | 2 | 3 | 4 | 6 | 7 | 8 | 9;
  title: string;
  processes: number;
  workersPerProcess: number;
  keys: number;
  /** Sleep inside the critical section (between GET and SET of the key's counter); null: none. */
  csMs: number | null;
  /** Each acquisition locks a random pair of distinct keys (accounts) through the library's multi-key
   * path and transfers 1 unit between their balances (bench/transfer.ts). */
  transfer?: boolean;
  /** Independent redis-servers the lock is kept on (Redlock); absent: one. Command counts are summed
   * over them; the counters live on the first. */
  masters?: number;
  /** The harness stops this process (SIGSTOP) for `stopMs` every `everyMs` while the run lasts, as a
   * CPU quota or a long pause would, and resumes it (SIGCONT). */
  slow?: { process: number; stopMs: number; everyMs: number };
  libs: LibName[];
}

/**
 * Requests arrive on their own schedule (bench/open-loop.ts), spread over the processes, at fractions
 * of the serial capacity (the critical section alone, back to back on one key, measured first in the
 * same run; times the number of keys), on 1 key and on a few hot keys.
 */
export interface OpenScenario {
  kind: 'open';
  id: 8;
  title: string;
  processes: number;
  keySets: number[];
  loads: number[];
  csMs: number;
  libs: LibName[];
}

export interface ManyScenario {
  kind: 'many';
  id: 5;
  title: string;
  waiters: number;
  variants: { name: 'one-key' | 'many-keys'; keys: number }[];
  libs: LibName[];
}

export type Scenario = LoadScenario | ManyScenario | OpenScenario;

export const SCENARIOS: Scenario[] = [
  {
    kind: 'load',
    id: 1,
    title: 'uncontended: 1 worker, acquire + release',
    processes: 1,
    workersPerProcess: 1,
    keys: 1,
    csMs: null,
    libs: ['raw-floor', OURS, OURS_NODE_REDIS, ...PEERS],
  },
  {
    kind: 'load',
    id: 2,
    title: 'short critical section: 4 processes x 5 workers, 1 key, GET / 2 ms / SET',
    processes: 4,
    workersPerProcess: 5,
    keys: 1,
    csMs: 2,
    libs: [OURS, OURS_NODE_REDIS, ...PEERS],
  },
  {
    kind: 'load',
    id: 3,
    title: 'long critical section: 4 processes x 10 workers, 1 key, GET / 50 ms / SET',
    processes: 4,
    workersPerProcess: 10,
    keys: 1,
    csMs: 50,
    libs: CONTENDED_LIBS,
  },
  {
    kind: 'load',
    id: 4,
    title: 'many keys: 4 processes x 50 workers, 100 keys, GET / 2 ms / SET',
    processes: 4,
    workersPerProcess: 50,
    keys: 100,
    csMs: 2,
    libs: CONTENDED_LIBS,
  },
  {
    kind: 'many',
    id: 5,
    title: 'many waiters: 1,000 waiters in one process',
    waiters: 1_000,
    variants: [
      { name: 'one-key', keys: 1 },
      { name: 'many-keys', keys: 1_000 },
    ],
    libs: CONTENDED_LIBS,
  },
  {
    kind: 'load',
    id: 6,
    title: 'transfers: 4 processes x 5 workers, 2 of 6 accounts per acquisition, GET x2 / 2 ms / SET x2',
    processes: 4,
    workersPerProcess: 5,
    keys: 6,
    csMs: 2,
    transfer: true,
    libs: CONTENDED_LIBS,
  },
  {
    kind: 'load',
    id: 7,
    title:
      'Redlock over 5 masters: 4 processes x 5 workers, 1 key, GET / 2 ms / SET (redlock-retry-inf: new ' +
      'Redlock(5 clients, { retryCount: -1 }); redis-semaphore: RedlockMutex(5 clients))',
    processes: 4,
    workersPerProcess: 5,
    keys: 1,
    csMs: 2,
    masters: 5,
    libs: [OURS, ...REDLOCK_PEERS],
  },
  {
    kind: 'open',
    id: 8,
    title:
      'open loop: Poisson arrivals over 4 processes at 50 / 90 / 120 % of serial capacity, 1 key and 4 hot ' +
      'keys, GET / 2 ms / SET, each request with a deadline',
    processes: 4,
    keySets: [1, 4],
    loads: [0.5, 0.9, 1.2],
    csMs: 2,
    libs: OPEN_LIBS,
  },
  {
    kind: 'load',
    id: 9,
    title:
      'a slow instance: scenario 2 (4 processes x 5 workers, 1 key, GET / 2 ms / SET) with process 4 stopped ' +
      '50 ms every 200 ms',
    processes: 4,
    workersPerProcess: 5,
    keys: 1,
    csMs: 2,
    slow: { process: 3, stopMs: 50, everyMs: 200 },
    libs: CONTENDED_LIBS,
  },
];

export interface LoadTiming {
  /** Runs per library, interleaved across libraries (round r runs every library once, in rotated order). */
  rounds: number;
  /** Workers run this long before the measurement window opens (JIT, scripts, connections). */
  warmMs: number;
  measureMs: number;
  /** Workers keep starting acquisitions this long after the window closes, so calls made late in the
   * window still wait behind steady contention; then they drain. */
  graceMs: number;
}

export interface Timing {
  uncontended: LoadTiming;
  contended: LoadTiming;
  /** Scenario 3: a worker gets about one grant per 2 s, so its window must be longer in quick mode. */
  long: LoadTiming;
  many: { settleMs: number; holdMs: number };
  /** The hand-off floor probe: pushes sent this many times, after ~3 ms idle (as in scenarios 2 and 4)
   * and after ~50 ms idle (as in scenario 3). */
  probe: { short: number; long: number };
  /** Scenario 8: per run; `timeoutMs` is every request's deadline (its wait bound where the library
   * takes one), `capacityMs` how long the serial capacity is measured. */
  open: {
    rounds: number;
    warmMs: number;
    measureMs: number;
    timeoutMs: number;
    capacityMs: number;
    /** The loads run, when not the scenario's own. */
    loads?: number[];
  };
}

/** Idle gaps of the hand-off floor probe, ms: about the critical sections of scenarios 2 and 3. */
export const PROBE_GAPS = { short: 3, long: 50 } as const;

export const TIMING: Record<Mode, Timing> = {
  // Scenario 3's workers get a grant about every 2 s (40 workers, 50 ms each): 2.5 s gives each one.
  smoke: {
    uncontended: { rounds: 1, warmMs: 100, measureMs: 400, graceMs: 0 },
    contended: { rounds: 1, warmMs: 200, measureMs: 1_000, graceMs: 200 },
    long: { rounds: 1, warmMs: 200, measureMs: 2_500, graceMs: 200 },
    many: { settleMs: 250, holdMs: 300 },
    probe: { short: 20, long: 5 },
    // Overload only: where requests time out and leave the line, the path a smoke must cover.
    open: { rounds: 1, warmMs: 300, measureMs: 800, timeoutMs: 1_000, capacityMs: 300, loads: [1.2] },
  },
  quick: {
    uncontended: { rounds: 2, warmMs: 300, measureMs: 800, graceMs: 0 },
    contended: { rounds: 1, warmMs: 400, measureMs: 2_500, graceMs: 300 },
    long: { rounds: 1, warmMs: 400, measureMs: 4_500, graceMs: 300 },
    many: { settleMs: 250, holdMs: 300 },
    probe: { short: 200, long: 30 },
    open: { rounds: 1, warmMs: 500, measureMs: 1_500, timeoutMs: 1_000, capacityMs: 600 },
  },
  full: {
    uncontended: { rounds: 5, warmMs: 500, measureMs: 4_000, graceMs: 0 },
    contended: { rounds: 2, warmMs: 2_000, measureMs: 12_000, graceMs: 1_000 },
    long: { rounds: 2, warmMs: 2_000, measureMs: 12_000, graceMs: 1_000 },
    many: { settleMs: 1_000, holdMs: 1_000 },
    probe: { short: 1_000, long: 150 },
    // At 120 % a fair queue's wait grows by 0.2 s a second until it reaches the deadline (5 s for 1 s):
    // the warm-up covers most of that, so the window sees the steady overload, not the build-up.
    open: { rounds: 2, warmMs: 4_000, measureMs: 8_000, timeoutMs: 1_000, capacityMs: 2_000 },
  },
};
