/**
 * Soak: `node --expose-gc --import tsx chaos/soak.ts [--duration S]` (default 600 s; CI: 60 s).
 *
 * Steady contention without faults: 2 processes x 20 agents over 200 keys (10 of them hot). Every few
 * seconds it samples each process (heap after a full GC, active handles/timers, listeners, the lock
 * service's bookkeeping) and Redis (used_memory, DBSIZE, pub/sub channels and subscribers, clients).
 * After the warm-up it fails if anything grows beyond these bounds:
 *   - heap after GC: least-squares slope < 1 MB/min per process, and the last sample within 2 MB of
 *     the first post-warm-up one;
 *   - Redis used_memory: slope < 512 KB/min;
 *   - DBSIZE <= 2 x keys + 2 x agents (a fence counter per key ever used, a line's pace per key waited
 *     for in the last 10 s, plus an owner and a queue per lock that is held or waited for);
 *   - active handles/timers per process <= 4 x agents + 20, and the floor (fewest) of the last third of
 *     the post-warm-up samples at most agents / 2 above the floor of the first third: they follow the
 *     calls in flight (one sample may catch up to 8 fewer than the next), while a process makes about
 *     100,000 calls, so even one handle leaked per 10,000 calls would add more;
 *   - listeners on the Redis connections and on `process`: constant;
 *   - service bookkeeping: waiters and leases <= agents, no ticket left to take back;
 *   - pub/sub: one channel per LockService with one subscriber each; clients: 2 per process, constant;
 *   - progress in every interval, no untyped error, no unhandled rejection;
 *   - at the end, each process closes its LockService and exits by itself; every key has a TTL.
 * Writes the curves to chaos/results/soak-*.json and prints them compactly.
 */
import { join } from 'node:path';
import { startRedis } from '../test/support/redis-server';
import { forkTs, hr, isRunning, parseFlags, sleep, slope, writeResult } from './common';
import type { SoakWorkerArgs } from './soak-worker';

const flags = parseFlags(process.argv.slice(2));
if (flags.topology !== undefined || flags.sentinelDownAfter !== undefined)
  throw new Error('the soak runs on one server: --topology and --sentinel-down-after are for chaos/run.ts');
const durationS = flags.duration ?? 600;
const cfg = {
  processes: 2,
  agents: 20,
  keys: 200,
  hotKeys: 10,
  ttl: 2_000,
  waitTimeout: 10_000,
  workMs: [0, 5] as [number, number],
  intervalMs: durationS <= 120 ? 3_000 : 10_000,
  warmupMs: Math.max(15_000, durationS * 200),
};
const totalAgents = cfg.processes * cfg.agents;
const bounds = {
  heapSlopeKbPerMin: 1_024,
  heapGrowthKb: 2_048,
  redisMemorySlopeKbPerMin: 512,
  dbsizeMax: 2 * cfg.keys + 2 * totalAgents,
  resourcesMax: 4 * cfg.agents + 20,
  resourcesFloorGrowth: cfg.agents / 2,
};

interface Msg {
  type: string;
  [field: string]: unknown;
}

interface Sample {
  t: number;
  redis: { usedMemory: number; dbsize: number; channels: number; subscribers: number[]; clients: number };
  procs: Msg[];
}

