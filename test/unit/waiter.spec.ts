// One waiter alone, with the engine on the in-memory store as its host: it resolves at once on a free
// key, says once that it queued, is served by a push when the holder lets go, and leaves the line (and
// the engine's registry) when its deadline passes or the service closes; a grant that reaches it after
// it gave up is released. Fast, no Redis.
import { describe, expect, it } from '@jest/globals';
import { now } from '../../lib/engine/clock';
import type { HeldLease } from '../../lib/engine/held-lease';
import { LockEngine } from '../../lib/engine/lock-engine';
import { Waiter } from '../../lib/engine/waiter';
import { LockServiceClosedError } from '../../lib/errors/lock-service-closed.error';
import { LockTimeoutError } from '../../lib/errors/lock-timeout.error';
import { RedisUnavailableError } from '../../lib/errors/redis-unavailable.error';
import type { AcquireOptions } from '../../lib/options/call-options';
import { resolveServiceOptions } from '../../lib/options/service-options';
import type { LockBackend, LockStore, WakeMessage } from '../../lib/store/lock-store';
import { MemoryLockBackend } from '../../lib/store/memory-store';
import { deferred } from '../support/deferred';
import { sleep } from '../support/event-loop';
import { call, engine, wrappedBackend } from './engine-fixtures';

function waiter(locks: LockEngine, key: string, options?: AcquireOptions): Waiter<HeldLease> {
  const made = call(options);
  const ticket = locks.store.ticket(key, {
    ttl: made.options.ttl,
    claimWindow: 1_000,
    kind: { permits: 1, mode: undefined },
  });
  return new Waiter(locks, ticket, now(), made);
}

describe('Waiter on the memory store', () => {
  it('a free key is granted on the first call, without ever queueing', async () => {
    const locks = engine();
    const one = waiter(locks, 'k');
    let queued = 0;
    const lease = await one.run('join', () => queued++);
    expect(queued).toBe(0);
    expect(lease.token).toBe(one.token);
    await lease.release();
  });

  it('queues once, is registered while it waits, and is served by the push when the holder lets go', async () => {
    const locks = engine();
    const held = await locks.takeOne('k', call());
    const one = waiter(locks, 'k', { waitTimeout: 5_000 });
    let queued = 0;
    const granted = one.run('join', () => queued++);
    expect((await locks.store.inspect('k')).waiting).toEqual([one.token]);
    expect(queued).toBe(1);
    expect(locks.waitingSince(one.token)).toBe(one.started);
    await held?.release();
    const lease = await granted;
    expect(lease.fence).toBeGreaterThan(held?.fence as number);
    expect(locks.waitingSince(one.token)).toBeUndefined();
    await lease.release();
  });

  it('at its deadline it rejects with LockTimeoutError and leaves both the line and the registry', async () => {
    const locks = engine();
    const held = await locks.takeOne('k', call());
    const one = waiter(locks, 'k', { waitTimeout: 40 });
    await expect(one.run('join')).rejects.toBeInstanceOf(LockTimeoutError);
    expect((await locks.store.inspect('k')).queueLength).toBe(0);
    expect(locks.waitingSince(one.token)).toBeUndefined();
    await held?.release();
  });

  it('close() rejects it with LockServiceClosedError and takes it out of the line', async () => {
    const locks = engine();
    const held = await locks.takeOne('k', call());
    const one = waiter(locks, 'k', { waitTimeout: 5_000 });
    const waiting = one.run('join');
    expect((await locks.store.inspect('k')).queueLength).toBe(1);
    await one.close();
    await expect(waiting).rejects.toBeInstanceOf(LockServiceClosedError);
    expect((await locks.store.inspect('k')).queueLength).toBe(0);
    await held?.release();
  });
});

/**
 * A waiter of `locks` that won key `k` by a push while its re-check (mode `wait`, sent as its wake
 * channel reconnected) was held back: that check reaches the store only when `gate` is resolved.
 * `observer` is another engine on the same locks.
 */
async function wonWithRecheckHeldBack() {
  const memory = new MemoryLockBackend();
  const gate = deferred();
  const backend = wrappedBackend(memory, (store) => ({
    acquire: async (...args) => {
      if (args[1] === 'wait') await gate.promise;
      return store.acquire(...args);
    },
  }));
  const locks = new LockEngine({ kind: 'backend', backend }, resolveServiceOptions({}));
  const observer = engine({}, memory);
  const holder = await observer.takeOne('k', call());
  const waiting = locks.takeOne('k', call({ waitTimeout: 5_000 }));
  expect((await observer.store.inspect('k')).queueLength).toBe(1);
  locks.onResubscribed();
  await holder?.release();
  return { locks, observer, gate, lease: await waiting };
}

