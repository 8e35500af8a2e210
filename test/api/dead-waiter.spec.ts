import { describe, expect, it } from '@jest/globals';
import { SLACK_MS, sleep } from '../support/event-loop';
import {
  agentInstance,
  elapsedSince,
  listening,
  lockService,
  outcome,
  until,
} from '../support/lock-fixtures';
import { spawnWorker, workerPath } from '../support/processes';
import { useRedis } from '../support/redis-server';
import type { AgentMessage } from '../workers/lock-agent.worker';

const server = useRedis();

const claimWindow = 400;
const ttl = 10 * claimWindow; // a TTL-long stall would be unmistakable
/** The length of a stall is the scenario here, not a stand-in for synchronisation. */
const stall = (ms: number) => sleep(Math.max(0, ms));

/** Started before the holder takes the lock, so a slow process start cannot eat into the holder's TTL. */
async function readyAgent() {
  const agent = spawnWorker<AgentMessage>(workerPath('lock-agent'), { url: server().url, claimWindow });
  await agent.next((m) => m.type === 'ready');
  return agent;
}

function queue(agent: Awaited<ReturnType<typeof readyAgent>>, key: string, waitTimeout = 20_000) {
  agent.send({ type: 'acquire', id: 'w1', key, ttl, waitTimeout });
  return agent;
}

describe('a waiter that dies or gives up after being granted', () => {
  it('killed after its grant was sent: the next waiter waits at most one claim window, not a TTL', async () => {
    const locks = lockService(server(), { claimWindow });
    const agent = await readyAgent();
    const holder = await locks.acquire('dead-1', { ttl });
    queue(agent, 'dead-1');
    await until(
      () => locks.inspect('dead-1'),
      (i) => i.queueLength === 1,
    );
    const next = lockService(server(), { claimWindow });
    const waiting = next.acquire('dead-1', { ttl, waitTimeout: 20_000 });
    await until(
      () => locks.inspect('dead-1'),
      (i) => i.queueLength === 2,
    );

    // Both waiters' services listen: the frozen one is frozen while subscribed (docs/protocol.md,
    // "The first wait").
    await listening(server(), agentInstance(agent), next);
    agent.pause(); // its connection stays open, so the grant is delivered to a process that never runs
    const releasedAt = performance.now();
    await holder.release();
    expect((await locks.inspect('dead-1')).queueLength).toBe(1);
    await agent.kill();
    const lease = await waiting;
    const delay = elapsedSince(releasedAt);

    expect(delay).toBeGreaterThanOrEqual(claimWindow - SLACK_MS);
    expect(delay).toBeLessThanOrEqual(claimWindow + SLACK_MS);
    await lease.release();
  }, 30_000);

  it('killed while queued: it is skipped at once on hand-off', async () => {
    const locks = lockService(server(), { claimWindow });
    const agent = await readyAgent();
    const holder = await locks.acquire('dead-2', { ttl });
    queue(agent, 'dead-2');
    await until(
      () => locks.inspect('dead-2'),
      (i) => i.queueLength === 1,
    );
    const next = lockService(server(), { claimWindow });
    const waiting = next.acquire('dead-2', { ttl, waitTimeout: 20_000 });
    await until(
      () => locks.inspect('dead-2'),
      (i) => i.queueLength === 2,
    );
    // The agent listens before it dies: a process that dies before its first subscription is live keeps
    // its waiters' places for a claim window (docs/protocol.md, "The first wait"), which is not this case.
    await listening(server(), agentInstance(agent), next);
    await agent.kill();
    const releasedAt = performance.now();
    await holder.release();
    const lease = await waiting;
    expect(elapsedSince(releasedAt)).toBeLessThan(SLACK_MS);
    await lease.release();
  }, 30_000);

  it('aborted at the worst moment (right as the grant is made): the grant is passed on at once', async () => {
    const locks = lockService(server(), { claimWindow });
    const holder = await locks.acquire('dead-3', { ttl });
    const controller = new AbortController();
    const first = lockService(server(), { claimWindow }, undefined);
    const aborted = outcome(first.acquire('dead-3', { ttl, waitTimeout: 20_000, signal: controller.signal }));
    await until(
      () => locks.inspect('dead-3'),
      (i) => i.queueLength === 1,
    );
    const next = lockService(server(), { claimWindow });
    const waiting = next.acquire('dead-3', { ttl, waitTimeout: 20_000 });
    await until(
      () => locks.inspect('dead-3'),
      (i) => i.queueLength === 2,
    );

    // Release and abort in the same tick: Redis runs the release (granting the first waiter), and the
    // first waiter's cancel reaches Redis only after it, so the grant must be passed on by the cancel.
    const releasedAt = performance.now();
    const released = holder.release();
    controller.abort();
    await released;
    const lease = await waiting;
    expect(elapsedSince(releasedAt)).toBeLessThan(SLACK_MS);
    expect((await aborted).error).toMatchObject({ code: 'LOCK_ABORTED' });
    await lease.release();
  }, 30_000);

  it('stalled past its claim window and then timed out: the next waiter waits one claim window; the stalled one never holds', async () => {
    const locks = lockService(server(), { claimWindow });
    const agent = await readyAgent();
    const holder = await locks.acquire('dead-4', { ttl });
    queue(agent, 'dead-4', 1_500);
    await until(
      () => locks.inspect('dead-4'),
      (i) => i.queueLength === 1,
    );
    const next = lockService(server(), { claimWindow });
    const waiting = next.acquire('dead-4', { ttl, waitTimeout: 20_000 });
    await until(
      () => locks.inspect('dead-4'),
      (i) => i.queueLength === 2,
    );
    // Both waiters' services listen: the frozen one is frozen while subscribed (docs/protocol.md,
    // "The first wait").
    await listening(server(), agentInstance(agent), next);

    agent.pause();
    const releasedAt = performance.now();
    await holder.release();
    const lease = await waiting;
    const delay = elapsedSince(releasedAt);
    // Keep it frozen past its own waitTimeout, then let it run: it must give up, not take the lock.
    await stall(1_600 - elapsedSince(releasedAt));
    agent.resume();
    const verdict = await agent.next((m) => m.id === 'w1', 10_000);

    expect(delay).toBeLessThanOrEqual(claimWindow + SLACK_MS);
    expect(verdict).toMatchObject({ type: 'failed', code: 'LOCK_TIMEOUT' });
    expect((await locks.inspect('dead-4')).holder).not.toBeNull(); // still the second waiter's
    await lease.release();
    await agent.stop();
  }, 30_000);
});

