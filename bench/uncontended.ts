// Uncontended acquire + release, one process, one key at a time: wall time and this process's CPU per
// call, for this library, redlock 5, redis-semaphore 5 (Mutex) and the physical floor (SET NX PX + a Lua
// compare-and-delete on the same connection), in one run on one throwaway redis-server, interleaved
// over several rounds. Also `using` and `@Locked`'s path (`using` with a function), and acquire + release
// reporting to an OpenTelemetry SDK (metrics to a reader, spans to a processor that drops them): against
// the plain rows, what telemetry costs with and without an SDK. Median of the rounds.
// Usage: npm run bench:uncontended
import { metrics, trace } from '@opentelemetry/api';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, NoopSpanProcessor } from '@opentelemetry/sdk-trace-base';
import Redis from 'ioredis';
import { Mutex } from 'redis-semaphore';
import Redlock from 'redlock';
import type * as Library from '../lib';
import { startRedis } from './redis-server';
import { median } from './stats';

// The built package (npm run build), as users run it; BENCH_DIST: another build of it.
const { LockService }: typeof Library = require(process.env.BENCH_DIST ?? '../dist');

const ITERATIONS = Number(process.env.ITERATIONS ?? 5_000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);

/** Collected only when asked: the SDK's own work per call, without an export loop. */
class QuietReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

const meterProvider = new MeterProvider({ readers: [new QuietReader()] });
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new NoopSpanProcessor()] });

/** Runs `fn` with a real SDK registered, as an application registers it; unregistered after. */
async function withSdk<T>(fn: () => Promise<T>): Promise<T> {
  metrics.setGlobalMeterProvider(meterProvider);
  trace.setGlobalTracerProvider(tracerProvider);
  try {
    return await fn();
  } finally {
    metrics.disable();
    trace.disable();
  }
}

interface Sample {
  wall: number;
  cpu: number;
}

/** µs per call, wall and CPU (user + system of this process). */
async function time(fn: () => Promise<void>): Promise<Sample> {
  for (let i = 0; i < 200; i++) await fn(); // warm-up
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < ITERATIONS; i++) await fn();
  const wall = ((performance.now() - started) * 1000) / ITERATIONS;
  const used = process.cpuUsage(cpu);
  return { wall, cpu: (used.user + used.system) / ITERATIONS };
}

async function main(): Promise<void> {
  const redis = await startRedis();
  const client = new Redis(redis.port);
  const locks = new LockService(client);
  const redlock = new Redlock([client]);
  client.defineCommand('floorRelease', {
    numberOfKeys: 1,
    lua: "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
  });
  const floorRelease = (client as unknown as { floorRelease(k: string, v: string): Promise<number> })
    .floorRelease;
  let n = 0;
  const contenders: Record<string, () => Promise<void>> = {
    'raw floor (SET NX PX + Lua release)': async () => {
      const token = String(++n);
      await client.set('floor', token, 'PX', 30_000, 'NX');
      await floorRelease.call(client, 'floor', token);
    },
    'nestjs-redis-lock acquire + release': async () => {
      const lease = await locks.acquire('bench');
      await lease.release();
    },
    'nestjs-redis-lock using (renewed, reentrant)': () => locks.using('bench-using', () => undefined),
    'nestjs-redis-lock acquire + release, OpenTelemetry SDK': async () => {
      const lease = await locks.acquire('bench-otel', { label: 'bench' });
      await lease.release();
    },
    'redlock 5 acquire + release': async () => {
      const lock = await redlock.acquire(['redlock'], 30_000);
      await lock.release();
    },
    'redis-semaphore Mutex acquire + release': async () => {
      const mutex = new Mutex(client, 'semaphore');
      await mutex.acquire();
      await mutex.release();
    },
  };
  const names = Object.keys(contenders);
  const samples = new Map<string, Sample[]>(names.map((name) => [name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    // Rotated order, so drift in the machine's load is spread over every contender.
    for (let i = 0; i < names.length; i++) {
      const name = names[(i + round) % names.length];
      const run = () => time(contenders[name]);
      samples.get(name)?.push(await (name.endsWith('OpenTelemetry SDK') ? withSdk(run) : run()));
    }
  }
  const figure = (name: string, field: keyof Sample) =>
    median((samples.get(name) ?? []).map((s) => s[field]));
  const semaphore = figure('redis-semaphore Mutex acquire + release', 'cpu');
  const floor = figure('raw floor (SET NX PX + Lua release)', 'wall');
  console.log(`uncontended, median of ${ROUNDS} rounds × ${ITERATIONS}, µs per call:\n`);
  console.log('| | wall | × floor | CPU | × redis-semaphore CPU |');
  console.log('| --- | --- | --- | --- | --- |');
  for (const name of names) {
    const wall = figure(name, 'wall');
    const cpu = figure(name, 'cpu');
    console.log(
      `| ${name} | ${wall.toFixed(1)} | ${(wall / floor).toFixed(2)} | ${cpu.toFixed(1)} | ${(cpu / semaphore).toFixed(2)} |`,
    );
  }
  await locks.close();
  client.disconnect();
  await redis.stop();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
