// Semaphores (`permits`), as every store that has them must carry them (run by redis.conformance.spec.ts
// and memory.conformance.spec.ts): at most `permits` holders across services, strict arrival order with
// no barging, fences increasing across holders, expiry of a holder that stops renewing, one kind of lock
// per key, reentrancy, inspect. A store without semaphores (quorum.conformance.spec.ts) must refuse every
// entry point with a typed error before asking its nodes anything.
import { describe, expect, it } from '@jest/globals';
import {
  type Lease,
  LockAbortedError,
  LockLostError,
  type LockService,
  LockServiceClosedError,
  LockTimeoutError,
  LockUsageError,
} from '../../lib/core';
import { MAX_PERMITS } from '../../lib/lock-kind';
import { SLACK_MS, sleep, watchEventLoop, watchStalls } from '../support/event-loop';
import { abortedAt, elapsedSince, outcome, until } from '../support/lock-fixtures';
import { RENEWED_TTL, type ServiceFactory } from './lock-conformance';

export function describeSemaphoreConformance(store: string, service: ServiceFactory): void {
  const waiting = (locks: LockService, key: string, n: number) =>
    until(
      () => locks.inspect(key),
      (info) => info.queueLength === n,
    );

  describe(`semaphore conformance: ${store}`, () => {
    it('at most `permits` holders at once across services, and that many are reached', async () => {
      const services = [service(), service(), service()];
      let inside = 0;
      let most = 0;
      const work = (locks: LockService) =>
        locks.using(
          'sem-ex',
          async () => {
            inside++;
            most = Math.max(most, inside);
            // Let the other callers run while this one holds its permit.
            for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
            inside--;
          },
          { permits: 3, waitTimeout: 20_000 },
        );
      await Promise.all(Array.from({ length: 24 }, (_, i) => work(services[i % 3])));
      expect(most).toBe(3);
      expect(await services[0].inspect('sem-ex')).toMatchObject({ held: false, queueLength: 0 });
    });

    it('arrival order, never overtaken: a newcomer queues behind the line even when it could fit', async () => {
      const [a, b] = [service(), service()];
      const holders = await Promise.all([1, 2].map(() => a.acquire('sem-fifo', { permits: 2 })));
      const order: number[] = [];
      const fences: number[] = [];
      const leases: Promise<void>[] = [];
      for (let i = 0; i < 6; i++) {
        const locks = i % 2 ? a : b;
        leases.push(
          locks.acquire('sem-fifo', { permits: 2, waitTimeout: 20_000 }).then(async (lease) => {
            order.push(i);
            fences.push(lease.fence);
            await lease.release();
          }),
        );
        await waiting(a, 'sem-fifo', i + 1);
      }
      expect((await a.inspect('sem-fifo')).waiting).toHaveLength(6);
      expect(await service().tryAcquire('sem-fifo', { permits: 2 })).toBeNull();
      // One permit comes back: only the first in line is served; the rest still wait, in order.
      await holders[0].release();
      await until(
        async () => order.length,
        (n) => n >= 1,
      );
      await holders[1].release();
      await Promise.all(leases);
      // Two permits serve the line two at a time, so grants may be seen out of order in the callbacks;
      // the fences say the order in which they were made.
      const byFence = order.map((i, at) => [fences[at], i]).sort((x, y) => x[0] - y[0]);
      expect(byFence.map(([, i]) => i)).toEqual([0, 1, 2, 3, 4, 5]);
    });

    it('fences strictly increase across every holder of the key', async () => {
      const [a, b] = [service(), service()];
      const first = await a.acquire('sem-fence', { permits: 2 });
      const second = await b.acquire('sem-fence', { permits: 2 });
      const third = b.acquire('sem-fence', { permits: 2, waitTimeout: 5_000 });
      await waiting(a, 'sem-fence', 1);
      await first.release();
      const handed = await third;
      const info = await a.inspect('sem-fence');
      const fences = [first.fence, second.fence, handed.fence];
      expect(fences).toEqual([...fences].sort((x, y) => x - y));
      expect(new Set(fences).size).toBe(3);
      expect(info.holders.map((h) => h.fence).sort()).toEqual([second.fence, handed.fence].sort());
      await Promise.all([second.release(), handed.release()]);
    });

    it("an unrenewed holder's permit comes back at its ttl: its signal aborts, the next waiter is served", async () => {
      const [a, b] = [service(), service()];
      const loop = watchEventLoop();
      const stays = await a.acquire('sem-exp', { permits: 2, ttl: 30_000 });
      const sent = performance.now();
      const lease = await a.acquire('sem-exp', { permits: 2, ttl: 300, renew: false });
      const lost = abortedAt(lease.signal);
      const next = await b.acquire('sem-exp', { permits: 2, waitTimeout: 5_000 });
      expect(await lost).toBeLessThan(sent + 300 + loop.worst());
      loop.stop();
      expect(lease.signal.reason).toBeInstanceOf(LockLostError);
      expect(elapsedSince(sent)).toBeLessThan(300 + SLACK_MS + loop.worst());
      expect(elapsedSince(sent)).toBeGreaterThanOrEqual(299);
      await expect(lease.release()).rejects.toMatchObject({ code: 'LOCK_NOT_HELD' });
      await Promise.all([next.release(), stays.release()]);
    });

    it('renewal keeps a permit through several ttls of work', async () => {
      const [locks, observer] = [service(), service()];
      const stalls = watchStalls();
      const lost = await outcome(
        locks.using(
          'sem-renew',
          async (lease) => {
            const end = performance.now() + 3 * RENEWED_TTL;
            while (performance.now() < end) {
              const info = await stalls.timed(observer.inspect('sem-renew'));
              if (lease.signal.aborted) return;
              expect(info.holders.map((h) => h.token)).toEqual([lease.token]);
              await sleep(25);
            }
          },
          { ttl: RENEWED_TTL, permits: 4 },
        ),
      );
      stalls.stop();
      // As for the mutex (lock-conformance.ts): only a measured stall longer than ttl/3 may cost the permit.
      if (lost.error) {
        expect(lost.error).toBeInstanceOf(LockLostError);
        expect(stalls.worst()).toBeGreaterThan(RENEWED_TTL / 3);
      }
      expect((await observer.inspect('sem-renew')).held).toBe(false);
    });

    it('inspect: every holder with ttl and fence, the permits, and the line in order', async () => {
      const [a, b] = [service(), service()];
      const held = [await a.acquire('sem-info', { permits: 2, ttl: 5_000 })];
      held.push(await b.acquire('sem-info', { permits: 2, ttl: 8_000 }));
      const queued: Promise<Lease>[] = [];
      for (let i = 0; i < 3; i++) {
        queued.push((i % 2 ? a : b).acquire('sem-info', { permits: 2, waitTimeout: 10_000 }));
        await waiting(a, 'sem-info', i + 1);
      }
      const info = await a.inspect('sem-info');
      expect(info).toMatchObject({ key: 'sem-info', held: true, permits: 2, queueLength: 3 });
      expect(info.holders.map((h) => h.token)).toEqual([held[0].token, held[1].token]);
      expect(info.holders.map((h) => h.fence)).toEqual([held[0].fence, held[1].fence]);
      expect(info.holders[0].ttl).toBeGreaterThan(4_000);
      expect(info.holders[1].ttl).toBeGreaterThan(info.holders[0].ttl);
      expect(info.holder).toBe(held[0].token);
      expect(info.fence).toBe(held[1].fence);
      expect(info.waiting).toHaveLength(3);
      await held[0].release();
      const first = await queued[0];
      // The first waiter was granted and left the line; the other two keep their order.
      const after = await a.inspect('sem-info');
      expect(after.waiting?.map((w) => w.token)).toEqual(info.waiting?.slice(1).map((w) => w.token));
      expect(after.holders.map((h) => h.token)).toContain(first.token);
      await Promise.all([held[1].release(), first.release()]);
      await Promise.all(queued.slice(1).map(async (p) => (await p).release()));
    });

    it('one key is one kind of lock: other permits, or a mutex, are a usage error LOCK_KIND naming both', async () => {
      const [a, b] = [service(), service()];
      const lease = await a.acquire('sem-kind', { permits: 3 });
      const before = await a.inspect('sem-kind');
      const other = await outcome(b.acquire('sem-kind', { permits: 2 }));
      expect(other.error).toMatchObject({ code: 'LOCK_KIND' });
      expect(other.error).toBeInstanceOf(LockUsageError);
      expect(other.error).toMatchObject({ key: 'sem-kind', found: 3, asked: 2 });
      expect((other.error as Error).message).toMatch(/permits 3.*permits 2/);
      await expect(b.acquire('sem-kind')).rejects.toMatchObject({ found: 3, asked: 1 });
      await expect(b.tryAcquire('sem-kind', { permits: 1 })).rejects.toMatchObject({ code: 'LOCK_KIND' });
      await expect(b.using('sem-kind', () => 1, { permits: 4 })).rejects.toMatchObject({ code: 'LOCK_KIND' });
      // Nothing changed: the same holder, no one queued.
      expect(await a.inspect('sem-kind')).toMatchObject({
        holders: before.holders.map((h) => expect.objectContaining({ token: h.token, fence: h.fence })),
        queueLength: 0,
      });
      await lease.release();

      const mutex = await a.acquire('mutex-kind');
      await expect(b.acquire('mutex-kind', { permits: 3 })).rejects.toMatchObject({ found: 1, asked: 3 });
      const waiter = b.acquire('mutex-kind', { waitTimeout: 5_000 });
      await waiting(a, 'mutex-kind', 1);
      // Waiters queued for the mutex make it a mutex too.
      await expect(a.tryAcquire('mutex-kind', { permits: 2 })).rejects.toMatchObject({ code: 'LOCK_KIND' });
      await mutex.release();
      await (await waiter).release();
      // Once nobody holds or waits for it, the key may become a semaphore.
      const now = await a.acquire('mutex-kind', { permits: 2 });
      expect((await a.inspect('mutex-kind')).permits).toBe(2);
      await now.release();
    });

    it('permits: 1 is the mutex itself', async () => {
      const [a, b] = [service(), service()];
      const one = await a.acquire('sem-one', { permits: 1 });
      expect(await b.tryAcquire('sem-one')).toBeNull();
      const info = await a.inspect('sem-one');
      expect(info).toMatchObject({ permits: 1, holder: one.token });
      await one.release();
      const plain = await b.acquire('sem-one');
      expect(await a.tryAcquire('sem-one', { permits: 1 })).toBeNull();
      await plain.release();
    });

    it('reentrancy: a nested call reuses the permit; other permits in the chain are refused', async () => {
      const [locks, other] = [service(), service()];
      await locks.using(
        'sem-re',
        async (outer) => {
          const inner = await locks.using('sem-re', async (nested) => nested.fence, { permits: 2 });
          expect(inner).toBe(outer.fence);
          expect((await locks.inspect('sem-re')).holders).toHaveLength(1);
          await expect(locks.acquire('sem-re', { permits: 3 })).rejects.toMatchObject({ found: 2, asked: 3 });
          await expect(locks.acquire('sem-re')).rejects.toMatchObject({ code: 'LOCK_KIND' });
          // Another chain takes the second permit.
          const elsewhere = await new Promise<Lease | null>((resolve) =>
            setImmediate(() => resolve(other.tryAcquire('sem-re', { permits: 2 }))),
          );
          expect(elsewhere).not.toBeNull();
          await elsewhere?.release();
        },
        { permits: 2 },
      );
    });

    it('waitTimeout and abort: the waiter gives up with its typed error and leaves the line', async () => {
      const locks = service();
      const holder = await locks.acquire('sem-wt', { permits: 2 });
      const second = await locks.acquire('sem-wt', { permits: 2 });
      const { error } = await outcome(service().acquire('sem-wt', { permits: 2, waitTimeout: 200 }));
      expect(error).toBeInstanceOf(LockTimeoutError);
      await waiting(locks, 'sem-wt', 0);
      const controller = new AbortController();
      const aborted = outcome(
        locks.acquire('sem-wt', { permits: 2, waitTimeout: 10_000, signal: controller.signal }),
      );
      await waiting(locks, 'sem-wt', 1);
      controller.abort();
      expect((await aborted).error).toBeInstanceOf(LockAbortedError);
      await waiting(locks, 'sem-wt', 0);
      await Promise.all([holder.release(), second.release()]);
      expect(await locks.inspect('sem-wt')).toMatchObject({ held: false, holders: [] });
    });

    it('minHold: a permit released early stays held until then', async () => {
      const locks = service();
      // minHold counts from the grant, on the server: at the earliest when the call was sent.
      const asked = performance.now();
      const lease = await locks.acquire('sem-mh', { permits: 2, minHold: 300 });
      const other = await locks.acquire('sem-mh', { permits: 2 });
      await lease.release();
      expect((await locks.inspect('sem-mh')).holders.map((h) => h.token)).toContain(lease.token);
      const next = await service().acquire('sem-mh', { permits: 2, waitTimeout: 5_000 });
      expect(elapsedSince(asked)).toBeGreaterThanOrEqual(299);
      await Promise.all([next.release(), other.release()]);
    });

    it('close(): waiters reject, holders lose their permit and it is handed on', async () => {
      const [closing, other] = [service(), service()];
      const held = await closing.acquire('sem-close', { permits: 1 + 1, ttl: 5_000 });
      const full = await other.acquire('sem-close', { permits: 2 });
      const behind = other.acquire('sem-close', { permits: 2, waitTimeout: 5_000 });
      await waiting(other, 'sem-close', 1);
      const waiter = outcome(closing.acquire('sem-close', { permits: 2, waitTimeout: 10_000 }));
      await waiting(other, 'sem-close', 2);
      await closing.close();
      expect((await waiter).error).toBeInstanceOf(LockServiceClosedError);
      expect(held.signal.aborted).toBe(true);
      await (await behind).release();
      await full.release();
      expect(await other.inspect('sem-close')).toMatchObject({ held: false, queueLength: 0 });
    });

    it('bad permits, and permits on several keys, are typed errors before the store is asked', async () => {
      const locks = service();
      for (const permits of [
        0,
        -1,
        1.5,
        Number.NaN,
        Number.POSITIVE_INFINITY,
        1e9,
        MAX_PERMITS + 1,
        '3',
        null,
      ]) {
        const { error } = await outcome(locks.acquire('sem-bad', { permits: permits as number }));
        expect(error).toBeInstanceOf(LockUsageError);
        expect((error as Error).message).toMatch(/permits must be an integer from 1 to 10000/);
        await expect(locks.tryAcquire('sem-bad', { permits: permits as number })).rejects.toBeInstanceOf(
          LockUsageError,
        );
        expect(() => locks.checkOptions({ permits: permits as number })).toThrow(LockUsageError);
      }
      await expect(locks.acquire(['sem-a', 'sem-b'], { permits: 2 })).rejects.toThrow(/applies to one key/);
      expect(await locks.inspect('sem-bad')).toMatchObject({ held: false, queueLength: 0 });
      expect(await locks.inspect('sem-a')).toMatchObject({ held: false, queueLength: 0 });
      const max = await locks.acquire('sem-max', { permits: MAX_PERMITS });
      await max.release();
    });
  });
}

/** For a store without semaphores: every entry point refuses `permits` with a typed error. */
export function describeNoSemaphores(store: string, service: ServiceFactory, reason: RegExp): void {
  describe(`semaphore conformance: ${store}`, () => {
    it('permits above 1 is a LockUsageError saying so, on every entry point; permits 1 is the mutex', async () => {
      const locks = service();
      await expect(locks.acquire('nosem', { permits: 2 })).rejects.toThrow(reason);
      await expect(locks.tryAcquire('nosem', { permits: 2 })).rejects.toBeInstanceOf(LockUsageError);
      await expect(locks.using('nosem', () => 1, { permits: 2 })).rejects.toBeInstanceOf(LockUsageError);
      expect(() => locks.checkOptions({ permits: 3 })).toThrow(reason);
      const lease = await locks.acquire('nosem', { permits: 1 });
      expect(await locks.inspect('nosem')).toMatchObject({ held: true, permits: 1 });
      await lease.release();
    });
  });
}
