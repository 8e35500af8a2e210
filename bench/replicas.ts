// What the `replicas` option costs per acquisition: the same calls with and without it, against a master
// with one replica attached, next to the raw floor with and without WAIT, so the WAIT round trip itself
// can be told apart from the library's work. Usage: npm run bench:replicas
//
// Every measurement runs once per round, in an order rotated each round, so drift of the machine (other
// load, CPU frequency) spreads over all of them; the figure is the median over the rounds of each
// round's mean time per call (median hand-off, for the hand-offs).
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type Redis from 'ioredis';
import Redlock from 'redlock';
import type * as Library from '../lib';
import { type RedisServer, startRedis } from '../test/support/redis-server';
import { writeAtomically } from './chart';
import { median } from './stats';

// The built package (npm run build), as users run it.
const { LockService }: typeof Library = require('../dist');
type LockService = Library.LockService;

const ITERATIONS = Number(process.env.ITERATIONS ?? 2_000);
const HANDOFFS = Number(process.env.HANDOFFS ?? 300);
const ROUNDS = Number(process.env.ROUNDS ?? 9);
const WARM_UP = 200;
const HAND_OFF_WARM_UP = 20;
/** The first holder's grant, then one per hand-off. */
const HAND_OFF_CALLS = 1 + HAND_OFF_WARM_UP + HANDOFFS;
const REPLICAS = { count: 1, timeout: 50 } as const;
const LEASE_MS = 30_000;
const LINK_TIMEOUT_MS = 20_000;
const ROOT = resolve(__dirname, '..');

const FLOOR_RELEASE =
  "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

/** µs per call of `fn`, after a warm-up. */
async function perCall(fn: () => Promise<void>): Promise<number> {
  for (let i = 0; i < WARM_UP; i++) await fn();
  const started = performance.now();
  for (let i = 0; i < ITERATIONS; i++) await fn();
  return ((performance.now() - started) * 1000) / ITERATIONS;
}

