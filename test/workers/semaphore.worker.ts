// Contending process for the semaphore's properties across processes: `callers` concurrent loops, each
// taking a permit `rounds` times. A holder counts itself into a counter in Redis (INCR) as it starts and
// out (DECR) as it ends: the value INCR returns is how many hold a permit at that moment, by their own
// account, which is what `permits` bounds.

import { setTimeout as delay } from 'node:timers/promises';
import Redis from 'ioredis';
import { LockService } from '../../lib/core';
import { onMessage, ready, send, workerArgs } from '../support/worker-runtime';

interface Args {
  url: string;
  key: string;
  counter: string;
  permits: number;
  callers: number;
  rounds: number;
  holdMs: number;
}

const args = workerArgs<Args>();
const redis = new Redis(args.url);
redis.on('error', () => {});
const locks = new LockService(redis, { defaults: { waitTimeout: 60_000 } });

async function caller(): Promise<{ seen: number[]; fences: number[] }> {
  const seen: number[] = [];
  const fences: number[] = [];
  for (let i = 0; i < args.rounds; i++) {
    await locks.using(
      args.key,
      async (lease) => {
        seen.push(await redis.incr(args.counter));
        fences.push(lease.fence);
        await delay(args.holdMs); // the work done under the permit
        await redis.decr(args.counter);
      },
      { permits: args.permits },
    );
  }
  return { seen, fences };
}

// Every process starts its callers on the same signal, so they contend from the first round.
onMessage(async (message: { type: string }) => {
  if (message.type !== 'go') return;
  const results = await Promise.all(Array.from({ length: args.callers }, caller));
  send({
    type: 'done',
    seen: results.flatMap((r) => r.seen),
    fences: results.flatMap((r) => r.fences),
    perCaller: results.map((r) => r.fences.length),
  });
  await locks.close();
  redis.disconnect();
});

ready();
