/**
 * Messages between the harness (bench/run.ts) and its worker processes (bench/worker.ts). The channel
 * uses Node's 'advanced' serialization, so typed arrays cross it as they are.
 */

/** The libraries compared; 'raw-floor' (SET NX PX + a Lua compare-and-delete) only runs uncontended. */
export const LIBS = [
  'nestjs-redis-lock',
  'nestjs-redis-lock-node-redis',
  'nestjs-redis-lock-baseline',
  'redlock',
  'redlock-retry-inf',
  'redlock-10ms',
  'redis-semaphore',
  'raw-floor',
] as const;
export type LibName = (typeof LIBS)[number];
export const OURS: LibName = 'nestjs-redis-lock';
/** This library on a node-redis client instead of ioredis (scenarios 1 and 2). */
export const OURS_NODE_REDIS: LibName = 'nestjs-redis-lock-node-redis';
/** Another build of this library (`--baseline=DIR`), run beside this one in the same run. */
export const OURS_BASELINE: LibName = 'nestjs-redis-lock-baseline';

/** Prefix of the critical section's counters: their GET/SET are not counted as lock commands. */
export const COUNTER_PREFIX = 'bench:counter:';
export const lockKey = (i: number): string => `k${i}`;
export const counterKey = (i: number): string => `${COUNTER_PREFIX}${i}`;

/** Names of the connections the harness itself opens; CLIENT LIST counts every other one. */
export const ADMIN_CONNECTION = 'bench-admin';
export const HOLDER_CONNECTION = 'bench-holder';
export const WORKER_CONNECTION = 'bench-worker';

/**
 * One acquisition, as a worker records it (all on the shared monotonic clock, ms):
 * worker (index within its process), key, call of acquire, acquire resolved (critical section starts),
 * critical section ended (release called), release resolved, and the arrival of the grant's push (this
 * library only; NaN if the acquisition was not woken by a push).
 */
export const RECORD = { worker: 0, key: 1, call: 2, grant: 3, release: 4, released: 5, push: 6 } as const;
export const RECORD_STRIDE = 7;
/**
 * One request of an open-loop run, whatever became of it: key, its scheduled arrival, when it held the
 * lock, when the call failed (NaN where that did not happen; both NaN: still open when the worker
 * reported), and 1 if the failure was the library giving up on waiting (a timeout), else 0.
 */
export const REQUEST = { key: 0, arrival: 1, grant: 2, failed: 3, timedOut: 4 } as const;
export const REQUEST_STRIDE = 5;
/** A failed acquisition: worker, call of acquire, rejection. */
export const FAILURE = { worker: 0, call: 1, failed: 2 } as const;
export const FAILURE_STRIDE = 3;

export interface LoadSpec {
  lib: LibName;
  /** The Redis the lock and the critical section's counters use (with `quorum`, the first master). */
  port: number;
  /** Scenario 7: every master of a quorum (Redlock), `port` first; the lock is kept on all of them. */
  quorum?: number[];
  /** Index of this process in the run (0-based). */
  process: number;
  workers: number;
  keys: number;
  /** Length of the critical section's sleep between GET and SET; null: no critical section at all. */
  csMs: number | null;
  /** Scenario 6: every acquisition locks two distinct keys of `keys` (accounts) and moves 1 unit
   * between their balances; the record's key is the pair (see bench/transfer.ts). */
  transfer: boolean;
  /**
   * Open loop: requests arrive at this process as a Poisson process of `ratePerS` (its share of the
   * total), from the start until the stop time, each on a random key of `keys`, whatever the earlier ones
   * are doing; each call waits at most `timeoutMs` where the library can bound its wait. Absent: a
   * closed loop of `workers` that acquire again as soon as they released.
   */
  open?: { ratePerS: number; seed: number; timeoutMs: number };
}

export interface LoadWindow {
  /** Workers start their loops at this moment (shared clock). */
  startAt: number;
  /** The measurement window: commands are counted between these moments. */
  measureFrom: number;
  measureTo: number;
  /** Workers start no new acquisition after this moment; calls in flight finish. */
  stopAt: number;
}