/** Polls until `probe` is true; each probe is a round trip, so this never spins without waiting. */
async function until(probe: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await probe())) {
    if (performance.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms`);
  }
}

/**
 * One key passed back and forth between two services: the holder releases only once the other one's
 * waiter is in the key's queue (seen with inspect()), so every sample is a real hand-off to a waiter,
 * measured from the holder calling release() to the waiter's acquire() resolving. µs, one per hand-off.
 */
async function handOffs(services: readonly [LockService, LockService], key: string): Promise<number[]> {
  const samples: number[] = [];
  let holder = await services[0].acquire(key);
  for (let i = 0; i < HAND_OFF_WARM_UP + HANDOFFS; i++) {
    const from = services[i % 2];
    const to = services[(i + 1) % 2];
    const next = to.acquire(key, { waitTimeout: 5_000 });
    await until(async () => (await from.inspect(key)).queueLength > 0, 5_000, 'the waiter in the queue');
    const started = performance.now();
    const released = holder.release();
    holder = await next;
    const elapsed = (performance.now() - started) * 1000;
    await released;
    if (i >= HAND_OFF_WARM_UP) samples.push(elapsed);
  }
  await holder.release();
  return samples;
}

interface Measurement {
  name: string;
  /** What the row measures, for the table. */
  label: string;
  /** Acquisitions one run makes, warm-up included (to count the WAITs sent per acquisition). */
  calls: number;
  run(): Promise<number>;
}

async function startPair(dir: string): Promise<{ master: RedisServer; replica: RedisServer }> {
  // A full sync writes an RDB into the working dir: keep it in the run's own temp dir. No delay before
  // a diskless sync (the default waits 5 s for more replicas to join).
  const files = (name: string) => [
    '--dir',
    dir,
    '--dbfilename',
    `${name}.rdb`,
    '--repl-diskless-sync-delay',
    '0',
  ];
  const master = await startRedis({ args: files('master') });
  const replica = await startRedis({
    args: [...files('replica'), '--replicaof', '127.0.0.1', String(master.port)],
  });
  await until(
    () => replica.admin(async (redis) => (await redis.info('replication')).includes('master_link_status:up')),
    LINK_TIMEOUT_MS,
    'the replica link up',
  );
  return { master, replica };
}

async function main(): Promise<void> {
  const started = new Date();
  const dir = await mkdtemp(join(tmpdir(), 'nestjs-redis-lock-bench-replicas-'));
  const servers: RedisServer[] = [];
  try {
    const { master, replica } = await startPair(dir);
    servers.push(master, replica);
    const version = await master.admin(
      async (redis) => /redis_version:(\S+)/.exec(await redis.info('server'))?.[1],
    );

    // One connection per service, as separate application instances would have: WAIT waits for every
    // write its connection made, so sharing one would make each service wait for the other's writes.
    const plain = new LockService(master.client());
    const replicated = new LockService(master.client(), { replicas: REPLICAS });
    const handOffPlain = [new LockService(master.client()), new LockService(master.client())] as const;
    const handOffReplicated = [
      new LockService(master.client(), { replicas: REPLICAS }),
      new LockService(master.client(), { replicas: REPLICAS }),
    ] as const;
    const floorClient = master.client();
    const floorWaitClient = master.client();
    const redlock = new Redlock([master.client()]);
    for (const client of [floorClient, floorWaitClient]) {
      client.defineCommand('floorRelease', { numberOfKeys: 1, lua: FLOOR_RELEASE });
    }
    const floorRelease = (client: Redis, key: string, token: string) =>
      (client as unknown as { floorRelease(k: string, t: string): Promise<number> }).floorRelease(key, token);

    let n = 0;
    let unacknowledged = 0;
    const measurements: Measurement[] = [
      {
        name: 'plain',
        label: 'acquire+release, no replicas option',
        calls: WARM_UP + ITERATIONS,
        run: () =>
          perCall(async () => {
            await (await plain.acquire('bench:plain')).release();
          }),
      },
      {
        name: 'replicas',
        label: `acquire+release, replicas ${JSON.stringify(REPLICAS)}`,
        calls: WARM_UP + ITERATIONS,
        run: () =>
          perCall(async () => {
            await (await replicated.acquire('bench:replicas')).release();
          }),
      },
      {
        name: 'floor',
        label: 'raw floor: SET NX PX + Lua release',
        calls: WARM_UP + ITERATIONS,
        run: () =>
          perCall(async () => {
            const token = String(++n);
            await floorClient.set('bench:floor', token, 'PX', LEASE_MS, 'NX');
            await floorRelease(floorClient, 'bench:floor', token);
          }),
      },
      {
        name: 'floorWait',
        label: `raw floor: (SET NX PX + WAIT ${REPLICAS.count} ${REPLICAS.timeout}) + Lua release`,
        calls: WARM_UP + ITERATIONS,
        run: () =>
          perCall(async () => {
            const token = String(++n);
            // Pipelined, as the library sends its WAIT: one round trip, answered once the replica acks.
            const replies = await floorWaitClient
              .pipeline()
              .set('bench:floor-wait', token, 'PX', LEASE_MS, 'NX')
              .wait(REPLICAS.count, REPLICAS.timeout)
              .exec();
            if (Number(replies?.[1]?.[1]) < REPLICAS.count) unacknowledged++;
            await floorRelease(floorWaitClient, 'bench:floor-wait', token);
          }),
      },
      {
        name: 'redlock',
        label: 'redlock 5, one master (no WAIT)',
        calls: WARM_UP + ITERATIONS,
        run: () =>
          perCall(async () => {
            await (await redlock.acquire(['bench:redlock'], LEASE_MS)).release();
          }),
      },
      {
        name: 'handOff',
        label: 'hand-off to a waiting service, no replicas option',
        calls: HAND_OFF_CALLS,
        run: async () => median(await handOffs(handOffPlain, 'bench:hand-off')),
      },
      {
        name: 'handOffReplicas',
        label: 'hand-off to a waiting service, replicas',
        calls: HAND_OFF_CALLS,
        run: async () => median(await handOffs(handOffReplicated, 'bench:hand-off-replicas')),
      },
    ];

    const rounds: Record<string, number[]> = Object.fromEntries(measurements.map((m) => [m.name, []]));
    // WAITs the master ran per acquisition: proof that each row measures what its label says.
    const waits: Record<string, number> = Object.fromEntries(measurements.map((m) => [m.name, 0]));
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < measurements.length; i++) {
        const m = measurements[(i + round) % measurements.length];
        await master.resetStats();
        rounds[m.name].push(await m.run());
        waits[m.name] += ((await master.commandStats()).get('wait') ?? 0) / m.calls / ROUNDS;
      }
      console.log(`round ${round + 1}/${ROUNDS} done`);
    }

    const medians = Object.fromEntries(measurements.map((m) => [m.name, median(rounds[m.name])]));
    const ratios = {
      replicasOverPlain: medians.replicas / medians.plain,
      floorWaitOverFloor: medians.floorWait / medians.floor,
      handOffReplicasOverPlain: medians.handOffReplicas / medians.handOff,
    };
    const waitCost = medians.floorWait - medians.floor;

    const ratioOf: Record<string, string> = {
      replicas: `${ratios.replicasOverPlain.toFixed(2)}x plain`,
      floorWait: `${ratios.floorWaitOverFloor.toFixed(2)}x floor`,
      handOffReplicas: `${ratios.handOffReplicasOverPlain.toFixed(2)}x plain hand-off`,
    };
    const width = Math.max(...measurements.map((m) => m.label.length));
    console.log(
      `\nmaster + 1 replica (redis ${version}, loopback), median of ${ROUNDS} rounds ` +
        `(${ITERATIONS} calls or ${HANDOFFS} hand-offs each), µs:`,
    );
    for (const m of measurements) {
      const ratio = ratioOf[m.name] ? `  (${ratioOf[m.name]})` : '';
      const sent = `${waits[m.name].toFixed(2)} WAIT/acq`;
      console.log(`  ${m.label.padEnd(width)}  ${medians[m.name].toFixed(1).padStart(8)}  ${sent}${ratio}`);
    }
    console.log(`  WAIT's own cost on the raw floor: ${waitCost.toFixed(1)} µs per acquisition`);
    if (unacknowledged) console.log(`  ${unacknowledged} raw WAITs not acknowledged in time`);

    await Promise.all([plain, replicated, ...handOffPlain, ...handOffReplicated].map((s) => s.close()));

    const finished = new Date();
    const report = {
      startedAt: started.toISOString(),
      finishedAt: finished.toISOString(),
      durationS: (finished.getTime() - started.getTime()) / 1000,
      machine: {
        cpus: cpus().length,
        model: cpus()[0]?.model,
        node: process.version,
        loadavgAtEnd: loadavg(),
      },
      redis: version,
      replicas: REPLICAS,
      iterations: ITERATIONS,
      handOffs: HANDOFFS,
      rounds: ROUNDS,
      unit: 'µs',
      labels: Object.fromEntries(measurements.map((m) => [m.name, m.label])),
      medians,
      ratios,
      waitsPerAcquisition: waits,
      waitCostUs: waitCost,
      unacknowledgedRawWaits: unacknowledged,
      perRound: rounds,
    };
    const json = `${JSON.stringify(report, null, 2)}\n`;
    const stamp = started.toISOString().replace(/[:.]/g, '-');
    const out = resolve(ROOT, 'bench/results');
    writeAtomically(resolve(out, `replicas-${stamp}.json`), json);
    writeAtomically(resolve(out, 'latest-replicas.json'), json);
    console.log(`\nwrote bench/results/replicas-${stamp}.json, bench/results/latest-replicas.json`);
  } finally {
    await Promise.all(servers.map((server) => server.dispose()));
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
