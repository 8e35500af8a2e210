// A reply that comes back after the lease it grants has run out (a slow link, a stalled process) must
// not run the caller's function under a dead lease, nor be returned: using, acquire and tryAcquire reject
// with LockLostError and give the lock back.
// The link runs through a TCP proxy that delays every chunk.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import Redis from 'ioredis';
import { ChaosProxy } from '../../chaos/proxy';
import { LockLostError, LockService } from '../../lib/core';
import { outcome } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();
let proxy: ChaosProxy;
let client: Redis;
let locks: LockService;

beforeEach(async () => {
  proxy = new ChaosProxy(server().port);
  const port = await proxy.listen();
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
