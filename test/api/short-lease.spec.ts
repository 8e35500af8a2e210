// Short leases with the default options (claim window 2 000 ms): the engine's properties hold for a
// 1 s and a 100 ms lease, and a waiter or holder that dies costs the queue about its own ttl, never the
// claim window. SHORT_LEASE_REPORT=1 prints the measured delays.
import { describe, expect, it } from '@jest/globals';
import { LockLostError } from '../../lib/core';
import { SLACK_MS, sleep } from '../support/event-loop';
import {
  abortedAt,
  agentInstance,
  elapsedSince,
  listening,
  lockService,
  outcome,
  until,
} from '../support/lock-fixtures';
import { spawnWorker, type Worker, workerPath } from '../support/processes';
import { useRedis } from '../support/redis-server';
import type { AgentMessage } from '../workers/lock-agent.worker';

const server = useRedis();

const report = (what: string, ms: number): void => {
  if (process.env.SHORT_LEASE_REPORT) console.log(`short-lease: ${what}: ${ms.toFixed(1)} ms`);
};

/** A lock agent in its own process with the default options, ready for commands. */
async function readyAgent(): Promise<Worker<AgentMessage>> {
  const agent = spawnWorker<AgentMessage>(workerPath('lock-agent'), { url: server().url });
  await agent.next((m) => m.type === 'ready');
  return agent;
}

describe.each([1_000, 100])('a %i ms lease with default options', (ttl) => {
  it('is handed on in arrival order across 3 processes, and nobody barges in', async () => {
    const key = `fifo-${ttl}`;
    const locks = lockService(server());
    const barger = lockService(server());
    const agents = await Promise.all([0, 1, 2].map(() => readyAgent()));
    const holder = await locks.acquire(key, { ttl, renew: true });

    // Twelve waiters join one at a time, round robin over the three processes; each joins only after
    // the previous one is visibly queued, which fixes the arrival order.
    const arrival: string[] = [];
    for (let i = 0; i < 12; i++) {
      const id = `w${i}`;
      agents[i % 3].send({ type: 'acquire', id, key, ttl, renew: true, waitTimeout: 30_000 });
      arrival.push(id);
      await until(
        () => locks.inspect(key),
        (info) => info.queueLength === i + 1,
      );
    }

    const grants: string[] = [];
    // Another service keeps trying to take the lock while the queue is served: while a waiter is left,
    // every attempt must fail, whether the lock is held, granted or momentarily free.
    let stop = false;
    let attempts = 0;
    let barged = 0;
    const barging = (async () => {
      while (!stop) {
        const lease = await barger.tryAcquire(key, { ttl });
        attempts++;
        if (lease) {
          // Redis ran the attempt after the last release only if every grant was already recorded.
          if (grants.length < arrival.length) barged++;
          await lease.release().catch(() => {});
        }
      }
    })();

    const nextGrant = (a: number) =>
      agents[a].next((m) => m.type === 'granted', 20_000).then((m) => ({ a, id: m.id as string }));
    const pending = [nextGrant(0), nextGrant(1), nextGrant(2)];
    const released = holder.release();
    for (let i = 0; i < arrival.length; i++) {
      const { a, id } = await Promise.race(pending);
      pending[a] = nextGrant(a);
      grants.push(id);
      agents[a].send({ type: 'release', id });
    }
    for (const p of pending) p.catch(() => {}); // the calls after the last grant never resolve
    await released;
    stop = true;
    await barging;

    expect(grants).toEqual(arrival);
    expect(attempts).toBeGreaterThan(0);
    expect(barged).toBe(0);
    // No lease was lost on the way: a lost one would have let the next waiter in early.
    for (const agent of agents) expect(agent.messages.filter((m) => m.type === 'lost')).toEqual([]);
    await Promise.all(agents.map((a) => a.stop()));
  }, 60_000);
});

