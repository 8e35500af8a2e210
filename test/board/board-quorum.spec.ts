// The lock board over a quorum store (Redlock, five redis-servers): each lock shows its nodes side by
// side, each one's own view, and a node that does not answer says so; waiters are counted.
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { RedisLockBoardModule } from '../../lib';
import { useQuorum } from '../quorum/quorum-fixtures';
import { until } from '../support/lock-fixtures';
import { bootApp } from '../support/nest-apps';

const quorum = useQuorum();

describe('the lock board on a quorum', () => {
  it("shows every node's view side by side, a stopped node as not answering, and the waiters counted", async () => {
    const locks = quorum().service({ nodeTimeout: 200 });
    const other = quorum().service({ nodeTimeout: 200 });
    const app = await bootApp({ imports: [RedisLockBoardModule.forRoot({ lockService: locks })] });

    const held = await locks.acquire('q:board', { ttl: 10_000 });
    const waiting = other.acquire('q:board', { waitTimeout: 30_000 });
    await until(
      () => locks.inspect('q:board'),
      (info) => info.queueLength === 1,
    );
    const [lock] = (await request(app.getHttpServer()).get('/locks/api/locks').expect(200)).body.locks;
    expect(lock).toMatchObject({ key: 'q:board', holder: held.token, queueLength: 1, queue: [] });
    expect(lock.nodes).toHaveLength(5);
    for (const node of lock.nodes) expect(node).toMatchObject({ holder: held.token, queueLength: 1 });
    // The fence is what a majority agreed on; the other nodes may not have recorded it.
    const agreeing = lock.nodes.filter((node: { fence: number }) => node.fence === held.fence);
    expect(agreeing.length).toBeGreaterThanOrEqual(3);

    quorum().servers[4].pause();
    const one = (await request(app.getHttpServer()).get('/locks/api/locks/q%3Aboard').expect(200)).body;
    expect(one.holder).toBe(held.token);
    expect(one.nodes.filter((n: { error?: string }) => n.error !== undefined)).toHaveLength(1);
    expect(one.nodes[4].error).toBeDefined();
    quorum().servers[4].resume();

    await held.release();
    await (await waiting).release();
  });
});
