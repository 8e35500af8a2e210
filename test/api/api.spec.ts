import { describe, expect, it } from '@jest/globals';
import { LockNotHeldError } from '../../lib/core';
import { lockService, outcome, until } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();

describe('LockService API', () => {
  it('acquire, inspect, extend and release', async () => {
    const locks = lockService(server());
    const lease = await locks.acquire('api', { ttl: 5_000 });
    expect(lease.key).toBe('api');
    expect(Number.isSafeInteger(lease.fence)).toBe(true);
    const info = await locks.inspect('api');
    expect(info).toMatchObject({
      key: 'api',
      held: true,
      holder: lease.token,
      queueLength: 0,
      fence: lease.fence,
    });
    expect(info.ttl).toBeGreaterThan(4_000);
    await lease.extend(20_000);
    expect((await locks.inspect('api')).ttl).toBeGreaterThan(19_000);
    await lease.release();
    await lease.release(); // a second release is a no-op
    expect(await locks.inspect('api')).toMatchObject({ held: false, holder: null, ttl: 0 });
    await expect(lease.extend()).rejects.toBeInstanceOf(LockNotHeldError);
  });

  it('tryAcquire returns null when the lock is taken, and a lease when it is free', async () => {
    const locks = lockService(server());
    const first = await locks.tryAcquire('try');
    expect(first).not.toBeNull();
    expect(await locks.tryAcquire('try')).toBeNull();
    await first?.release();
    const second = await locks.tryAcquire('try');
    expect(second?.fence).toBeGreaterThan(first?.fence as number);
    await second?.release();
  });

  it('acquire with waitTimeout 0 tries once and throws LockTimeoutError', async () => {
    const locks = lockService(server());
    const held = await locks.acquire('once');
    await expect(locks.acquire('once', { waitTimeout: 0 })).rejects.toMatchObject({
      code: 'LOCK_TIMEOUT',
      key: 'once',
      waitedMs: 0,
    });
    await held.release();
  });

  it('using() returns the result, releases after success and after failure', async () => {
    const locks = lockService(server());
    await expect(locks.using('use', async () => 7)).resolves.toBe(7);
    expect((await locks.inspect('use')).held).toBe(false);
    const failure = await outcome(
      locks.using('use', async () => {
        throw new Error('boom');
      }),
    );
    expect((failure.error as Error).message).toBe('boom');
    expect((await locks.inspect('use')).held).toBe(false);
  });

  it('await using releases at the end of the block', async () => {
    const locks = lockService(server());
    {
      await using lease = await locks.acquire('dispose');
      expect((await locks.inspect('dispose')).holder).toBe(lease.token);
    }
    expect((await locks.inspect('dispose')).held).toBe(false);
  });

  it('a lock key is stored under the prefix with a {key} hash tag', async () => {
    const locks = lockService(server(), { prefix: 'app:locks:' });
    const lease = await locks.acquire('order:42');
    expect(await server().keys('app:locks:*')).toEqual(
      expect.arrayContaining(['app:locks:{order:42}', 'app:locks:{order:42}:fence']),
    );
    await lease.release();
  });

  it('close() rejects waiters, releases held leases, and refuses new calls', async () => {
    const locks = lockService(server());
    const other = lockService(server());
    const held = await locks.acquire('closing');
    const waiting = outcome(other.acquire('closing', { waitTimeout: 10_000 }));
    await until(
      () => locks.inspect('closing'),
      (info) => info.queueLength === 1,
    );
    const ownHeld = await other.acquire('closing-2');
    await other.close();
    expect((await waiting).error).toMatchObject({ code: 'LOCK_SERVICE_CLOSED' });
    expect((await locks.inspect('closing')).queueLength).toBe(0);
    expect((await locks.inspect('closing-2')).held).toBe(false);
    // The holder is told its lock is gone: work still running under it must stop.
    expect(ownHeld.signal.aborted).toBe(true);
    expect(ownHeld.signal.reason).toMatchObject({ code: 'LOCK_LOST', key: 'closing-2' });
    await expect(other.acquire('x')).rejects.toMatchObject({ code: 'LOCK_SERVICE_CLOSED' });
    await held.release();
  });
});
