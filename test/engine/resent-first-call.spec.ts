// ioredis sends again, on its new connection, a command whose reply a dropped connection lost: a
// caller's first script can then run twice. The second run must say what the first did: a try that took
// the lock reports it taken, never "busy" while Redis keeps the lock under the caller's own token until
// its ttl runs out. The link runs through a TCP proxy that delays every chunk and then drops.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import Redis from 'ioredis';
import { ChaosProxy } from '../../chaos/proxy';
import { LockService } from '../../lib/core';
import { outcome, until } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();
let proxy: ChaosProxy;
let client: Redis;
let locks: LockService;

beforeEach(async () => {
  proxy = new ChaosProxy(server().port);
  const port = await proxy.listen();
  // ioredis' defaults: it resends what a dropped connection left unanswered.
  client = new Redis({ host: '127.0.0.1', port, retryStrategy: () => 10 });
  client.on('error', () => {});
  locks = new LockService(client);
  // Scripts loaded and the connection up before the link slows down.
  await (await locks.acquire('warm-up')).release();
});

afterEach(async () => {
  proxy.setLatency(0);
  await locks.close();
  client.disconnect();
  await proxy.close();
});

describe('a first call ioredis sends again after a reconnect', () => {
  it('tryAcquire that took the lock reports it taken, holding it under the lease it returns', async () => {
    const admin = server().client();
    proxy.setLatency(150);
    const attempt = outcome(locks.tryAcquire('resent', { ttl: 5_000 }));
    // The script has run (its reply is still on the slow way back): the connection drops now.
    await until(
      () => admin.get('lock:{resent}'),
      (owner) => owner !== null,
    );
    proxy.dropAll();
    proxy.setLatency(0);
    const { value: lease, error } = await attempt;
    expect(error).toBeUndefined();
    expect(lease).not.toBeNull();
    expect(await admin.get('lock:{resent}')).toBe(lease?.token);
    await lease?.release();
    expect(await admin.exists('lock:{resent}')).toBe(0);
  });
});
