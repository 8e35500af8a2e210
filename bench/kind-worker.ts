/**
 * A worker process of the lock-kind benchmarks (bench/semaphore.ts, bench/read-write.ts), forked with
 * `--import tsx`.
 *
 * 'init': one ioredis client and one library instance for the whole process (as one instance of an
 * application would have), shared by `workers` concurrent loops. 'go': each loop, until the stop time,
 * picks a side for its next acquisition (a semaphore has one; a read-write load two, write and read,
 * drawn from a seeded generator by their shares), takes the one key as that side asks, INCRs the side's
 * counter (its reply is how many of that side hold the key at that moment) and, with two sides, GETs the
 * other side's counter (it must be 0: readers never hold beside a writer), holds it `holdMs`, DECRs the
 * counter, releases. Each side increments before it looks, so any overlap is seen by at least one of the
 * two (as test/workers/read-write.worker.ts checks it). Replies 'result'.
 *
 * - nestjs-redis-lock: `new LockService(client)`, `acquire(key, { ...side.options, waitTimeout })`,
 *   `lease.release()` (ttl 30 s, no renewal: the defaults of `acquire`);
 * - redis-semaphore: `new Semaphore(client, key, side.options.permits, PEER_OPTIONS)` per acquisition,
 *   `acquire()`, `release()`: it tries a Lua script (ZREMRANGEBYSCORE, ZCARD, ZADD) every
 *   `retryInterval` ms until a slot is free, with no order among the waiters.
 */
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Redis from 'ioredis';
import { Semaphore } from 'redis-semaphore';
import type * as Library from '../lib';
import { hr, sleepUntil } from './clock';
import { CommandCounts, instrument } from './instrument';
import { type CallErrors, type LoadWindow, WORKER_CONNECTION } from './ipc';
import { seededRandom } from './open-loop';

// The built package, as users run it (BENCH_DIST: another build of it), as in bench/adapters.ts; loaded
// when a run needs it, so the harness can import this module's types and settings without it.
const library = (): typeof Library =>
  require(process.env.BENCH_DIST ? resolve(process.env.BENCH_DIST) : '../dist');

/** Who takes the key: this library (with each side's options), or redis-semaphore's `Semaphore`. */
export type KindLib = 'nestjs-redis-lock' | 'redis-semaphore';

/** redis-semaphore's settings: its defaults, but an acquireTimeout as long as this library's waitTimeout. */
export const PEER_OPTIONS = {
  retryInterval: 10,
  lockTimeout: 10_000,
  refreshInterval: 8_000,
  acquireTimeout: 60_000,
} as const;
/** This library's waitTimeout: long enough that nobody gives up in a run. */
export const WAIT_TIMEOUT_MS = 60_000;

/** One kind of acquisition of the key: a semaphore's permit, or a read-write lock's read or write. */
export interface KindSide {
  /** For the report: 'holder', 'write', 'read'. */
  name: string;
  /** This share of the acquisitions is of this side (the shares add up to 1). */
  share: number;
  /** This library's acquire options for it (waitTimeout added); redis-semaphore takes `permits`. */
  options: { permits?: number; mode?: Library.LockMode };
  /** The counter its holders INCR after their grant and DECR before their release. */
  counter: string;
  /** Most of its holders at once; more is a violation. Absent: any number (readers). */
  limit?: number;
}

export interface KindSpec {
  lib: KindLib;
  port: number;
  process: number;
  workers: number;
  holdMs: number;
  key: string;
  /** What the acquisitions are; with several, no two sides ever hold the key together. */
  sides: KindSide[];
  /** Seeds the draw of each acquisition's side (with the process and worker index). */
  seed: number;
}

/** One acquisition: worker (index in its process), side, acquire called, acquire resolved (shared clock, ms). */
export const ACQ = { worker: 0, side: 1, call: 2, grant: 3 } as const;
export const ACQ_STRIDE = 4;

export interface KindResult extends CallErrors {
  process: number;
  /** ACQ_STRIDE numbers per successful acquisition. */
  acquisitions: Float64Array;
  /** Per side, the largest INCR reply of its counter seen in the whole run (warm-up and drain included). */
  mostAtOnce: number[];
  /** Holders that found more of their side than its limit, or a holder of another side, in the whole run. */
  violations: number;
  /** The counters' own INCR/GET/DECR sent in the measurement window (left out of the command counts). */
  counterOps: number;
  /** Commands the library's connections sent in the window (counters left out), by label. */
  sent: Record<string, number>;
  /** CPU of this process (user + system) in the window, µs. */
  cpuUs: number;
  failures: number;
  /** Loops still inside a call when the worker gave up waiting for them. */
  unfinished: number;
}

export type ToKindWorker = { type: 'init'; spec: KindSpec } | ({ type: 'go' } & LoadWindow);
export type FromKindWorker =
  | { type: 'ready' }
  | { type: 'result'; result: KindResult }
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

class WorkerRun {
  private acquisitions: number[] = [];
  private readonly mostAtOnce: number[];
  private violations = 0;
  /** The counters' own commands, by label, since the window opened (frozen when it closes). */
  private own: Record<string, number> = {};
  private failures = 0;
  private readonly failureKinds: Record<string, number> = {};
  private readonly releaseErrors: Record<string, number> = {};
  private readonly uncaught: string[] = [];
  private running = 0;

