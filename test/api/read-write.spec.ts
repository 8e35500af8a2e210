// The read-write lock across processes, on a real redis-server: readers overlap and a writer excludes
// everyone (counters in Redis checked by each holder), a writer arriving during a stream of readers from
// three processes is served once the readers already in have left, the arrival order of modes is kept,
// waiting costs Redis nothing, and a SIGKILLed reader's share or writer's lock comes back within its ttl.
// (Single-process properties: test/conformance/read-write-conformance.ts.)
import { describe, expect, it } from '@jest/globals';
import { sleep, watchEventLoop } from '../support/event-loop';
import { commandsIn, keysLeft, listening, lockService, until } from '../support/lock-fixtures';
import { spawnWorker, workerPath } from '../support/processes';
import { useRedis } from '../support/redis-server';
import type { AgentMessage } from '../workers/lock-agent.worker';

const server = useRedis();

type Done = { type: string; overlaps: number; mostReaders: number; fences: number[] };

describe('read-write lock across processes', () => {
  it('3 processes of readers and writers: readers overlap, a writer is always alone', async () => {
    const workers = [0, 1, 2].map(() =>
      spawnWorker<Done>(workerPath('read-write'), {
        url: server().url,
        key: 'doc',
        counter: 'doc:inside',
        modes: ['read', 'read', 'read', 'write', 'read', 'read'],
        rounds: 4,
        holdMs: 10,
      }),
    );
    await Promise.all(workers.map((w) => w.next((m) => m.type === 'ready')));
    for (const w of workers) w.send({ type: 'go' });
    const done = await Promise.all(workers.map((w) => w.next((m) => m.type === 'done', 90_000)));
    expect(done.map((d) => d.overlaps)).toEqual([0, 0, 0]);
    expect(Math.max(...done.map((d) => d.mostReaders))).toBeGreaterThan(1);
    const fences = done.flatMap((d) => d.fences);
    expect(fences).toHaveLength(3 * 6 * 4);
    expect(new Set(fences).size).toBe(fences.length);
    expect(await keysLeft(server().client(), 'lock:{doc}*')).toEqual(['lock:{doc}:fence']);
    await Promise.all(workers.map((w) => w.stop()));
  }, 120_000);

  it('a writer arriving during a stream of readers is served once the readers already in have left', async () => {
    const holdMs = 200;
    const readers = [0, 1, 2].map(() =>
      spawnWorker<Done>(workerPath('read-write'), {
        url: server().url,
        key: 'stream',
        counter: 'stream:inside',
        modes: ['read', 'read', 'read'],
        rounds: 15,
        holdMs,
      }),
    );
    await Promise.all(readers.map((w) => w.next((m) => m.type === 'ready')));
    for (const w of readers) w.send({ type: 'go' });
    const locks = lockService(server());
    const admin = server().client();
    // Readers hold the key back to back from here on: there is never a moment with no reader in.
    await until(
      () => admin.get('stream:inside:r'),
      (inside) => Number(inside) >= 2,
    );
    const loop = watchEventLoop();
    const asked = performance.now();
    const writer = await locks.acquire('stream', { mode: 'write', waitTimeout: 30_000 });
    const waited = performance.now() - asked;
    expect(Number(await admin.get('stream:inside:r'))).toBe(0);
    // The readers in when it arrived hold for holdMs at most; those arriving after it wait behind it.
    expect(waited).toBeLessThan(holdMs + 150 + loop.worst());
    loop.stop();
    expect(await locks.inspect('stream')).toMatchObject({ mode: 'write' });
    await writer.release();
    const done = await Promise.all(readers.map((w) => w.next((m) => m.type === 'done', 90_000)));
    expect(done.map((d) => d.overlaps)).toEqual([0, 0, 0]);
    await Promise.all(readers.map((w) => w.stop()));
  }, 120_000);

  it('waiting costs Redis nothing: readers and writers behind a writer send no command for 2 s', async () => {
    const holding = lockService(server());
    const queued = lockService(server());
    const writer = await holding.acquire('rw-idle', { mode: 'write' });
    const pending = Array.from({ length: 20 }, (_, i) =>
      queued
        .acquire('rw-idle', { mode: i % 4 === 3 ? 'write' : 'read', waitTimeout: 20_000 })
        .then(async (lease) => {
          await lease.release();
          return lease.fence;
        }),
    );
    const admin = server().client();
    await until(
      () => admin.llen('lock:{rw-idle}:sq'),
      (length) => length === 20,
    );
    // Its service listens (a first wait's subscription, and its re-check if a push was missed, are done).
    await listening(server(), queued);
    await server().resetStats();
    await sleep(2_000);
    expect(commandsIn(await server().commandStats())).toBe(0);
    await writer.release();
    expect(new Set(await Promise.all(pending)).size).toBe(20);
  }, 30_000);

  it.each(['read', 'write'] as const)(
    "a SIGKILLed %s holder's hold comes back within its ttl",
    async (mode) => {
      const ttl = 1_000;
      const locks = lockService(server());
      const agent = spawnWorker<AgentMessage>(workerPath('lock-agent'), { url: server().url });
      await agent.next((m) => m.type === 'ready');
      agent.send({ type: 'acquire', id: 'held', key: `rw-kill-${mode}`, mode, ttl, renew: true });
      await agent.next((m) => m.id === 'held' && m.type === 'granted');
      const next = locks.acquire(`rw-kill-${mode}`, { mode: 'write', waitTimeout: 10_000 });
      await until(
        () => locks.inspect(`rw-kill-${mode}`),
        (info) => info.queueLength === 1,
      );
      const loop = watchEventLoop();
      const killed = performance.now();
      await agent.kill('SIGKILL');
      const granted = await next;
      expect(performance.now() - killed).toBeLessThan(ttl + 150 + loop.worst());
      loop.stop();
      await granted.release();
    },
    30_000,
  );
});
