import { describe, expect, it } from '@jest/globals';
import { lockService, outcome } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();

describe('reentrancy', () => {
  it('a nested acquire/using of the same key in the same async call chain succeeds without waiting', async () => {
    const locks = lockService(server());
    await server().resetStats();
    const fences = await locks.using('re', async (outer) => {
      const inner = await locks.using('re', async (nested) => {
        const again = await locks.acquire('re', { waitTimeout: 0 });
        await again.release(); // a no-op: the outer scope still holds the lock
        expect((await locks.inspect('re')).holder).toBe(outer.token);
        return [nested.fence, again.fence];
      });
      return [outer.fence, ...inner];
    });
    expect(new Set(fences).size).toBe(1);
    expect((await locks.inspect('re')).held).toBe(false);
    // One acquire and one release reached Redis, plus the two inspects: no nested round trips. (A
    // script's first call on a fresh server is an EVAL after a rejected EVALSHA, so count both.)
    const stats = await server().commandStats();
    expect((stats.get('evalsha') ?? 0) + (stats.get('eval') ?? 0)).toBe(4);
  });

  it('a call that ends while another still runs leaves the other its scope; after both, a new call has its own', async () => {
    const locks = lockService(server());
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const long = locks.using('re-long', async (outer) => {
      entered();
      await gate;
      // The short call ended meanwhile (and with it every other call of this service but this one).
      const nested = await locks.using('re-long', async (inner) => inner.fence, { waitTimeout: 0 });
      return [outer.fence, nested, locks.currentLease('re-long')?.fence];
    });
    await inside;
    await locks.using('re-short', async () => undefined);
    release();
    const [outerFence, nestedFence, current] = await long;
    expect(nestedFence).toBe(outerFence);
    expect(current).toBe(outerFence);
    // Nothing running now: a later call starts a scope of its own, and re-enters within it.
    const [first, again] = await locks.using('re-long', async (lease) => [
      lease.fence,
      await locks.using('re-long', async (inner) => inner.fence, { waitTimeout: 0 }),
    ]);
    expect(again).toBe(first);
    expect(first).toBeGreaterThan(outerFence as number);
    expect(locks.currentLease('re-long')).toBeUndefined();
  });

  it('while the service closes with a grace period, a running call may re-enter its lock; a new call may not', async () => {
    const locks = lockService(server());
    let entered!: () => void;
    let proceed!: () => void;
    const inside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const gate = new Promise<void>((resolve) => {
      proceed = resolve;
    });
    const running = locks.using('re-close', async (outer) => {
      entered();
      await gate;
      const nested = await locks.using('re-close', async (inner) => inner.fence);
      return [outer.fence, nested];
    });
    await inside;
    const closing = locks.close({ gracePeriod: 10_000 });
    const fresh = await outcome(locks.acquire('re-other'));
    expect(fresh.error).toMatchObject({ code: 'LOCK_SERVICE_CLOSED' });
    proceed();
    const [outerFence, nestedFence] = await running;
    expect(nestedFence).toBe(outerFence);
    await closing;
  });

  it('a concurrent unrelated caller still waits, even in the same process and service', async () => {
    const locks = lockService(server());
    let entered!: () => void;
    let finish!: () => void;
    const inside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const gate = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const holding = locks.using('re-2', async () => {
      entered();
      await gate;
    });
    await inside;
    // This call starts from the test's own async context, outside the holder's call chain.
    const unrelated = await outcome(locks.acquire('re-2', { waitTimeout: 200 }));
    expect(unrelated.error).toMatchObject({ code: 'LOCK_TIMEOUT' });
    finish();
    await holding;
    const after = await locks.acquire('re-2', { waitTimeout: 0 });
    await after.release();
  });

  it('different keys nest as separate locks', async () => {
    const locks = lockService(server());
    await locks.using('outer-key', async () => {
      await locks.using('inner-key', async () => {
        expect((await locks.inspect('outer-key')).held).toBe(true);
        expect((await locks.inspect('inner-key')).held).toBe(true);
      });
      expect((await locks.inspect('inner-key')).held).toBe(false);
    });
  });
});
