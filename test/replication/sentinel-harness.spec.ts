// Tests of the Sentinel harness itself: the failover suites are only as trustworthy as the group they
// drive, so each promise it makes is checked here against real servers and sentinels.
import { describe, expect, it } from '@jest/globals';
import { poll, useSentinelGroup } from '../support/redis-sentinel';

const POLL_TIMEOUT_MS = 5_000;

/** Resolves once `read` returns `expected`; fails after POLL_TIMEOUT_MS. */
const holds = (read: () => Promise<string | null>, expected: string | null) =>
  poll(
    async () => ((await read()) === expected ? true : undefined),
    POLL_TIMEOUT_MS,
    `the value ${expected}`,
  );

describe('a Sentinel group', () => {
  const group = useSentinelGroup();

  it('starts with the sentinels naming the master, which has the replica attached', async () => {
    expect(await group().currentMaster()).toEqual({ host: '127.0.0.1', port: group().master.port });
    const [role] = (await group().replicas[0].admin((redis) => redis.role())) as [string];
    expect(role).toBe('slave');
    // The master reports the replica's own port (not a proxy's): the port the sentinels promote.
    const info = await group().master.admin((redis) => redis.info('replication'));
    expect(info).toContain(`port=${group().replicas[0].port},state=online`);
  });

  it('a Sentinel client writes to the master, and the write reaches the replica', async () => {
    const client = group().client();
    await client.set('harness:write', 'one');
    expect(await group().master.admin((redis) => redis.get('harness:write'))).toBe('one');
    await holds(() => group().replicas[0].admin((redis) => redis.get('harness:write')), 'one');
  });

  it('after a SIGKILL of the master the replica is promoted and the Sentinel client writes to it', async () => {
    const client = group().client();
    await client.set('harness:before', 'kept');
    // The write must be on the replica before the kill: otherwise the failover may lose it, legitimately.
    await holds(() => group().replicas[0].admin((redis) => redis.get('harness:before')), 'kept');

    const killedAt = performance.now();
    await group().master.kill();
    const promoted = await group().waitForFailover(group().master);
    expect(promoted.port).toBe(group().replicas[0].port);
    // Sentinel's pace with down-after 500 ms: ~1.5-2 s on loopback; 10 s would mean something is stuck.
    expect(performance.now() - killedAt).toBeLessThan(10_000);

    await client.set('harness:after', 'promoted');
    const replica = group().replicas[0];
    expect(await replica.admin((redis) => redis.get('harness:after'))).toBe('promoted');
    expect(await replica.admin((redis) => redis.get('harness:before'))).toBe('kept');
    const [role] = (await replica.admin((redis) => redis.role())) as [string];
    expect(role).toBe('master');
  });
});

describe('a Sentinel group with a replication proxy', () => {
  const group = useSentinelGroup({ replicationProxy: true });

  it('a frozen proxy keeps a write on the master from the replica until it is thawed', async () => {
    const master = group().master;
    const replica = group().replicas[0];
    await master.admin((redis) => redis.set('harness:frozen', 'before'));
    await holds(() => replica.admin((redis) => redis.get('harness:frozen')), 'before');

    group().replicationProxy().freeze();
    try {
      // WAIT is the observable proof: no replica acknowledged the write within 200 ms.
      const acknowledged = await master.admin(async (redis) => {
        await redis.set('harness:frozen', 'after');
        return redis.wait(1, 200);
      });
      expect(acknowledged).toBe(0);
      expect(await replica.admin((redis) => redis.get('harness:frozen'))).toBe('before');
    } finally {
      group().replicationProxy().thaw();
    }
    await holds(() => replica.admin((redis) => redis.get('harness:frozen')), 'after');
    expect(await master.admin((redis) => redis.wait(1, 1_000))).toBe(1);
  });

  it('a replica behind a proxy is promoted too', async () => {
    await group().master.kill();
    const promoted = await group().waitForFailover(group().master);
    expect(promoted.port).toBe(group().replicas[0].port);
    expect(await group().client().set('harness:proxied', 'yes')).toBe('OK');
  });
});
