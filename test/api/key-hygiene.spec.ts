import { describe, expect, it } from '@jest/globals';
import type { Lease } from '../../lib/core';
import { lockService, outcome } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();

describe('key hygiene', () => {
  it('after a run with releases, timeouts, aborts and abandoned leases, every key the lock created is gone or has a TTL', async () => {
    const a = lockService(server(), { claimWindow: 100 });
    const b = lockService(server(), { claimWindow: 100 });
    const keys = Array.from({ length: 20 }, (_, i) => `hyg:${i}`);
    // The short-lived callers usually give up, but on a fast turn they may be granted first: then
    // they release, or the calls queued behind them would wait out their waitTimeout.
    const releaseIfGranted = async (lease: Promise<Lease>): Promise<void> => {
      const { value } = await outcome(lease);
      await value?.release();
    };
    await Promise.all(
      keys.flatMap((key) => [
        a.using(key, async () => {}),
        b.using(key, async () => {}),
        releaseIfGranted(b.acquire(key, { waitTimeout: 1 })),
        releaseIfGranted(a.acquire(key, { signal: AbortSignal.timeout(5) })),
      ]),
    );
    // Abandoned (never released) leases expire by themselves.
    await Promise.all(keys.slice(0, 5).map((key) => a.acquire(key, { ttl: 200 })));
    const all = await server().keys('lock:*');
    expect(all.length).toBeGreaterThan(0);
    for (const key of all) {
      // -1: no expiry, the one failure. (-2: expired since it was listed, as the abandoned owners do.)
      const ttl = await server().ttlOf(key);
      expect({ key, expires: ttl !== -1 }).toEqual({ key, expires: true });
    }
    // Nothing but owners, queues and fence counters, all under the prefix with the {key} hash tag; and,
    // while a service's wake connection opens, the mark of its waiters that joined before (a claim
    // window's TTL: docs/protocol.md, "The first wait").
    for (const key of all) expect(key).toMatch(/^lock:(\{hyg:\d+\}(:q|:fence)?|wake:[^:{}]+)$/);
  });
});
