// A Sentinel failover from a master that still answers (SENTINEL FAILOVER here; in production, sentinels
// that lost sight of a live master). The old master stays a master, with no replica left, until the
// sentinels demote it some seconds later (~10 s on loopback); a client still connected to it has every
// grant refused by `replicas` meanwhile. The lock listens for the sentinels' +switch-master itself and
// moves the client (and its wake-up connection) to the new master at once; its connections to the
// sentinels close with the service. (ioredis' own failoverDetector is not used: an announcement during
// a reconnect makes ioredis end the client for good.)
import { afterEach, describe, expect, it } from '@jest/globals';
import { Test } from '@nestjs/testing';
import type Redis from 'ioredis';
import { type Lease, LockService, type LockServiceOptions, RedisLockModule } from '../../lib';
import { DEFAULT_PREFIX } from '../../lib/options/service-options';
import { redisKeys } from '../../lib/protocol/keys';
import { poll, type SentinelGroup, startSentinelGroup } from '../support/redis-sentinel';
import { adminOn, type RedisServer } from '../support/redis-server';

const REPLICAS = {
  replicas: { count: 1, timeout: 100, unacknowledged: 'requeue' },
} satisfies LockServiceOptions;

/** Clean-up steps of the current test, run in reverse: services close before their group goes. */
const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
});

async function sentinelGroup(): Promise<SentinelGroup> {
  // Two replicas: the sentinels point the other one at the promoted replica during the failover, so the
  // new master has a replica to acknowledge grants while the old one has none.
  const group = await startSentinelGroup({ replicas: 2 });
  cleanup.push(() => group.dispose());
  return group;
}

const role = async (server: RedisServer): Promise<string> =>
  ((await server.admin((redis) => redis.role())) as [string])[0];

/** The server that holds `lease` (its owner key has the lease's token) and answers ROLE master. */
async function masterHolding(group: SentinelGroup, key: string, lease: Lease): Promise<RedisServer> {
  const servers = [group.master, ...group.replicas];
  for (const server of servers) {
    const owner = await server.admin((redis) => redis.get(redisKeys(DEFAULT_PREFIX, key).owner));
    if (owner === lease.token && (await role(server)) === 'master') return server;
  }
  throw new Error(`no master holds ${key} with the lease's token`);
}

/**
 * Connections to a sentinel other than the other sentinels' links (named sentinel-<id>-cmd) and this
 * probe: a client's own, or its failover detector's.
 */
const clientsOn = (port: number): Promise<string[]> =>
  adminOn(port, async (redis) =>
    ((await redis.client('LIST')) as string)
      .split('\n')
      .filter((line) => line !== '' && !/ name=sentinel-/.test(line) && !/ cmd=client\|list /.test(line)),
  );

describe('a failover from a master that still answers', () => {
  it('a plain Sentinel client is moved by the lock: a grant on the new master before the old one is demoted', async () => {
    const group = await sentinelGroup();
    const client = group.client();
    const locks = new LockService(client, REPLICAS);
    cleanup.push(() => locks.close());
    const key = 'detector:moved';
    const before = await locks.acquire(key, { ttl: 2_000 });
    expect((await masterHolding(group, key, before)).port).toBe(group.master.port);
    await before.release();

    const askedAt = performance.now();
    await adminOn(group.sentinels[0].port, (redis) => redis.call('SENTINEL', 'FAILOVER', group.masterName));
    // Until the promotion, grants still land on the old master (its replicas acknowledge them): taken
    // again until one lands elsewhere. After it, the old master has no replica and refuses them.
    const { lease, holder } = await poll(
      async () => {
        const granted = await locks.acquire(key, { ttl: 2_000, waitTimeout: 2_000 });
        const server = await masterHolding(group, key, granted);
        if (server.port !== group.master.port) return { lease: granted, holder: server };
        await granted.release();
        return undefined;
      },
      10_000,
      'a grant on another server than the old master',
    );
    const grantedAfterMs = performance.now() - askedAt;
    // The old master was not demoted yet: the client left it on the sentinels' word alone.
    expect(await role(group.master)).toBe('master');
    const promoted = await group.waitForFailover(group.master);
    expect(holder.port).toBe(promoted.port);
    if (process.env.SENTINEL_REPORT)
      console.log(`sentinel: first grant on the new master after ${grantedAfterMs.toFixed(0)} ms`);
    // Sentinel's own pace (~1-2 s on loopback); loose, since the machine may be loaded.
    expect(grantedAfterMs).toBeLessThan(8_000);
    await lease.release();
  });
});

describe('through the Nest module', () => {
  it('forRoot({ redis: { sentinels, name } }): app.close() leaves no connection to a sentinel', async () => {
    const group = await sentinelGroup();
    const sentinelPorts = group.sentinels.map((sentinel) => sentinel.port);
    const moduleRef = await Test.createTestingModule({
      imports: [RedisLockModule.forRoot({ redis: { ...group.sentinelOptions() }, ...REPLICAS })],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    let closed = false;
    cleanup.push(() => (closed ? Promise.resolve() : app.close()));
    const locks = app.get(LockService);
    expect((locks.client as Redis).options.failoverDetector).toBeFalsy();

    // A caller that waits makes the service open its wake-up channel: a duplicate of the client, followed
    // too.
    const first = await locks.acquire('detector:nest', { ttl: 5_000 });
    const second = locks.acquire('detector:nest', { ttl: 5_000, waitTimeout: 5_000 });
    await poll(
      async () => ((await locks.inspect('detector:nest')).queueLength === 1 ? true : undefined),
      5_000,
      'the second caller in line',
    );
    await first.release();
    await (await second).release();
    for (const port of sentinelPorts) expect((await clientsOn(port)).length).toBeGreaterThan(0);

    await app.close();
    closed = true;
    const left = await poll(
      async () => {
        const lists = await Promise.all(sentinelPorts.map(clientsOn));
        return lists.every((list) => list.length === 0) ? lists : undefined;
      },
      5_000,
      'every connection to the sentinels closed',
    ).catch(async (error: Error) => {
      const lists = await Promise.all(sentinelPorts.map(clientsOn));
      throw new Error(`${error.message}; still open: ${JSON.stringify(lists)}`);
    });
    expect(left.flat()).toEqual([]);
  });
});