describe('a pushed grant, when the server clock runs fast', () => {
  it('is started on with no more validity than its reservation has, the clock 0.9 % fast through the wait', async () => {
    const memory = new MemoryLockBackend();
    const since = now();
    // The server's clock as this process would read it: 0.9 % fast since `since` (the lock allows 1 %).
    const fast = (ms: number): number => ms + (ms - since) * 0.009;
    const pushed: number[] = [];
    const backend: LockBackend = {
      openStore: (handlers, name) => {
        const onWake = (message: WakeMessage): void => {
          if (message.kind === 'grant') pushed.push(message.serverMs);
          handlers.onWake(
            message.kind === 'grant' ? { ...message, serverMs: fast(message.serverMs) } : message,
          );
        };
        const store = memory.openStore({ ...handlers, onWake }, name);
        const acquire: LockStore['acquire'] = async (...args) => {
          const reply = await store.acquire(...args);
          return { ...reply, serverMs: fast(reply.serverMs) };
        };
        return Object.assign(Object.create(store) as LockStore, { acquire });
      },
    };
    const locks = engine({ claimWindow: 1_000 }, backend);
    const held = await engine({}, memory).takeOne('k', call());
    const waiting = locks.takeOne('k', call({ waitTimeout: 10_000 }));
    expect((await locks.store.inspect('k')).queueLength).toBe(1);
    await sleep(2_000); // the hold: the time over which the clocks drift apart
    await held?.release();
    const lease = (await waiting) as unknown as { validUntil: number; confirmed: boolean };
    expect(lease.confirmed).toBe(false);
    // Its reservation ends a claim window after the grant, on the server's true clock (this one's).
    expect(lease.validUntil).toBeLessThanOrEqual(pushed[0] + 1_000);
  });
});

describe('a grant that reaches a waiter after it gave up', () => {
  it('is released, when the waiter could not leave the line (its cancel failed)', async () => {
    const memory = new MemoryLockBackend();
    // The store runs each call at once; the first reply is held back past the waiter's deadline (a
    // client reconnecting), and the cancel fails (Redis unreachable as the waiter gives up).
    const held = deferred();
    let first = true;
    const backend = wrappedBackend(memory, (store) => ({
      acquire: async (...args) => {
        const reply = await store.acquire(...args);
        if (first) {
          first = false;
          await held.promise;
        }
        return reply;
      },
      cancel: async () => {
        throw new Error('connection is reconnecting');
      },
    }));
    const locks = new LockEngine({ kind: 'backend', backend }, resolveServiceOptions({}));
    const observer = engine({}, memory);
    // Never answered within its wait: Redis unavailable, not a lock somebody was seen to hold.
    await expect(locks.takeOne('k', call({ waitTimeout: 30 }))).rejects.toBeInstanceOf(RedisUnavailableError);
    // Redis ran the join: the lock is held under the waiter's token, which nobody will use.
    expect((await observer.store.inspect('k')).owner).not.toBeNull();
    held.resolve();
    const next = await observer.takeOne('k', call({ waitTimeout: 2_000 }));
    expect(next?.isHeld).toBe(true);
    await next?.release();
    await locks.close(async () => {});
  });

  it('is kept, when the waiter won it by a push while its re-check was on the way', async () => {
    // The re-check reaches the store only when the test opens the gate: after the push.
    const { locks, observer, gate, lease } = await wonWithRecheckHeldBack();
    // The re-check now runs, and its reply says "granted": the same grant, which the lease holds.
    gate.resolve();
    await lease?.extend();
    expect(lease?.isHeld).toBe(true);
    expect((await observer.store.inspect('k')).owner).toBe(lease?.token);
    await lease?.release();
    await locks.close(async () => {});
  });

  it('is not made again by a re-check that the client sends only after the lease was released', async () => {
    // Here the gate opens after the release, as a cluster client holds a command across a failover and
    // sends it after later ones.
    const { locks, observer, gate, lease } = await wonWithRecheckHeldBack();
    const released = lease?.release();
    gate.resolve();
    await released;
    // Run after the release, the re-check would have taken the free lock under the lease's token (or,
    // with others in line, joined it again), for a caller that is gone: nobody else could have it for
    // a whole ttl. The release waits for it instead.
    await new Promise((resolve) => setImmediate(resolve));
    const after = await observer.store.inspect('k');
    expect(after.owner).toBeNull();
    expect(after.queueLength).toBe(0);
    const next = await observer.takeOne('k', call({ waitTimeout: 0 }));
    expect(next?.isHeld).toBe(true);
    await next?.release();
    await locks.close(async () => {});
  });
});
