import { describe, expect, it } from '@jest/globals';
import { lockService, until } from '../support/lock-fixtures';
import { spawnWorker, workerPath } from '../support/processes';
import { useRedis } from '../support/redis-server';

const server = useRedis();

describe('fencing tokens', () => {
  it('strictly increase over hundreds of grants from several processes (first acquire, hand-off, expiry takeover)', async () => {
    const workers = Array.from({ length: 3 }, () =>
      spawnWorker<{ type: string; grants?: Array<[number, number]> }>(workerPath('counter'), {
        url: server().url,
        key: 'fenced',
        counter: 'fenced:counter',
        tasks: 2,
        iterations: 75,
        // Each task's 75th grant is abandoned: 6 takeovers after expiry, two in each process. Each costs
        // the whole line an abandonTtl, so they are most of this test's time.
        abandonEvery: 75,
        // Wide enough that a busy machine's scheduling stalls (2 cores, both taken by other work: npm run
        // test:busy) do not outlast a lease mid-increment or a grant before its confirmation: a frozen
        // holder is the documented limit, not what this test is about.
        abandonTtl: 600,
        claimWindow: 500,
      }),
    );
    const results = await Promise.all(workers.map((w) => w.next((m) => m.type === 'done', 120_000)));
    await Promise.all(workers.map((w) => w.stop()));

    // The counter value read under the lock orders the grants globally.
    const grants = results.flatMap((r) => r.grants ?? []).sort((a, b) => a[0] - b[0]);
    expect(grants).toHaveLength(450);
    expect(grants.map(([position]) => position)).toEqual(Array.from({ length: 450 }, (_, i) => i));
    for (let i = 1; i < grants.length; i++) {
      expect(grants[i][1]).toBeGreaterThan(grants[i - 1][1]);
    }
  }, 180_000);

  it('keep increasing when the fence counter is gone (expired, or Redis restarted without persistence)', async () => {
    const locks = lockService(server());
    const first = await locks.acquire('restart-fence');
    await first.release();
    await server().restart();
    // ioredis says `status`, node-redis `isReady`.
    await until(
      async () => locks.client.status === 'ready' || locks.client.isReady === true,
      (ready) => ready,
    );
    const second = await locks.acquire('restart-fence', { waitTimeout: 5_000 });
    expect(second.fence).toBeGreaterThan(first.fence);
    await second.release();
    // The counter key is bounded: it carries a TTL.
    expect(await server().ttlOf('lock:{restart-fence}:fence')).toBeGreaterThan(0);
  });

  it("a lock's counter is all it leaves behind, for a minute after its last grant", async () => {
    // Keys built from requests are as many as their distinct values: each may cost only this.
    const locks = lockService(server());
    const keys = Array.from({ length: 20 }, (_, i) => `request-chosen:${i}`);
    for (const key of keys) await (await locks.acquire(key)).release();
    for (const key of keys) {
      const left = await server().admin((redis) => redis.keys(`lock:{${key}}*`));
      expect(left).toEqual([`lock:{${key}}:fence`]);
      const ttl = await server().ttlOf(`lock:{${key}}:fence`);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
    }
  });

  it('keep increasing when the server clock is behind the last token (a clock stepped back)', async () => {
    // Tokens are at least the server clock in µs; a counter ahead of the clock, as after the clock
    // stepped back (or a failover to a server whose clock is behind), must still be counted on from.
    const admin = server().client();
    const [seconds, micros] = await admin.time();
    const ahead = (Number(seconds) + 3_600) * 1_000_000 + Number(micros);
    await admin.set('lock:{stepped}:fence', String(ahead), 'PX', 60_000);

    const locks = lockService(server());
    const first = await locks.acquire('stepped');
    expect(first.fence).toBe(ahead + 1);
    // Hand-off to a waiter: the next token, still counted on from the last one.
    const next = locks.acquire('stepped', { waitTimeout: 5_000 });
    await until(
      () => admin.llen('lock:{stepped}:q'),
      (length) => length === 1,
    );
    await first.release();
    const second = await next;
    expect(second.fence).toBe(ahead + 2);
    await second.release();
    expect(await server().ttlOf('lock:{stepped}:fence')).toBeGreaterThan(0);
  });
});