/** What went wrong in a worker's calls, as it counts them (each kind by error class). */
export interface CallErrors {
  /** Failed acquisitions. */
  failureKinds: Record<string, number>;
  /** Failed releases. */
  releaseErrors: Record<string, number>;
  /** Errors that escaped the library as uncaught exceptions or unhandled rejections. */
  uncaught: string[];
}

export interface LoadResult extends CallErrors {
  process: number;
  /** RECORD_STRIDE numbers per successful acquisition. */
  records: Float64Array;
  /** FAILURE_STRIDE numbers per failed acquisition. */
  failures: Float64Array;
  /** Open loop only: REQUEST_STRIDE numbers per request that arrived (granted, failed or still open). */
  requests: Float64Array;
  /** When the worker stopped looking (open loop: requests still open then are censored there). */
  reportedAt: number;
  /** Commands the library's connections sent in the measurement window (EVALSHA labelled by script),
   * critical section excluded. */
  sent: Record<string, number>;
  /** The same over the whole run (warm-up, start-up of connections and drain included). */
  sentTotal: Record<string, number>;
  /** The critical section's own commands in the window, sent on the same connection. */
  dataGets: number;
  dataSets: number;
  /** Connections the library used (the client given to it and every duplicate it made). */
  connections: number;
  /** CPU time of this worker process (user + system) in the measurement window, µs. */
  cpuUs: number;
}

export interface ManySpec {
  lib: LibName;
  port: number;
  variant: 'one-key' | 'many-keys';
  waiters: number;
  keys: number;
  /** How long waiters are given to queue before heap and connections are measured. */
  settleMs: number;
  /** How long the lock stays held afterwards while the waiters' commands are counted. */
  holdMs: number;
}

export interface ManyWaiting {
  /** Heap delta after global.gc() (code spaces left out), per waiter. */
  heapPerWaiter: number;
  /** The same for the harness' own per-waiter bookkeeping around a bare promise (calibration). */
  harnessHeapPerWaiter: number;
  /** Waiters recorded in Redis queues (this library only), else null. */
  queued: number | null;
  settledMs: number;
}

export interface ManyResult {
  granted: number;
  failures: number;
  failureKinds: Record<string, number>;
  uncaught: string[];
  /** Commands the waiters' connections sent while the lock stayed held, per waiter per second. */
  idleCommandsPerWaiterPerS: number;
  /** Commands sent by the waiters' connections from their first call until all were done, per waiter. */
  sentPerWaiter: number;
  /** This process's CPU from the waiters' first call until all were done, per waiter, µs. */
  cpuUsPerWaiter: number;
  /** From the holder's release until every waiter had its turn (or failed), ms. */
  drainMs: number;
  /** From the holder's release until each waiter held the lock, ms. */
  afterRelease: Float64Array;
}

/**
 * The hand-off floor of this machine: one process runs a one-line Lua script that only PUBLISHes to a
 * channel another process subscribes to, `count` times, `gapMs` apart (idle in between, as a lock is
 * idle during a critical section). No lock library involved.
 */
export interface ProbeSpec {
  port: number;
  count: number;
  gapMs: number;
}

export interface ProbeResult {
  /** When each PUBLISH script was sent (shared clock). */
  sent: Float64Array;
  /** Its reply, as the sender saw it, ms after sending. */
  replyMs: Float64Array;
}

export type ToWorker =
  | { type: 'init'; spec: LoadSpec }
  | { type: 'probe-listen'; port: number }
  | { type: 'probe-send'; spec: ProbeSpec }
  | { type: 'probe-collect' }
  /** The critical section alone (GET, sleep, SET), back to back on one key for `ms`: its rate. */
  | { type: 'capacity'; port: number; csMs: number; ms: number }
  | ({ type: 'go' } & LoadWindow)
  | { type: 'many'; spec: ManySpec }
  | { type: 'release' };

export type FromWorker =
  | { type: 'ready' }
  | { type: 'probe-sent'; result: ProbeResult }
  | { type: 'probe-arrivals'; arrivals: Float64Array }
  | { type: 'capacity'; perS: number }
  | { type: 'result'; result: LoadResult }
  | { type: 'waiting'; waiting: ManyWaiting }
  | { type: 'many-result'; result: ManyResult }
  | { type: 'error'; error: string };