describe('a holder and the head of the line both crash (default claimWindow of 2 000 ms)', () => {
  it("the next live waiter is served within the holder's ttl plus its own claim window (its ttl), not the service's", async () => {
    const key = 'crash-both';
    const shortTtl = 600;
    const start = async () => {
      const agent = spawnWorker<AgentMessage>(workerPath('lock-agent'), { url: server().url });
      await agent.next((m) => m.type === 'ready');
      return agent;
    };
    const [holder, head] = await Promise.all([start(), start()]);
    const locks = lockService(server());
    try {
      holder.send({ type: 'acquire', id: 'h', key, ttl: shortTtl });
      await holder.next((m) => m.type === 'granted');
      const heldFrom = performance.now();
      head.send({ type: 'acquire', id: 'w', key, ttl: shortTtl, waitTimeout: 20_000 });
      await until(
        () => locks.inspect(key),
        (info) => info.queueLength === 1,
      );
      const waiting = locks.acquire(key, { ttl: shortTtl, waitTimeout: 20_000 });
      await until(
        () => locks.inspect(key),
        (info) => info.queueLength === 2,
      );
      await Promise.all([head.kill(), holder.kill()]);

      const lease = await waiting;
      const servedAfter = elapsedSince(heldFrom);
      // Its ttl (600) and then its own window (600, the smaller of claimWindow and its ttl): about 1 200 ms
      // after the grant. With the service's 2 000 ms window it was about 2 600 ms. 800 ms of SLACK_MS for a
      // busy machine still tells the two apart.
      expect(servedAfter).toBeGreaterThanOrEqual(shortTtl - SLACK_MS);
      expect(servedAfter).toBeLessThan(2 * shortTtl + 800);
      await lease.release();
    } finally {
      await Promise.all([head.kill(), holder.kill()]);
    }
  }, 30_000);
});
