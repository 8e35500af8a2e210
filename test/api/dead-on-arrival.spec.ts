// A reply that comes back after the lease it grants has run out (a slow link, a stalled process) must
// not run the caller's function under a dead lease, nor be returned: using, acquire and tryAcquire reject
// with LockLostError and give the lock back. A reply that never comes (the connection dropped after the
// script ran) must not turn a grant into a refusal when ioredis sends the script again.
// The link runs through a TCP proxy that delays every chunk, and can drop its connections.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import Redis from 'ioredis';
import { ChaosProxy } from '../../chaos/proxy';
import { LockLostError, LockService } from '../../lib/core';
import { outcome, until } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();
let proxy: ChaosProxy;
let client: Redis;
let locks: LockService;

beforeEach(async () => {
  proxy = new ChaosProxy(server().port);
  const port = await proxy.listen();
  // ioredis' defaults: it sends again what a dropped connection left unanswered, once reconnected.
  client = new Redis(port, '127.0.0.1');
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

describe('a grant whose lease ran out on the way', () => {
  it('using rejects with LockLostError instead of running its function under a dead lease', async () => {
    // Each way takes 120 ms: the reply lands 240 ms after the call, past the 150 ms the lease is valid for.
    proxy.setLatency(120);
    let ran = false;
    const result = await outcome(
      locks.using(
        'doa',
        () => {
          ran = true;
        },
        { ttl: 150 },
      ),
    );
    expect(ran).toBe(false);
    expect(result.error).toBeInstanceOf(LockLostError);
  });

  it.each([
    ['acquire', () => locks.acquire('doa-2', { ttl: 150 })],
    ['tryAcquire', () => locks.tryAcquire('doa-2', { ttl: 150 })],
  ])(
    '%s rejects with LockLostError rather than return a lease that is lost already, and gives the lock back',
    async (_, call) => {
      proxy.setLatency(120);
      const result = await outcome(call());
      expect(result.value).toBeUndefined();
      expect(result.error).toBeInstanceOf(LockLostError);
      proxy.setLatency(0);
      const next = await locks.tryAcquire('doa-2');
      expect(next).not.toBeNull();
      await next?.release();
    },
  );
});

// ioredis sends the script again on its new connection, so it runs twice: the second run must say what
// the first did, not "busy" while Redis keeps the lock under the caller's own token until its ttl.
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
