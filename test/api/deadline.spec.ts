// A call's deadline on Redis, across processes: a waiter whose deadline comes leaves the line before it
// (keeping back the key's usual hold), the waiters behind it are served in order, and a wait that could
// not end in time is never begun: one try, no place in line.
import { describe, expect, it } from '@jest/globals';
import { LockTimeoutError } from '../../lib/core';
import { sleep } from '../support/event-loop';
import { lockService, until } from '../support/lock-fixtures';
import { spawnWorker, type Worker, workerPath } from '../support/processes';
import { useRedis } from '../support/redis-server';
import type { AgentMessage } from '../workers/lock-agent.worker';

const server = useRedis();

async function readyAgent(): Promise<Worker<AgentMessage>> {
  const agent = spawnWorker<AgentMessage>(workerPath('lock-agent'), { url: server().url });
  await agent.next((m) => m.type === 'ready');
  return agent;
}

const queueLength = (key: string): Promise<number> => server().client().llen(`lock:{${key}}:q`);

describe('a deadline on Redis', () => {
  it('across processes: the waiter whose deadline comes leaves before it, and those behind are served in order', async () => {
    const key = 'deadline-line';
    const agents = await Promise.all([readyAgent(), readyAgent(), readyAgent()]);
    const holder = await lockService(server()).acquire(key, { ttl: 30_000, renew: true });
    const deadline = Date.now() + 400;
    // In line in this order, each before the next calls; only the first has a near deadline, and
    // every waitTimeout is far beyond it, so only the deadline can end its wait.
    const deadlines = [deadline, Date.now() + 120_000, Date.now() + 120_000];
    for (const [i, agent] of agents.entries()) {
      agent.send({ type: 'acquire', id: `w${i}`, key, waitTimeout: 120_000, deadline: deadlines[i] });
      await until(
        () => queueLength(key),
        (length) => length === i + 1,
      );
    }
    const failed = await agents[0].next((m) => m.type === 'failed', 20_000);
    expect(failed).toMatchObject({ code: 'LOCK_TIMEOUT', byDeadline: true });
    // It gave up on its own, while the lock was still held, and left its place.
    expect(holder.signal.aborted).toBe(false);
    expect(await queueLength(key)).toBe(2);

    await holder.release();
    // The second is granted before the third (which, served first, would never let it in).
    await agents[1].next((m) => m.type === 'granted');
    agents[1].send({ type: 'release', id: 'w1' });
    await agents[1].next((m) => m.type === 'released');
    await agents[2].next((m) => m.type === 'granted');
    agents[2].send({ type: 'release', id: 'w2' });
    await agents[2].next((m) => m.type === 'released');
    for (const agent of agents) agent.kill();
  }, 60_000);

  it('keeps the key’s usual hold back: with less time left than that, one try and no place in line', async () => {
    const key = 'deadline-hold';
    const locks = lockService(server());
    for (let i = 0; i < 3; i++) {
      await locks.using(key, () => sleep(150)); // the work, learnt
    }
    const holder = await lockService(server()).acquire(key, { ttl: 30_000, renew: true });
    const error = await locks
      .acquire(key, { waitTimeout: 60_000, deadline: Date.now() + 100 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect((error as LockTimeoutError).deadline?.holdMs).toBeGreaterThanOrEqual(150);
    expect((error as LockTimeoutError).waitedMs).toBe(0);
    expect(await queueLength(key)).toBe(0);
    await holder.release();
    // Free, the key is taken all the same, and a deadline already past sends nothing at all.
    await (await locks.acquire(key, { deadline: Date.now() + 100 })).release();
    await expect(locks.tryAcquire(key, { deadline: Date.now() - 1 })).resolves.toBeNull();
  });
});
