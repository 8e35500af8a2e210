// A client that gives up while its request waits for a lock, over real HTTP on Express and Fastify: the
// request's waiter leaves the line when the connection closes (not at its waitTimeout), and nothing runs
// for it once the holder lets go. By default, with no setting, for every locked call made while serving
// the request: a @Locked handler, a @LockedRoute, a @Locked service method called by either or by a route
// with no lock of its own (after an await), and LockService.using called by a route. Where the module is
// told not to follow requests, and for work a request left running after it was answered, the body runs
// after the client left.
import http from 'node:http';
import { describe, expect, it } from '@jest/globals';
import type { RedisLockModuleOptions } from '../../lib';
import { until } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';
import { type Platform, ran, startLockedApp } from './locked-routes.fixture';

const server = useRedis();

const start = (platform: Platform, extras: Partial<RedisLockModuleOptions> = {}) =>
  startLockedApp(server().url, platform, extras);

/**
 * A POST with a JSON body (read by Express's or Fastify's parser before the route runs, across the body's
 * stream events) whose client gives up when told to (its socket is destroyed, as a client timeout does).
 */
function post(port: number, path: string): { giveUp: () => void; settled: Promise<unknown> } {
  const body = JSON.stringify({ note: 'x'.repeat(64 * 1024) });
  const request = http.request({
    host: '127.0.0.1',
    port,
    path,
    method: 'POST',
    headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
  });
  const settled = new Promise((resolve) => {
    request.on('response', resolve);
    request.on('error', resolve);
  });
  request.end(body);
  return { giveUp: () => request.destroy(), settled };
}

/**
 * An app whose lock `c.key` is held by the test, a request to `c.path` waiting in its line, and that
 * request's client gone.
 */
async function leftWhileWaiting(
  platform: Platform,
  c: { path: string; key: string; extras: Partial<RedisLockModuleOptions> },
) {
  ran.length = 0;
  const { locks, port } = await start(platform, c.extras);
  const holder = await locks.acquire(c.key);
  const request = post(port, c.path);
  await until(
    () => locks.inspect(c.key),
    (info) => info.queueLength === 1,
  );
  request.giveUp();
  await request.settled;
  return { locks, holder };
}

const cases = [
  { what: 'a @Locked handler', path: '/orders/1/pay', key: 'order:1', body: 'handler 1', extras: {} },
  { what: 'a @LockedRoute', path: '/orders/1/ship', key: 'shipment:1', body: 'route 1', extras: {} },
  {
    what: 'a @Locked service method called by a @Locked handler',
    path: '/orders/3/settle',
    key: 'stock:3',
    body: 'service 3',
    extras: {},
  },
  {
    what: "a @Locked service method reached from a route with no lock (the README's shape)",
    path: '/orders/1/reserve',
    key: 'stock:1',
    body: 'service 1',
    extras: {},
  },
  {
    what: 'LockService.using called by a route with no lock',
    path: '/orders/1/count',
    key: 'count:1',
    body: 'using 1',
    extras: {},
  },
  {
    what: 'a @Locked service method, with requests: true (the default, named)',
    path: '/orders/4/reserve',
    key: 'stock:4',
    body: 'service 4',
    extras: { requests: true },
  },
];

describe.each<Platform>(['express', 'fastify'])(
  'on %s, a client that gives up while it waits',
  (platform) => {
    it.each(cases)('$what: leaves the line when it closes, and nothing runs for it', async (c) => {
      const { locks, holder } = await leftWhileWaiting(platform, c);
      // The waiter leaves as the connection closes: its waitTimeout is 2 minutes off.
      await until(
        () => locks.inspect(c.key),
        (info) => info.queueLength === 0,
      );
      await holder.release();
      // The lock is free again for the next caller, and nothing ran for the one that left.
      const next = await locks.acquire(c.key, { waitTimeout: 2_000 });
      expect(next.fence).toBeGreaterThan(holder.fence);
      await next.release();
      expect(ran).toEqual([]);
    });

    it.each([
      {
        what: 'requests: false, a @Locked handler',
        path: '/orders/2/pay',
        key: 'order:2',
        body: 'handler 2',
        extras: { requests: false },
      },
      {
        what: 'requests: false, a service method reached from a route with no lock',
        path: '/orders/2/reserve',
        key: 'stock:2',
        body: 'service 2',
        extras: { requests: false },
      },
    ])('$what: the waiter stays in line and its body runs after the client left', async (c) => {
      const { holder } = await leftWhileWaiting(platform, c);
      await holder.release();
      await until(
        async () => ran,
        (bodies) => bodies.includes(c.body),
      );
    });
  },
);

describe.each<Platform>(['express', 'fastify'])('on %s, work a request left running', (platform) => {
  it('no longer serves it once it is answered: its client leaving does not end its wait', async () => {
    ran.length = 0;
    const { locks, port } = await start(platform);
    const holder = await locks.acquire('stock:5');
    const request = post(port, '/orders/5/later');
    // Answered at once; the service's call it left behind joins the line after that.
    await request.settled;
    await until(
      () => locks.inspect('stock:5'),
      (info) => info.queueLength === 1,
    );
    request.giveUp();
    await holder.release();
    await until(
      async () => ran,
      (bodies) => bodies.includes('service 5'),
    );
    expect(ran).toEqual(['service 5']);
  });
});
