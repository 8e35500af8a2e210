// The local hand-off (docs/protocol.md): when the waiters first in line after an owner belong to the
// owner's own service, the owner hands the lock to the first without a round trip, and so on; Redis
// hears of it when the last is done, or when one's work is long. Order, fences and exclusion are those of
// every hand-off; the proof that no round trip is needed is a hand-off made while Redis is stopped.
import { describe, expect, it, jest } from '@jest/globals';
import { type Lease, LockLostError, type LockServiceOptions } from '../../lib/core';
import { commandsIn, listening, lockService, outcome, until } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();
const TTL = 10_000;

/**
 * `others` holds `key`; `names.length` callers of `service` queue behind it in that order. Resolves with
 * their acquisitions (still pending) once all of them are in Redis' queue.
 */
async function queueBehind(key: string, names: string[], options?: LockServiceOptions, ttl = TTL) {
  const others = lockService(server());
  const service = lockService(server(), options);
  const admin = server().client();
  const holder = await others.acquire(key, { ttl: TTL });
  const waiting = [];
  for (const [i] of names.entries()) {
    waiting.push(service.acquire(key, { ttl, waitTimeout: 20_000 }));
    await until(
      () => admin.llen(`lock:{${key}}:q`),
      (length) => length === i + 1,
    );
  }
  await listening(server(), service);
  return { others, service, admin, holder, waiting };
}

