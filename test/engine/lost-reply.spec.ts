// A first call (a try, a waiter's join) whose script ran but whose reply was lost on a connection that
// dropped: ioredis sends it again on its new connection, node-redis gives it up. Either way the lock and
// its line end as if it had run once: a join sent again keeps its one place, and a call the client gave
// up leaves nothing behind once the connection is back (a grant passed on, a place left), not for the
// grant's ttl or the line's lifetime. The connection runs through a proxy that reads the commands and
// drops it while the script is the one left unanswered.
import { afterEach, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { type Lease, LockService, RedisUnavailableError } from '../../lib';
import type { RedisClient } from '../../lib/core';
import { CutProxy } from '../support/cut-proxy';
import { lockService, outcome, until } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();
const SCRIPT = /^eval(sha)?$/;

interface Made {
  client: RedisClient;
  close(): void;
}

/** A client through `port` that reconnects at once: the drop is the proxy's, the server is there. */
async function ioredis(port: number): Promise<Made> {
  const client = new Redis({ port, retryStrategy: () => 10 });
  client.on('error', () => {});
  return { client, close: () => client.disconnect() };
}

async function nodeRedis(port: number): Promise<Made> {
  const client = createClient({ socket: { port, reconnectStrategy: () => 10 } });
  client.on('error', () => {});
  await client.connect();
  return { client, close: () => client.destroy() };
}

const opened: { service: LockService; made: Made }[] = [];
afterEach(async () => {
  for (const { service, made } of opened.splice(0)) {
    await service.close();
    made.close();
  }
});

/** A service whose connections run through a new proxy, its scripts loaded already. */
async function throughProxy(connect: (port: number) => Promise<Made>): Promise<[LockService, CutProxy]> {
  const proxy = await CutProxy.start(server().port);
  const made = await connect(proxy.port);
  const service = new LockService(made.client);
  opened.push({ service, made });
  for (const permits of [undefined, 2])
    await (await service.acquire(`warm-${permits}`, { permits })).release();
  return [service, proxy];
}

let serial = 0;
const fresh = (name: string) => `${name}-${++serial}`;
const admin = () => server().client();

/** A mutex, and a semaphore whose one permit another service holds. */
const KINDS = [
  { kind: 'a mutex', permits: undefined },
  { kind: 'a semaphore', permits: 1 },
];
const line = (key: string) => `lock:{${key}}:q`;

describe.each(KINDS)('$kind', ({ permits }) => {
  it('ioredis: a join sent again after a reconnect keeps its one place in line', async () => {
    const key = fresh('resent-join');
    const holder = await lockService(server()).acquire(key, { permits });
    const [service, proxy] = await throughProxy(ioredis);
    const dropped = proxy.cutWhilePending(SCRIPT);
    const waiting = outcome(service.acquire(key, { permits, waitTimeout: 20_000 }));
    expect((await dropped).at(-1)).toMatch(SCRIPT);
    // The join went up once on the dropped connection and once more on the new one, and was answered.
    const resent = await until(
      async () => proxy.links.slice(1).find((link) => link.sent.some((name) => SCRIPT.test(name))),
      (link) => link !== undefined && link.answered >= link.sent.findIndex((name) => SCRIPT.test(name)) + 1,
    );
    expect(resent).toBeDefined();
    expect(await admin().lrange(line(key), 0, -1)).toHaveLength(1);
    await holder.release();
    const { value: lease } = await waiting;
    expect(lease).toBeDefined();
    await (lease as Lease).release();
    expect(await admin().llen(line(key))).toBe(0);
  });

  it('node-redis: a join the client gave up leaves the line once the connection is back', async () => {
    const key = fresh('lost-join');
    const holder = await lockService(server()).acquire(key, { permits, ttl: 60_000 });
    const [service, proxy] = await throughProxy(nodeRedis);
    const dropped = proxy.cutWhilePending(SCRIPT);
    const waiting = outcome(service.acquire(key, { permits, waitTimeout: 20_000 }));
    expect((await dropped).at(-1)).toMatch(SCRIPT);
    expect((await waiting).error).toBeInstanceOf(RedisUnavailableError);
    // Long before the holder lets go (60 s) or the waiter's place would expire (20 s and more).
    await until(
      () => admin().llen(line(key)),
      (length) => length === 0,
    );
    await holder.release();
  });
});

/** Holders of `key` on the server: a mutex's owner key, or a semaphore's holders. */
const holders = (key: string, permits: number | undefined) =>
  permits ? admin().zcard(`lock:{${key}}:s`) : admin().exists(`lock:{${key}}`);

describe('node-redis: a first call the client gave up', () => {
  it.each([
    { call: 'tryAcquire', permits: undefined },
    { call: 'acquire', permits: undefined },
    { call: 'acquire', permits: 2 },
  ] as const)(
    '$call (permits: $permits) that took the lock gives it back once the connection is back',
    async ({ call, permits }) => {
      const key = fresh('lost-grant');
      const [service, proxy] = await throughProxy(nodeRedis);
      const dropped = proxy.cutWhilePending(SCRIPT);
      const attempt = outcome(service[call](key, { ttl: 60_000, permits }));
      expect((await dropped).at(-1)).toMatch(SCRIPT);
      expect((await attempt).error).toBeInstanceOf(RedisUnavailableError);
      // The script ran (it drew the key's fence): the grant it made is passed on as soon as the
      // connection is back, not left to its 60 s ttl.
      await until(
        () => admin().exists(`lock:{${key}}:fence`),
        (drawn) => drawn === 1,
      );
      await until(
        () => holders(key, permits),
        (count) => count === 0,
      );
    },
  );
});
