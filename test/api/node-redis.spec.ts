// The lock on node-redis clients (`redis`), beyond the shared property suites that jest's node-redis
// project runs again on them: what is node-redis' own. A client that was never connected, scripts the
// server has forgotten (NOSCRIPT), Redis' own error replies, the client the service never closes, a
// Sentinel client through a failover, and the server checks and listing on a node-redis Cluster.
import { afterEach, describe, expect, it } from '@jest/globals';
import { createClient, createSentinel } from 'redis';
import {
  isRedisClient,
  LockError,
  LockService,
  type LockService as LockServiceType,
  RedisUnavailableError,
} from '../../lib/core';
import { lockClient, lockClusterClient } from '../support/lock-clients';
import { lockService, outcome, until } from '../support/lock-fixtures';
import { startSentinelGroup } from '../support/redis-sentinel';
import { useRedis } from '../support/redis-server';

const server = useRedis();

const cleanup: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await Promise.resolve(step()).catch(() => {});
});

/** A LockService on a node-redis client of its own, closed after the test (client last). */
function onNodeRedis(options?: ConstructorParameters<typeof LockService>[1]): {
  locks: LockServiceType;
  client: ReturnType<typeof createClient>;
} {
  const made = lockClient(server().url, 'node-redis');
  cleanup.push(made.close);
  const locks = new LockService(made.client, options);
  cleanup.push(() => locks.close());
  return { locks, client: made.client as ReturnType<typeof createClient> };
}

describe('the lock on node-redis', () => {
  it('tells node-redis clients, Clusters and Sentinels by their shape', () => {
    const client = createClient({ url: server().url });
    const sentinel = createSentinel({ name: 'locks', sentinelRootNodes: [{ host: '127.0.0.1', port: 1 }] });
    expect(isRedisClient(client)).toBe(true);
    expect(isRedisClient(sentinel)).toBe(true);
    // A look-alike with the flags but no commands, and a plain object, are neither client.
    expect(isRedisClient({ isOpen: true, isReady: true })).toBe(false);
    expect(isRedisClient({})).toBe(false);
  });

  it('a wait a stalled server never answered ends as RedisUnavailableError, and leaves nothing held', async () => {
    const { locks } = onNodeRedis();
    await (await locks.acquire('warm')).release();
    server().pause();
    const stalled = outcome(locks.acquire('stalled-node-redis', { waitTimeout: 300 }));
    const result = await stalled.finally(() => server().resume());
    expect(result.error).toBeInstanceOf(RedisUnavailableError);
    expect((result.error as Error).message).toMatch(/no reply to the call within its waitTimeout/);
    await until(
      () => locks.inspect('stalled-node-redis'),
      (info) => !info.held && info.queueLength === 0,
    );
  });

  it('a client that was never connected fails each call at once, saying to connect it', async () => {
    const client = createClient({ url: server().url });
    const locks = new LockService(client);
    cleanup.push(() => locks.close());
    const failed = await outcome(locks.acquire('never-connected', { waitTimeout: 5_000 }));
    expect(failed.error).toBeInstanceOf(RedisUnavailableError);
    expect((failed.error as Error).message).toMatch(/await client\.connect\(\)/);
    // Once connected by its owner, the same service works.
    await client.connect();
    cleanup.push(() => client.destroy());
    const lease = await locks.acquire('never-connected');
    await lease.release();
  });

  it('never closes the client it was given', async () => {
    const { locks, client } = onNodeRedis();
    const lease = await locks.acquire('not-closed');
    await lease.release();
    await locks.close();
    expect(client.isOpen).toBe(true);
    expect(await client.ping()).toBe('PONG');
  });

  it('runs its scripts again after SCRIPT FLUSH (NOSCRIPT: EVAL, then EVALSHA again)', async () => {
    const { locks, client } = onNodeRedis();
    const first = await locks.acquire('flushed');
    await first.release();
    await client.sendCommand(['SCRIPT', 'FLUSH']);
    const second = await locks.acquire('flushed');
    expect(second.fence).toBeGreaterThan(first.fence);
    await second.release();
    // The EVAL loaded the script: the next call is an EVALSHA that finds it.
    await server().resetStats();
    const third = await locks.acquire('flushed');
    await third.release();
    const stats = await server().commandStats();
    expect(stats.get('eval') ?? 0).toBe(0);
    expect(stats.get('evalsha')).toBeGreaterThanOrEqual(2);
  });

  it("Redis' own error replies are typed: a lock key of another type is LOCK_REDIS_ERROR", async () => {
    const { locks, client } = onNodeRedis();
    await client.hSet('lock:{typed}', 'field', 'value');
    const failed = await outcome(locks.acquire('typed'));
    expect(failed.error).toBeInstanceOf(LockError);
    expect((failed.error as LockError).code).toBe('LOCK_REDIS_ERROR');
    expect((failed.error as Error).message).toMatch(/WRONGTYPE/);
  });

  it('hands the lock to a waiter on another node-redis client, woken by a push', async () => {
    const holder = onNodeRedis().locks;
    const waiter = onNodeRedis().locks;
    const lease = await holder.acquire('handed');
    const waiting = waiter.acquire('handed', { waitTimeout: 10_000 });
    await until(
      () => holder.inspect('handed'),
      (info) => info.queueLength === 1,
    );
    await lease.release();
    const next = await waiting;
    expect(next.fence).toBeGreaterThan(lease.fence);
    await next.release();
  });

  it('reads the server with INFO (server checks, health) and lists its locks', async () => {
    const { locks } = onNodeRedis();
    const [report] = await locks.checkServers();
    expect(report.server).toBe(`127.0.0.1:${server().port}`);
    expect(report.facts?.role).toBe('master');
    const lease = await locks.acquire('listed');
    const { locks: listed } = await locks.list();
    expect(listed.map((info) => info.key)).toEqual(['listed']);
    await lease.release();
  });

  it('mixes with ioredis services on one Redis: one lock, one line', async () => {
    const onIoredis = lockService(server(), undefined, {});
    const { locks } = onNodeRedis();
    const lease = await onIoredis.acquire('mixed');
    const waiting = locks.acquire('mixed', { waitTimeout: 10_000 });
    await until(
      () => locks.inspect('mixed'),
      (info) => info.queueLength === 1,
    );
    expect(await outcome(locks.tryAcquire('mixed'))).toEqual({ value: null });
    await lease.release();
    const next = await waiting;
    expect(next.fence).toBeGreaterThan(lease.fence);
    await next.release();
  });
});

