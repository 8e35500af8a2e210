// Multi-key locks, as every store must carry them (run by redis.conformance.spec.ts and
// memory.conformance.spec.ts): all or nothing, no deadlock between any mix of key sets, each key still
// FIFO with no barging, one lease for the set (fences, tokens, signal), reentrancy and canonical order,
// bad key arrays refused with nothing held.
import { describe, expect, it } from '@jest/globals';
import {
  type Lease,
  LockAbortedError,
  LockLostError,
  type LockService,
  LockServiceClosedError,
  LockTimeoutError,
  LockUsageError,
  MAX_KEYS,
} from '../../lib/core';
import { abortedAt, outcome, until } from '../support/lock-fixtures';
import type { Property, ServiceFactory } from './lock-conformance';

/** `cannot`: properties the store does not give (their tests are reported as skipped). */
export function describeMultiKeyConformance(
  store: string,
  service: ServiceFactory,
  cannot: Partial<Record<Property, string>> = {},
): void {
  const fifo = 'FIFO between services' in cannot ? it.skip : it;
  const reserving = 'reservations on later keys' in cannot ? it.skip : it;
  const queued = (locks: LockService, key: string, n: number) =>
    until(
      () => locks.inspect(key),
      (info) => info.queueLength === n,
    );
  const reserved = (locks: LockService, key: string, n: number) =>
    until(
      () => locks.inspect(key),
      (info) => info.reserved === n,
    );
  const free = async (locks: LockService, keys: readonly string[]) => {
    for (const key of keys) {
      expect(await locks.inspect(key)).toMatchObject({ held: false, queueLength: 0, reserved: 0 });
    }
  };

  describe(`multi-key conformance: ${store}`, () => {
    it('holds every key under one lease: canonical keys, a token and a fence per key, all released', async () => {
      const locks = service();
      const before = await locks.acquire('m:b');
      const firstFence = before.fence;
      await before.release();
      const lease = await locks.acquire(['m:b', 'm:a', 'm:b', 'm:c']);
      expect(lease.keys).toEqual(['m:a', 'm:b', 'm:c']);
      expect(lease.key).toBe('m:a');
      expect(Object.keys(lease.fences).sort()).toEqual(['m:a', 'm:b', 'm:c']);
      expect(lease.fence).toBe(Math.max(...Object.values(lease.fences)));
      expect(lease.fences['m:b']).toBeGreaterThan(firstFence);
      expect(lease.token).toBe(lease.tokens['m:a']);
      expect(new Set(Object.values(lease.tokens)).size).toBe(3);
      for (const key of lease.keys) {
        // inspect shows the multi-key holder on each key.
        expect(await locks.inspect(key)).toMatchObject({ held: true, holder: lease.tokens[key] });
        expect(lease.tokens[key].startsWith(lease.token.slice(0, lease.token.indexOf('~')))).toBe(true);
      }
      await lease.release();
      await free(locks, lease.keys);
    });

    it('all or nothing: tryAcquire returns null and holds nothing when one key is taken', async () => {
      const [a, b] = [service(), service()];
      const holder = await a.acquire('n:b');
      expect(await b.tryAcquire(['n:a', 'n:b', 'n:c'])).toBeNull();
      await free(b, ['n:a', 'n:c']);
      await holder.release();
      const lease = (await b.tryAcquire(['n:a', 'n:b', 'n:c'])) as Lease;
      expect(lease.keys).toEqual(['n:a', 'n:b', 'n:c']);
      await lease.release();
    });

    it('all or nothing: a timeout names the busy key and hands back the keys taken so far', async () => {
      const [a, b, c] = [service(), service(), service()];
      const holder = await a.acquire('t:b');
      const attempt = outcome(b.acquire(['t:a', 't:b'], { waitTimeout: 300 }));
      // Behind the multi-key caller on t:a: it is served as soon as that caller gives t:a back.
      await until(
        () => a.inspect('t:a'),
        (info) => info.held,
      );
      const behind = c.acquire('t:a', { waitTimeout: 5_000 });
      const { error } = await attempt;
      expect(error).toBeInstanceOf(LockTimeoutError);
      expect((error as LockTimeoutError).key).toBe('t:b');
      const next = await behind;
      expect(next.key).toBe('t:a');
      await next.release();
      await holder.release();
      await free(a, ['t:a', 't:b']);
    });

    it('no deadlock and no overlap: 40 callers on random overlapping key sets, two services', async () => {
      const [a, b] = [service(), service()];
      const keys = ['d:0', 'd:1', 'd:2', 'd:3'];
      const inside = new Map(keys.map((key) => [key, 0]));
      let overlaps = 0;
      // Deterministic "random" sets, each with 2 or 3 keys given in a shuffled order.
      let seed = 7;
      const next = () => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return seed;
      };
      const calls = Array.from({ length: 40 }, (_, i) => {
        const set = [...keys].sort(() => (next() % 2 ? 1 : -1)).slice(0, 2 + (next() % 2));
        return (i % 2 ? a : b).using(
          set,
          async () => {
            for (const key of set) {
              inside.set(key, (inside.get(key) ?? 0) + 1);
              if ((inside.get(key) ?? 0) > 1) overlaps++;
            }
            await new Promise((resolve) => setImmediate(resolve));
            for (const key of set) inside.set(key, (inside.get(key) ?? 0) - 1);
          },
          { waitTimeout: 20_000 },
        );
      });
      const results = await Promise.allSettled(calls);
      expect(results.filter((result) => result.status === 'rejected')).toEqual([]);
      expect(overlaps).toBe(0);
      await free(a, keys);
    });

    fifo('each key stays FIFO: a multi-key waiter queues in line on each key, no barging', async () => {
      const [a, b, c] = [service(), service(), service()];
      const holder = await a.acquire('f:b');
      const order: string[] = [];
      const served = (label: string) => async (lease: Lease) => {
        order.push(label);
        await lease.release();
      };
      // First in line on f:b is the multi-key caller (it holds f:a meanwhile); then a single-key caller.
      const multi = b.acquire(['f:a', 'f:b'], { waitTimeout: 10_000 }).then(served('multi'));
      await queued(a, 'f:b', 1);
      const single = c.acquire('f:b', { waitTimeout: 10_000 }).then(served('single'));
      await queued(a, 'f:b', 2);
      // A newcomer on f:a waits behind the multi-key holder, and a try-once never jumps in.
      const onA = c.acquire('f:a', { waitTimeout: 10_000 }).then(served('f:a after multi'));
      await queued(a, 'f:a', 1);
      expect(await service().tryAcquire('f:b')).toBeNull();
      await holder.release();
      await Promise.all([multi, single, onA]);
      expect(order.indexOf('multi')).toBe(0);
      expect(order.indexOf('single')).toBeGreaterThan(0);
      expect(order.indexOf('f:a after multi')).toBeGreaterThan(0);
    });

    reserving(
      'a waiting call reserves its later keys: passed over by every caller until claimed, then served from there',
      async () => {
        const [a, b, c, d] = [service(), service(), service(), service()];
        const first = await a.acquire('v:a');
        const order: string[] = [];
        const multi = b.acquire(['v:a', 'v:b'], { waitTimeout: 10_000 }).then(async (lease) => {
          order.push('multi');
          await lease.release();
        });
        await reserved(a, 'v:b', 1);
        // The reservation blocks nobody: v:b is free, and a try-once takes it.
        expect(await a.inspect('v:b')).toMatchObject({ held: false, queueLength: 0, reserved: 1 });
        const other = (await c.tryAcquire('v:b')) as Lease;
        expect(other).not.toBeNull();
        // A single-key caller lines up on v:b after the reservation was made...
        const single = d.acquire('v:b', { waitTimeout: 10_000 }).then(async (lease) => {
          order.push('single');
          await lease.release();
        });
        await queued(a, 'v:b', 1);
        // ...so once the multi-key call holds v:a, its claim puts it ahead of that caller on v:b.
        await first.release();
        await until(
          () => a.inspect('v:b'),
          (info) => info.reserved === 0 && info.queueLength === 2,
        );
        await other.release();
        await Promise.all([multi, single]);
        expect(order).toEqual(['multi', 'single']);
        await free(a, ['v:a', 'v:b']);
      },
    );

    reserving(
      'a reservation never blocks a caller holding an earlier key: nested calls in order cannot deadlock',
      async () => {
        const [a, b] = [service(), service()];
        let multi: Promise<void> | undefined;
        await a.using('w:a', async () => {
          // The multi-key call waits for w:a (held here) and reserves w:d.
          multi = b.using(['w:a', 'w:d'], async () => {}, { waitTimeout: 10_000 });
          await reserved(a, 'w:d', 1);
          // Holding w:a, this call now asks for w:d: the reservation is passed over, so it is served at
          // once. Had the multi-key call held w:d while it waits for w:a, this would wait for ever.
          const inner = await a.acquire('w:d', { waitTimeout: 2_000 });
          await inner.release();
        });
        await multi;
        await free(a, ['w:a', 'w:d']);
      },
    );

    reserving(
      'a call that gives up (timeout, abort, closed service) leaves no reservation behind',
      async () => {
        const [a, b] = [service(), service()];
        const holder = await a.acquire('x:a');
        const timedOut = outcome(b.acquire(['x:a', 'x:b', 'x:c'], { waitTimeout: 300 }));
        await reserved(a, 'x:c', 1);
        expect((await timedOut).error).toBeInstanceOf(LockTimeoutError);
        await free(a, ['x:b', 'x:c']);

        const controller = new AbortController();
        const aborted = outcome(
          b.acquire(['x:a', 'x:b'], { signal: controller.signal, waitTimeout: 10_000 }),
        );
        await reserved(a, 'x:b', 1);
        controller.abort();
        expect((await aborted).error).toBeInstanceOf(LockAbortedError);
        await free(a, ['x:b']);

        const closing = service();
        const closed = outcome(closing.acquire(['x:a', 'x:b'], { waitTimeout: 10_000 }));
        await reserved(a, 'x:b', 1);
        await closing.close();
        expect((await closed).error).toBeInstanceOf(LockServiceClosedError);
        await free(a, ['x:b']);
        await holder.release();
        await free(a, ['x:a']);
      },
    );

    it("one signal for the set: a key's loss aborts it with LockLostError naming that key", async () => {
      const locks = service();
      const lease = await locks.acquire(['s:a', 's:b'], { ttl: 150, renew: false });
      const aborted = abortedAt(lease.signal);
      await aborted;
      const reason = lease.signal.reason as LockLostError;
      expect(reason).toBeInstanceOf(LockLostError);
      expect(['s:a', 's:b']).toContain(reason.key);
    });

    it('extend covers every key', async () => {
      const locks = service();
      const lease = await locks.acquire(['e:a', 'e:b'], { ttl: 1_000, renew: false });
      await lease.extend(30_000);
      for (const key of lease.keys) expect((await locks.inspect(key)).ttl).toBeGreaterThan(20_000);
      await lease.release();
    });

    it('reentrancy: a subset re-enters; new keys only after the held ones (else LOCK_ORDER)', async () => {
      const locks = service();
      await locks.using(['r:b', 'r:c'], async (outer) => {
        const inner = await locks.acquire('r:b');
        expect(inner.token).toBe(outer.tokens['r:b']);
        const again = await locks.acquire(['r:c', 'r:b']);
        expect(again.tokens).toEqual(outer.tokens);
        await again.release(); // a no-op: the outer call still holds them
        expect(locks.currentLease()?.keys).toEqual(['r:b', 'r:c']);
        // A key after every held one is fine, alone or with held keys.
        await locks.using(['r:c', 'r:d'], async (wider) => {
          expect(wider.keys).toEqual(['r:c', 'r:d']);
          expect(wider.tokens['r:c']).toBe(outer.tokens['r:c']);
        });
        expect((await locks.inspect('r:c')).holder).toBe(outer.tokens['r:c']);
        expect((await locks.inspect('r:d')).held).toBe(false);
        // One that sorts before a held key could deadlock: refused, nothing taken.
        const { error } = await outcome(locks.acquire('r:a'));
        expect(error).toMatchObject({ code: 'LOCK_ORDER' });
        expect((error as LockUsageError).held).toEqual(['r:b', 'r:c']);
        expect(await outcome(locks.acquire(['r:a', 'r:b']))).toMatchObject({
          error: expect.objectContaining({ code: 'LOCK_ORDER' }),
        });
        expect((await locks.inspect('r:a')).held).toBe(false);
      });
      await free(locks, ['r:a', 'r:b', 'r:c', 'r:d']);
    });

    it('refuses bad key arrays with LOCK_INVALID_KEY, holding nothing', async () => {
      const locks = service();
      const rows: Array<[unknown, RegExp]> = [
        [[], /array of lock keys is empty/],
        [Array.from({ length: MAX_KEYS + 1 }, (_, i) => `k${i}`), /at most 1000 keys, got 1001/],
        [['h:a', 42], /Key \[1\] of the array: A lock key must be a string, got 42/],
        [['h:a', undefined], /Key \[1\] of the array: A lock key must be a string, got undefined/],
        [['h:a', 'h:{b}'], /Key \[1\] of the array: .*brace/],
        [['h:a', ''], /Key \[1\] of the array: A lock key must not be empty/],
      ];
      for (const [keys, message] of rows) {
        const { error } = await outcome(locks.acquire(keys as string[]));
        expect(error).toMatchObject({ code: 'LOCK_INVALID_KEY' });
        expect((error as Error).message).toMatch(message);
      }
      await free(locks, ['h:a']);
    });

    it(`takes ${MAX_KEYS} keys at once, and gives them all back`, async () => {
      const locks = service();
      const keys = Array.from({ length: MAX_KEYS }, (_, i) => `big:${String(i).padStart(4, '0')}`);
      const lease = await locks.acquire(keys, { waitTimeout: 30_000 });
      expect(lease.keys).toEqual(keys);
      expect((await locks.inspect('big:0999')).holder).toBe(lease.tokens['big:0999']);
      expect(await service().tryAcquire(['big:0500'])).toBeNull();
      await lease.release();
      await free(locks, [keys[0], keys[500], keys[999]]);
    });
  });
}