async function main(): Promise<number> {
  const violations: string[] = [];
  const fail = (message: string): void => {
    violations.push(message);
  };
  process.on('unhandledRejection', (e) => fail(`coordinator unhandled rejection: ${String(e)}`));
  console.log(
    `soak: ${durationS} s, ${cfg.processes} processes x ${cfg.agents} agents over ${cfg.keys} keys ` +
      `(${cfg.hotKeys} hot), sample every ${cfg.intervalMs / 1000} s, warm-up ${cfg.warmupMs / 1000} s`,
  );
  const server = await startRedis();
  const admin = server.client({ connectionName: 'soak-admin' });

  const children = Array.from({ length: cfg.processes }, (_, id) => {
    const args: SoakWorkerArgs = {
      id,
      port: server.port,
      keys: cfg.keys,
      hotKeys: cfg.hotKeys,
      agents: cfg.agents,
      ttl: cfg.ttl,
      waitTimeout: cfg.waitTimeout,
      workMs: cfg.workMs,
      seed: flags.seed,
    };
    const child = forkTs(join(__dirname, 'soak-worker.ts'), args, ['--expose-gc']);
    const inbox: Msg[] = [];
    const waiting: ((m: Msg) => void)[] = [];
    child.on('message', (m: Msg) => {
      if (m.type === 'unhandled') fail(`unhandled rejection in process ${id}: ${m.message}`);
      const w = waiting.shift();
      if (w) w(m);
      else inbox.push(m);
    });
    child.once('exit', (code, signal) => {
      if (!stopping) fail(`process ${id} exited unexpectedly (code ${code}, signal ${signal})`);
    });
    const next = (timeoutMs: number): Promise<Msg | undefined> => {
      const m = inbox.shift();
      if (m) return Promise.resolve(m);
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          waiting.splice(waiting.indexOf(done), 1);
          resolve(undefined);
        }, timeoutMs);
        const done = (msg: Msg): void => {
          clearTimeout(timer);
          resolve(msg);
        };
        waiting.push(done);
      });
    };
    return { id, child, next };
  });
  let stopping = false;
  for (const c of children) {
    const m = await c.next(30_000);
    if (m?.type !== 'ready') throw new Error(`soak process ${c.id} did not start`);
  }

  const started = hr();
  const samples: Sample[] = [];
  console.log('     t   ops/s   heap MB (after GC)   redis KB   dbsize  handles  listeners  chan  clients');
  while (hr() - started < durationS * 1000) {
    await sleep(cfg.intervalMs);
    for (const c of children) c.child.send({ type: 'sample' });
    const procs: Msg[] = [];
    for (const c of children) {
      const m = await c.next(10_000);
      if (m?.type !== 'sample') {
        fail(`process ${c.id} did not answer a sample request (hung?)`);
        procs.push({ type: 'missing' });
      } else procs.push(m);
    }
    const info = await admin.info('memory');
    const usedMemory = Number(/used_memory:(\d+)/.exec(info)?.[1] ?? 0);
    const dbsize = await admin.dbsize();
    const channels = (await admin.pubsub('CHANNELS')) as string[];
    const numsub =
      channels.length > 0 ? ((await admin.pubsub('NUMSUB', ...channels)) as (string | number)[]) : [];
    const subscribers = numsub.filter((_, i) => i % 2 === 1).map(Number);
    const clients = String(await admin.client('LIST'))
      .split('\n')
      .filter((line) => line.includes('name=soak-p')).length;
    const s: Sample = {
      t: (hr() - started) / 1000,
      redis: { usedMemory, dbsize, channels: channels.length, subscribers, clients },
      procs,
    };
    samples.push(s);
    const prev = samples[samples.length - 2];
    const opsNow = procs.reduce((n, p) => n + ((p.ops as number) ?? 0), 0);
    const opsBefore = prev ? prev.procs.reduce((n, p) => n + ((p.ops as number) ?? 0), 0) : 0;
    const rate = (opsNow - opsBefore) / (prev ? s.t - prev.t : s.t);
    if (prev && rate <= 0) fail(`no progress between ${prev.t.toFixed(0)} s and ${s.t.toFixed(0)} s`);
    console.log(
      `${s.t.toFixed(0).padStart(6)}  ${rate.toFixed(0).padStart(6)}   ${procs
        .map((p) => ((p.heapUsed as number) / 2 ** 20).toFixed(2))
        .join(' / ')
        .padEnd(18)} ${(usedMemory / 1024).toFixed(0).padStart(9)}  ${String(dbsize).padStart(7)}  ${procs
        .map((p) => p.resourceTotal)
        .join('/')
        .padStart(7)}  ${procs
        .map((p) => p.listeners)
        .join('/')
        .padStart(9)}  ${String(channels.length).padStart(4)}  ${String(clients).padStart(7)}`,
    );
  }

  // --- stop: every agent finishes, each process closes its service and exits by itself -------------
  stopping = true;
  const stopped = await Promise.all(
    children.map(async (c) => {
      c.child.send({ type: 'stop' });
      const m = await c.next(cfg.waitTimeout + 10_000);
      const exited = await Promise.race([
        new Promise<boolean>((resolve) =>
          isRunning(c.child) ? c.child.once('exit', () => resolve(true)) : resolve(true),
        ),
        sleep(5_000).then(() => false),
      ]);
      if (m?.type !== 'stopped') fail(`process ${c.id} did not stop`);
      if (!exited) {
        fail(`process ${c.id} did not exit after closing (left: ${JSON.stringify(m?.resources)})`);
        c.child.kill('SIGKILL');
      }
      return m;
    }),
  );
  const keys = await server.keys();
  const noTtl: string[] = [];
  for (const key of keys) if ((await server.ttlOf(key)) === -1) noTtl.push(key);
  if (noTtl.length > 0) fail(`keys without a TTL: ${noTtl.slice(0, 10).join(', ')}`);
  admin.disconnect();
  await server.dispose();

  // --- bounds after the warm-up ---------------------------------------------------------------------
  const warm = samples.filter((s) => s.t * 1000 >= cfg.warmupMs);
  if (warm.length < 3) fail(`too few samples after the warm-up (${warm.length}): run longer`);
  const perMin = (points: [number, number][]): number => slope(points) * 60;
  const report: Record<string, unknown> = {};
  for (let p = 0; p < cfg.processes; p++) {
    const series = warm.map((s) => s.procs[p]).filter((m) => m.type === 'sample');
    const heap = warm.map((s, i) => [s.t, (series[i]?.heapUsed as number) / 1024] as [number, number]);
    const heapSlope = perMin(heap);
    const heapGrowth = heap.length > 0 ? heap[heap.length - 1][1] - heap[0][1] : 0;
    const resources = warm.map((s, i) => [s.t, series[i]?.resourceTotal as number] as [number, number]);
    const resSlope = perMin(resources);
    const floor = (points: [number, number][]): number => Math.min(...points.map(([, y]) => y));
    const third = Math.max(1, Math.floor(resources.length / 3));
    const resGrowth = floor(resources.slice(-third)) - floor(resources.slice(0, third));
    const resMax = Math.max(...resources.map(([, y]) => y));
    const listenerValues = new Set(series.map((m) => `${m.listeners}/${m.processListeners}`));
    const maxOf = (field: string): number => Math.max(...series.map((m) => m[field] as number));
    report[`process${p}`] = {
      gc: series[0]?.gc,
      heapSlopeKbPerMin: Math.round(heapSlope),
      heapGrowthKb: Math.round(heapGrowth),
      heapKb: { first: Math.round(heap[0]?.[1] ?? 0), last: Math.round(heap[heap.length - 1]?.[1] ?? 0) },
      resourcesMax: resMax,
      resourcesSlopePerMin: Number(resSlope.toFixed(2)),
      resourcesFloorGrowth: resGrowth,
      resources: resources.map(([, y]) => y),
      listeners: [...listenerValues],
      waitersMax: maxOf('waiters'),
      leasesMax: maxOf('leases'),
      takenBackMax: maxOf('takenBack'),
      ops: stopped[p]?.ops,
      outcomes: stopped[p]?.outcomes,
    };
    if (!series[0]?.gc) fail(`process ${p}: global.gc missing (run with --expose-gc)`);
    if (heapSlope > bounds.heapSlopeKbPerMin) fail(`process ${p}: heap grows ${heapSlope.toFixed(0)} KB/min`);
    if (heapGrowth > bounds.heapGrowthKb)
      fail(`process ${p}: heap grew ${heapGrowth.toFixed(0)} KB after warm-up`);
    if (resMax > bounds.resourcesMax) fail(`process ${p}: ${resMax} active handles/timers`);
    if (resGrowth > bounds.resourcesFloorGrowth)
      fail(`process ${p}: active handles grew by ${resGrowth} (fewest in the last third against the first)`);
    if (listenerValues.size > 1)
      fail(`process ${p}: listener counts changed: ${[...listenerValues].join(', ')}`);
    if (maxOf('waiters') > cfg.agents || maxOf('leases') > cfg.agents)
      fail(`process ${p}: bookkeeping above agents`);
    if (maxOf('takenBack') > 0) fail(`process ${p}: tickets left to take back (${maxOf('takenBack')})`);
    const untyped = (stopped[p]?.outcomes as Record<string, number> | undefined)?.UNTYPED ?? 0;
    if (untyped > 0) fail(`process ${p}: ${untyped} untyped errors`);
  }
  const memSlope = perMin(warm.map((s) => [s.t, s.redis.usedMemory / 1024]));
  const dbMax = Math.max(...samples.map((s) => s.redis.dbsize));
  const channelsSeen = new Set(warm.map((s) => `${s.redis.channels}:${s.redis.subscribers.join(',')}`));
  const clientsSeen = new Set(warm.map((s) => s.redis.clients));
  report.redis = {
    usedMemorySlopeKbPerMin: Math.round(memSlope),
    usedMemoryKb: {
      first: Math.round((warm[0]?.redis.usedMemory ?? 0) / 1024),
      last: Math.round((warm[warm.length - 1]?.redis.usedMemory ?? 0) / 1024),
    },
    dbsizeMax: dbMax,
    keysLeft: keys.length,
    pubsub: [...channelsSeen],
    clients: [...clientsSeen],
  };
  if (memSlope > bounds.redisMemorySlopeKbPerMin)
    fail(`Redis used_memory grows ${memSlope.toFixed(0)} KB/min`);
  if (dbMax > bounds.dbsizeMax) fail(`DBSIZE reached ${dbMax} (bound ${bounds.dbsizeMax})`);
  if (channelsSeen.size !== 1 || ![...channelsSeen][0].startsWith(`${cfg.processes}:`))
    fail(`pub/sub channels/subscribers not steady at one per process: ${[...channelsSeen].join(' ')}`);
  if (
    [...channelsSeen].some((c) =>
      c
        .split(':')[1]
        .split(',')
        .some((n) => n !== '1'),
    )
  )
    fail('a wake channel has other than one subscriber');
  if (clientsSeen.size !== 1 || [...clientsSeen][0] !== 2 * cfg.processes)
    fail(`client connections not steady at 2 per process: ${[...clientsSeen].join(',')}`);

  const file = writeResult('soak', {
    seed: flags.seed,
    durationS,
    cfg,
    bounds,
    ok: violations.length === 0,
    report,
    violations,
    samples,
  });
  console.log('\nsoak summary');
  for (const [name, value] of Object.entries(report))
    console.log(`  ${name.padEnd(9)} ${JSON.stringify(value)}`);
  console.log(`  bounds    ${JSON.stringify(bounds)}`);
  console.log(`  result: ${file}`);
  if (violations.length === 0) console.log('\nPASS');
  else {
    console.log(`\nFAIL: ${violations.length} violation(s)`);
    for (const v of violations) console.log(`  - ${v}`);
  }
  return violations.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error('soak crashed', error);
    process.exit(2);
  },
);