describe.each([300, 500])('with ttl %i and the default claim window (2 000 ms)', (ttl) => {
  it('a waiter SIGSTOPped when it is granted delays the next one by about its ttl, not the claim window', async () => {
    const key = `dead-waiter-${ttl}`;
    const locks = lockService(server());
    const agent = await readyAgent();
    const holder = await locks.acquire(key, { ttl: 30_000 });
    agent.send({ type: 'acquire', id: 'frozen', key, ttl, waitTimeout: 20_000 });
    await until(
      () => locks.inspect(key),
      (info) => info.queueLength === 1,
    );
    const next = lockService(server());
    const waiting = next.acquire(key, { ttl, waitTimeout: 20_000 });
    await until(
      () => locks.inspect(key),
      (info) => info.queueLength === 2,
    );

    // Both waiters' services listen: the frozen one is frozen while subscribed (docs/protocol.md,
    // "The first wait").
    await listening(server(), agentInstance(agent), next);
    agent.pause(); // its connection stays open, so the grant is delivered to a process that never runs
    try {
      const releasedAt = performance.now();
      await holder.release();
      const granted = await locks.inspect(key);
      expect(granted.queueLength).toBe(1);
      // Reserved in Redis for the frozen waiter's own ttl, not for the claim window.
      expect(granted.ttl).toBeLessThanOrEqual(ttl);
      const lease = await waiting;
      const delay = elapsedSince(releasedAt);
      report(`dead waiter, ttl ${ttl}`, delay);

      expect(delay).toBeGreaterThanOrEqual(ttl - SLACK_MS);
      expect(delay).toBeLessThanOrEqual(ttl + SLACK_MS);
      expect(lease.fence).toBeGreaterThan(0);
      await lease.release();
    } finally {
      await agent.kill();
    }
  }, 30_000);

  it('a holder SIGKILLed while renewing is replaced within its ttl', async () => {
    const key = `dead-holder-${ttl}`;
    const holder = await readyAgent();
    holder.send({ type: 'acquire', id: 'h', key, ttl, renew: true });
    const held = await holder.next((m) => m.type === 'granted');
    const grantedAt = performance.now();

    const locks = lockService(server());
    const waiting = locks.acquire(key, { ttl, waitTimeout: 10_000 });
    await until(
      () => locks.inspect(key),
      (info) => info.queueLength === 1,
    );
    // Still the same holder three ttls after its grant: renewal keeps the short lease, so what follows
    // is the crash's cost, not a lease that simply ran out.
    await until(
      () => locks.inspect(key),
      (info) => {
        expect(info).toMatchObject({ held: true, fence: held.fence });
        return elapsedSince(grantedAt) > 3 * ttl;
      },
      5_000,
    );
    await holder.kill();
    const killedAt = performance.now();
    const lease = await waiting;
    const replacedAfter = elapsedSince(killedAt);
    report(`dead holder, ttl ${ttl}`, replacedAfter);

    expect(replacedAfter).toBeLessThanOrEqual(ttl + SLACK_MS);
    expect(lease.fence).toBeGreaterThan(held.fence as number);
    await lease.release();
  }, 30_000);
});

describe('renewal of a short lease', () => {
  it('a 100 ms lease under using() stays held through 3 s of work', async () => {
    const locks = lockService(server());
    const observer = lockService(server());
    const ttl = 100;
    let checks = 0;
    const result = await locks.using(
      'short-job',
      async (lease) => {
        const end = performance.now() + 3_000;
        while (performance.now() < end) {
          const info = await observer.inspect('short-job');
          expect(info.holder).toBe(lease.token);
          expect(info.ttl).toBeLessThanOrEqual(ttl);
          expect(lease.signal.aborted).toBe(false);
          checks++;
          // The length of the job is the scenario; it looks every 20 ms along the way.
          await sleep(20);
        }
        return 'done';
      },
      { ttl },
    );
    expect(result).toBe('done');
    expect(checks).toBeGreaterThan(30);
    expect((await observer.inspect('short-job')).held).toBe(false);
  });

  it('a 200 ms lease whose renewals are blocked (server paused) aborts its signal before the ttl ends', async () => {
    const locks = lockService(server());
    const ttl = 200;
    let pausedAt = 0;
    let lostAt = 0;
    const run = outcome(
      locks.using(
        'short-paused',
        async (lease) => {
          pausedAt = performance.now();
          server().pause();
          try {
            lostAt = await abortedAt(lease.signal);
          } finally {
            server().resume();
          }
          expect(lease.signal.reason).toBeInstanceOf(LockLostError);
        },
        { ttl },
      ),
    );
    const { error } = await run;
    server().resume();
    report('blocked renewal, ttl 200: lost after the pause', lostAt - pausedAt);
    // The last confirmed extension was sent before the pause, so validity ended by pausedAt + ttl.
    expect(lostAt).toBeGreaterThan(0);
    expect(lostAt).toBeLessThan(pausedAt + ttl);
    expect(error).toBeInstanceOf(LockLostError);
  });

  it('a 100 ms lease whose key is deleted behind its back aborts its signal at the next renewal', async () => {
    const locks = lockService(server());
    const admin = server().client();
    const ttl = 100;
    const { error } = await outcome(
      locks.using(
        'short-deleted',
        async (lease) => {
          const deletedAt = performance.now();
          await admin.del('lock:{short-deleted}');
          const lostAt = await abortedAt(lease.signal);
          expect(lostAt - deletedAt).toBeLessThan(ttl);
          expect(lease.signal.reason).toMatchObject({ code: 'LOCK_LOST', key: 'short-deleted' });
        },
        { ttl },
      ),
    );
    expect(error).toBeInstanceOf(LockLostError);
  });
});
