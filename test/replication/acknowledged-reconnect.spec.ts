// A grant or renewal counts as acknowledged only if a replica has it. Each acknowledged call is a script
// and a WAIT pipelined behind it; here the connection drops between the two (the script ran, its reply
// and the WAIT were lost) and while the WAIT blocks (the replica is stopped), on each major version of
// both client libraries. ioredis sends the unanswered commands again on its new connection, where a WAIT
// that follows no write of that connection returns at once; node-redis gives them up. Either way the
// call must fail or be acknowledged for real.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import Redis5 from 'ioredis';
import Redis6 from 'ioredis-6';
import { createClient as createClient6 } from 'redis';
import { createClient as createClient5 } from 'redis-5';
import { LockNotReplicatedError, LockService, RedisUnavailableError } from '../../lib';
import type { RedisClient } from '../../lib/core';
import { CutProxy } from '../support/cut-proxy';
import { outcome, until } from '../support/lock-fixtures';
import { type RedisServer, startRedis } from '../support/redis-server';

interface Made {
  client: RedisClient;
  close(): void;
}

/** Reconnect at once: the drop is the proxy's, the server is there. */
/**
 * ioredis sends the unanswered commands again once reconnected, so the call ends with a reply and gives
 * back what it was refused. node-redis gives them up: the call fails at once, and the service cancels its
 * ticket once the client has connected again, which frees a grant its script made.
 */
const CLIENTS: { name: string; connect(port: number): Promise<Made> }[] = [
  {
    name: 'ioredis 5',
    connect: async (port) => ioredis(new Redis5({ port, retryStrategy: () => 10 })),
  },
  {
    name: 'ioredis 6',
    connect: async (port) => ioredis(new Redis6({ port, retryStrategy: () => 10 })),
  },
  {
    name: 'node-redis 6',
    connect: (port) => nodeRedis(createClient6({ socket: { port, reconnectStrategy: () => 10 } })),
  },
  {
    name: 'node-redis 5',
    connect: (port) => nodeRedis(createClient5({ socket: { port, reconnectStrategy: () => 10 } })),
  },
];

function ioredis(client: Redis5 | Redis6): Made {
  client.on('error', () => {});
  return { client: client as RedisClient, close: () => client.disconnect() };
}

async function nodeRedis(client: ReturnType<typeof createClient5 | typeof createClient6>): Promise<Made> {
  client.on('error', () => {});
  await client.connect();
  return {
    client: client as RedisClient,
    close: () => {
      client.destroy();
    },
  };
}

let master: RedisServer;
let replica: RedisServer;
let dir: string;

beforeAll(async () => {
  master = await startRedis();
  dir = mkdtempSync(join(tmpdir(), 'lock-replica-'));
  replica = await startRedis({ args: ['--replicaof', '127.0.0.1', String(master.port), '--dir', dir] });
  await until(
    () => replica.admin((a) => a.info('replication')),
    (info) => info.includes('master_link_status:up'),
  );
});

afterAll(async () => {
  await Promise.all([replica.dispose(), master.dispose()]);
  rmSync(dir, { recursive: true, force: true });
});

let serial = 0;
const fresh = (name: string) => `${name}-${++serial}`;
const ownerKey = (key: string) => `lock:{${key}}`;
const onMaster = (key: string) => master.admin((a) => a.get(ownerKey(key)));
const onReplica = (key: string) => replica.admin((a) => a.get(ownerKey(key)));

/** A mutex and a semaphore: each counts its holders on the master its own way. */
const KINDS = [
  {
    kind: 'a mutex',
    options: { permits: undefined },
    holders: (key: string) => master.admin((a) => a.exists(ownerKey(key))),
  },
  {
    kind: 'a semaphore',
    options: { permits: 2 },
    holders: (key: string) => master.admin((a) => a.zcard(`${ownerKey(key)}:s`)),
  },
];

