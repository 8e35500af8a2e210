// The engine on a Redis Cluster (three masters): every key of one lock carries the {key} hash tag, so
// its scripts run on one node; pushes travel over Cluster pub/sub, whose receiver counts the engine does
// not trust. Exclusion, FIFO hand-off and waiting without polling, as on one server.
import { describe, expect, it } from '@jest/globals';
import type { Lease } from '../../lib/core';
import { useCluster } from '../support/cluster-fixtures';
import { sleep } from '../support/event-loop';
import { commandsIn, until, waitOnce } from '../support/lock-fixtures';
import { spawnWorker, workerPath } from '../support/processes';

const { cluster: current, service } = useCluster();

describe('on a Redis Cluster', () => {
  it('list() finds the live locks on every master, and their lines', async () => {
    const keys = ['board:1', 'board:2', 'board:3', 'board:4', 'board:5', 'board:6'];
    const masters = new Set(await Promise.all(keys.map((key) => current().portOf(`lock:{${key}}`))));
    expect(masters.size).toBeGreaterThanOrEqual(2);
    const [a, b] = [service(), service()];
    const leases = await Promise.all(keys.map((key) => a.acquire(key)));
    const waiter = b.acquire('board:2', { waitTimeout: 20_000 });
    await until(
      () => b.inspect('board:2'),
      (info) => info.queueLength === 1,
    );
    const { locks, truncated } = await b.list({ filter: 'board:' });
    expect(truncated).toBe(false);
    expect(locks.map((lock) => lock.key)).toEqual(keys);
    expect(locks.map((lock) => lock.holder)).toEqual(leases.map((lease) => lease.token));
    expect(locks[1].waiting?.map((w) => w.token.split(':')[0])).toEqual([b.instance]);
    await leases[1].release();
    await (await waiter).release();
    await Promise.all(leases.map((lease) => lease.release().catch(() => {})));
    expect((await b.list({ filter: 'board:' })).locks).toEqual([]);
  });

  it('locks on different masters each admit one holder: non-atomic counters lose no update', async () => {
    const keys = ['order:1', 'order:2', 'order:3', 'order:4', 'order:5', 'order:6'];
    const masters = new Set(await Promise.all(keys.map((key) => current().portOf(`lock:{${key}}`))));
    expect(masters.size).toBeGreaterThanOrEqual(2);

    const pair = [service(), service()];
    const data = current().client();
    const workers = 12;
    const rounds = 15;
    await Promise.all(
      Array.from({ length: workers }, async (_, worker) => {
        const locks = pair[worker % 2];
        for (let round = 0; round < rounds; round++) {
          const key = keys[(worker + round) % keys.length];
          await locks.using(key, async () => {
            // Read, yield to the other callers, write: any overlap of two holders loses an increment.
            const counter = `count:{${key}}`;
            const value = Number((await data.get(counter)) ?? 0);
            await sleep(1);
            await data.set(counter, String(value + 1), 'PX', 60_000);
          });
        }
      }),
    );
    let total = 0;
    for (const key of keys) total += Number(await data.get(`count:{${key}}`));
    expect(total).toBe(workers * rounds);
  });

  it('a multi-key lease over keys on different masters: transfers conserve the total, keys all released', async () => {
    const accounts = ['acct:1', 'acct:2', 'acct:3', 'acct:4'];
    const masters = new Set(await Promise.all(accounts.map((key) => current().portOf(`lock:{${key}}`))));
    expect(masters.size).toBeGreaterThanOrEqual(2);
    const pair = [service(), service()];
    const data = current().client();
    for (const key of accounts) await data.set(`bal:{${key}}`, '100', 'PX', 60_000);
    await Promise.all(
      Array.from({ length: 24 }, async (_, i) => {
        const from = accounts[i % 4];
        // 1 to 3 places further on: never the same account.
        const to = accounts[(i + 1 + (i % 3)) % 4];
        await pair[i % 2].using([from, to], async (lease) => {
          expect(lease.keys).toEqual([from, to].sort());
          const [a, b] = await Promise.all([data.get(`bal:{${from}}`), data.get(`bal:{${to}}`)]);
          await sleep(1);
          await data.set(`bal:{${from}}`, String(Number(a) - 1), 'PX', 60_000);
          await data.set(`bal:{${to}}`, String(Number(b) + 1), 'PX', 60_000);
        });
      }),
    );
    let total = 0;
    for (const key of accounts) total += Number(await data.get(`bal:{${key}}`));
    expect(total).toBe(400);
    for (const key of accounts) expect((await pair[0].inspect(key)).held).toBe(false);
  });

  it('waiters from two services are granted in arrival order, woken by pushes, with no commands while waiting', async () => {
    const [first, second] = [service(), service()];
    // Each has waited before: a first wait re-checks once its wake connection listens (not waiting).
    await waitOnce(first, second);
    await waitOnce(second, first);
    const key = 'queue';
    const holder = await first.acquire(key, { ttl: 30_000 });
    const order: number[] = [];
    const waiting: Array<Promise<void>> = [];
    for (let i = 0; i < 6; i++) {
      const locks = i % 2 ? second : first;
      waiting.push(
        locks.acquire(key, { waitTimeout: 20_000 }).then(async (lease: Lease) => {
          order.push(i);
          await lease.release();
        }),
      );
      // Each one queues before the next asks, so arrival order is known.
      await until(
        () => first.inspect(key),
        (snapshot) => snapshot.queueLength === i + 1,
      );
    }

    // One second of waiting: no command reaches any node (the client's own slot refreshes aside).
    await Promise.all(current().nodes.map((node) => node.resetStats()));
    await sleep(1_000);
    const stats = await Promise.all(current().nodes.map((node) => node.commandStats()));
    const sent = stats.map((s) => new Map([...s].filter(([name]) => !name.startsWith('cluster|'))));
    expect(sent.map(commandsIn)).toEqual(current().nodes.map(() => 0));

    await holder.release();
    await Promise.all(waiting);
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
    expect(await first.inspect(key)).toMatchObject({ held: false, queueLength: 0 });
  });

  it('a queued waiter whose process died delays the next one by one claim window, not more', async () => {
    // On one server PUBLISH's receiver count reveals a vanished waiter at once (dead-waiter.spec); a
    // Cluster's count covers one node only, so the grant is kept for the claim window, then passed on.
    const claimWindow = 400;
    const agent = spawnWorker<{ type: string }>(workerPath('lock-agent'), {
      cluster: current().nodes.map((node) => node.port),
      claimWindow,
    });
    await agent.next((m) => m.type === 'ready');
    const [holderSide, nextSide] = [service({ claimWindow }), service({ claimWindow })];
    const key = 'vanished';
    const holder = await holderSide.acquire(key, { ttl: 30_000 });
    agent.send({ type: 'acquire', id: 'w1', key, ttl: 30_000, waitTimeout: 20_000 });
    await until(
      () => holderSide.inspect(key),
      (snapshot) => snapshot.queueLength === 1,
    );
    const next = nextSide.acquire(key, { waitTimeout: 20_000 });
    await until(
      () => holderSide.inspect(key),
      (snapshot) => snapshot.queueLength === 2,
    );
    await agent.kill();

    const released = performance.now();
    await holder.release();
    const lease = await next;
    const waited = performance.now() - released;
    expect(waited).toBeGreaterThanOrEqual(claimWindow * 0.9);
    expect(waited).toBeLessThan(claimWindow + 1_000);
    await lease.release();
  });
  it('a semaphore on each of several masters: at most `permits` holders of each, reached, keys gone after', async () => {
    const keys = ['export:1', 'export:2', 'export:3'];
    const masters = new Set(await Promise.all(keys.map((key) => current().portOf(`lock:{${key}}`))));
    expect(masters.size).toBeGreaterThanOrEqual(2);
    const pair = [service(), service()];
    const inside = new Map(keys.map((key) => [key, 0]));
    const most = new Map(keys.map((key) => [key, 0]));
    await Promise.all(
      Array.from({ length: 18 }, async (_, i) => {
        const key = keys[i % keys.length];
        for (let round = 0; round < 3; round++) {
          await pair[i % 2].using(
            key,
            async () => {
              inside.set(key, (inside.get(key) ?? 0) + 1);
              most.set(key, Math.max(most.get(key) ?? 0, inside.get(key) ?? 0));
              await sleep(2);
              inside.set(key, (inside.get(key) ?? 0) - 1);
            },
            { permits: 2, waitTimeout: 20_000 },
          );
        }
      }),
    );
    expect([...most.values()]).toEqual([2, 2, 2]);
    for (const key of keys) {
      expect(await pair[0].inspect(key)).toMatchObject({ held: false, queueLength: 0, holders: [] });
    }
  });
});
