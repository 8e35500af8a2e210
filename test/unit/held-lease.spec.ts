// A held lease alone, on the in-memory store: renewal keeps a short lease held, a lease that is not
// renewed is lost at its ttl (its signal aborts), maxHold ends renewal, minHold keeps a released lock
// held, a released lease refuses extend, and a lease whose ttl ran out as its release went out is
// reported lost. Fast, no Redis; the times are the lease's own promises, with leases long enough
// (300 ms, renewed every 100) that a busy machine's event loop delays do not lose them first.
import { describe, expect, it } from '@jest/globals';
import { LockLostError } from '../../lib/errors/lock-lost.error';
import { LockNotHeldError } from '../../lib/errors/lock-not-held.error';
import { LockService } from '../../lib/lock.service';
import { MemoryLockBackend } from '../../lib/store/memory-store';
import { sleep } from '../support/event-loop';
import { call, engine, wrappedBackend } from './engine-fixtures';

describe('HeldLease on the memory store', () => {
  it('a renewed 300 ms lease is still held, by the same token, after 1 s', async () => {
    const locks = engine();
    const lease = await locks.takeOne('k', call({ ttl: 300 }));
    await sleep(1_000);
    expect(lease?.isHeld).toBe(true);
    expect(lease?.signal.aborted).toBe(false);
    expect((await locks.store.inspect('k')).owner).toBe(lease?.token);
    await lease?.release();
    expect((await locks.store.inspect('k')).owner).toBeNull();
  });

  it('a lease taken with renew: false is lost at its ttl, its signal aborting with ttl-elapsed', async () => {
    const locks = engine();
    const lease = await locks.takeOne('k', call({ ttl: 50, renew: false }));
    const aborted = new Promise<unknown>((resolve) =>
      lease?.signal.addEventListener('abort', () => resolve(lease.signal.reason)),
    );
    const reason = await aborted;
    expect(lease?.isHeld).toBe(false);
    expect((reason as { reason: string }).reason).toBe('ttl-elapsed');
    // Released after the loss: nothing stays held (on a slow machine the store's key may have expired
    // first, and then release says so with LockNotHeldError).
    await lease?.release().catch(() => {});
    expect((await locks.store.inspect('k')).owner).toBeNull();
  });

  it('maxHold stops renewal: the lease is lost with max-hold and the lock is given up', async () => {
    const locks = engine();
    // Renewed every 100 ms, so a loaded event loop does not lose it before maxHold ends it.
    const lease = await locks.takeOne('k', call({ ttl: 300, maxHold: 600 }));
    await new Promise((resolve) => lease?.signal.addEventListener('abort', resolve));
    expect(lease?.lossReason?.reason).toBe('max-hold');
    const next = await locks.takeOne('k', call({ waitTimeout: 1_000 }));
    expect(next?.fence).toBeGreaterThan(lease?.fence as number);
    await next?.release();
  });

  it('maxHold caps a lease extended by hand too: extend() after it throws LockNotHeldError', async () => {
    const locks = engine();
    const lease = await locks.takeOne('k', call({ ttl: 300, maxHold: 600, renew: false }));
    // Extended by its holder well within each ttl, so only maxHold can end it.
    const extending = setInterval(() => lease?.extend().catch(() => {}), 100);
    try {
      await new Promise((resolve) => lease?.signal.addEventListener('abort', resolve));
    } finally {
      clearInterval(extending);
    }
    expect(lease?.lossReason?.reason).toBe('max-hold');
    await expect(lease?.extend()).rejects.toBeInstanceOf(LockNotHeldError);
    await lease?.release().catch(() => {});
  });

  it('minHold keeps a lock released early held until minHold after its grant', async () => {
    const locks = engine();
    // Taken before the call: the grant, and minHold with it, starts no sooner.
    const asked = performance.now();
    const lease = await locks.takeOne('k', call({ ttl: 1_000, minHold: 150 }));
    await lease?.release();
    expect((await locks.store.inspect('k')).owner).toBe(lease?.token);
    const next = await locks.takeOne('k', call({ waitTimeout: 2_000 }));
    expect(performance.now() - asked).toBeGreaterThanOrEqual(150);
    await next?.release();
  });

  it('extend() on a released lease rejects with LockNotHeldError; release() again is a no-op', async () => {
    const locks = engine();
    const lease = await locks.takeOne('k', call());
    await lease?.release();
    await expect(lease?.extend()).rejects.toBeInstanceOf(LockNotHeldError);
    await expect(lease?.release()).resolves.toBeUndefined();
  });

  it('a lease whose ttl runs out while its release is on its way: using rejects with LockLostError, release() with LockNotHeldError', async () => {
    const memory = new MemoryLockBackend();
    // The release reaches the store only once the store itself has let the key go: as a release that
    // left just before the lease's end reaches Redis just after it.
    const late = wrappedBackend(memory, (store) => ({
      release: async (...args: Parameters<typeof store.release>) => {
        while ((await store.inspect(args[0].key)).owner !== null) await new Promise((r) => setImmediate(r));
        return store.release(...args);
      },
    }));
    const locks = new LockService(late);
    const outcome = <T>(promise: Promise<T>) =>
      promise.then(
        (value) => ({ value, error: undefined }),
        (error: unknown) => ({ value: undefined, error }),
      );
    try {
      const used = await outcome(locks.using('k', (lease) => lease.token, { ttl: 50, renew: false }));
      expect(used.error).toBeInstanceOf(LockLostError);
      expect((used.error as LockLostError).reason).toBe('ttl-elapsed');
      // The lease's own release, called by hand, answers as documented; its signal tells the loss.
      const lease = await locks.acquire('k2', { ttl: 50, renew: false });
      const released = await outcome(lease.release());
      expect(released.error).toBeInstanceOf(LockNotHeldError);
      expect(lease.signal.reason).toBeInstanceOf(LockLostError);
    } finally {
      await locks.close();
    }
  });
});
