// A rolling restart of a quorum's nodes, each restarted empty (no persistence) after the restart rule's
// wait: a renewed lease keeps its majority throughout, because each renewal puts the holder's key back on
// the nodes that lost it while a majority still records the holder; nobody else gets the lock meanwhile.
import { describe, expect, it } from '@jest/globals';
import { sleep } from '../support/event-loop';
import { until } from '../support/lock-fixtures';
import { useQuorum } from './quorum-fixtures';

const quorum = useQuorum(3);

const TTL = 900;

describe('quorum store: a rolling restart of every node', () => {
  it('a renewed lease survives it, and the lock stays its own on every node', async () => {
    const key = 'q:rolling';
    const locks = quorum().service({ nodeTimeout: 100 });
    const other = quorum().service({ nodeTimeout: 100 });
    const lease = await locks.acquire(key, { ttl: TTL, renew: true });
    const owner = `lock:{${key}}`;
    try {
      for (const server of quorum().servers) {
        await server.kill();
        // The restart rule: a node that lost its state stays down for longer than the longest ttl. The
        // length of the outage is the scenario, not a stand-in for synchronisation.
        await sleep(TTL + 100);
        await server.restart();
        expect(lease.signal.aborted).toBe(false);
        expect(await other.tryAcquire(key)).toBeNull();
        // A renewal finds the key missing there and puts it back.
        await until(
          () => server.admin((redis) => redis.get(owner)),
          (holder) => holder === lease.token,
          5_000,
        );
      }
      expect(lease.signal.aborted).toBe(false);
      for (const server of quorum().servers) {
        expect(await server.admin((redis) => redis.get(owner))).toBe(lease.token);
      }
      expect(await other.tryAcquire(key)).toBeNull();
    } finally {
      await lease.release().catch(() => {});
    }
    expect((await other.inspect(key)).held).toBe(false);
  }, 30_000);
});
