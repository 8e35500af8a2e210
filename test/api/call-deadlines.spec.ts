// The one timer behind every script call's commandTimeout (lib/protocol/call-deadlines.ts), on its own:
// calls settled in any order never expire, the rest expire once, each no earlier than its own deadline.
// (redis-unavailable.spec checks the same against a frozen redis-server.)
import { once } from 'node:events';
import { createConnection, createServer, type Socket } from 'node:net';
import { describe, expect, it } from '@jest/globals';
import { CallDeadlines } from '../../lib/protocol/call-deadlines';
import { deferred } from '../support/deferred';

describe('CallDeadlines', () => {
  it('expires exactly the calls left unsettled, each once and not before its timeout', async () => {
    const timeout = 60;
    const deadlines = new CallDeadlines(timeout);
    const expired: number[] = [];
    const expiredAt: number[] = [];
    const started: number[] = [];
    // 3,000 calls in flight; every one but a few settles, out of order (as replies from several Cluster
    // nodes would), so the queue's head stays pending while most of it has settled.
    const keep = new Set([0, 1_500, 2_999]);
    const allExpired = deferred();
    const entries = Array.from({ length: 3_000 }, (_, i) => {
      started[i] = performance.now();
      return deadlines.start(() => {
        expired.push(i);
        expiredAt[i] = performance.now();
        if (expired.length === keep.size) allExpired.resolve();
      });
    });
    const order = [...entries.keys()].filter((i) => !keep.has(i)).reverse();
    for (const i of order) expect(deadlines.settle(entries[i])).toBe(true);
    for (const i of order) expect(deadlines.settle(entries[i])).toBe(false);

    await allExpired.promise;
    expect(expired.sort((a, b) => a - b)).toEqual([...keep]);
    for (const i of keep) {
      expect(expiredAt[i] - started[i]).toBeGreaterThanOrEqual(timeout - 0.5);
      expect(deadlines.pending(entries[i])).toBe(false);
      expect(deadlines.settle(entries[i])).toBe(false);
    }
  });

  it('a call started after the timer was set still gets its full timeout', async () => {
    const timeout = 80;
    const deadlines = new CallDeadlines(timeout);
    const first = deferred<number>();
    const second = deferred<number>();
    const t0 = performance.now();
    deadlines.start(() => first.resolve(performance.now() - t0));
    const later = deferred();
    setTimeout(later.resolve, timeout / 2);
    await later.promise;
    const t1 = performance.now();
    deadlines.start(() => second.resolve(performance.now() - t1));
    expect(await first.promise).toBeGreaterThanOrEqual(timeout - 0.5);
    expect(await second.promise).toBeGreaterThanOrEqual(timeout - 0.5);
  });

  it('a reply that arrived in time but was read after a stall counts: the process did not look, the server answered', async () => {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const accepted = once(server, 'connection') as Promise<[Socket]>;
    const address = server.address();
    if (typeof address !== 'object' || address === null) throw new Error('no address');
    const client = createConnection(address.port, '127.0.0.1');
    const [serverSide] = await accepted;
    try {
      const timeout = 20;
      const deadlines = new CallDeadlines(timeout);
      const outcome = deferred<'settled' | 'expired'>();
      const deadline = deadlines.start(() => outcome.resolve('expired'));
      client.once('data', () => {
        if (deadlines.settle(deadline)) outcome.resolve('settled');
      });
      // The reply reaches this process's socket at once; then the event loop is held up past the
      // timeout, as a busy machine does to a process it does not schedule.
      serverSide.write('reply');
      const held = performance.now();
      while (performance.now() - held < timeout * 4) {}
      expect(await outcome.promise).toBe('settled');
    } finally {
      client.destroy();
      serverSide.destroy();
      server.close();
    }
  });
});
