// A waiter's join whose script ran but whose reply was lost on a connection that dropped, which ioredis
// sends again on its new connection: the line ends as if it had run once, the join keeping its one
// place. The connection runs through a proxy that reads the commands and drops it while the script is
// the one left unanswered.
import { afterEach, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { type Lease, LockService } from '../../lib';
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
