// How long a route's clients wait, learnt from those that gave up, over real HTTP on Express and Fastify.
// Most clients send no deadline; once eight of a route's clients have left while their locked call
// waited, the route's next request that sent none is given the patience they showed: past capacity it
// is answered 503 with a Retry-After while the lock is still held, where it would otherwise wait out its
// waitTimeout (2 minutes here) for a client that will have gone. Another route, a request that sent a
// deadline of its own, and a module that does not follow departures keep their waits.
import http from 'node:http';
import { describe, expect, it } from '@jest/globals';
import type { LockService } from '../../lib';
import { sleep } from '../support/event-loop';
import { until } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';
import { type Platform, ran, startLockedApp } from './locked-routes.fixture';

const server = useRedis();

interface Sent {
  /** The client gives up: its socket is destroyed, as a client timeout does. */
  giveUp: () => void;
  answer: Promise<{ status: number; headers: http.IncomingHttpHeaders } | 'closed'>;
}

function post(port: number, path: string, headers: Record<string, string> = {}): Sent {
  const request = http.request({ host: '127.0.0.1', port, path, method: 'POST', headers });
  const answer = new Promise<{ status: number; headers: http.IncomingHttpHeaders } | 'closed'>((resolve) => {
    request.on('response', (response) => {
      response.resume();
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers }));
    });
    request.on('error', () => resolve('closed'));
  });
  request.end();
  return { giveUp: () => request.destroy(), answer };
}

const queued = (locks: LockService, key: string, length: number) =>
  until(
    () => locks.inspect(key),
    (info) => info.queueLength === length,
  );

/** Eight clients of `path` join `key`'s line (held by the test) and give up there. */
async function impatientClients(locks: LockService, port: number, path: string, key: string): Promise<void> {
  const sent = Array.from({ length: 8 }, () => post(port, path));
  await queued(locks, key, 8);
  for (const client of sent) client.giveUp();
  await Promise.all(sent.map((client) => client.answer));
  await queued(locks, key, 0);
}

describe.each<Platform>(['express', 'fastify'])("on %s, a route's clients that gave up", (platform) => {
  it('set the wait of its next request that sent no deadline: 503 with Retry-After, out of line', async () => {
    ran.length = 0;
    const { locks, port } = await startLockedApp(server().url, platform);
    const holder = await locks.acquire('stock:7', { ttl: 30_000, renew: true });
    await impatientClients(locks, port, '/orders/7/reserve', 'stock:7');

    const answer = await post(port, '/orders/7/reserve').answer;
    expect(answer).toMatchObject({ status: 503 });
    expect((answer as { headers: http.IncomingHttpHeaders }).headers['retry-after']).toMatch(/^\d+$/);
    expect(holder.signal.aborted).toBe(false);
    expect((await locks.inspect('stock:7')).queueLength).toBe(0);
    await holder.release();
    expect(ran).toEqual([]);
  });

  it("leave another route's requests, and a request that sent its deadline, to wait their turn", async () => {
    ran.length = 0;
    const { locks, port } = await startLockedApp(server().url, platform);
    const holder = await locks.acquire('stock:8', { ttl: 30_000, renew: true });
    await impatientClients(locks, port, '/orders/8/reserve', 'stock:8');

    const own = post(port, '/orders/8/reserve', { 'x-request-deadline': String(Date.now() + 60_000) });
    await queued(locks, 'stock:8', 1);
    const counting = await locks.acquire('count:8', { ttl: 30_000, renew: true });
    const other = post(port, '/orders/8/count');
    await queued(locks, 'count:8', 1);
    // Past what the clients that left waited (each left once all eight were in line: well under this):
    // a wait cut by their patience would have ended.
    await sleep(1_000);
    expect((await locks.inspect('stock:8')).queueLength).toBe(1);
    expect((await locks.inspect('count:8')).queueLength).toBe(1);
    await holder.release();
    await counting.release();
    expect(await own.answer).toMatchObject({ status: 201 });
    expect(await other.answer).toMatchObject({ status: 201 });
    expect(ran.sort()).toEqual(['service 8', 'using 8']);
  });

  it('teach nothing where the module does not follow requests (requests: false)', async () => {
    ran.length = 0;
    const { locks, port } = await startLockedApp(server().url, platform, { requests: false });
    const holder = await locks.acquire('stock:9', { ttl: 30_000, renew: true });
    // Not followed, the clients' waiters stay in line after they leave: the ninth is the patient one.
    const sent = Array.from({ length: 8 }, () => post(port, '/orders/9/reserve'));
    await queued(locks, 'stock:9', 8);
    for (const client of sent) client.giveUp();
    await Promise.all(sent.map((client) => client.answer));
    const patient = post(port, '/orders/9/reserve');
    await queued(locks, 'stock:9', 9);
    await holder.release();
    expect(await patient.answer).toMatchObject({ status: 201 });
    expect(ran).toHaveLength(9);
  });
});
