// Contending process for the multi-key property: `tasks` concurrent loops, each doing random transfers
// between two of `accounts` accounts under using([from, to]). The transfer is a deliberately non-atomic
// read-modify-write of both balances, so any overlap of two holders on an account loses money. Each
// holder also counts itself in and out of a per-account Redis counter: a count above 1 is two holders.

import Redis from 'ioredis';
import { LockError, LockService } from '../../lib/core';
import { ready, send, workerArgs } from '../support/worker-runtime';

interface Args {
  url: string;
  accounts: number;
  tasks: number;
  /** Transfers per task. */
  transfers: number;
  waitTimeout: number;
  seed: number;
}

const args = workerArgs<Args>();
const redis = new Redis(args.url);
redis.on('error', () => {});
const locks = new LockService(redis, { defaults: { ttl: 5_000, waitTimeout: args.waitTimeout } });

const account = (i: number) => `account:${i}`;
const balance = (i: number) => `bank:balance:${i}`;
const inside = (i: number) => `bank:inside:${i}`;

/** A small seeded generator, so a failing run can be replayed. */
function generator(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
}

interface Outcome {
  done: Array<[from: number, to: number, amount: number]>;
  failed: string[];
  overlaps: number;
  /** Longest wait for both keys, ms. */
  maxWaitMs: number;
}

async function task(index: number): Promise<Outcome> {
  const random = generator(args.seed * 1_000 + index);
  const out: Outcome = { done: [], failed: [], overlaps: 0, maxWaitMs: 0 };
  for (let n = 0; n < args.transfers; n++) {
    const from = Math.floor(random() * args.accounts);
    const to = (from + 1 + Math.floor(random() * (args.accounts - 1))) % args.accounts;
    const amount = 1 + Math.floor(random() * 10);
    const asked = performance.now();
    try {
      await locks.using([account(from), account(to)], async () => {
        out.maxWaitMs = Math.max(out.maxWaitMs, performance.now() - asked);
        const entered = await Promise.all([redis.incr(inside(from)), redis.incr(inside(to))]);
        if (entered.some((count) => count > 1)) out.overlaps++;
        const [a, b] = (await redis.mget(balance(from), balance(to))).map(Number);
        await new Promise((resolve) => setImmediate(resolve));
        await redis.mset(balance(from), a - amount, balance(to), b + amount);
        await Promise.all([redis.decr(inside(from)), redis.decr(inside(to))]);
      });
      out.done.push([from, to, amount]);
    } catch (error) {
      out.failed.push(error instanceof LockError ? `${error.code}: ${error.message}` : String(error));
    }
  }
  return out;
}

ready();
Promise.all(Array.from({ length: args.tasks }, (_, i) => task(i))).then(async (results) => {
  send({
    type: 'done',
    done: results.flatMap((result) => result.done),
    failed: results.flatMap((result) => result.failed),
    overlaps: results.reduce((sum, result) => sum + result.overlaps, 0),
    maxWaitMs: Math.max(...results.map((result) => result.maxWaitMs)),
  });
  await locks.close();
  redis.disconnect();
});
