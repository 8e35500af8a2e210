// A call's deadline, on the engine alone: the wait ends early enough that the key's usual hold (as this
// service has seen it) still fits before the deadline; a deadline already past sends nothing; a free key
// is taken whatever the hold; a grant read after the wait ran out is passed on. Fast, no Redis (test/api/deadline.spec.ts runs the same on Redis).
import { describe, expect, it } from '@jest/globals';
import { LockTimeoutError } from '../../lib/errors/lock-timeout.error';
import { LockUsageError } from '../../lib/errors/lock-usage.error';
import type { LockStore } from '../../lib/store/lock-store';
import { MemoryLockBackend } from '../../lib/store/memory-store';
import { sleep } from '../support/event-loop';
import { call, engine, wrappedBackend } from './engine-fixtures';

/** A backend over `memory` that counts the acquire calls its stores send. */
function counted(memory: MemoryLockBackend): {
  backend: ReturnType<typeof wrappedBackend>;
  sent: () => number;
} {
  let sent = 0;
  const backend = wrappedBackend(memory, (store: LockStore) => ({
    acquire: (...args) => {
      sent++;
      return store.acquire(...args);
    },
  }));
  return { backend, sent: () => sent };
}

/** Holds `key` `times` times for about `ms` each: the hold time the engine learns. */
async function holdFor(locks: ReturnType<typeof engine>, key: string, ms: number, times: number) {
  for (let i = 0; i < times; i++) {
    const lease = await locks.takeOne(key, call());
    await sleep(ms); // the work itself, whose length is learnt
    await lease?.release();
  }
}

describe('a call with a deadline', () => {
  it('whose deadline has passed rejects at once and sends nothing; a try-once call resolves null', async () => {
    const memory = new MemoryLockBackend();
    const { backend, sent } = counted(memory);
    const locks = engine({}, backend);
    const error = await locks.takeOne('k', call({ deadline: Date.now() - 50 })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect((error as LockTimeoutError).deadline?.leftMs).toBeLessThanOrEqual(-50);
    expect((error as LockTimeoutError).message).toMatch(/deadline had passed \d+ ms before it/);
    await expect(locks.takeOne('k', call({ deadline: new Date(Date.now() - 1) }, false))).resolves.toBeNull();
    expect(sent()).toBe(0);
    expect((await locks.store.inspect('k')).owner).toBeNull();
  });

  it('stops waiting before its deadline, not at its waitTimeout, and leaves the line', async () => {
    const locks = engine();
    const holder = await locks.takeOne('k', call());
    const began = Date.now();
    const error = await locks
      .takeOne('k', call({ waitTimeout: 60_000, deadline: began + 200 }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockTimeoutError);
    const { deadline, waitedMs } = error as LockTimeoutError;
    // Nothing was held on this key before: no hold is kept back, and the wait is what was left.
    expect(deadline).toEqual({ leftMs: expect.any(Number), holdMs: 0 });
    expect(deadline?.leftMs).toBeLessThanOrEqual(200);
    expect(waitedMs).toBeGreaterThanOrEqual((deadline?.leftMs ?? 0) - 1);
    expect(holder?.isHeld).toBe(true);
    expect((await locks.store.inspect('k')).queueLength).toBe(0);
    await holder?.release();
  });

  it('keeps the key’s usual hold back: a wait that could not end in time is not begun', async () => {
    const memory = new MemoryLockBackend();
    const { backend, sent } = counted(memory);
    const locks = engine({}, backend);
    await holdFor(locks, 'k', 150, 3);
    const holder = await locks.takeOne('k', call());
    const before = sent();
    // 100 ms left, and a hold here takes about 150: one try, which finds the key busy, and no place in line.
    const error = await locks
      .takeOne('k', call({ waitTimeout: 60_000, deadline: Date.now() + 100 }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockTimeoutError);
    const { deadline, waitedMs } = error as LockTimeoutError;
    expect(deadline?.holdMs).toBeGreaterThanOrEqual(150);
    expect(waitedMs).toBe(0);
    expect(sent() - before).toBe(1);
    expect((await locks.store.inspect('k')).queueLength).toBe(0);
    await holder?.release();
    // A free key is taken all the same: the caller may still finish in time.
    const free = await locks.takeOne('k', call({ deadline: Date.now() + 100 }));
    expect(free?.isHeld).toBe(true);
    await free?.release();
  });

  it('is served when granted before its deadline, and a later deadline than the waitTimeout changes nothing', async () => {
    const locks = engine();
    const holder = await locks.takeOne('k', call());
    const waiting = locks.takeOne('k', call({ waitTimeout: 60_000, deadline: Date.now() + 60_000 }));
    expect((await locks.store.inspect('k')).queueLength).toBe(1);
    await holder?.release();
    const lease = await waiting;
    expect(lease?.isHeld).toBe(true);
    await lease?.release();
    const busy = await locks.takeOne('k', call());
    const error = await locks
      .takeOne('k', call({ waitTimeout: 50, deadline: Date.now() + 60_000 }))
      .catch((e: unknown) => e);
    expect((error as LockTimeoutError).deadline).toBeUndefined();
    await busy?.release();
  });

  it('passes on a grant that reaches it after its wait ran out: the work never starts late', async () => {
    const locks = engine();
    const holder = await locks.takeOne('k', call());
    const late = locks
      .takeOne('k', call({ deadline: Date.now() + 200 }, true, true))
      .catch((e: unknown) => e);
    const next = locks.takeOne('k', call({ waitTimeout: 10_000 }));
    while ((await locks.store.inspect('k')).queueLength < 2) await new Promise((r) => setImmediate(r));
    // A stalled event loop (a GC pause, a busy turn) past the first waiter's deadline; the holder then
    // hands on in that same turn, before the waiter's timer can run.
    const stalledUntil = Date.now() + 250;
    while (Date.now() < stalledUntil) {}
    const handedOn = holder?.release();
    const error = await late;
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect((error as LockTimeoutError).deadline).toBeDefined();
    await handedOn;
    const lease = await next; // the grant went on to the waiter behind it
    expect(lease).not.toBeNull();
    expect((await locks.store.inspect('k')).owner).toBe(lease?.token);
    await lease?.release();
  });

  it('is a Date or ms since the epoch; anything else is refused before any command', () => {
    const locks = engine();
    for (const deadline of ['tomorrow', Number.NaN, new Date('not a date'), Number.POSITIVE_INFINITY]) {
      expect(() => call({ deadline: deadline as number })).toThrow(LockUsageError);
    }
    expect(() => call({ deadline: 'tomorrow' as unknown as number })).toThrow(
      /deadline must be a Date or a time in ms since the epoch/,
    );
    expect(locks.isClosed()).toBe(false);
  });
});
