/**
 * A worker process of the semaphore benchmark (bench/semaphore.ts), forked with `--import tsx`.
 *
 * 'init': one ioredis client and one library instance for the whole process (as one instance of an
 * application would have), shared by `workers` concurrent loops. 'go': each loop, until the stop time,
 * acquires a permit of the one key, INCRs the holders' counter (its reply is how many hold a permit at
 * that moment), holds the permit `holdMs`, DECRs the counter, releases. Replies 'result'.
 *
 * - nestjs-redis-lock: `new LockService(client)`, `acquire(key, { permits, waitTimeout })`,
 *   `lease.release()` (ttl 30 s, no renewal: the defaults of `acquire`);
 * - redis-semaphore: `new Semaphore(client, key, permits, PEER_OPTIONS)` per acquisition, `acquire()`,
 *   `release()`: it tries a Lua script (ZREMRANGEBYSCORE, ZCARD, ZADD) every `retryInterval` ms until
 *   a slot is free, with no order among the waiters.
 */
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Redis from 'ioredis';
import { Semaphore } from 'redis-semaphore';
import type * as Library from '../lib';
import { hr, sleepUntil } from './clock';
import { CommandCounts, instrument } from './instrument';
import { type CallErrors, type LoadWindow, WORKER_CONNECTION } from './ipc';

// The built package, as users run it (BENCH_DIST: another build of it), as in bench/adapters.ts; loaded
// when a run needs it, so the harness can import this module's types and settings without it.
const library = (): typeof Library =>
  require(process.env.BENCH_DIST ? resolve(process.env.BENCH_DIST) : '../dist');

export const SEMAPHORE_LIBS = ['nestjs-redis-lock', 'redis-semaphore'] as const;
export type SemaphoreLib = (typeof SEMAPHORE_LIBS)[number];

/** redis-semaphore's settings: its defaults, but an acquireTimeout as long as this library's waitTimeout. */
export const PEER_OPTIONS = {
  retryInterval: 10,
  lockTimeout: 10_000,
  refreshInterval: 8_000,
  acquireTimeout: 60_000,
} as const;
/** This library's waitTimeout: long enough that nobody gives up in a run. */
export const WAIT_TIMEOUT_MS = 60_000;
export const SEMAPHORE_KEY = 'bench:semaphore';
/** INCRed by each holder after its grant, DECRed before its release. */
export const HOLDERS_KEY = 'bench:semaphore-holders';

export interface SemaphoreSpec {
  lib: SemaphoreLib;
  port: number;
  process: number;
  workers: number;
  permits: number;
  holdMs: number;
}

/** One acquisition: worker (index in its process), acquire called, acquire resolved (shared clock, ms). */
export const ACQ_STRIDE = 3;

export interface SemaphoreResult extends CallErrors {
  process: number;
  /** ACQ_STRIDE numbers per successful acquisition. */
  acquisitions: Float64Array;
  /** The largest INCR reply seen in the whole run (warm-up and drain included). */
  maxHolders: number;
  /** The holders' counter's own INCR/DECR sent in the measurement window (left out of the command counts). */
  counterOps: number;
  /** Commands the library's connections sent in the window (counter INCR/DECR left out), by label. */
  sent: Record<string, number>;
  /** CPU of this process (user + system) in the window, µs. */
  cpuUs: number;
  failures: number;
  /** Loops still inside a call when the worker gave up waiting for them. */
  unfinished: number;
}

export type ToSemaphoreWorker = { type: 'init'; spec: SemaphoreSpec } | ({ type: 'go' } & LoadWindow);
export type FromSemaphoreWorker =
  | { type: 'ready' }
  | { type: 'result'; result: SemaphoreResult }
  | { type: 'error'; error: string };

/** How long after the stop time the loops' last calls are given to end. */
const DRAIN_MS = 30_000;

interface Held {
  release(): Promise<unknown>;
}

const describe = (error: unknown): string =>
  error instanceof Error ? `${error.name}: ${error.message}` : String(error);
const kindOf = (error: unknown): string =>
  error instanceof Error
    ? error.constructor.name !== 'Error'
      ? error.constructor.name
      : error.name
    : 'unknown';
const bump = (map: Record<string, number>, key: string): void => {
  map[key] = (map[key] ?? 0) + 1;
};
const cpuNow = (): number => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

class SemaphoreRun {
  private acquisitions: number[] = [];
  private maxHolders = 0;
  private counterOps = 0;
  private counterIncr = 0;
  private counterDecr = 0;
  private failures = 0;
  private readonly failureKinds: Record<string, number> = {};
  private readonly releaseErrors: Record<string, number> = {};
  private readonly uncaught: string[] = [];
  private running = 0;

  private constructor(
    private readonly spec: SemaphoreSpec,
    private readonly client: Redis,
    private readonly counts: CommandCounts,
    private readonly acquire: () => Promise<Held>,
    private readonly closeLib: () => Promise<void>,
  ) {}

