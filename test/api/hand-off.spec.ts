import { describe, expect, it } from '@jest/globals';
import { listening, lockService, until } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();
const CLAIM_WINDOW = 1_000;
const TTL = 10_000;

/** A holder on one service and a queued waiter on another; resolves once the waiter is in the queue. */
async function queuedBehindHolder(key: string) {
  const holders = lockService(server(), { claimWindow: CLAIM_WINDOW });
  const waiters = lockService(server(), { claimWindow: CLAIM_WINDOW });
  const holder = await holders.acquire(key, { ttl: TTL });
  const waiting = waiters.acquire(key, { ttl: TTL, waitTimeout: 10_000 });
  const admin = server().client();
  await until(
    () => admin.llen(`lock:{${key}}:q`),
    (length) => length === 1,
  );
  await listening(server(), waiters);
  return { holders, holder, waiting, admin };
}

describe('hand-off by push', () => {
  it('a grant pushed from another process is started on at once: a short hold sends no confirmation, one script on each side', async () => {
    const { holder, waiting } = await queuedBehindHolder('short');
    await server().resetStats();
    await holder.release();
    const lease = await waiting;
    await lease.release();
    // Nothing confirms the grant (no PEXPIRE of the owner key): the work ended well inside its claim
    // window. The queue's expiry was set when the waiter joined, before the counters were reset.
    const stats = await server().commandStats();
    expect(stats.get('pexpire') ?? 0).toBe(0);
    // The holder's release and the waiter's: two script calls (EVAL the first time a client runs one).
    expect((stats.get('evalsha') ?? 0) + (stats.get('eval') ?? 0)).toBe(2);
    expect(await server().client().exists('lock:{short}', 'lock:{short}:q')).toBe(0);
  });

  it('a longer one keeps the lock for its full ttl', async () => {
    const { holders, holder, waiting, admin } = await queuedBehindHolder('long');
    await holder.release();
    const lease = await waiting;
    // Confirmed while it runs, before its claim window ends: the owner key then has the full ttl.
    const confirmed = await until(
      () => admin.pttl('lock:{long}'),
      (ms) => ms > CLAIM_WINDOW,
      CLAIM_WINDOW,
    );
    expect(confirmed).toBeGreaterThan(TTL - 2_000);
    // Well past the claim window the lease is still valid and nobody else can take the lock.
    await until(
      async () => (await admin.pttl('lock:{long}')) < TTL - 2.5 * CLAIM_WINDOW,
      (past) => past,
    );
    expect(lease.signal.aborted).toBe(false);
    expect(await holders.tryAcquire('long')).toBeNull();
    await expect(lease.release()).resolves.toBeUndefined();
  });

  it.each([
    ['a semaphore of 2', { permits: 2 }],
    ["a read-write lock's writers", { mode: 'write' as const }],
  ])(
    "%s: a grant a call of the waiter's own service pushed is not confirmed either: no script more",
    async (_name, kind) => {
      const key = `own-${'permits' in kind ? 'sem' : 'rw'}`;
      const locks = lockService(server(), { claimWindow: CLAIM_WINDOW });
      const admin = server().client();
      const holder = await locks.acquire(key, { ttl: TTL, ...kind });
      // Every other permit held too, to the end.
      const others = [];
      for (let i = 1; i < ('permits' in kind ? kind.permits : 1); i++) {
        others.push(await locks.acquire(key, { ttl: TTL, ...kind }));
      }
      const waiting = locks.acquire(key, { ttl: TTL, waitTimeout: 10_000, ...kind });
      await until(
        () => admin.llen(`lock:{${key}}:sq`),
        (length) => length === 1,
      );
      await listening(server(), locks);
      await server().resetStats();
      await holder.release();
      const lease = await waiting;
      await lease.release();
      // The holder's release and the waiter's: two script calls, no confirmation between them.
      const stats = await server().commandStats();
      expect((stats.get('evalsha') ?? 0) + (stats.get('eval') ?? 0)).toBe(2);
      for (const other of others) await other.release();
      expect(await admin.exists(`lock:{${key}}`, `lock:{${key}}:s`, `lock:{${key}}:sq`)).toBe(0);
    },
  );
});
