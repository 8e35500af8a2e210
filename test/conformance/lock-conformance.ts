// The properties every store must give the engine, written once and run against each store
// (redis.conformance.spec.ts, memory.conformance.spec.ts). A store that cannot give one names it in
// `cannot`, with the reason: the test is then reported as skipped under that name, never left out.
import { describe, expect, it } from '@jest/globals';
import {
  type Lease,
  LockAbortedError,
  LockLostError,
  type LockService,
  LockServiceClosedError,
  type LockServiceOptions,
  LockTimeoutError,
  LockUsageError,
} from '../../lib/core';
import { SLACK_MS, sleep, watchEventLoop, watchStalls } from '../support/event-loop';
import { abortedAt, elapsedSince, outcome, until } from '../support/lock-fixtures';

/** A service on the store under test (several share its locks); closed after the test by the caller. */
export type ServiceFactory = (options?: LockServiceOptions) => LockService;

/** Properties a store may be unable to give; each is tested by the store's own suites where it can. */
export type Property =
  | 'exclusion across processes'
  | 'surviving a store outage'
  | 'FIFO between services'
  | 'reservations on later keys';

/** A ttl short enough that a hold of three of them needs several renewals, as the renewal tests' holds do. */
export const RENEWED_TTL = 300;

export function describeConformance(
  store: string,
  service: ServiceFactory,
  cannot: Partial<Record<Property, string>> = {},
): void {
  const queued = async (locks: LockService, key: string, n: number) => {
    await until(
      () => locks.inspect(key),
      (info) => info.queueLength === n,
    );
  };

  describe(`store conformance: ${store}`, () => {
    it('exclusion: one holder at a time, across services sharing the store', async () => {
      const [a, b] = [service(), service()];
      let inside = 0;
      let most = 0;
      const work = (locks: LockService) =>
        locks.using('ex', async () => {
          inside++;
          most = Math.max(most, inside);
          await new Promise((resolve) => setImmediate(resolve));
          inside--;
        });
      await Promise.all(Array.from({ length: 20 }, (_, i) => work(i % 2 ? a : b)));
      expect(most).toBe(1);
    });

    const fifo = 'FIFO between services' in cannot ? it.skip : it;
    fifo(
      'FIFO with no barging: grants follow arrival; a try-once newcomer never jumps the queue',
      async () => {
        const [a, b] = [service(), service()];
        const holder = await a.acquire('fifo');
        const order: number[] = [];
        const waiting: Promise<void>[] = [];
        for (let i = 0; i < 6; i++) {
          const locks = i % 2 ? a : b;
          waiting.push(
            locks.acquire('fifo', { waitTimeout: 10_000 }).then(async (lease) => {
              order.push(i);
              await lease.release();
            }),
          );
          await queued(a, 'fifo', i + 1);
        }
        expect(await service().tryAcquire('fifo')).toBeNull();
        await holder.release();
        await Promise.all(waiting);
        expect(order).toEqual([0, 1, 2, 3, 4, 5]);
      },
    );

    it('waitTimeout: a waiter gives up with LockTimeoutError and leaves the queue', async () => {
      const locks = service();
      const holder = await locks.acquire('wt');
      const started = performance.now();
      const waiter = service();
      const { error } = await outcome(waiter.acquire('wt', { waitTimeout: 200 }));
      expect(error).toBeInstanceOf(LockTimeoutError);
      expect(elapsedSince(started)).toBeGreaterThanOrEqual(199);
      // Its cancel was sent as it gave up: on its own connection, anything asked next comes after it.
      expect((await waiter.inspect('wt')).queueLength).toBe(0);
      await holder.release();
    });

    it('AbortSignal: an aborted wait rejects with LockAbortedError and leaves the queue', async () => {
      const locks = service();
      const holder = await locks.acquire('abort');
      const controller = new AbortController();
      const waiting = outcome(locks.acquire('abort', { waitTimeout: 10_000, signal: controller.signal }));
      await queued(locks, 'abort', 1);
      controller.abort();
      expect((await waiting).error).toBeInstanceOf(LockAbortedError);
      await queued(locks, 'abort', 0);
      await holder.release();
    });

    it('tryAcquire: a lease when free, null when held, never a wait', async () => {
      const [a, b] = [service(), service()];
      const lease = await a.tryAcquire('try');
      expect(lease).not.toBeNull();
      expect(await b.tryAcquire('try')).toBeNull();
      await expect(b.acquire('try', { waitTimeout: 0 })).rejects.toBeInstanceOf(LockTimeoutError);
      await lease?.release();
      expect(await b.tryAcquire('try')).not.toBeNull();
    });

    it.each([
      [
        'acquire',
        (locks: LockService) => locks.acquire('stalled', { ttl: 200, renew: false, waitTimeout: 5_000 }),
      ],
      ['tryAcquire', (locks: LockService) => locks.tryAcquire('stalled', { ttl: 200, renew: false })],
    ])(
      '%s never returns a lease that is lost already: a process stalled past its validity holds nothing',
      async (_, call) => {
        const [a, b] = [service(), service()];
        const pending = outcome(call(a));
        // The process stalls right after the call (as under a GC pause): the grant's validity, counted from
        // before the call, runs out before the reply is read.
        const stalledUntil = performance.now() + 400;
        while (performance.now() < stalledUntil) {}
        const { value: lease, error } = await pending;
        // Rejected with why, or (a store that saw it before granting: a quorum's waiting call) served anew.
        if (error !== undefined) expect(error).toBeInstanceOf(LockLostError);
        if (lease) {
          expect(lease.signal.aborted).toBe(false);
          await lease.release();
        }
        // Nothing is left held.
        const next = await b.tryAcquire('stalled');
        expect(next).not.toBeNull();
        await next?.release();
      },
    );

    it('reentrancy: a nested call in the same chain reuses the lease; another chain waits', async () => {
      const locks = service();
      const fences = await locks.using('re', async (outer) => {
        const inner = await locks.using('re', async (nested) => nested.fence);
        expect(await locks.tryAcquire('re')).not.toBeNull(); // the same chain: reentrant
        const elsewhere = await new Promise<unknown>((resolve) =>
          setImmediate(() => resolve(service().tryAcquire('re'))),
        );
        expect(elsewhere).toBeNull();
        return [outer.fence, inner];
      });
      expect(fences[0]).toBe(fences[1]);
    });

    it('fences strictly increase with every grant: acquire, hand-off, takeover after expiry', async () => {
      const [a, b] = [service(), service()];
      const first = await a.acquire('fence', { ttl: 200, renew: false });
      const handed = b.acquire('fence', { waitTimeout: 5_000 });
      await queued(a, 'fence', 1);
      await first.release();
      const second = await handed;
      const third = await a
        .acquire('fence', { waitTimeout: 300, ttl: 100, renew: false })
        .catch(() => undefined);
      expect(third).toBeUndefined(); // second still holds it (30 s ttl)
      await second.release();
      const expiring = await a.acquire('fence', { ttl: 100, renew: false });
      const takeover = await b.acquire('fence', { waitTimeout: 5_000 });
      expect([first.fence, second.fence, expiring.fence, takeover.fence]).toEqual(
        [first.fence, second.fence, expiring.fence, takeover.fence].sort((x, y) => x - y),
      );
      expect(new Set([first.fence, second.fence, expiring.fence, takeover.fence]).size).toBe(4);
      await takeover.release();
    });

    it('an unrenewed lease expires at its ttl: its signal aborts and the next waiter is served', async () => {
      const [a, b] = [service(), service()];
      const loop = watchEventLoop();
      const sent = performance.now();
      const lease = await a.acquire('expire', { ttl: 300, renew: false });
      const lost = abortedAt(lease.signal);
      const next = await b.acquire('expire', { waitTimeout: 5_000 });
      // The signal aborts before the validity ends; its timer cannot fire while the event loop is held
      // up, so the bound allows exactly the delay measured meanwhile (docs/guarantees.md).
      expect(await lost).toBeLessThan(sent + 300 + loop.worst());
      loop.stop();
      expect(lease.signal.reason).toBeInstanceOf(LockLostError);
      expect(elapsedSince(sent)).toBeLessThan(300 + SLACK_MS);
      await expect(lease.release()).rejects.toMatchObject({ code: 'LOCK_NOT_HELD' });
      await next.release();
    });

    it('renewal keeps a lease held through several ttls of work', async () => {
      const locks = service();
      const observer = service();
      const stalls = watchStalls();
      const lost = await outcome(
        locks.using(
          'renew',
          async (lease) => {
            const end = performance.now() + 3 * RENEWED_TTL;
            while (performance.now() < end) {
              const info = await stalls.timed(observer.inspect('renew'));
              if (lease.signal.aborted) return;
              expect(info.holder).toBe(lease.token);
              await sleep(25);
            }
          },
          { ttl: RENEWED_TTL },
        ),
      );
      stalls.stop();
      // Renewal runs every ttl/3: only a stall longer than that (this process or the server, measured)
      // may cost the lease, and then using() says so.
      if (lost.error) {
        expect(lost.error).toBeInstanceOf(LockLostError);
        expect(stalls.worst()).toBeGreaterThan(RENEWED_TTL / 3);
      }
      expect((await observer.inspect('renew')).held).toBe(false);
    });

    it('inspect: holder, ttl, queue length and last fence, read in one step', async () => {
      const locks = service();
      expect(await locks.inspect('info')).toMatchObject({
        held: false,
        holder: null,
        ttl: 0,
        queueLength: 0,
      });
      const lease = await locks.acquire('info', { ttl: 5_000 });
      const waiting = service().acquire('info', { waitTimeout: 5_000 });
      await queued(locks, 'info', 1);
      const info = await locks.inspect('info');
      expect(info).toMatchObject({
        key: 'info',
        held: true,
        holder: lease.token,
        queueLength: 1,
        fence: lease.fence,
      });
      expect(info.ttl).toBeGreaterThan(4_000);
      expect(info.ttl).toBeLessThanOrEqual(5_000);
      await lease.release();
      await (await waiting).release();
    });

    it('close(): waiters reject with LockServiceClosedError, holders lose their lease, others go on', async () => {
      const [closing, other] = [service(), service()];
      const held = await closing.acquire('close-a', { ttl: 5_000 });
      const blocker = await other.acquire('close-b');
      const waiter = outcome(closing.acquire('close-b', { waitTimeout: 10_000 }));
      await queued(other, 'close-b', 1);
      const behind = other.acquire('close-a', { waitTimeout: 5_000 });
      await queued(other, 'close-a', 1);
      await closing.close();
      expect((await waiter).error).toBeInstanceOf(LockServiceClosedError);
      expect(held.signal.aborted).toBe(true);
      // The closed service's lock was released and handed on; its queue place was given up.
      await (await behind).release();
      expect((await other.inspect('close-b')).queueLength).toBe(0);
      await expect(closing.acquire('x')).rejects.toBeInstanceOf(LockServiceClosedError);
      await blocker.release();
    });

    it('bad input is a typed error, before the store is asked anything', async () => {
      const locks = service();
      await expect(locks.acquire('a{b}')).rejects.toMatchObject({ code: 'LOCK_INVALID_KEY' });
      await expect(locks.acquire('', {})).rejects.toMatchObject({ code: 'LOCK_INVALID_KEY' });
      await expect(locks.acquire('k', { ttl: 9 })).rejects.toBeInstanceOf(LockUsageError);
      await expect(locks.tryAcquire('k', { minHold: -1 })).rejects.toBeInstanceOf(LockUsageError);
      expect(await locks.inspect('k')).toMatchObject({ held: false, queueLength: 0 });
    });

    it('minHold: a release before it keeps the lock held until then', async () => {
      const locks = service();
      // minHold counts from the grant, on the server: at the earliest when the call was sent.
      const asked = performance.now();
      const lease = await locks.acquire('mh', { minHold: 300 });
      await lease.release();
      expect((await locks.inspect('mh')).holder).toBe(lease.token);
      const next = await service().acquire('mh', { waitTimeout: 5_000 });
      expect(elapsedSince(asked)).toBeGreaterThanOrEqual(299);
      await next.release();
    });

    it('maxHold: renewal stops; the signal aborts at maxHold, and the waiter is served once the lock expires', async () => {
      const [a, b] = [service(), service()];
      const loop = watchEventLoop();
      const ttl = 300;
      const maxHold = 600;
      const sent = performance.now();
      const lease = await a.acquire('max-hold', { ttl, maxHold, renew: true });
      const lost = abortedAt(lease.signal);
      // Settled into a value, so that a failed assertion below leaves no rejection behind.
      const waiting = outcome(b.acquire('max-hold', { ttl, waitTimeout: 10_000 }));
      const abortedAtMs = await lost;
      expect(lease.signal.reason).toMatchObject({ code: 'LOCK_LOST', reason: 'max-hold' });
      // Counted from when this process learnt of the grant (after `sent`), never sooner; late only by
      // the event loop.
      expect(abortedAtMs).toBeGreaterThanOrEqual(sent + maxHold);
      expect(abortedAtMs).toBeLessThan(sent + maxHold + loop.worst() + SLACK_MS);
      const next = (await waiting).value as Lease;
      const servedAt = performance.now();
      // Renewal had kept it past ttl; it then stopped, so the lock ran out at most one ttl after maxHold.
      expect(servedAt).toBeGreaterThanOrEqual(abortedAtMs);
      expect(servedAt - sent).toBeLessThan(maxHold + ttl + loop.worst() + SLACK_MS);
      loop.stop();
      expect(next.fence).toBeGreaterThan(lease.fence);
      await expect(lease.release()).rejects.toMatchObject({ code: 'LOCK_NOT_HELD' });
      await next.release();
    });

    it('maxHold: a holder that stops its work at the signal releases, and the waiter is served at once', async () => {
      const [a, b] = [service(), service()];
      const loop = watchEventLoop();
      const ttl = 2_000;
      const started = performance.now();
      const waiting = outcome(
        a.using(
          'max-hold-stop',
          // The work hangs until told to stop: what maxHold is for.
          (lease) =>
            new Promise((_, reject) =>
              lease.signal.addEventListener('abort', () => reject(lease.signal.reason)),
            ),
          { ttl, maxHold: ttl },
        ),
      );
      await until(
        () => b.inspect('max-hold-stop'),
        (info) => info.held,
      );
      const next = (await outcome(b.acquire('max-hold-stop', { waitTimeout: 10_000 }))).value as Lease;
      // Served by the release that followed the signal at maxHold, not by the lock's expiry: the last
      // renewal before maxHold left it valid for most of another ttl.
      expect(elapsedSince(started)).toBeLessThan(ttl + loop.worst() + SLACK_MS);
      loop.stop();
      const ended = await waiting;
      expect(ended.error).toMatchObject({ code: 'LOCK_LOST', reason: 'max-hold' });
      expect((await b.inspect('max-hold-stop')).holder).toBe(next.token);
      await next.release();
    });

    for (const [property, reason] of Object.entries(cannot)) {
      it.skip(`${property}: not given by this store (${reason})`, () => {});
    }
  });
}