  static async create(spec: SemaphoreSpec): Promise<SemaphoreRun> {
    const counts = new CommandCounts();
    const client = new Redis({ host: '127.0.0.1', port: spec.port, connectionName: WORKER_CONNECTION });
    client.on('error', () => {});
    instrument(client, counts);
    if (client.status !== 'ready') await new Promise((done) => client.once('ready', done));
    if (spec.lib === 'nestjs-redis-lock') {
      const locks = new (library().LockService)(client);
      counts.nameDefinedScripts(client);
      const options = { permits: spec.permits, waitTimeout: WAIT_TIMEOUT_MS };
      return new SemaphoreRun(
        spec,
        client,
        counts,
        () => locks.acquire(SEMAPHORE_KEY, options),
        () => locks.close(),
      );
    }
    const acquire = async (): Promise<Held> => {
      const semaphore = new Semaphore(client, SEMAPHORE_KEY, spec.permits, PEER_OPTIONS);
      await semaphore.acquire();
      return semaphore;
    };
    return new SemaphoreRun(spec, client, counts, acquire, async () => {});
  }

  async go(window: LoadWindow): Promise<SemaphoreResult> {
    const onError = (error: unknown) => this.uncaught.push(describe(error));
    process.on('uncaughtException', onError);
    process.on('unhandledRejection', onError);
    const snapshot = () => ({ sent: this.counts.snapshot(), cpuUs: cpuNow() });
    const from = sleepUntil(window.measureFrom).then(() => {
      this.counterIncr = this.counterDecr = 0;
      return snapshot();
    });
    const to = sleepUntil(window.measureTo).then(() => {
      const at = { ...snapshot(), incr: this.counterIncr, decr: this.counterDecr };
      this.counterOps = this.counterIncr + this.counterDecr;
      return at;
    });
    await sleepUntil(window.startAt);
    const loops = Array.from({ length: this.spec.workers }, (_, w) => this.loop(w, window));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(loops),
      new Promise((done) => {
        timer = setTimeout(done, Math.max(0, window.stopAt - hr() + DRAIN_MS));
      }),
    ]);
    clearTimeout(timer);
    const before = await from;
    const after = await to;
    const sent: Record<string, number> = {};
    for (const [label, calls] of Object.entries(after.sent)) {
      const mine = label === 'incr' ? after.incr : label === 'decr' ? after.decr : 0;
      const delta = calls - (before.sent[label] ?? 0) - mine;
      if (delta > 0) sent[label] = delta;
    }
    process.off('uncaughtException', onError);
    process.off('unhandledRejection', onError);
    return {
      process: this.spec.process,
      acquisitions: Float64Array.from(this.acquisitions),
      maxHolders: this.maxHolders,
      counterOps: this.counterOps,
      sent,
      cpuUs: after.cpuUs - before.cpuUs,
      failures: this.failures,
      failureKinds: this.failureKinds,
      releaseErrors: this.releaseErrors,
      uncaught: this.uncaught.slice(0, 20),
      unfinished: this.running,
    };
  }

  private async loop(worker: number, window: LoadWindow): Promise<void> {
    this.running++;
    while (hr() < window.stopAt) {
      const call = hr();
      let held: Held;
      try {
        held = await this.acquire();
      } catch (error) {
        this.failures++;
        bump(this.failureKinds, kindOf(error));
        continue;
      }
      const grant = hr();
      this.counterIncr++;
      const holders = await this.client.incr(HOLDERS_KEY);
      if (holders > this.maxHolders) this.maxHolders = holders;
      await sleep(this.spec.holdMs);
      this.counterDecr++;
      await this.client.decr(HOLDERS_KEY);
      try {
        await held.release();
      } catch (error) {
        bump(this.releaseErrors, kindOf(error));
      }
      this.acquisitions.push(worker, call, grant);
    }
    this.running--;
  }

  async close(): Promise<void> {
    await this.closeLib().catch(() => {});
    this.client.disconnect();
  }
}

let current: SemaphoreRun | undefined;

async function handle(message: ToSemaphoreWorker): Promise<FromSemaphoreWorker> {
  if (message.type === 'init') {
    await current?.close();
    current = await SemaphoreRun.create(message.spec);
    return { type: 'ready' };
  }
  const run = current;
  if (!run) throw new Error('go before init');
  current = undefined;
  const result = await run.go(message);
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([run.close(), new Promise((done) => (timer = setTimeout(done, 5_000)))]);
  clearTimeout(timer);
  return { type: 'result', result };
}

// Only in a process the harness forked (the harness imports this module for its types and settings).
if (process.env.BENCH_SEMAPHORE_WORKER === '1' && process.send) {
  process.on('message', (message: ToSemaphoreWorker) => {
    handle(message).then(
      (reply) => process.send?.(reply),
      (error: unknown) =>
        process.send?.({
          type: 'error',
          error: error instanceof Error ? (error.stack ?? error.message) : String(error),
        }),
    );
  });
  // The harness going away (even killed) closes the channel: do not outlive it.
  process.on('disconnect', () => process.exit(0));
}
