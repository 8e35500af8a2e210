// The local hand-off (docs/protocol.md): when the waiter first in line after an owner belongs to the
// owner's own service, the owner hands the lock to it without a round trip, and Redis records it after.
// Order, fences and exclusion are those of every hand-off; the proof that no round trip is needed is a
// hand-off made while Redis is stopped.
import { describe, expect, it } from '@jest/globals';
import { LockLostError } from '../../lib';
import { lockService, outcome, until } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();
const TTL = 10_000;

/**
 * `others` holds `key`; `names.length` callers of `service` queue behind it in that order. Resolves with
 * their acquisitions (still pending) once all of them are in Redis' queue.
 */
async function queueBehind(key: string, names: string[]) {
  const others = lockService(server());
  const service = lockService(server());
  const admin = server().client();
  const holder = await others.acquire(key, { ttl: TTL });
  const waiting = [];
  for (const [i] of names.entries()) {
    waiting.push(service.acquire(key, { ttl: TTL, waitTimeout: 20_000 }));
    await until(
      () => admin.llen(`lock:{${key}}:q`),
      (length) => length === i + 1,
    );
  }
  return { others, service, admin, holder, waiting };
}

describe('local hand-off', () => {
  it('hands the lock to the next waiter of the same service while Redis is stopped, and Redis records it after', async () => {
    const { service, admin, holder, waiting } = await queueBehind('local', ['a', 'b']);
    await holder.release();
    const a = await waiting[0];
    // Redis answers nothing now: a hand-off that needed it could not happen.
    server().pause();
    let released: Promise<void>;
    try {
      released = a.release();
      const b = await waiting[1];
      expect(b.fence).toBeGreaterThan(a.fence);
      expect(b.signal.aborted).toBe(false);
      server().resume();
      await released;
      // Recorded in Redis: b owns the lock, for its full ttl, and has left the queue.
      expect(await admin.get('lock:{local}')).toBe(b.token);
      expect(await admin.pttl('lock:{local}')).toBeGreaterThan(TTL - 2_000);
      expect(await admin.llen('lock:{local}:q')).toBe(0);
      expect((await service.inspect('local')).fence).toBeGreaterThanOrEqual(b.fence);
      await b.release();
      expect(await admin.exists('lock:{local}')).toBe(0);
    } finally {
      server().resume();
    }
  });

  it('never passes over a waiter of another service that is ahead in line', async () => {
    const others = lockService(server());
    const service = lockService(server());
    const admin = server().client();
    const holder = await service.acquire('mixed', { ttl: TTL });
    const order: string[] = [];
    // Joins and waits until Redis has queued the caller; the acquisition itself is returned unawaited.
    const queue = async (name: string, svc: typeof service, length: number) => {
      const pending = svc.acquire('mixed', { ttl: TTL, waitTimeout: 20_000 }).then((lease) => {
        order.push(name);
        return lease;
      });
      await until(
        () => admin.llen('lock:{mixed}:q'),
        (n) => n === length,
      );
      return { pending };
    };
    const first = (await queue('other service', others, 1)).pending;
    const second = (await queue('same service', service, 2)).pending;
    await holder.release();
    const lease = await first;
    expect(order).toEqual(['other service']);
    await lease.release();
    await (await second).release();
    expect(order).toEqual(['other service', 'same service']);
  });

  it('a run of waiters of one service is served in order with rising fences, one script and no push per hand-off', async () => {
    const { admin, holder, waiting } = await queueBehind('run', ['a', 'b', 'c', 'd']);
    await holder.release();
    const leases = [await waiting[0]];
    await server().resetStats();
    for (let i = 1; i < waiting.length; i++) {
      await leases[i - 1].release();
      leases.push(await waiting[i]);
    }
    const stats = await server().commandStats();
    const fences = leases.map((lease) => lease.fence);
    expect([...fences].sort((x, y) => x - y)).toEqual(fences);
    expect(new Set(fences).size).toBe(fences.length);
    // Three hand-offs: each one transfer script (the waiter's confirmation is that script), no push.
    // (EVAL: the first time this client runs the script.)
    expect((stats.get('evalsha') ?? 0) + (stats.get('eval') ?? 0)).toBe(3);
    expect(stats.get('publish') ?? 0).toBe(0);
    await leases[3].release();
    expect(await admin.exists('lock:{run}', 'lock:{run}:q')).toBe(0);
  });

  it('a waiter handed a lock its owner had lost learns it at once: its signal aborts, the owner is told', async () => {
    const { admin, holder, waiting } = await queueBehind('lost', ['a', 'b']);
    await holder.release();
    const a = await waiting[0];
    // As eviction or a stray DEL would: the owner no longer holds the lock in Redis.
    await admin.del('lock:{lost}');
    const released = outcome(a.release());
    const b = await waiting[1];
    const reason = await new Promise<unknown>((resolve) => {
      if (b.signal.aborted) resolve(b.signal.reason);
      b.signal.addEventListener('abort', () => resolve(b.signal.reason), { once: true });
    });
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as LockLostError).reason).toBe('key-missing');
    expect((await released).error).toMatchObject({ code: 'LOCK_NOT_HELD' });
    await b.release().catch(() => {});
  });

  it('a successor that gave up is skipped: the owner releases as usual and the next in line is served', async () => {
    const { admin, service, holder, waiting } = await queueBehind('gone', ['a']);
    const abort = new AbortController();
    const successor = outcome(
      service.acquire('gone', { ttl: TTL, waitTimeout: 20_000, signal: abort.signal }),
    );
    await until(
      () => admin.llen('lock:{gone}:q'),
      (length) => length === 2,
    );
    const third = lockService(server()).acquire('gone', { ttl: TTL, waitTimeout: 20_000 });
    await until(
      () => admin.llen('lock:{gone}:q'),
      (length) => length === 3,
    );
    await holder.release();
    const a = await waiting[0];
    abort.abort();
    expect((await successor).error).toMatchObject({ code: 'LOCK_ABORTED' });
    await a.release();
    const lease = await third;
    expect(lease.fence).toBeGreaterThan(a.fence);
    await lease.release();
  });

  it('a release whose reply was lost still wakes the waiter of its own service it granted, long before the hold it knew of ends', async () => {
    // Replies to this service time out after 300 ms; the holder's lease is 30 s, which is when its
    // waiter would otherwise look again.
    const service = lockService(server(), { commandTimeout: 300 });
    const admin = server().client();
    const holder = await service.acquire('lost-reply', { ttl: 30_000 });
    const waiting = outcome(service.acquire('lost-reply', { ttl: TTL, waitTimeout: 10_000 }));
    await until(
      () => admin.llen('lock:{lost-reply}:q'),
      (length) => length === 1,
    );
    // Redis takes the release but cannot answer in time: the grant it makes travels in that reply only.
    server().pause();
    let released: { error?: unknown };
    try {
      released = await outcome(holder.release());
    } finally {
      server().resume();
    }
    expect(released.error).toMatchObject({ code: 'LOCK_REDIS_UNAVAILABLE' });
    const { value: lease, error } = await waiting;
    expect(error).toBeUndefined();
    expect(await admin.get('lock:{lost-reply}')).toBe(lease?.token);
    await lease?.release();
  });
});
