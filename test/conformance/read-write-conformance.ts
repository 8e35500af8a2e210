// Read-write locks (`mode`), as every store that has them must carry them (run by redis.conformance.spec.ts
// and memory.conformance.spec.ts): readers share, a writer excludes everyone, arrival order is kept phase
// by phase (a writer in line holds back every reader behind it), fences increase across modes, a reader
// that stops renewing gives its share back at its ttl, one kind of lock per key, no upgrade, inspect.
import { describe, expect, it } from '@jest/globals';
import { type Lease, LockLostError, type LockService, LockUsageError } from '../../lib/core';
import { watchEventLoop } from '../support/event-loop';
import { abortedAt, outcome, until } from '../support/lock-fixtures';
import type { ServiceFactory } from './lock-conformance';

export function describeReadWriteConformance(store: string, service: ServiceFactory): void {
  const waiting = (locks: LockService, key: string, n: number) =>
    until(
      () => locks.inspect(key),
      (info) => info.queueLength === n,
    );

  describe(`read-write conformance: ${store}`, () => {
    it('readers overlap, a writer excludes everyone, across services', async () => {
      const services = [service(), service(), service()];
      let readers = 0;
      let writers = 0;
      let mostReaders = 0;
      let overlapped = 0;
      const work = (locks: LockService, mode: 'read' | 'write') =>
        locks.using(
          'rw-ex',
          async () => {
            if (mode === 'read') readers++;
            else writers++;
            mostReaders = Math.max(mostReaders, readers);
            if (writers > 1 || (writers === 1 && readers > 0)) overlapped++;
            for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
            if (mode === 'read') readers--;
            else writers--;
          },
          { mode, waitTimeout: 20_000 },
        );
      await Promise.all(
        Array.from({ length: 30 }, (_, i) => work(services[i % 3], i % 5 === 4 ? 'write' : 'read')),
      );
      expect(overlapped).toBe(0);
      expect(mostReaders).toBeGreaterThan(1);
      expect(await services[0].inspect('rw-ex')).toMatchObject({ held: false, queueLength: 0 });
    });

    it('arrival order phase by phase: a writer in line is served before every reader that came after it', async () => {
      const [a, b] = [service(), service()];
      const first = await a.acquire('rw-fifo', { mode: 'read' });
      // A reader arriving now would share with `first`; arriving behind a writer, it waits.
      const modes = ['write', 'read', 'read', 'write', 'read'] as const;
      const granted: Array<{ i: number; lease: Lease }> = [];
      const calls: Promise<void>[] = [];
      for (const [i, mode] of modes.entries()) {
        calls.push(
          (i % 2 ? a : b).acquire('rw-fifo', { mode, waitTimeout: 20_000 }).then((lease) => {
            granted.push({ i, lease });
          }),
        );
        await waiting(a, 'rw-fifo', i + 1);
      }
      expect((await a.inspect('rw-fifo')).waiting?.map((w) => w.mode)).toEqual([...modes]);
      expect(await service().tryAcquire('rw-fifo', { mode: 'read' })).toBeNull();
      const phase = async (indexes: number[]) => {
        await until(
          async () => granted.length,
          (n) => n >= indexes.length,
        );
        expect(granted.map((g) => g.i).sort()).toEqual(indexes);
        const info = await a.inspect('rw-fifo');
        expect(info.holders).toHaveLength(indexes.length);
        // Granted together, they may be seen in any order; their fences say the order Redis gave them.
        const leases = granted
          .splice(0)
          .sort((x, y) => x.i - y.i)
          .map((g) => g.lease);
        return leases;
      };
      await first.release();
      const [w1] = await phase([0]); // the writer, alone
      expect((await a.inspect('rw-fifo')).mode).toBe('write');
      await w1.release();
      const readers = await phase([1, 2]); // both readers at once, not the reader behind the next writer
      expect((await a.inspect('rw-fifo')).mode).toBe('read');
      await Promise.all(readers.map((r) => r.release()));
      const [w4] = await phase([3]);
      await w4.release();
      const [r5] = await phase([4]);
      await r5.release();
      await Promise.all(calls);
      const fences = [first.fence, w1.fence, ...readers.map((r) => r.fence), w4.fence, r5.fence];
      expect(fences).toEqual([...fences].sort((x, y) => x - y));
      expect(new Set(fences).size).toBe(fences.length);
    });

    it('a reader that stops renewing gives its share back at its ttl; the writer waiting is served', async () => {
      const [a, b] = [service(), service()];
      const loop = watchEventLoop();
      const sent = performance.now();
      const reader = await a.acquire('rw-exp', { mode: 'read', ttl: 300, renew: false });
      const lost = abortedAt(reader.signal);
      const writer = await b.acquire('rw-exp', { mode: 'write', waitTimeout: 5_000 });
      expect(await lost).toBeLessThan(sent + 300 + loop.worst());
      loop.stop();
      expect(reader.signal.reason).toBeInstanceOf(LockLostError);
      expect(performance.now() - sent).toBeGreaterThanOrEqual(299);
      await expect(reader.release()).rejects.toMatchObject({ code: 'LOCK_NOT_HELD' });
      await writer.release();
    });

    it('reentrancy: a writer re-enters as reader or writer; a reader may read again but not write', async () => {
      const locks = service();
      await locks.using(
        'rw-re',
        async (outer) => {
          expect(await locks.using('rw-re', async (inner) => inner.fence, { mode: 'read' })).toBe(
            outer.fence,
          );
          expect(await locks.using('rw-re', async (inner) => inner.fence, { mode: 'write' })).toBe(
            outer.fence,
          );
        },
        { mode: 'write' },
      );
      await locks.using(
        'rw-re',
        async (outer) => {
          expect(await locks.using('rw-re', async (inner) => inner.fence, { mode: 'read' })).toBe(
            outer.fence,
          );
          const upgrade = await outcome(locks.acquire('rw-re', { mode: 'write' }));
          expect(upgrade.error).toMatchObject({ code: 'LOCK_KIND' });
          expect(upgrade.error).toMatchObject({ found: 'read', asked: 'write', key: 'rw-re' });
          await expect(locks.acquire('rw-re')).rejects.toMatchObject({
            code: 'LOCK_KIND',
            found: 'read-write',
            asked: 'mutex',
          });
        },
        { mode: 'read' },
      );
    });

    it('one key is one kind of lock: a mutex or semaphore call on a read-write lock, or the reverse, is refused', async () => {
      const [a, b] = [service(), service()];
      const reader = await a.acquire('rw-kind', { mode: 'read' });
      const plain = await outcome(b.acquire('rw-kind'));
      expect(plain.error).toMatchObject({ code: 'LOCK_KIND' });
      expect(plain.error).toBeInstanceOf(LockUsageError);
      expect(plain.error).toMatchObject({ found: 'read-write', asked: 'mutex' });
      expect((plain.error as Error).message).toMatch(/mode: 'write'/);
      await expect(b.acquire('rw-kind', { permits: 3 })).rejects.toMatchObject({
        found: 'read-write',
        asked: 3,
      });
      expect(await a.inspect('rw-kind')).toMatchObject({ kind: 'read-write', queueLength: 0 });
      await reader.release();
      const mutex = await a.acquire('rw-kind-2');
      await expect(b.acquire('rw-kind-2', { mode: 'read' })).rejects.toMatchObject({
        found: 'mutex',
        asked: 'read-write',
      });
      await mutex.release();
    });

    it('inspect: the mode, every holder with its mode, and the line in order with each mode', async () => {
      const [a, b] = [service(), service()];
      const readers = [
        await a.acquire('rw-info', { mode: 'read' }),
        await b.acquire('rw-info', { mode: 'read' }),
      ];
      const writer = a.acquire('rw-info', { mode: 'write', waitTimeout: 10_000 });
      await waiting(a, 'rw-info', 1);
      const late = b.acquire('rw-info', { mode: 'read', waitTimeout: 10_000 });
      await waiting(a, 'rw-info', 2);
      const info = await a.inspect('rw-info');
      expect(info).toMatchObject({ kind: 'read-write', mode: 'read', held: true, queueLength: 2 });
      expect(info.holders.map((h) => [h.token, h.mode]).sort()).toEqual(
        readers.map((r) => [r.token, 'read']).sort(),
      );
      expect(info.waiting?.map((w) => w.mode)).toEqual(['write', 'read']);
      await Promise.all(readers.map((r) => r.release()));
      const written = await writer;
      expect(await a.inspect('rw-info')).toMatchObject({ mode: 'write', queueLength: 1 });
      await written.release();
      await (await late).release();
      // A free key keeps no kind: it reads as a free mutex until someone takes it again.
      expect(await a.inspect('rw-info')).toMatchObject({ held: false, kind: 'mutex', holders: [] });
    });

    it('bad modes, and mode with permits or several keys, are typed errors before the store is asked', async () => {
      const locks = service();
      for (const mode of ['READ', 'shared', 'Write', '', 1, null, true]) {
        const { error } = await outcome(locks.acquire('rw-bad', { mode: mode as 'read' }));
        expect(error).toBeInstanceOf(LockUsageError);
        expect((error as Error).message).toMatch(/mode must be 'read' .* or 'write'/);
        expect(() => locks.checkOptions({ mode: mode as 'read' })).toThrow(LockUsageError);
      }
      await expect(locks.acquire('rw-bad', { mode: 'read', permits: 3 })).rejects.toThrow(/do not combine/);
      await expect(locks.acquire(['rw-a', 'rw-b'], { mode: 'write' })).rejects.toThrow(/applies to one key/);
      expect(await locks.inspect('rw-bad')).toMatchObject({ held: false, queueLength: 0 });
    });
  });
}
