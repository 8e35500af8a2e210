// The table runner of the hostile-input suites. Each row is one hostile call against a real redis-server;
// the runner asserts, for every row:
// - the outcome: a typed LockError (the specific subclass, its stable `code`, a short message naming the
//   offending option or value and saying what to do), or success for odd-but-valid input (`accept`);
// - no hang: the call settles within `within` ms (default 2 s), far below jest's timeout;
// - nothing left in Redis: SCAN of the test server shows exactly the keys the row set up (`keys`);
// - no lock left held: once the row's own holders are released, `acquire(probe, { waitTimeout: 0 })`
//   succeeds at once;
// - no unhandled rejection (test/support/fail-on-unhandled.ts fails the test on one).
// A row with `bug` describes a defect in a file this suite may not change: it runs as `it.failing`
// (HOSTILE_BUGS=show runs those rows as ordinary tests, to see how each fails).
import { setImmediate as nextTurn } from 'node:timers/promises';
import { expect, it } from '@jest/globals';
import { LockError, type LockErrorCode, LockService } from '../../lib';
import { freePort, type RedisServer } from '../support/redis-server';

type ErrorClass = abstract new (...args: never[]) => LockError;

export interface Base {
  readonly server: RedisServer;
  /** Runs `fn` after the outcome and key checks, before the probe (release a holder, close a client). */
  defer(fn: () => unknown): void;
}

export interface Row<C> {
  /** Short name: the input and the entry point. */
  name: string;
  /** The hostile call. */
  run(ctx: C): unknown;
  /** The entry point is synchronous (constructor, decorator, checkOptions): it must throw, not return. */
  sync?: boolean;
  /** Odd but valid input: the call must succeed (run may assert more itself). */
  accept?: boolean;
  error?: ErrorClass;
  code?: LockErrorCode;
  /** Must match the message: the offending option or value, and what to do. */
  message?: RegExp;
  /** Keys the row leaves in Redis on purpose, checked before its deferred clean-ups run. */
  keys?: string[];
  /** Lock key that must be free afterwards (default 'probe'), and its prefix (default 'lock:'). */
  probe?: string;
  prefix?: string;
  /** Bound on the call, ms (default 2 000). */
  within?: number;
  /** Extra checks once the call settled (the method did not run, the signal fired...). */
  after?(ctx: C, outcome: Outcome): unknown;
  /** A known defect in a file this suite does not own: the row is expected to fail (it.failing). */
  bug?: string;
}

export interface Outcome {
  value?: unknown;
  error?: unknown;
}

/** Longest message accepted: a message must stay a line or two, whatever the input's size. */
const MAX_MESSAGE = 600;
const DEFAULT_WITHIN = 2_000;

/** Settles `value` (a promise or not) within `ms`, or reports a hang. Never leaves a rejection unhandled. */
export async function bounded(value: unknown, ms: number): Promise<Outcome | 'hung'> {
  const promise = Promise.resolve(value).then(
    (v): Outcome => ({ value: v }),
    (error: unknown): Outcome => ({ error }),
  );
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<'hung'>((resolve) => {
    timer = setTimeout(() => resolve('hung'), ms);
  });
  try {
    return await Promise.race([promise, hung]);
  } finally {
    clearTimeout(timer);
  }
}

