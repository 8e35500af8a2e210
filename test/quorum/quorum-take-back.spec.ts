// A quorum node whose release or cancel was lost with its connection (node-redis gives a command up when
// its connection drops, where ioredis sends it again) is told again once its client has reconnected: it
// lets the lock, or the waiter's place in its line, go then, not at the end of a 60 s ttl. The call
// itself is decided by the other nodes. A node merely stopped (SIGSTOP) loses nothing: what was sent to
// it waits in its socket and runs when it resumes.
import { afterEach, describe, expect, it } from '@jest/globals';
import { createClient } from 'redis';
import { LockAbortedError, LockService, type RedisClient } from '../../lib/core';
import { CutProxy } from '../support/cut-proxy';
import { outcome, until } from '../support/lock-fixtures';
import { useQuorum } from './quorum-fixtures';

const quorum = useQuorum(3);
const SCRIPT = /^eval(sha)?$/;

/** Every node's copy of the lock's owner key, and its line (quorum-node.ts). */
const owner = (key: string) => `lock:{${key}}`;
const line = (key: string) => `${owner(key)}:l`;

const opened: { service: LockService; close(): void }[] = [];
afterEach(async () => {
  for (const { service, close } of opened.splice(0)) {
    await service.close();
    close();
  }
});

/** A service on node-redis clients of the three nodes, the first node's through a new proxy. */
async function throughProxy(): Promise<[LockService, CutProxy]> {
  const [first, ...rest] = quorum().servers;
  const proxy = await CutProxy.start(first.port);
  const clients = [proxy.port, ...rest.map((server) => server.port)].map((port) =>
    createClient({ socket: { port, reconnectStrategy: () => 10 } }),
  );
  for (const client of clients) {
    client.on('error', () => {});
    await client.connect();
  }
  const service = new LockService(clients as unknown as RedisClient[], { nodeTimeout: 500 });
  opened.push({
    service,
    close: () => {
      for (const client of clients) client.destroy();
    },
  });
  // The scripts are loaded on every node, so the call under test is the script the proxy watches for.
  await (await service.acquire('q:take-back:warm')).release();
  return [service, proxy];
}

describe('quorum on node-redis: a node whose release or cancel was lost is told once reconnected', () => {
  it('a release lost on one node frees the lock there once its client is back', async () => {
    const [locks, proxy] = await throughProxy();
    const [cut] = quorum().servers;
    const key = 'q:take-back:release';
    const lease = await locks.acquire(key, { ttl: 60_000 });
    expect(await cut.client().get(owner(key))).toBe(lease.token);
    const dropped = proxy.cutBefore(SCRIPT);
    // The two other nodes are a majority: the release is confirmed without the first one.
    await lease.release();
    await dropped;
    await until(
      () => cut.client().exists(owner(key)),
      (held) => held === 0,
      10_000,
    );
  });

  it("a waiter's cancel lost on one node takes it out of that node's line once its client is back", async () => {
    const [waiting, proxy] = await throughProxy();
    const [cut, ...others] = quorum().servers;
    const key = 'q:take-back:leave';
    const holder = await quorum().service().acquire(key, { ttl: 60_000 });
    const leave = new AbortController();
    const waiter = outcome(waiting.acquire(key, { waitTimeout: 60_000, signal: leave.signal }));
    await until(
      () => Promise.all(quorum().servers.map((server) => server.client().zcard(line(key)))),
      (lengths) => lengths.every((length) => length === 1),
    );
    const dropped = proxy.cutBefore(SCRIPT);
    leave.abort();
    expect((await waiter).error).toBeInstanceOf(LockAbortedError);
    await dropped;
    for (const server of others) {
      await until(
        () => server.client().zcard(line(key)),
        (length) => length === 0,
      );
    }
    await until(
      () => cut.client().zcard(line(key)),
      (length) => length === 0,
      10_000,
    );
    await holder.release();
  });
});