const SCRIPT = /^eval(sha)?$/;
/** The dropped connection carried the script: last, or just before the WAIT it dropped during. */
const ranOnDropped = (sent: string[]) =>
  SCRIPT.test(sent.at(-1) ?? '') || (sent.at(-1) === 'wait' && SCRIPT.test(sent.at(-2) ?? ''));

/** Failed as an acknowledged call may: not replicated, or Redis unreachable meanwhile. */
function failedAsItMay(error: unknown): void {
  expect([LockNotReplicatedError, RedisUnavailableError].some((type) => error instanceof type)).toBe(true);
}

describe.each(CLIENTS)('$name: a dropped connection never acknowledges a write', ({ connect }) => {
  let made: Made;
  let service: LockService;
  let proxy: CutProxy;

  /** A service whose one command connection runs through `proxy`, its scripts loaded already. */
  async function start(key: string): Promise<void> {
    proxy = await CutProxy.start(master.port);
    made = await connect(proxy.port);
    service = new LockService(made.client, { replicas: { count: 1, timeout: 1_500 } });
    await (await service.acquire(`${key}-warm`)).release();
  }

  afterEach(async () => {
    replica.resume();
    await service.close();
    made.close();
  });

  // With the replica running a WAIT hardly blocks, so only the first cut is certain to happen.
  it('dropped between the script and its WAIT with the replica running: refused, or the replica has it', async () => {
    const key = fresh('running');
    await start(key);
    const dropped = proxy.cutBefore('wait');
    const attempt = outcome(service.acquire(key, { ttl: 60_000, waitTimeout: 5_000 }));
    expect((await dropped).at(-1)).toMatch(SCRIPT);
    const { value: lease, error } = await attempt;
    if (lease) {
      expect(await onReplica(key)).toBe(lease.tokens[key]);
      await lease.release();
    } else {
      failedAsItMay(error);
    }
    await until(
      () => onMaster(key),
      (owner) => owner === null,
      10_000,
    );
  });

  // What Redis may see before the drop: the script alone (cut before the WAIT), or both (during it).
  const CUTS = [
    { where: 'between the script and its WAIT', cut: (p: CutProxy) => p.cutBefore('wait') },
    { where: 'while the WAIT blocks', cut: (p: CutProxy) => p.cutWhilePending('wait') },
  ];

  describe.each(CUTS)('dropped $where', ({ cut }) => {
    it.each(KINDS)('with the replica stopped, the grant of $kind is refused and given back', async (kind) => {
      const key = fresh('stopped');
      await start(key);
      // The call under test takes the last permit: one that found none free would queue behind itself.
      const others = kind.options.permits ? [await service.acquire(key, kind.options)] : [];
      replica.pause();
      const dropped = cut(proxy);
      const attempt = outcome(service.acquire(key, { ...kind.options, ttl: 60_000, waitTimeout: 5_000 }));
      expect(ranOnDropped(await dropped)).toBe(true);
      const { value, error } = await attempt;
      expect(value).toBeUndefined();
      failedAsItMay(error);
      // The script ran before the drop, and its grant is given back (refused, on ioredis; cancelled once
      // reconnected, on node-redis) well within its 60 s ttl.
      await until(
        () => kind.holders(key),
        (holders) => holders === others.length,
        10_000,
      );
      replica.resume();
      // Once the client has connected again (node-redis may still be reconnecting).
      for (const lease of others) {
        await until(
          () =>
            lease.release().then(
              () => true,
              () => false,
            ),
          (released) => released,
        );
      }
    });

    it('with the replica stopped, a renewal is not reported acknowledged', async () => {
      const key = fresh('renewal');
      await start(key);
      const lease = await service.acquire(key, { ttl: 5_000, renew: false });
      replica.pause();
      const dropped = cut(proxy);
      const renewal = outcome(lease.extend(60_000));
      expect(ranOnDropped(await dropped)).toBe(true);
      const { value, error } = await renewal;
      expect(value).toBeUndefined();
      failedAsItMay(error);
      replica.resume();
      await lease.release().catch(() => {});
    });
  });
});
