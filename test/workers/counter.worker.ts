// Contending process for the mutual-exclusion and fencing properties: `tasks` concurrent loops, each
// `iterations` times doing a deliberately non-atomic read-modify-write of one counter under the lock.
// The counter's value read under the lock is the grant's global position, reported with its fence.

import Redis from 'ioredis';
import { LockService } from '../../lib/core';
import { lockClient } from '../support/lock-clients';
import { ready, send, workerArgs } from '../support/worker-runtime';

interface Args {
  url: string;
  key: string;
  counter: string;
  tasks: number;
  iterations: number;
  /** Every n-th grant of a task is abandoned (never released) so the next holder takes over on expiry. */
  abandonEvery?: number;
  abandonTtl?: number;
  /**
   * A stall longer than this before a grant is confirmed loses it (and the work done under it may then
   * overlap the next holder's: the documented limit). Default: the library's 2 000 ms, which a busy
   * machine keeps; a test that wants quick takeovers passes a shorter one it can afford.
   */
  claimWindow?: number;
}

const args = workerArgs<Args>();
const redis = new Redis(args.url);
redis.on('error', () => {});
// The lock on the run's client library (LOCK_TEST_CLIENT); the counter on ioredis.
const lock = lockClient(args.url);
const locks = new LockService(lock.client, {
  claimWindow: args.claimWindow,
  defaults: { waitTimeout: 60_000 },
});

/** Reads, yields to the event loop (so other tasks in this process run), then writes. */
async function increment(): Promise<number> {
  const value = Number((await redis.get(args.counter)) ?? '0');
  await new Promise((resolve) => setImmediate(resolve));
  await redis.set(args.counter, String(value + 1));
  return value;
}

async function task(): Promise<Array<[number, number]>> {
  const grants: Array<[number, number]> = [];
  for (let i = 1; i <= args.iterations; i++) {
    if (args.abandonEvery && i % args.abandonEvery === 0) {
      const lease = await locks.acquire(args.key, { ttl: args.abandonTtl ?? 200, renew: false });
      grants.push([await increment(), lease.fence]);
      continue; // never released: the next holder gets the lock when this one expires
    }
    await locks.using(args.key, async (lease) => {
      grants.push([await increment(), lease.fence]);
    });
  }
  return grants;
}

ready();
Promise.all(Array.from({ length: args.tasks }, task)).then(async (results) => {
  send({ type: 'done', grants: results.flat() });
  await locks.close();
  lock.close();
  redis.disconnect();
});
