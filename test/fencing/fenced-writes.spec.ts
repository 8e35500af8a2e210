// The fencing token makes a stale holder harmless: a holder whose lease expired (here: it stopped
// renewing, as a paused process would) cannot overwrite what the next holder wrote, in Redis through
// FencedStore, and in SQL through the documented `WHERE fence <= $token` update.
import type { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { FencedStore, LockUsageError } from '../../lib/core';
import { lockService, whenAborted } from '../support/lock-fixtures';
import { freshDatabase } from '../support/pglite';
import { useRedis } from '../support/redis-server';

const server = useRedis();

/** A holder that stops renewing (as a frozen process would), then a second holder that takes over. */
async function staleAndFreshHolders(key: string) {
  const locks = lockService(server(), { claimWindow: 100 });
  // Taken with the default ttl, then cut to 300 ms: asked for at acquire, a 300 ms lease is refused
  // (LockLostError) when a busy machine reads its grant with less than the safety margin left.
  const stale = await locks.acquire(key, { renew: false });
  await stale.extend(300);
  const lost = whenAborted(stale.signal);
  const fresh = await lockService(server(), { claimWindow: 100 }).acquire(key, { waitTimeout: 5_000 });
  await lost;
  expect(fresh.fence).toBeGreaterThan(stale.fence);
  return { stale, fresh };
}

describe('fenced writes in Redis (FencedStore)', () => {
  it('a stale holder cannot overwrite what a newer holder wrote', async () => {
    const store = new FencedStore(lockService(server()).client);
    const { stale, fresh } = await staleAndFreshHolders('fenced-redis');
    expect(await store.set('balance:1', fresh.fence, 'fresh')).toEqual({ written: true, fence: fresh.fence });
    // The holder whose lease expired wakes up and writes: refused, and told the newer fence.
    expect(await store.set('balance:1', stale.fence, 'stale')).toEqual({
      written: false,
      fence: fresh.fence,
    });
    expect(await store.get('balance:1')).toEqual({ value: 'fresh', fence: fresh.fence });
    // An unfenced write, by contrast, lets the stale holder win: the failure fencing exists to prevent.
    await server().client().set('balance:unfenced', 'fresh');
    await server().client().set('balance:unfenced', 'stale');
    expect(await server().client().get('balance:unfenced')).toBe('stale');
    await fresh.release();
    // Leave nothing persistent behind (the suite may run on a server of REDIS_URL).
    await server().client().del('balance:1', 'balance:unfenced');
  });

  it('the same holder may write again; a ttl bounds the resource; bad input is a typed error', async () => {
    const store = new FencedStore(lockService(server()).client);
    const lease = await lockService(server()).acquire('fenced-again');
    expect((await store.set('doc', lease.fence, 'v1', { ttl: 60_000 })).written).toBe(true);
    expect((await store.set('doc', lease.fence, 'v2')).written).toBe(true);
    expect((await store.get('doc')).value).toBe('v2');
    expect(await server().ttlOf('doc')).toBeGreaterThan(0);
    await expect(store.set('doc', -1, 'x')).rejects.toBeInstanceOf(LockUsageError);
    await expect(store.set('doc', 1.5, 'x')).rejects.toBeInstanceOf(LockUsageError);
    await expect(store.set('', lease.fence, 'x')).rejects.toBeInstanceOf(LockUsageError);
    expect(() => new FencedStore({} as never)).toThrow(LockUsageError);
    await lease.release();
  });
});

describe('fenced writes in SQL (the documented UPDATE ... WHERE fence <= $token)', () => {
  let db: PGlite;
  beforeAll(async () => {
    db = await freshDatabase();
    await db.exec(`CREATE TABLE accounts (id text PRIMARY KEY, balance integer NOT NULL, fence numeric NOT NULL DEFAULT 0);
                   INSERT INTO accounts (id, balance) VALUES ('acc-1', 100);`);
  });
  afterAll(async () => {
    await db.close();
  });

  const update = (balance: number, fence: number) =>
    db.query('UPDATE accounts SET balance = $1, fence = $2 WHERE id = $3 AND fence <= $2', [
      balance,
      fence,
      'acc-1',
    ]);

  it('a stale holder updates no row after a newer holder wrote', async () => {
    const { stale, fresh } = await staleAndFreshHolders('fenced-sql');
    expect((await update(150, fresh.fence)).affectedRows).toBe(1);
    expect((await update(999, stale.fence)).affectedRows).toBe(0);
    const row = await db.query<{ balance: number; fence: string }>('SELECT balance, fence FROM accounts');
    expect(row.rows[0]).toEqual({ balance: 150, fence: String(fresh.fence) });
    await fresh.release();
  });
});
