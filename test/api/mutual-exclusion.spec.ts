import { describe, expect, it } from '@jest/globals';
import { spawnWorker, workerPath } from '../support/processes';
import { useRedis } from '../support/redis-server';

const server = useRedis();

describe('mutual exclusion', () => {
  it('4 processes x 8 tasks x 50 non-atomic increments under the lock lose no update', async () => {
    const processes = 4;
    const tasks = 8;
    const iterations = 50;
    const admin = server().client();
    // On a server of REDIS_URL (jest.config.mjs) an earlier run may have left its count behind.
    await admin.del('mutex:counter');
    const workers = Array.from({ length: processes }, () =>
      spawnWorker<{ type: string; grants?: Array<[number, number]> }>(workerPath('counter'), {
        url: server().url,
        key: 'mutex',
        counter: 'mutex:counter',
        tasks,
        iterations,
      }),
    );
    const results = await Promise.all(workers.map((w) => w.next((m) => m.type === 'done', 120_000)));
    await Promise.all(workers.map((w) => w.stop()));

    const total = processes * tasks * iterations;
    expect(Number(await admin.get('mutex:counter'))).toBe(total);
    // Every grant read a distinct counter value: no two holders ever overlapped.
    const seen = results.flatMap((r) => r.grants ?? []).map(([position]) => position);
    expect(new Set(seen).size).toBe(total);
    await admin.del('mutex:counter');
  }, 180_000);
});
