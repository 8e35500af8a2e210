// Contending process for the read-write lock's properties across processes: `callers` concurrent loops,
// each taking the key `rounds` times in its mode. Holders count themselves into two counters in Redis
// as they start (readers `<counter>:r`, writers `<counter>:w`) and check the other side's: a writer must
// find itself alone and no reader in; a reader no writer in. Each side increments before it looks, so
// any overlap is seen by at least one of the two.

import { setTimeout as delay } from 'node:timers/promises';
import Redis from 'ioredis';
import { LockService } from '../../lib/core';
import { onMessage, ready, send, workerArgs } from '../support/worker-runtime';

interface Args {
  url: string;
  key: string;
  counter: string;
  /** Each caller's mode, in turn: callers[i] is caller i's. */
  modes: Array<'read' | 'write'>;
  rounds: number;
  holdMs: number;
}

const args = workerArgs<Args>();
const redis = new Redis(args.url);
redis.on('error', () => {});
const locks = new LockService(redis, { defaults: { waitTimeout: 60_000 } });
const readers = `${args.counter}:r`;
const writers = `${args.counter}:w`;

async function caller(
  mode: 'read' | 'write',
): Promise<{ overlaps: number; mostReaders: number; fences: number[] }> {
  let overlaps = 0;
  let mostReaders = 0;
  const fences: number[] = [];
  for (let i = 0; i < args.rounds; i++) {
    await locks.using(
      args.key,
      async (lease) => {
        fences.push(lease.fence);
        if (mode === 'write') {
          const inside = await redis.incr(writers);
          if (inside !== 1 || Number(await redis.get(readers)) !== 0) overlaps++;
          await delay(args.holdMs);
          await redis.decr(writers);
        } else {
          const inside = await redis.incr(readers);
          mostReaders = Math.max(mostReaders, inside);
          if (Number(await redis.get(writers)) !== 0) overlaps++;
          await delay(args.holdMs);
          await redis.decr(readers);
        }
      },
      { mode },
    );
  }
  return { overlaps, mostReaders, fences };
}

onMessage(async (message: { type: string }) => {
  if (message.type !== 'go') return;
  const results = await Promise.all(args.modes.map(caller));
  send({
    type: 'done',
    overlaps: results.reduce((sum, r) => sum + r.overlaps, 0),
    mostReaders: Math.max(...results.map((r) => r.mostReaders)),
    fences: results.flatMap((r) => r.fences),
  });
  await locks.close();
  redis.disconnect();
});

ready();