/** Deletes every key of the test server (our own redis-server on a free port, never 6379). */
async function flush(server: RedisServer): Promise<void> {
  const admin = server.client({ lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await admin.connect();
    await admin.flushdb();
  } finally {
    admin.disconnect();
  }
}

/** A lock on `key` can be taken at once: nothing was left held or queued. */
async function probe(server: RedisServer, key: string, prefix: string): Promise<void> {
  const client = server.client();
  const locks = new LockService(client, { prefix });
  try {
    const outcome = await bounded(locks.acquire(key, { waitTimeout: 0 }), 1_000);
    if (outcome === 'hung') throw new Error(`probe: acquire(${JSON.stringify(key)}) did not settle in 1 s`);
    if (outcome.error)
      throw new Error(`probe: the lock ${JSON.stringify(key)} is not free: ${outcome.error}`);
    await (outcome.value as { release(): Promise<void> }).release();
  } finally {
    await locks.close();
    client.disconnect();
  }
}

/**
 * Declares one test per row. `setup` builds the row's context (clients, services, apps) and registers
 * their clean-up with `defer`.
 */
export function hostileTable<C>(
  rows: readonly Row<C>[],
  server: () => RedisServer,
  setup: (base: Base) => C | Promise<C>,
): void {
  for (const row of rows) {
    // HOSTILE_BUGS=show runs the known-bug rows as ordinary tests, to see how each one fails today.
    const test = row.bug && process.env.HOSTILE_BUGS !== 'show' ? it.failing : it;
    test(row.name, async () => {
      const cleanups: Array<() => unknown> = [];
      const base: Base = { server: server(), defer: (fn) => cleanups.push(fn) };
      const cleanUp = async (): Promise<void> => {
        for (const fn of cleanups.splice(0).reverse()) {
          await bounded(Promise.resolve().then(fn), 5_000);
        }
      };
      try {
        const ctx = await setup(base);
        const outcome = await attempt(row, ctx);
        await row.after?.(ctx, outcome);
        await nextTurn();
        expect(await base.server.keys('*')).toEqual([...(row.keys ?? [])].sort());
        await cleanUp();
        await probe(base.server, row.probe ?? 'probe', row.prefix ?? 'lock:');
      } finally {
        await cleanUp();
        await flush(base.server);
      }
    });
  }
}

async function attempt<C>(row: Row<C>, ctx: C): Promise<Outcome> {
  const within = row.within ?? DEFAULT_WITHIN;
  const started = performance.now();
  let outcome: Outcome;
  if (row.sync) {
    try {
      outcome = { value: row.run(ctx) };
    } catch (error) {
      outcome = { error };
    }
  } else {
    let returned: unknown;
    try {
      returned = row.run(ctx);
    } catch (error) {
      throw new Error(`${row.name}: threw synchronously instead of rejecting: ${String(error)}`);
    }
    const settled = await bounded(returned, within);
    if (settled === 'hung') throw new Error(`${row.name}: no outcome within ${within} ms (a hang)`);
    outcome = settled;
  }
  const elapsed = performance.now() - started;
  expect(elapsed).toBeLessThan(within);
  if (row.accept) {
    if (outcome.error !== undefined) throw outcome.error;
    return outcome;
  }
  const { error } = outcome;
  if (error === undefined)
    throw new Error(`${row.name}: expected a ${row.error?.name}, but the call succeeded`);
  expect(error).toBeInstanceOf(LockError);
  if (row.error) expect(error).toBeInstanceOf(row.error);
  const typed = error as LockError;
  expect(typed.code).toBe(row.code);
  expect(typed.message.length).toBeLessThan(MAX_MESSAGE);
  if (row.message) expect(typed.message).toMatch(row.message);
  return outcome;
}

// ---------------------------------------------------------------------------------------------------------
// Hostile values.
// ---------------------------------------------------------------------------------------------------------

/** 10 MiB of 'k'. */
export const HUGE = 'k'.repeat(10 * 1024 * 1024);

/** An object whose toString (and valueOf) throw: a message built with String(value) would throw too. */
export const throwingToString = {
  toString(): string {
    throw new Error('toString exploded');
  },
  valueOf(): number {
    throw new Error('valueOf exploded');
  },
};

/** An object that contains itself. */
export function circular(): Record<string, unknown> {
  const value: Record<string, unknown> = { id: 1 };
  value.self = value;
  return value;
}

/** An object whose `name` property is a getter that throws. */
export function throwingGetter(name: string): Record<string, unknown> {
  return Object.defineProperty({}, name, {
    enumerable: true,
    get() {
      throw new Error(`getter ${name} exploded`);
    },
  });
}

/** A Proxy whose every property read throws. */
export function throwingProxy(): object {
  return new Proxy(
    {},
    {
      get() {
        throw new Error('proxy trap exploded');
      },
    },
  );
}

/** A port on 127.0.0.1 where nothing listens (free a moment ago; never 6379). */
export async function closedPort(): Promise<number> {
  const port = await freePort();
  if (port === 6379) throw new Error('no usable free port');
  return port;
}
