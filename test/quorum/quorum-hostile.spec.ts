// Hostile set-ups of a quorum: wrong counts, a Cluster client, the same client or server twice, and
// nodes that refuse scripts. Each is refused at construction with a LockUsageError saying what to
// change, or (a refusing node) named in the LockQuorumError once too few nodes answer.
import { describe, expect, it } from '@jest/globals';
import { Cluster, Redis } from 'ioredis';
import { LockQuorumError, LockService, LockUsageError } from '../../lib/core';
import { outcome } from '../support/lock-fixtures';
import { type RedisServer, startRedis } from '../support/redis-server';
import { useQuorum } from './quorum-fixtures';

const quorum = useQuorum(3);

const refused = (build: () => unknown): Error => {
  try {
    build();
  } catch (error) {
    return error as Error;
  }
  throw new Error('not refused');
};

describe('quorum store: hostile set-ups', () => {
  it('refuses 0, 2, 4 and 8 clients, naming the count and what to use', () => {
    for (const count of [0, 2, 4, 8]) {
      const clients = Array.from({ length: count }, (_, i) => new Redis({ port: 1 + i, lazyConnect: true }));
      const error = refused(() => new LockService(clients));
      expect(error).toBeInstanceOf(LockUsageError);
      expect(error.message).toContain(`needs 3, 5 or 7 clients of independent Redis masters, got ${count}`);
      for (const client of clients) client.disconnect();
    }
  });

  it('refuses a Cluster client, the same client twice, two clients of one server, and a non-client', () => {
    const [a, b, c] = quorum().clients();
    const cluster = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true });
    expect(refused(() => new LockService([a, b, cluster as never])).message).toMatch(
      /Quorum client \[2\] is a Cluster client/,
    );
    expect(refused(() => new LockService([a, b, a])).message).toMatch(
      /Quorum clients \[0\] and \[2\] are the same client/,
    );
    const twin = quorum().servers[1].client();
    expect(refused(() => new LockService([a, b, twin])).message).toMatch(
      /Quorum clients \[1\] and \[2\] both reach/,
    );
    expect(refused(() => new LockService([a, b, {} as never])).message).toMatch(
      /Quorum client \[2\] is not a Redis client \(ioredis new Redis/,
    );
    expect(refused(() => new LockService([a, b, c], { nodeTimeout: 20_000 })).message).toMatch(
      /nodeTimeout \(20000 ms\) must be at most a third of defaults.ttl/,
    );
    cluster.disconnect();
    twin.disconnect();
  });

  it('nodes that refuse scripts count as failed, and are named with the reason when too few answer', async () => {
    const refusing: RedisServer[] = await Promise.all(
      [0, 1].map(() =>
        startRedis({ args: ['--rename-command', 'EVAL', '', '--rename-command', 'EVALSHA', ''] }),
      ),
    );
    try {
      const clients = [...quorum().clients(), ...refusing.map((server) => server.client())];
      const locks = new LockService(clients, { nodeTimeout: 100 });
      // Three of five nodes still answer: the lock works.
      const lease = await locks.acquire('qh:refuse');
      await lease.release();
      // One more node stops answering: too few left, and the error says which nodes and why.
      quorum().servers[0].pause();
      const { error } = await outcome(locks.acquire('qh:refuse', { waitTimeout: 500 }));
      expect(error).toBeInstanceOf(LockQuorumError);
      const failures = (error as LockQuorumError).nodes;
      expect(failures.map((f) => f.node).sort()).toEqual(
        [quorum().servers[0], ...refusing].map((s) => `127.0.0.1:${s.port}`).sort(),
      );
      for (const server of refusing) {
        const failure = failures.find((f) => f.node === `127.0.0.1:${server.port}`);
        expect(failure?.reason).toMatch(/unknown command|ERR/i);
      }
      await locks.close();
    } finally {
      quorum().servers[0].resume();
      await Promise.all(refusing.map((server) => server.dispose()));
    }
  });
});
