// A reply that comes back after the lease it grants has run out (a slow link, a stalled process) must
// not run the caller's function under a dead lease: using rejects with LockLostError and gives the lock
// back. (acquire and tryAcquire return the lease, whose signal has already aborted.)
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

  it('acquire resolves, but the lease says at once that it is no longer held', async () => {
    proxy.setLatency(120);
    const lease = await locks.acquire('doa-2', { ttl: 150 });
    expect(lease.signal.aborted).toBe(true);
    expect(lease.signal.reason).toBeInstanceOf(LockLostError);
  });
});