describe('local hand-off', () => {
  it('hands the lock to the next waiter of the same service while Redis is stopped, and Redis records it when the work needs it', async () => {
    const { service, admin, holder, waiting } = await queueBehind('local', ['a', 'b']);
    await holder.release();
    const a = await waiting[0];
    // a confirms its pushed grant as it starts (its full ttl); then Redis answers nothing: a hand-off
    // that needed it could not happen.
    await until(
      () => admin.pttl('lock:{local}'),
      (left) => left > TTL - 2_000,
    );
    server().pause();
    let released: Promise<void>;
    try {
      released = a.release();
      const b = await waiting[1];
      expect(b.fence).toBeGreaterThan(a.fence);
      expect(b.signal.aborted).toBe(false);
      await released;
      server().resume();
      // Redis still knows the lock under a's name; extending it (as renewal would) records the hand-off:
      // b owns the lock, for its full ttl, and has left the queue.
      expect(await admin.get('lock:{local}')).toBe(a.token);
      await b.extend();
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

  it('a run of waiters of one service is served in order with rising fences, and Redis hears of it once, when the last is done', async () => {
    const { admin, holder, waiting } = await queueBehind('run', ['a', 'b', 'c', 'd']);
    await holder.release();
    const leases = [await waiting[0]];
    await server().resetStats();
    for (let i = 1; i < waiting.length; i++) {
      await leases[i - 1].release();
      leases.push(await waiting[i]);
    }
    // Three hand-offs, no command at all; the queue still holds b, c and d.
    expect(commandsIn(await server().commandStats())).toBe(0);
    expect(await admin.llen('lock:{run}:q')).toBe(3);
    const fences = leases.map((lease) => lease.fence);
    expect([...fences].sort((x, y) => x - y)).toEqual(fences);
    expect(new Set(fences).size).toBe(fences.length);
    // The last release is one script: it takes b, c and d out of line and frees the lock. No push.
    await leases[3].release();
    const stats = await server().commandStats();
    expect((stats.get('evalsha') ?? 0) + (stats.get('eval') ?? 0)).toBe(1);
    expect(stats.get('publish') ?? 0).toBe(0);
    expect(await admin.exists('lock:{run}', 'lock:{run}:q')).toBe(0);
  });

  it('a waiter handed a lock its owner had lost learns it when it next asks Redis: its signal aborts, its release is refused', async () => {
    const { admin, holder, waiting } = await queueBehind('lost', ['a', 'b', 'c']);
    await holder.release();
    const a = await waiting[0];
    // As eviction or a stray DEL would: the owner no longer holds the lock in Redis. Like a renewal
    // finding it gone, the follower learns of it from its next call to Redis.
    await admin.del('lock:{lost}');
    await a.release();
    const b = await waiting[1];
    expect((await outcome(b.extend())).error).toMatchObject({ code: 'LOCK_NOT_HELD' });
    expect(b.signal.aborted).toBe(true);
    expect(b.signal.reason).toBeInstanceOf(LockLostError);
    expect((b.signal.reason as LockLostError).reason).toBe('key-missing');
    // A lost lease is not handed on: c is granted by Redis, which b's release reaches (and refuses).
    expect((await outcome(b.release())).error).toMatchObject({ code: 'LOCK_NOT_HELD' });
    const c = await waiting[2];
    expect(c.fence).toBeGreaterThan(b.fence);
    expect(await admin.get('lock:{lost}')).not.toBe(a.token);
    await c.release();
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
    const queued: string[] = [];
    const service = lockService(server(), {
      commandTimeout: 300,
      telemetry: { onEvent: (event) => event.kind === 'queued' && queued.push(event.keys[0]) },
    });
    const holder = await service.acquire('lost-reply', { ttl: 30_000 });
    const waiting = outcome(service.acquire('lost-reply', { ttl: TTL, waitTimeout: 10_000 }));
    // In line as the service itself knows it: its join's reply was read. A queue seen from another
    // connection is not enough: on a stalled event loop that reply could still be unread when Redis is
    // paused, and the join, a first call, would then fail fast on its command timeout.
    await until(
      async () => queued,
      (keys) => keys.includes('lost-reply'),
    );
    const admin = server().client();
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

  it('a follower whose work is long records the hand-off while it works, and hands on to the followers after it', async () => {
    // Short leases: a's grant (pushed) lasts its 600 ms claim window until confirmed, then 1 s.
    const ttl = 1_000;
    const { admin, holder, waiting } = await queueBehind('long', ['a', 'b', 'c'], { claimWindow: 600 }, ttl);
    await holder.release();
    const a = await waiting[0];
    // a works on past half of its window, and confirms its grant: the full ttl.
    await until(
      () => admin.pttl('lock:{long}'),
      (left) => left > 600,
    );
    await a.release();
    const b = await waiting[1];
    // b, handed on to without a round trip, works on past half of what was left: it records the
    // hand-off, owns the lock in its own name and leaves the line; c, its follower, stays.
    await until(
      () => admin.get('lock:{long}'),
      (owner) => owner === b.token,
    );
    expect(await admin.lrange('lock:{long}:q', 0, -1)).toHaveLength(1);
    expect(b.signal.aborted).toBe(false);
    await b.release();
    const c = await waiting[2];
    expect([a.fence < b.fence, b.fence < c.fence]).toEqual([true, true]);
    await c.release();
    expect(await admin.exists('lock:{long}', 'lock:{long}:q')).toBe(0);
  });

  it('a lease whose record is on its way to Redis does not hand on locally: Redis serves the next after it', async () => {
    const { admin, holder, waiting } = await queueBehind('recording', ['a', 'b', 'c']);
    await holder.release();
    const a = await waiting[0];
    await a.release();
    const b = await waiting[1];
    let resumedAt = Number.POSITIVE_INFINITY;
    let cAt = 0;
    const c = waiting[2].then((lease) => {
      cAt = performance.now();
      return lease;
    });
    server().pause();
    let extended: Promise<void>;
    let released: Promise<void>;
    try {
      // b's extend records the hand-off first (a transfer, stuck in Redis' input for now); its release
      // then goes to Redis too, after it, instead of handing c the lock under a name about to change.
      extended = b.extend();
      released = b.release();
    } finally {
      resumedAt = performance.now();
      server().resume();
    }
    await extended;
    await released;
    const lease = await c;
    expect(cAt).toBeGreaterThan(resumedAt);
    expect(lease.fence).toBeGreaterThan(b.fence);
    expect(await admin.get('lock:{recording}')).toBe(lease.token);
    await lease.release();
    expect(await admin.exists('lock:{recording}', 'lock:{recording}:q')).toBe(0);
  });

  // A caller that released the lock to a waiter of its own service goes on only after the new holder
  // started: the new holder's start is a chain of promise steps, and what the caller does next would
  // otherwise run between them, on the lock's critical path.
  it.each([
    ['handed on locally (a follower)', true],
    ["granted in the release's reply", false],
  ])('the new holder starts before the releasing caller goes on: %s', async (_name, local) => {
    const key = local ? 'first-follower' : 'first-reply';
    let release: () => Promise<void>;
    let next: Promise<unknown>;
    if (local) {
      // a was granted by a push that named b its follower: a's release hands on without Redis.
      const line = await queueBehind(key, ['a', 'b']);
      await line.holder.release();
      const a = await line.waiting[0];
      release = () => a.release();
      next = line.waiting[1];
    } else {
      // a took the lock before b joined: its release goes to Redis, whose reply grants b.
      const service = lockService(server());
      const admin = server().client();
      const a = await service.acquire(key, { ttl: TTL });
      next = service.acquire(key, { ttl: TTL, waitTimeout: 20_000 });
      await until(
        () => admin.llen(`lock:{${key}}:q`),
        (length) => length === 1,
      );
      await listening(server(), service);
      release = () => a.release();
    }
    const order: string[] = [];
    const started = next.then((lease) => {
      order.push('new holder');
      return lease as { release(): Promise<void> };
    });
    await release();
    order.push('releasing caller');
    expect(order).toEqual(['new holder', 'releasing caller']);
    await (await started).release();
  });

  it("a release that handed the lock on locally resolves under an application's fake timers", async () => {
    const { service, holder, waiting } = await queueBehind('fake-timers', ['a', 'b']);
    await holder.release();
    const a = await waiting[0];
    // setImmediate, setTimeout and process.nextTick are all fake now: nothing here may wait on one.
    jest.useFakeTimers();
    let b: Lease;
    try {
      await a.release();
      b = await waiting[1];
    } finally {
      jest.useRealTimers();
    }
    expect(b.fence).toBeGreaterThan(a.fence);
    await b.release();
    expect(await service.inspect('fake-timers')).toMatchObject({ held: false, queueLength: 0 });
  });
});
