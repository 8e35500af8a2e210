// A call whose script ran but whose reply was lost on a connection that dropped. ioredis sends it again
// on its new connection: the line ends as if it had run once, a join keeping its one place. node-redis
// gives it up and the call fails: what its script took (the lock, or a place in line), or a lock whose
// release was lost, is given back once the client has connected again, never left to its ttl. The connection runs through a proxy that reads
// the commands and drops it while the script is the one left unanswered.
import { afterEach, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { createClient as createClient6 } from 'redis';
import { createClient as createClient4 } from 'redis-4';
import { createClient as createClient5 } from 'redis-5';
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
});

type NodeRedisClient = ReturnType<typeof createClient4 | typeof createClient5 | typeof createClient6>;

/** A node-redis client through `port` that reconnects at once. */
async function nodeRedis(client: NodeRedisClient): Promise<Made> {
  client.on('error', () => {});
  await client.connect();
  // node-redis 4 has no destroy(): its disconnect() closes at once.
  const closing = client as unknown as { destroy?: () => unknown; disconnect(): Promise<unknown> };
  const close = () => (closing.destroy ? closing.destroy() : closing.disconnect().catch(() => {}));
  return { client: client as RedisClient, close: () => void close() };
}

const NODE_REDIS = [
  {
    name: 'node-redis 4',
    connect: (port: number) => nodeRedis(createClient4({ socket: { port, reconnectStrategy: () => 10 } })),
  },
  {
    name: 'node-redis 5',
    connect: (port: number) => nodeRedis(createClient5({ socket: { port, reconnectStrategy: () => 10 } })),
  },
  {
    name: 'node-redis 6',
    connect: (port: number) => nodeRedis(createClient6({ socket: { port, reconnectStrategy: () => 10 } })),
  },
];
const owner = (key: string) => `lock:{${key}}`;
const CALLS = [
  {
    call: 'tryAcquire',
    take: (service: LockService, key: string) => service.tryAcquire(key, { ttl: 60_000 }),
  },
  {
    call: 'acquire',
    take: (service: LockService, key: string) => service.acquire(key, { ttl: 60_000, waitTimeout: 60_000 }),
  },
];

// The lock and the place in line are held for 60 s; each must be free again well before, once the
// client is back (it reconnects every 10 ms, and a give-back is retried at most 500 ms apart).
describe.each(NODE_REDIS)('$name: a call whose reply was lost', ({ connect }) => {
  it.each(CALLS)(
    '$call on a free lock fails, and its grant is given back once reconnected',
    async ({ take }) => {
      const key = fresh('lost-grant');
      const [service, proxy] = await throughProxy(connect);
      const dropped = proxy.cutWhilePending(SCRIPT);
      const attempt = outcome(take(service, key));
      expect((await dropped).at(-1)).toMatch(SCRIPT);
      const { error } = await attempt;
      expect(error).toBeInstanceOf(RedisUnavailableError);
      await until(
        () => admin().exists(owner(key)),
        (held) => held === 0,
        10_000,
      );
      const next = await lockService(server()).tryAcquire(key);
      expect(next).not.toBeNull();
      await next?.release();
    },
  );

  it('release() whose command was lost with its connection fails, and the lock is given back once reconnected', async () => {
    const key = fresh('lost-release');
    const [service, proxy] = await throughProxy(connect);
    const lease = await service.acquire(key, { ttl: 60_000 });
    const dropped = proxy.cutBefore(SCRIPT);
    const released = outcome(lease.release());
    await dropped;
    expect((await released).error).toBeInstanceOf(RedisUnavailableError);
    await until(
      () => admin().exists(owner(key)),
      (held) => held === 0,
      10_000,
    );
  });

  it('acquire behind a holder fails, and its place in line is given back once reconnected', async () => {
    const key = fresh('lost-join');
    const holder = await lockService(server()).acquire(key);
    const [service, proxy] = await throughProxy(connect);
    const dropped = proxy.cutWhilePending(SCRIPT);
    const attempt = outcome(service.acquire(key, { ttl: 60_000, waitTimeout: 60_000 }));
    expect((await dropped).at(-1)).toMatch(SCRIPT);
    expect((await attempt).error).toBeInstanceOf(RedisUnavailableError);
    await until(
      () => admin().llen(line(key)),
      (length) => length === 0,
      10_000,
    );
    expect(await admin().get(owner(key))).toBe(holder.token);
    await holder.release();
    expect(await admin().exists(owner(key))).toBe(0);
  });
});
