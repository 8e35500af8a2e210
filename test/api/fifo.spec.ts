import { describe, expect, it } from '@jest/globals';
import { arrivalAndGrants } from '../support/fifo-order';
import { agentInstance, listening, lockService, until } from '../support/lock-fixtures';
import { spawnWorker, workerPath } from '../support/processes';
import { useRedis } from '../support/redis-server';
import type { AgentMessage } from '../workers/lock-agent.worker';

const server = useRedis();

describe('FIFO', () => {
  it('grants follow arrival order, across processes', async () => {
    const locks = lockService(server());
    const agents = [0, 1].map(() =>
      spawnWorker<AgentMessage>(workerPath('lock-agent'), { url: server().url, claimWindow: 500 }),
    );
    await Promise.all(agents.map((a) => a.next((m) => m.type === 'ready')));
    const holder = await locks.acquire('fifo');

    // Ten waiters join one at a time, alternating between the two processes.
    const { arrival, grants } = await arrivalAndGrants(locks, agents, 'fifo', 10, () => holder.release());
    expect(grants).toEqual(arrival);
    await Promise.all(agents.map((a) => a.stop()));
  }, 60_000);

  it('a newcomer never gets the lock while the queue is non-empty, even when the lock itself is free', async () => {
    const locks = lockService(server(), { claimWindow: 200 });
    const agent = spawnWorker<AgentMessage>(workerPath('lock-agent'), {
      url: server().url,
      claimWindow: 200,
    });
    await agent.next((m) => m.type === 'ready');

    // The holder's lease runs out without a release; the queued waiter's process is frozen, so nobody
    // takes the free lock on its behalf until a newcomer shows up.
    await locks.acquire('barge', { ttl: 300, renew: false });
    agent.send({ type: 'acquire', id: 'queued', key: 'barge', waitTimeout: 30_000 });
    await until(
      () => locks.inspect('barge'),
      (info) => info.queueLength === 1,
    );
    // Frozen while it listens (its early join's mark gone): a process
    // frozen before then looks gone once the mark expires (docs/protocol.md, "The first wait").
    await listening(server(), agentInstance(agent));
    agent.pause();
    try {
      const newcomer = lockService(server(), { claimWindow: 200 });
      await until(
        () => newcomer.inspect('barge'),
        (info) => !info.held,
      );
      // Free lock, non-empty queue: try-once must fail, and a waiting newcomer must queue behind.
      expect(await newcomer.tryAcquire('barge')).toBeNull();
      const info = await newcomer.inspect('barge');
      expect(info.held).toBe(true); // the newcomer's attempt handed the lock to the queued waiter
      expect(info.holder).not.toBeNull();
      await expect(newcomer.acquire('barge', { waitTimeout: 100 })).rejects.toMatchObject({
        code: 'LOCK_TIMEOUT',
      });
    } finally {
      agent.resume();
    }
    const granted = await agent.next((m) => m.id === 'queued' && m.type !== 'lost', 10_000);
    expect(granted.type).toBe('granted');
    await agent.stop();
  }, 60_000);
});
