/**
 * What a lock key built from request data costs Redis once its lock is gone: `used_memory` before and
 * right after N distinct keys were each taken and released once, and again once the fence counters
 * (the only key a lock leaves) have expired, a minute and a few seconds later. Ids of 8 and of 1,000
 * characters, N = 1,000 and 100,000. One throwaway redis-server per case.
 *
 *   npm run build && tsx bench/key-memory.ts [--quick]   (--quick: N = 1,000 only)
 */
import { resolve } from 'node:path';
import Redis from 'ioredis';
import type * as Library from '../lib';
import { startRedis } from './redis-server';

const { LockService }: typeof Library = require(
  process.env.BENCH_DIST ? resolve(process.env.BENCH_DIST) : '../dist',
);

const quick = process.argv.includes('--quick');
/** Calls in flight at once: enough to keep the server busy, as concurrent requests would. */
const IN_FLIGHT = 64;

async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  return Number(/^used_memory:(\d+)/m.exec(info)?.[1]);
}

async function measure(count: number, idLength: number): Promise<Record<string, number>> {
  const server = await startRedis();
  const client = new Redis({ port: server.port });
  const probe = new Redis({ port: server.port });
  const locks = new LockService(client);
  try {
    await (await locks.acquire('warm')).release();
    const before = await usedMemory(probe);
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < count; i = next++) {
        const id = String(i).padStart(idLength, '0');
        await (await locks.acquire(`item:${id}`)).release();
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    const after = await usedMemory(probe);
    const keys = await probe.dbsize();
    const ttl = await probe.pttl(`lock:{item:${'0'.repeat(idLength)}}:fence`);
    // Expired keys go as Redis' active expiry samples them: wait out the counter, then until it has.
    await new Promise((r) => setTimeout(r, 61_000));
    const until = Date.now() + 30_000;
    while ((await probe.dbsize()) > 1 && Date.now() < until) await new Promise((r) => setTimeout(r, 500));
    const later = await usedMemory(probe);
    return {
      count,
      idLength,
      keysLeft: keys,
      fenceTtlMs: ttl,
      bytesPerKey: Math.round((after - before) / count),
      keysAfterExpiry: await probe.dbsize(),
      bytesPerKeyAfterExpiry: Math.round((later - before) / count),
    };
  } finally {
    await locks.close();
    client.disconnect();
    probe.disconnect();
    await server.stop();
  }
}

async function main(): Promise<void> {
  const cases: Array<[number, number]> = [
    [1_000, 8],
    [1_000, 1_000],
    ...(quick ? [] : ([[100_000, 8]] as Array<[number, number]>)),
  ];
  const rows = await Promise.all(cases.map(([count, idLength]) => measure(count, idLength)));
  for (const row of rows) console.log(JSON.stringify(row));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