describe('the lock on a node-redis Sentinel client', () => {
  it('follows the master through a failover: one holder before, a higher fence after', async () => {
    const group = await startSentinelGroup({ replicas: 1 });
    cleanup.push(() => group.dispose());
    const sentinel = createSentinel({
      name: group.masterName,
      sentinelRootNodes: group.sentinelOptions().sentinels,
    });
    sentinel.on('error', () => {});
    await sentinel.connect();
    cleanup.push(() => sentinel.destroy());
    const locks = new LockService(sentinel);
    cleanup.push(() => locks.close());
    const other = new LockService(lockClient(group.master.url, 'node-redis').client);
    cleanup.push(() => other.close());

    const [report] = await locks.checkServers();
    expect(report.server).toBe(`127.0.0.1:${group.master.port}`);
    const lease = await locks.acquire('followed', { ttl: 1_000 });
    const waiting = other.acquire('followed', { waitTimeout: 10_000 });
    await until(
      () => locks.inspect('followed'),
      (info) => info.queueLength === 1,
    );
    await lease.release();
    const handed = await waiting;
    await handed.release();

    // Once the replica has the fence counter and the release (no owner), the master is killed. Killed
    // before the release reached it, the promoted replica would hold the lock for the lease's 30 s ttl.
    await until(
      () =>
        group.replicas[0].admin(async (redis) => ({
          fence: Number(await redis.get('lock:{followed}:fence')),
          owner: await redis.get('lock:{followed}'),
        })),
      ({ fence, owner }) => fence >= handed.fence && owner === null,
    );
    const from = { port: group.master.port };
    await group.master.kill();
    await group.waitForFailover(from);
    const after = await until(
      () => outcome(locks.acquire('followed', { waitTimeout: 1_000 })),
      (result) => result.value !== undefined,
      30_000,
    );
    expect(after.value?.fence).toBeGreaterThan(handed.fence);
    await after.value?.release();
  }, 90_000);
});

describe('the lock on a node-redis Cluster', () => {
  // The shared Cluster suites run on node-redis in its project; here what a Cluster client alone shows.
  it('is recognised as a Cluster: replicas refused, as on ioredis', () => {
    const cluster = lockClusterClient([1, 2, 3], 'node-redis');
    cleanup.push(cluster.close);
    expect(() => new LockService(cluster.client, { replicas: { count: 1, timeout: 50 } })).toThrow(
      /not supported on a Cluster/,
    );
  });
});
