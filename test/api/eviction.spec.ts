// A lease whose key vanishes from Redis behind its back (deleted, or evicted under maxmemory) is told at
// its next renewal, with a LockLostError whose reason says the key was gone; a lease whose lock another
// caller owns is told so too (taken-over). Against real redis-servers, one with maxmemory volatile-lru.
import { describe, expect, it } from '@jest/globals';
import { LockLostError } from '../../lib/core';
import { abortedAt, elapsedSince, lockService, until } from '../support/lock-fixtures';
import { startRedis, useRedis } from '../support/redis-server';

const server = useRedis();

/** The owner key of lock `key` under the default prefix. */
const ownerKey = (key: string): string => `lock:{${key}}`;

describe('a lease whose key is gone from Redis', () => {
  it('aborts its signal with reason key-missing within one renewal interval of a DEL', async () => {
    const ttl = 1_500;
    const locks = lockService(server());
    const lease = await locks.acquire('gone', { ttl, renew: true });
    const aborted = abortedAt(lease.signal);
    const deleted = await server().admin(async (redis) => {
      expect(await redis.del(ownerKey('gone'))).toBe(1);
      return performance.now();
    });
    const after = (await aborted) - deleted;

    const reason = lease.signal.reason as LockLostError;
    expect(reason).toBeInstanceOf(LockLostError);
    expect(reason.code).toBe('LOCK_LOST');
    expect(reason.reason).toBe('key-missing');
    expect(reason.message).toMatch(/key was gone from Redis at renewal \(expired, evicted under maxmemory/);
    // Renewals run every ttl/3: the first one after the deletion finds it, plus a round trip.
    expect(after).toBeLessThan(ttl / 3 + 150);
    // Long before the lease's own validity would have run out.
    expect(after).toBeLessThan(ttl - ttl / 10);
    await expect(lease.release()).rejects.toMatchObject({ code: 'LOCK_NOT_HELD' });
  });

  it('aborts with reason taken-over when another caller owns the lock at renewal', async () => {
    const ttl = 1_500;
    const locks = lockService(server());
    const lease = await locks.acquire('taken', { ttl, renew: true });
    const aborted = abortedAt(lease.signal);
    await server().admin((redis) => redis.set(ownerKey('taken'), 'someone-else', 'PX', 10_000));
    await aborted;
    expect((lease.signal.reason as LockLostError).reason).toBe('taken-over');
    await server().admin((redis) => redis.del(ownerKey('taken')));
  });

  it('extend() on a lease whose key is gone rejects LOCK_NOT_HELD and aborts the signal (key-missing)', async () => {
    const locks = lockService(server());
    const lease = await locks.acquire('extend-gone', { ttl: 5_000 });
    await server().admin((redis) => redis.del(ownerKey('extend-gone')));
    await expect(lease.extend()).rejects.toMatchObject({ code: 'LOCK_NOT_HELD' });
    expect(lease.signal.aborted).toBe(true);
    expect((lease.signal.reason as LockLostError).reason).toBe('key-missing');
  });

  it('under maxmemory + volatile-lru, cache writes evict a held lock; its holder learns it at the next renewal', async () => {
    const evicting = await startRedis({ args: ['--maxmemory', '5mb', '--maxmemory-policy', 'volatile-lru'] });
    try {
      const ttl = 3_000;
      const holder = lockService(evicting);
      const rival = lockService(evicting);
      const lease = await holder.acquire('evicted', { ttl, renew: true });
      const aborted = abortedAt(lease.signal);
      // Cache entries with a TTL, as an application's cache writes them, until the lock's key is evicted.
      const writer = evicting.client();
      const value = 'x'.repeat(2_048);
      let written = 0;
      const gone = await until(
        async () => {
          const batch = writer.pipeline();
          for (let i = 0; i < 200; i++) batch.set(`cache:${written++}`, value, 'EX', 600);
          await batch.exec();
          return writer.exists(ownerKey('evicted'));
        },
        (exists) => exists === 0,
        20_000,
      );
      expect(gone).toBe(0);
      const evictedAt = performance.now();
      const info = await writer.info('stats');
      expect(Number(/evicted_keys:(\d+)/.exec(info)?.[1])).toBeGreaterThan(0);

      // The holder learns it at its next renewal (every ttl/3), long before its own validity ends.
      await aborted;
      expect(elapsedSince(evictedAt)).toBeLessThan(ttl / 3 + 300);
      const reason = lease.signal.reason as LockLostError;
      expect(reason.reason).toBe('key-missing');
      expect(reason.message).toMatch(/evicted under maxmemory/);
      // The lock is free to anyone meanwhile: what the start-up warning about eviction is for.
      const second = await rival.tryAcquire('evicted', { ttl });
      expect(second).not.toBeNull();
      await second?.release();
      writer.disconnect();
    } finally {
      await evicting.dispose();
    }
  }, 40_000);
});

describe('a full server under noeviction', () => {
  it('refuses lock calls with a typed error and grants nothing, leaving no partial state', async () => {
    const full = await startRedis({ args: ['--maxmemory', '2mb', '--maxmemory-policy', 'noeviction'] });
    try {
      const locks = lockService(full);
      const held = await locks.acquire('before-full', { ttl: 10_000 });
      const writer = full.client();
      const value = 'x'.repeat(4_096);
      // Fill until the server refuses writes.
      await until(
        async () => {
          try {
            const batch = writer.pipeline();
            for (let i = 0; i < 100; i++) batch.set(`cache:${Math.random()}`, value);
            const results = (await batch.exec()) ?? [];
            return results.some(([error]) => error !== null);
          } catch {
            return true;
          }
        },
        (refused) => refused,
        20_000,
      );
      const keysBefore = await full.keys('lock:*');
      const attempt = await locks.tryAcquire('after-full', { ttl: 10_000 }).then(
        (lease) => ({ lease }),
        (error: unknown) => ({ error }),
      );
      // The error names the lock as the caller did, not the Redis key behind it.
      expect(attempt).toEqual({
        error: expect.objectContaining({ code: 'LOCK_REDIS_ERROR', key: 'after-full' }),
      });
      expect((attempt as { error: Error }).error.message).toMatch(/OOM command not allowed/);
      expect(await full.keys('lock:*')).toEqual(keysBefore);
      // The lock held before the server filled up is still held, and renews (PEXPIRE is allowed when full).
      await held.extend();
      await held.release();
      writer.disconnect();
    } finally {
      await full.dispose();
    }
  }, 40_000);
});
