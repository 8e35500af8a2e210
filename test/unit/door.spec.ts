// The door, on the engine alone: once the service has seen how fast a key's line moves, a join that
// finds more in line than its wait could see through is turned away at once (LockShedError), unqueued
// and with nothing to cancel, while the line keeps its order. Before any pace is known, nobody is. The
// same for a mutex, a semaphore's permits and a read-write lock's writers. Fast, no Redis (test/api/door.spec.ts runs it on Redis, across processes).
import { beforeEach, describe, expect, it } from '@jest/globals';
import { LockShedError } from '../../lib/errors/lock-shed.error';
import { LockTimeoutError } from '../../lib/errors/lock-timeout.error';
import type { AcquireOptions } from '../../lib/options/call-options';
import type { LockStore } from '../../lib/store/lock-store';
import { MemoryLockBackend } from '../../lib/store/memory-store';
import { call, engine, servedAfter, wrappedBackend } from './engine-fixtures';

/** Each kind of lock: its options, and how many holders fill it. */
const KINDS: { kind: string; options: AcquireOptions; holders: number }[] = [
  { kind: 'a mutex', options: {}, holders: 1 },
  { kind: "a semaphore's permits", options: { permits: 2 }, holders: 2 },
  { kind: "a read-write lock's writer", options: { mode: 'write' }, holders: 1 },
];
let kind = KINDS[0];

/** An engine over `memory` whose store counts what it is asked: joins and cancels. */
function counting(memory: MemoryLockBackend) {
  const sent = { joins: 0, cancels: 0 };
  const backend = wrappedBackend(memory, (store: LockStore) => ({
    acquire: (...args) => {
      if (args[1] === 'join') sent.joins++;
      return store.acquire(...args);
    },
    cancel: (...args) => {
      sent.cancels++;
      return store.cancel(...args);
    },
  }));
  return { locks: engine({}, backend), sent };
}

/** A call of the kind of lock under test. */
const ask = (options: AcquireOptions = {}) => call({ ...kind.options, ...options });

/** The holders that fill `key`, with a release of them all. */
async function fill(locks: ReturnType<typeof engine>, key: string) {
  const holders: Awaited<ReturnType<typeof locks.takeOne>>[] = [];
  for (let i = 0; i < kind.holders; i++) holders.push(await locks.takeOne(key, ask()));
  return { release: () => Promise.all(holders.map((holder) => holder?.release())) };
}

/** Holders and `n` waiters of `locks`, each in line before the next calls, in the order given. */
async function line(locks: ReturnType<typeof engine>, key: string, n: number) {
  const holder = await fill(locks, key);
  const order: number[] = [];
  const waiters = [];
  for (let i = 0; i < n; i++) {
    waiters.push(
      locks.takeOne(key, ask({ waitTimeout: 60_000 })).then((lease) => {
        order.push(i);
        return lease;
      }),
    );
    while ((await locks.store.inspect(key)).queueLength < i + 1) await new Promise((r) => setImmediate(r));
  }
  return { holder, waiters, order };
}

/** Teaches `locks` the pace of `key`'s line for the kind of lock under test (servedAfter, `times` times). */
const learnPace = (locks: ReturnType<typeof engine>, key: string, ms: number, times: number) =>
  servedAfter(locks, key, ms, { times, options: kind.options, holders: kind.holders });

describe.each(KINDS)('the door, for $kind', (each) => {
  beforeEach(() => {
    kind = each;
  });

  it('turns a join away at once when the line is longer than its wait, unqueued, and keeps the line in order', async () => {
    const memory = new MemoryLockBackend();
    const { locks, sent } = counting(memory);
    await learnPace(locks, 'k', 100, 3);
    const { holder, waiters, order } = await line(locks, 'k', 3);
    const before = { ...sent };
    // About 100 ms per place and 250 ms to wait: two places at most, and three are in line.
    const error = await locks.takeOne('k', ask({ waitTimeout: 250 })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockShedError);
    expect(error).toBeInstanceOf(LockTimeoutError);
    const shed = error as LockShedError;
    expect(shed.inLine).toBe(3);
    expect(shed.waitedMs).toBe(0);
    expect(shed.perPlaceMs).toBeGreaterThanOrEqual(90);
    expect(shed.retryAfterMs).toBeGreaterThanOrEqual(3 * 90);
    expect(shed.message).toMatch(/3 callers were in line, about \d+ ms each here/);
    // One join asked, refused by the store; nothing queued, so nothing to cancel.
    expect(sent.joins - before.joins).toBe(1);
    expect(sent.cancels - before.cancels).toBe(0);
    expect((await locks.store.inspect('k')).queueLength).toBe(3);
    // A caller that can wait long enough joins behind them.
    const patient = locks.takeOne('k', ask({ waitTimeout: 60_000 }));
    while ((await locks.store.inspect('k')).queueLength < 4) await new Promise((r) => setImmediate(r));
    await holder?.release();
    for (const waiting of waiters) await (await waiting)?.release();
    await (await patient)?.release();
    expect(order).toEqual([0, 1, 2]);
  });

  it('with shed: false, turns nobody away: the call joins and waits its whole wait', async () => {
    const locks = engine({ shed: false });
    await learnPace(locks, 'k', 50, 3);
    const { holder, waiters } = await line(locks, 'k', 3);
    const error = await locks.takeOne('k', ask({ waitTimeout: 60 })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect(error).not.toBeInstanceOf(LockShedError);
    expect((error as LockTimeoutError).waitedMs).toBeGreaterThanOrEqual(60);
    await holder?.release();
    for (const waiting of waiters) await (await waiting)?.release();
  });

  it('turns away the first join of a service that has not seen the line move, by the pace another left', async () => {
    const memory = new MemoryLockBackend();
    const { locks } = counting(memory);
    await learnPace(locks, 'k', 100, 3);
    const { holder, waiters, order } = await line(locks, 'k', 3);
    // A service opened now on the same locks: its first join is set a door by the pace left with them.
    const { locks: fresh, sent } = counting(memory);
    const error = await fresh.takeOne('k', ask({ waitTimeout: 250 })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockShedError);
    const shed = error as LockShedError;
    expect(shed.inLine).toBe(3);
    expect(shed.perPlaceMs).toBeGreaterThanOrEqual(90);
    expect(sent).toEqual({ joins: 1, cancels: 0 });
    // It learnt the pace from the refusal: its next join carries a door of its own.
    expect(await fresh.takeOne('k', ask({ waitTimeout: 250 })).catch((e: unknown) => e)).toBeInstanceOf(
      LockShedError,
    );
    await holder?.release();
    for (const waiting of waiters) await (await waiting)?.release();
    expect(order).toEqual([0, 1, 2]);
  });

  it('turns nobody away before any service has seen its line move', async () => {
    const { locks, sent } = counting(new MemoryLockBackend());
    const { holder, waiters } = await line(locks, 'fresh', 3);
    const error = await locks.takeOne('fresh', ask({ waitTimeout: 30 })).catch((e: unknown) => e);
    // It joined and waited its whole wait: a plain timeout, and its place was given back.
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect(error).not.toBeInstanceOf(LockShedError);
    expect((error as LockTimeoutError).waitedMs).toBeGreaterThanOrEqual(30);
    expect(sent.cancels).toBe(1);
    await holder?.release();
    for (const waiting of waiters) await (await waiting)?.release();
  });
});
