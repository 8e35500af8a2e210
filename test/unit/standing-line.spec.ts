// The standing-line rule (shed: { target, interval }), on the engine alone: once every call served from
// a key's line in an interval waited longer than the target, a new call waits at most twice the target;
// a call served at once ends that. Without the rule (the default), a call waits its whole wait. Fast, no
// Redis (bench/nest-load.ts measures it: the ours-handler-standing variant).
import { describe, expect, it } from '@jest/globals';
import { LockTimeoutError } from '../../lib/errors/lock-timeout.error';
import type { LockServiceOptions } from '../../lib/options/service-options';
import { call, engine } from './engine-fixtures';

const TARGET = 20;
const INTERVAL = 50;

/** A call on `key` of `locks` served after waiting about `ms` behind a holder. */
async function servedAfter(locks: ReturnType<typeof engine>, key: string, ms: number): Promise<void> {
  const holder = await locks.takeOne(key, call());
  const waiting = locks.takeOne(key, call({ waitTimeout: 60_000 }));
  while ((await locks.store.inspect(key)).queueLength < 1) await new Promise((r) => setImmediate(r));
  await new Promise((resolve) => setTimeout(resolve, ms)); // the hold the waiter waits through
  await holder?.release();
  await (await waiting)?.release();
}

/** How long a call with a minute to wait waits behind a holder, when it gives up first (or null). */
async function waitBehindHolder(locks: ReturnType<typeof engine>, key: string, waitTimeout: number) {
  const holder = await locks.takeOne(key, call());
  const error = await locks.takeOne(key, call({ waitTimeout })).catch((e: unknown) => e);
  await holder?.release();
  expect(error).toBeInstanceOf(LockTimeoutError);
  return (error as LockTimeoutError).waitedMs;
}

/** An engine whose line on `key` stands: two calls, an interval apart, each served after 3 targets. */
async function standing(options: LockServiceOptions, key: string) {
  const locks = engine(options);
  await servedAfter(locks, key, 3 * TARGET);
  await new Promise((resolve) => setTimeout(resolve, INTERVAL)); // so the next serve closes an interval
  await servedAfter(locks, key, 3 * TARGET);
  return locks;
}

describe('the standing-line rule', () => {
  it('while a line stands, a new call waits at most twice the target', async () => {
    const locks = await standing({ shed: { target: TARGET, interval: INTERVAL } }, 'k');
    const waited = await waitBehindHolder(locks, 'k', 5_000);
    expect(waited).toBeGreaterThanOrEqual(2 * TARGET);
    // Far below its own 5 s: the rule cut it (a busy event loop can add to 40 ms, not 4.9 s).
    expect(waited).toBeLessThan(2_500);
  });

  it('a call served at once ends it: the next call waits its whole wait', async () => {
    const locks = await standing({ shed: { target: TARGET, interval: INTERVAL } }, 'k');
    await (await locks.takeOne('k', call()))?.release();
    await new Promise((resolve) => setTimeout(resolve, INTERVAL)); // so the next serve closes an interval
    await (await locks.takeOne('k', call()))?.release();
    expect(await waitBehindHolder(locks, 'k', 300)).toBeGreaterThanOrEqual(300);
  });

  it('is off by default: behind the same standing line, a call waits its whole wait', async () => {
    const locks = await standing({}, 'k');
    expect(await waitBehindHolder(locks, 'k', 300)).toBeGreaterThanOrEqual(300);
  });
});
