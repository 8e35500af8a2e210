// What keeps a quorum's lines to callers who can still use their turn, as on one server: a deadline ends
// a waiter's wait by that deadline, and a request whose client gave up leaves every node's line, with
// nothing run for it. (A quorum has no door: docs/guarantees.md, "Several masters", says why.)
import http from 'node:http';
import { describe, expect, it } from '@jest/globals';
import { LockTimeoutError } from '../../lib/core';
import { ran, startLockedApp } from '../nest/locked-routes.fixture';
import { SLACK_MS, watchEventLoop } from '../support/event-loop';
import { outcome, until } from '../support/lock-fixtures';
import { useQuorum } from './quorum-fixtures';

const quorum = useQuorum(3);

/** How many wait in the key's line on each node (quorum-node.ts). */
const lines = (key: string) =>
  Promise.all(quorum().servers.map((server) => server.client().zcard(`lock:{${key}}:l`)));

describe('quorum: deadlines and closed requests reach its waiters', () => {
  it("a deadline ends a waiter's wait by that deadline, and the waiter leaves every node's line", async () => {
    const [holding, waiting] = [quorum().service(), quorum().service()];
    const key = 'q:overload:deadline';
    const holder = await holding.acquire(key, { ttl: 60_000 });
    const loop = watchEventLoop();
    const deadline = Date.now() + 600;
    const { error } = await outcome(waiting.acquire(key, { deadline, waitTimeout: 30_000 }));
    const settled = Date.now();
    loop.stop();
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect(settled).toBeLessThanOrEqual(deadline + SLACK_MS + loop.worst());
    await until(
      () => lines(key),
      (lengths) => lengths.every((length) => length === 0),
    );
    await holder.release();
  });

  it("a request whose client gave up leaves every node's line, and nothing runs for it", async () => {
    ran.length = 0;
    const [url, ...more] = quorum().urls();
    // The README's shape: a route with no lock calling a @Locked service method (stock:<0>).
    const { locks, port } = await startLockedApp(url, 'express', { url: [url, ...more] });
    const holder = await locks.acquire('stock:1', { ttl: 60_000 });
    const request = http.request({ host: '127.0.0.1', port, path: '/orders/1/reserve', method: 'POST' });
    const settled = new Promise((resolve) => {
      request.on('response', resolve);
      request.on('error', resolve);
    });
    request.end();
    await until(
      () => lines('stock:1'),
      (lengths) => lengths.every((length) => length === 1),
    );
    // Its wait is two minutes long: the waiter leaves because the client closed the connection.
    request.destroy();
    await settled;
    await until(
      () => lines('stock:1'),
      (lengths) => lengths.every((length) => length === 0),
    );
    await holder.release();
    const next = await locks.acquire('stock:1', { waitTimeout: 5_000 });
    expect(next.fence).toBeGreaterThan(holder.fence);
    await next.release();
    expect(ran).toEqual([]);
  });
});
