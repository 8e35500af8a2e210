import { describe, expect, it } from '@jest/globals';
import { lockService, until } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();

describe('connections', () => {
  it('1,000 waiters over 1,000 keys in one process use at most 4 Redis connections, and all are granted', async () => {
    const holders = lockService(server());
    const keys = Array.from({ length: 1_000 }, (_, i) => `conn:${i}`);
    const held = await Promise.all(keys.map((key) => holders.acquire(key)));

    const waiters = lockService(server(), undefined, { connectionName: 'waiters' });
    const granted: string[] = [];
    const pending = keys.map((key) =>
      waiters.acquire(key, { waitTimeout: 60_000 }).then(async (lease) => {
        granted.push(key);
        await lease.release();
      }),
    );
    const admin = server().client();
    const queued = async () => {
      const replies = (await admin.pipeline(keys.map((k) => ['llen', `lock:{${k}}:q`])).exec()) ?? [];
      return replies.filter(([, length]) => length === 1).length;
    };
    await until(queued, (n) => n === keys.length, 20_000);
    const clients = String(await admin.client('LIST'));
    const waiterConnections = clients.split('\n').filter((line) => line.includes(' name=waiters ')).length;
    expect(waiterConnections).toBeGreaterThanOrEqual(1);
    expect(waiterConnections).toBeLessThanOrEqual(4);

    // Release the holders one key at a time; every waiter is granted in turn.
    for (const lease of held) await lease.release();
    await Promise.all(pending);
    expect(granted).toHaveLength(1_000);
  }, 90_000);
});