  private constructor(
    private readonly spec: KindSpec,
    private readonly client: Redis,
    private readonly counts: CommandCounts,
    private readonly acquire: (side: KindSide) => Promise<Held>,
    private readonly closeLib: () => Promise<void>,
  ) {
    this.mostAtOnce = spec.sides.map(() => 0);
  }

  static async create(spec: KindSpec): Promise<WorkerRun> {
    const counts = new CommandCounts();
    const client = new Redis({ host: '127.0.0.1', port: spec.port, connectionName: WORKER_CONNECTION });
    client.on('error', () => {});
    instrument(client, counts);
    if (client.status !== 'ready') await new Promise((done) => client.once('ready', done));
    if (spec.lib === 'nestjs-redis-lock') {
      const locks = new (library().LockService)(client);
      counts.nameDefinedScripts(client);
      const options = spec.sides.map((side) => ({ ...side.options, waitTimeout: WAIT_TIMEOUT_MS }));
      return new WorkerRun(
        spec,
        client,
        counts,
        (side) => locks.acquire(spec.key, options[spec.sides.indexOf(side)]),
        () => locks.close(),
      );
    }
    const acquire = async (side: KindSide): Promise<Held> => {
      const semaphore = new Semaphore(client, spec.key, side.options.permits ?? 1, PEER_OPTIONS);
      await semaphore.acquire();
      return semaphore;
    };
    return new WorkerRun(spec, client, counts, acquire, async () => {});
  }

  /** Sends one of the counters' commands, counted as the harness' own. */
  private counter(command: 'incr' | 'decr' | 'get', key: string): Promise<string | number | null> {
    bump(this.own, command);
    return this.client[command](key);
  }

  async go(window: LoadWindow): Promise<KindResult> {
    const onError = (error: unknown) => this.uncaught.push(describe(error));
    process.on('uncaughtException', onError);
    process.on('unhandledRejection', onError);
    const snapshot = () => ({ sent: this.counts.snapshot(), cpuUs: cpuNow() });
    const from = sleepUntil(window.measureFrom).then(() => {
      this.own = {};
      return snapshot();
    });
    const to = sleepUntil(window.measureTo).then(() => {
      const at = { ...snapshot(), own: this.own };
      this.own = {};
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
      const delta = calls - (before.sent[label] ?? 0) - (after.own[label] ?? 0);
      if (delta > 0) sent[label] = delta;
    }
    process.off('uncaughtException', onError);
    process.off('unhandledRejection', onError);
    return {
      process: this.spec.process,
      acquisitions: Float64Array.from(this.acquisitions),
      mostAtOnce: this.mostAtOnce,
      violations: this.violations,
      counterOps: Object.values(after.own).reduce((s, n) => s + n, 0),
      sent,
      cpuUs: after.cpuUs - before.cpuUs,
      failures: this.failures,
      failureKinds: this.failureKinds,
      releaseErrors: this.releaseErrors,
      uncaught: this.uncaught.slice(0, 20),
      unfinished: this.running,
    };
  }

  /** The side of each acquisition of one loop, drawn by the sides' shares. */
  private sidePicker(worker: number): () => number {
    const { sides, seed, process } = this.spec;
    if (sides.length === 1) return () => 0;
    const random = seededRandom(seed * 1_000_003 + process * 1_000 + worker);
    return () => {
      let x = random();
      for (let i = 0; i < sides.length - 1; i++) {
        x -= sides[i].share;
        if (x < 0) return i;
      }
      return sides.length - 1;
    };
  }

  /** Counts a new holder of `side` in and checks it may be there. */
  private async enter(side: number): Promise<void> {
    const { sides } = this.spec;
    const inside = Number(await this.counter('incr', sides[side].counter));
    if (inside > this.mostAtOnce[side]) this.mostAtOnce[side] = inside;
    let violated = inside > (sides[side].limit ?? Number.POSITIVE_INFINITY);
    for (const [other, { counter }] of sides.entries()) {
      if (other !== side && Number(await this.counter('get', counter)) !== 0) violated = true;
    }
    if (violated) this.violations++;
  }

  private async loop(worker: number, window: LoadWindow): Promise<void> {
    this.running++;
    const pick = this.sidePicker(worker);
    while (hr() < window.stopAt) {
      const side = pick();
      const call = hr();
      let held: Held;
      try {
        held = await this.acquire(this.spec.sides[side]);
      } catch (error) {
        this.failures++;
        bump(this.failureKinds, kindOf(error));
        continue;
      }
      const grant = hr();
      await this.enter(side);
      await sleep(this.spec.holdMs);
      await this.counter('decr', this.spec.sides[side].counter);
      try {
        await held.release();
      } catch (error) {
        bump(this.releaseErrors, kindOf(error));
      }
      this.acquisitions.push(worker, side, call, grant);
    }
    this.running--;
  }

  async close(): Promise<void> {
    await this.closeLib().catch(() => {});
    this.client.disconnect();
  }
}

let current: WorkerRun | undefined;

async function handle(message: ToKindWorker): Promise<FromKindWorker> {
  if (message.type === 'init') {
    await current?.close();
    current = await WorkerRun.create(message.spec);
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
if (process.env.BENCH_KIND_WORKER === '1' && process.send) {
  process.on('message', (message: ToKindWorker) => {
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
