import { describe, expect, it } from '@jest/globals';
import { elapsedSince, lockService, until } from '../support/lock-fixtures';
import { spawnWorker, workerPath } from '../support/processes';
import { useRedis } from '../support/redis-server';
import type { AgentMessage } from '../workers/lock-agent.worker';

const server = useRedis();

describe('holder crash', () => {
  it('a holder killed with SIGKILL is replaced within its TTL plus one claim window', async () => {
    const ttl = 1_500;
    const claimWindow = 300;
    const holder = spawnWorker<AgentMessage>(workerPath('lock-agent'), { url: server().url, claimWindow });
    await holder.next((m) => m.type === 'ready');
    holder.send({ type: 'acquire', id: 'h', key: 'crash', ttl, renew: true });
    const held = await holder.next((m) => m.type === 'granted');

    const locks = lockService(server(), { claimWindow });
    const waiting = locks.acquire('crash', { ttl, waitTimeout: 10_000 });
    await until(
      () => locks.inspect('crash'),
      (info) => info.queueLength === 1,
    );
    await holder.kill();
    const killedAt = performance.now();
    const lease = await waiting;
    const replacedAfter = elapsedSince(killedAt);

    expect(replacedAfter).toBeLessThanOrEqual(ttl + claimWindow);
    expect(lease.fence).toBeGreaterThan(held.fence as number);
    await lease.release();
  }, 30_000);
});
