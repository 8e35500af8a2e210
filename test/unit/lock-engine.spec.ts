// The engine alone, on the in-memory store: granting, FIFO hand-off between its own waiters, try-once,
// timeouts and aborts that leave the line, several keys all or nothing, and shutdown. Fast, no Redis.
import { describe, expect, it } from '@jest/globals';
import { LockAbortedError } from '../../lib/errors/lock-aborted.error';
import { LockServiceClosedError } from '../../lib/errors/lock-service-closed.error';
import { LockTimeoutError } from '../../lib/errors/lock-timeout.error';
import { MemoryLockBackend } from '../../lib/store/memory-store';
import { deferred } from '../support/deferred';
import { call, engine } from './engine-fixtures';

describe('LockEngine on the memory store', () => {
  it('grants a free key with a fence, and hands it to waiters in the order they came', async () => {
    const locks = engine();
    const first = await locks.takeOne('k', call());
    expect(first?.isHeld).toBe(true);
    const order: number[] = [];
    const waiting = [1, 2, 3].map((n) =>
      locks.takeOne('k', call({ waitTimeout: 5_000 })).then(async (lease) => {
        order.push(n);
        return lease;
      }),
    );
    // Each waiter is in line before the holder lets go.
    expect((await locks.store.inspect('k')).queueLength).toBe(3);
    let previous = first;
    await first?.release();
    for (const next of waiting) {
      const lease = await next;
      expect(lease?.fence).toBeGreaterThan(previous?.fence as number);
      previous = lease;
      await lease?.release();
    }
    expect(order).toEqual([1, 2, 3]);
    expect((await locks.store.inspect('k')).owner).toBeNull();
  });

  it('a try-once call on a busy key resolves null, or rejects with LockTimeoutError when busy means timeout', async () => {
    const locks = engine();
    const held = await locks.takeOne('k', call());
    await expect(locks.takeOne('k', call({ waitTimeout: 0 }, false))).resolves.toBeNull();
    await expect(locks.takeOne('k', call({ waitTimeout: 0 }, true))).rejects.toBeInstanceOf(LockTimeoutError);
    expect((await locks.store.inspect('k')).queueLength).toBe(0);
    await held?.release();
  });

  it('a waiter that times out or is aborted leaves the line, and the next one is served', async () => {
    const locks = engine();
    const held = await locks.takeOne('k', call());
    const abort = new AbortController();
    const timesOut = locks.takeOne('k', call({ waitTimeout: 30 }));
    const aborted = locks.takeOne('k', call({ waitTimeout: 5_000, signal: abort.signal }));
    const served = locks.takeOne('k', call({ waitTimeout: 5_000 }));
    await expect(timesOut).rejects.toBeInstanceOf(LockTimeoutError);
    abort.abort();
    await expect(aborted).rejects.toBeInstanceOf(LockAbortedError);
    const snapshot = await locks.store.inspect('k');
    expect(snapshot.queueLength).toBe(1);
    await held?.release();
    const lease = await served;
    expect(lease?.isHeld).toBe(true);
    await lease?.release();
  });

  it('two engines on one backend exclude each other and serve across in line order', async () => {
    const backend = new MemoryLockBackend();
    const a = engine({}, backend);
    const b = engine({}, backend);
    const held = await a.takeOne('k', call());
    const fromB = b.takeOne('k', call({ waitTimeout: 5_000 }));
    const fromA = a.takeOne('k', call({ waitTimeout: 5_000 }));
    await held?.release();
    const first = await fromB;
    expect(first?.isHeld).toBe(true);
    let aGranted = false;
    void fromA.then(() => {
      aGranted = true;
    });
    expect((await a.store.inspect('k')).owner).toBe(first?.token);
    expect(aGranted).toBe(false);
    await first?.release();
    const second = await fromA;
    expect(second?.fence).toBeGreaterThan(first?.fence as number);
    await second?.release();
  });

  it('several keys are taken all or none: a busy later key leaves the earlier one free', async () => {
    const locks = engine();
    const b = await locks.takeOne('b', call());
    await expect(locks.takeAll(['a', 'b'], call({ waitTimeout: 30 }))).rejects.toBeInstanceOf(
      LockTimeoutError,
    );
    expect((await locks.store.inspect('a')).owner).toBeNull();
    await b?.release();
    const both = await locks.takeAll(['a', 'b'], call());
    expect(both?.map((lease) => lease.key)).toEqual(['a', 'b']);
    await Promise.all((both ?? []).map((lease) => lease.release()));
  });

  it('close() fails the waiters, lets the grace run, then loses and releases every lease', async () => {
    const locks = engine();
    const held = await locks.takeOne('k', call());
    const waiting = locks.takeOne('k', call({ waitTimeout: 5_000 }));
    const grace = deferred();
    let lostDuringGrace = false;
    const closed = locks.close(async () => {
      lostDuringGrace = held?.isHeld === false;
      await grace.promise;
    });
    await expect(waiting).rejects.toBeInstanceOf(LockServiceClosedError);
    expect(held?.isHeld).toBe(true);
    grace.resolve();
    await closed;
    expect(lostDuringGrace).toBe(false);
    expect(held?.lossReason?.reason).toBe('service-closed');
    expect(held?.signal.aborted).toBe(true);
    expect(locks.isClosed()).toBe(true);
    expect(() => locks.takeOne('k', call())).toThrow(LockServiceClosedError);
  });
});
