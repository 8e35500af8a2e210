// Listing and forced release (LockService.list, forceRelease), as every store must carry them (run by
// the redis, memory and quorum conformance specs): only live locks are listed, each with its holders
// (how long held, by the store's clock) and its line in order; filter and limit; a forced release
// serves the next waiter and the holder learns it lost the lock.

import { performance } from 'node:perf_hooks';
import { describe, expect, it } from '@jest/globals';
import { type Lease, LockLostError, LockServiceClosedError, LockUsageError } from '../../lib/core';
import { abortedAt, until } from '../support/lock-fixtures';
import type { ServiceFactory } from './lock-conformance';

export function describeListingConformance(
  store: string,
  service: ServiceFactory,
  features: { semaphores: boolean; lines: boolean },
): void {
  describe(`listing conformance: ${store}`, () => {
    it('lists the held and waited-for locks with holders and their line in order, not the free ones', async () => {
      const [a, b] = [service(), service()];
      const before = performance.now();
      const held = await a.acquire('list:a');
      const waits = [a.acquire('list:a', { waitTimeout: 20_000 })];
      await until(
        () => a.inspect('list:a'),
        (info) => info.queueLength === 1,
      );
      waits.push(b.acquire('list:a', { waitTimeout: 20_000 }));
      await until(
        () => a.inspect('list:a'),
        (info) => info.queueLength === 2,
      );
      await (await b.acquire('list:free')).release();
      const permit = features.semaphores ? await b.acquire('list:s', { permits: 2 }) : undefined;

      const { locks, truncated } = await a.list();
      const elapsed = performance.now() - before;
      expect(truncated).toBe(false);
      expect(locks.map((lock) => lock.key)).toEqual(features.semaphores ? ['list:a', 'list:s'] : ['list:a']);
      const [lock] = locks;
      expect(lock.holders).toHaveLength(1);
      expect(lock.holders[0].token).toBe(held.token);
      expect(lock.holders[0].token.startsWith(`${a.instance}:`)).toBe(true);
      expect(lock.holders[0].heldMs).toBeGreaterThanOrEqual(0);
      // The store's clock counts from the grant, which came after `before`, and was read before `elapsed`.
      expect(lock.holders[0].heldMs).toBeLessThanOrEqual(elapsed + 2);
      expect(lock.queueLength).toBe(2);
      if (features.lines) {
        const waiting = lock.waiting ?? [];
        expect(waiting.map((w) => w.token.split(':')[0])).toEqual([a.instance, b.instance]);
        // Only the listing service's own waiter has a known wait.
        expect(waiting[0].waitedMs).toBeGreaterThanOrEqual(0);
        expect(waiting[0].waitedMs).toBeLessThanOrEqual(elapsed + 2);
        expect(waiting[1].waitedMs).toBeUndefined();
        // inspect() knows its own service's waiters alike.
        const inspected = (await b.inspect('list:a')).waiting ?? [];
        expect(inspected[0].waitedMs).toBeUndefined();
        expect(inspected[1].waitedMs).toBeGreaterThanOrEqual(0);
      }
      if (permit) expect(locks[1]).toMatchObject({ kind: 'semaphore', permits: 2, held: true });

      await held.release();
      const next = await waits[0];
      await next.release();
      await (await waits[1]).release();
      await permit?.release();
      expect((await b.list()).locks).toEqual([]);
    });

    it('filters by text in the key, stops at the limit and says the list was cut', async () => {
      const locks = service();
      const leases: Lease[] = [];
      for (const key of ['lf:3', 'lf:1', 'other', 'lf:2']) leases.push(await locks.acquire(key));
      const all = await locks.list({ filter: 'lf:' });
      expect(all.locks.map((lock) => lock.key)).toEqual(['lf:1', 'lf:2', 'lf:3']);
      expect(all.truncated).toBe(false);
      const cut = await locks.list({ filter: 'lf:', limit: 2 });
      expect(cut.locks).toHaveLength(2);
      expect(cut.truncated).toBe(true);
      // Glob characters in the filter are text.
      expect((await locks.list({ filter: 'l*' })).locks).toEqual([]);
      await Promise.all(leases.map((lease) => lease.release()));
    });

    it('names each holder and waiter by the instanceName of its service', async () => {
      const [a, b] = [service({ instanceName: 'orders-a' }), service({ instanceName: 'pod_7.b' })];
      expect(a.instance).toMatch(/^orders-a@[\w-]+$/);
      expect(b.instance).toMatch(/^pod_7\.b@[\w-]+$/);
      const held = await a.acquire('named');
      const waiting = b.acquire('named', { waitTimeout: 20_000 });
      await until(
        () => a.inspect('named'),
        (info) => info.queueLength === 1,
      );
      const [lock] = (await b.list({ filter: 'named' })).locks;
      expect(lock.holder).toBe(held.token);
      expect(held.token.startsWith(`${a.instance}:`)).toBe(true);
      if (features.lines) expect(lock.waiting?.[0].token.startsWith(`${b.instance}:`)).toBe(true);
      await held.release();
      const next = await waiting;
      expect(next.token.startsWith(`${b.instance}:`)).toBe(true);
      await next.release();
      for (const instanceName of ['a:b', '', 'x'.repeat(41), 'é', 'a b', 5, null])
        expect(() => service({ instanceName: instanceName as never })).toThrow(LockUsageError);
    });

    it('refuses bad options with a typed error, and calls on a closed service', async () => {
      const locks = service();
      for (const options of [
        { limit: 0 },
        { limit: 1.5 },
        { limit: 10_001 },
        { limit: '5' },
        { filter: 5 },
        7,
      ])
        await expect(locks.list(options as never)).rejects.toBeInstanceOf(LockUsageError);
      await expect(locks.forceRelease('k', '' as never)).rejects.toBeInstanceOf(LockUsageError);
      await expect(locks.forceRelease('', 'token')).rejects.toMatchObject({ code: 'LOCK_INVALID_KEY' });
      await locks.close();
      await expect(locks.list()).rejects.toBeInstanceOf(LockServiceClosedError);
      await expect(locks.forceRelease('k', 'token')).rejects.toBeInstanceOf(LockServiceClosedError);
    });

    it('a forced release serves the next waiter, and the holder loses its lease at its next renewal', async () => {
      const [a, b, operator] = [service(), service(), service()];
      const stuck = await a.acquire('fr', { ttl: 1_500 });
      const lost = abortedAt(stuck.signal);
      const waiting = b.acquire('fr', { waitTimeout: 20_000 });
      await until(
        () => operator.inspect('fr'),
        (info) => info.queueLength === 1,
      );
      expect(await operator.forceRelease('fr', 'not-the-holder:1~1')).toBe(false);
      expect(await operator.forceRelease('fr', stuck.token)).toBe(true);
      const next = await waiting;
      expect(next.fence).toBeGreaterThan(stuck.fence);
      await lost;
      expect(stuck.signal.reason).toBeInstanceOf(LockLostError);
      expect((await operator.inspect('fr')).holder).toBe(next.token);
      await next.release();
      expect(await operator.forceRelease('fr', next.token)).toBe(false);
    });

    if (features.semaphores) {
      it('a forced release of one permit or one reader frees just that share', async () => {
        const [a, b] = [service(), service()];
        const one = await a.acquire('fr:s', { permits: 2 });
        const two = await a.acquire('fr:s', { permits: 2 });
        const third = b.acquire('fr:s', { permits: 2, waitTimeout: 20_000 });
        await until(
          () => b.inspect('fr:s'),
          (info) => info.queueLength === 1,
        );
        expect(await b.forceRelease('fr:s', one.token)).toBe(true);
        const granted = await third;
        const info = await b.inspect('fr:s');
        expect(info.holders.map((h) => h.token).sort()).toEqual([two.token, granted.token].sort());
        await Promise.all([two.release(), granted.release(), one.release().catch(() => {})]);

        const reader = await a.acquire('fr:rw', { mode: 'read' });
        const writer = b.acquire('fr:rw', { mode: 'write', waitTimeout: 20_000 });
        await until(
          () => b.inspect('fr:rw'),
          (i) => i.queueLength === 1,
        );
        expect(await b.forceRelease('fr:rw', reader.token)).toBe(true);
        const wrote = await writer;
        expect((await b.inspect('fr:rw')).mode).toBe('write');
        await wrote.release();
        await reader.release().catch(() => {});
      });
    }
  });
}
