// A lock key written by something else (another Redis type) is a configuration problem, not a busy lock:
// every form of the call rejects at once with LOCK_REDIS_ERROR, runs its script once, queues nothing and
// leaves the foreign key as it was. A waiter that finds such a key on a later re-check gives up at once
// instead of retrying until its waitTimeout.
import { describe, expect, it } from '@jest/globals';
import { type Lease, LockError, type LockService } from '../../lib/core';
import { lockService, outcome } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();

/** The owner key and queue key of lock `key` under the default prefix. */
const ownerKey = (key: string) => `lock:{${key}}`;
const queueKey = (key: string) => `lock:{${key}}:q`;

const evalshaCalls = async (): Promise<number> => (await server().commandStats()).get('evalsha') ?? 0;

/** Rejects with a LOCK_REDIS_ERROR that names the key and says what to do. */
async function expectRedisError(call: Promise<unknown>, key: string): Promise<void> {
  const { error } = await outcome(call);
  expect(error).toBeInstanceOf(LockError);
  expect((error as LockError).code).toBe('LOCK_REDIS_ERROR');
  expect((error as LockError).message).toContain(`"${key}"`);
  expect((error as LockError).message).toMatch(/WRONGTYPE.*used by something else/);
}

const forms: [string, (locks: LockService, key: string) => Promise<unknown>][] = [
  ['acquire, waitTimeout 3000', (locks, key) => locks.acquire(key, { waitTimeout: 3_000 })],
  ['acquire, waitTimeout 0', (locks, key) => locks.acquire(key, { waitTimeout: 0 })],
  ['tryAcquire', (locks, key) => locks.tryAcquire(key)],
  ['using', (locks, key) => locks.using(key, () => 'ran', { waitTimeout: 3_000 })],
];

describe('a lock key that holds another Redis type', () => {
  it.each(forms)(
    '%s: rejects at once with LOCK_REDIS_ERROR, one script, nothing queued',
    async (_name, call) => {
      const key = `foreign-${_name.replace(/\W+/g, '-')}`;
      await server().admin((redis) => redis.sadd(ownerKey(key), 'someone else'));
      const locks = lockService(server());
      // A first call on this service opens its wake connection: count from a warmed service.
      await (await locks.acquire('warm-up')).release();
      const before = await evalshaCalls();
      const started = performance.now();

      await expectRedisError(call(locks, key), key);

      // One attempt and no retry loop: it did not wait for its waitTimeout either.
      expect(await evalshaCalls()).toBe(before + 1);
      expect(performance.now() - started).toBeLessThan(3_000);
      const [type, members, queued] = await server().admin((redis) =>
        Promise.all([redis.type(ownerKey(key)), redis.smembers(ownerKey(key)), redis.exists(queueKey(key))]),
      );
      expect(type).toBe('set');
      expect(members).toEqual(['someone else']);
      expect(queued).toBe(0);
    },
  );

  it('a queued waiter whose re-check finds it gives up at once, not at its waitTimeout', async () => {
    const key = 'foreign-later';
    const locks = lockService(server());
    const holder: Lease = await locks.acquire(key, { ttl: 300 });
    const waiting = lockService(server()).acquire(key, { waitTimeout: 10_000 });
    waiting.catch(() => {}); // awaited below
    // Queued behind the holder; then something else takes the key over.
    await server().admin(async (redis) => {
      while ((await redis.llen(queueKey(key))) === 0) await new Promise((r) => setImmediate(r));
      await redis.multi().del(ownerKey(key)).sadd(ownerKey(key), 'someone else').exec();
    });
    const before = await evalshaCalls();
    const started = performance.now();

    await expectRedisError(waiting, key);

    // Its re-check comes when the holder's 300 ms would have ended, and it is the only one: the wait
    // ended there, not at 10 s. Allow the event loop and Redis some seconds on a busy machine.
    expect(performance.now() - started).toBeLessThan(5_000);
    // The re-check, and the cancel that leaves the line (it fails on the same key, and is not retried).
    expect(await evalshaCalls()).toBeLessThanOrEqual(before + 2);
    expect(await server().admin((redis) => redis.llen(queueKey(key)))).toBe(0);
    await outcome(holder.release());
  });
});
