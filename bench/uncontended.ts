// Uncontended acquire + release against the physical floor (SET NX PX + a Lua compare-and-delete on the
// same connection), in one run on one throwaway redis-server. Usage: npm run bench:uncontended
import Redis from 'ioredis';
import type * as Library from '../lib';
import { startRedis } from './redis-server';

// The built package (npm run build), as users run it.
const { LockService }: typeof Library = require('../dist');

const ITERATIONS = Number(process.env.ITERATIONS ?? 5_000);
const ROUNDS = 5;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function time(fn: () => Promise<void>): Promise<number> {
  for (let i = 0; i < 200; i++) await fn(); // warm-up
  const started = performance.now();
  for (let i = 0; i < ITERATIONS; i++) await fn();
  return ((performance.now() - started) * 1000) / ITERATIONS; // µs per acquire + release
}

async function main(): Promise<void> {
  const redis = await startRedis();
  const client = new Redis(redis.port);
  const locks = new LockService(client);
  client.defineCommand('floorRelease', {
    numberOfKeys: 1,
    lua: "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
  });
  const floorRelease = (client as unknown as { floorRelease(k: string, v: string): Promise<number> })
    .floorRelease;
  let n = 0;
  const floor = async () => {
    const token = String(++n);
    await client.set('floor', token, 'PX', 30_000, 'NX');
    await floorRelease.call(client, 'floor', token);
  };
  const ours = async () => {
    const lease = await locks.acquire('bench');
    await lease.release();
  };
  const floorTimes: number[] = [];
  const ourTimes: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    floorTimes.push(await time(floor));
    ourTimes.push(await time(ours));
  }
  const f = median(floorTimes);
  const o = median(ourTimes);
  console.log(`uncontended acquire+release, median of ${ROUNDS} rounds x ${ITERATIONS}:`);
  console.log(`  raw floor (SET NX PX + Lua release): ${f.toFixed(1)} µs`);
  console.log(
    `  nestjs-redis-lock:                   ${o.toFixed(1)} µs  (${(o / f).toFixed(2)}x the floor)`,
  );
  await locks.close();
  client.disconnect();
  await redis.stop();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
