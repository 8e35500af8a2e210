/**
 * A Nest application under open-loop HTTP load, per lock library: three instances of the benchmark app
 * (bench/nest/app.ts, `POST /pay/:id`: GET, 2 ms, SET under the variant's decorator) against one Redis,
 * requests arriving as a Poisson process spread over the instances and over 4 hot ids, at fractions of
 * what 4 ids can take (the critical section back to back, measured first). Per variant and load: request
 * latency from arrival, timeouts, failures by status, goodput, lost updates, app and Redis CPU.
 *
 * Usage: npm run bench:nest-load [-- --quick | --smoke] [--rounds 3] [--window 10000] [--warmup 2000]
 *        [--loads 0.5,1.2] [--timeout 2000] [--variants ours,murlock] [--seed 1] [--no-build]
 *        [--no-deadline-header] [--baseline DIR (another build, for ours-baseline and ours-handler-baseline)]
 *        [--work MS (the section's work, default 2)] [--standing-target MS (ours-handler-standing, default 25)]
 *        [--places N (ours-handler-places, default 5)]
 *        [--restart: per variant, the first load for 10 s, then one instance restarted and at once the
 *        same load for 30 s: the restarted instance's goodput in the burst's seconds 1-3 against 10-30]
 * BENCH_NODE=/path/to/node runs the applications on another Node; BENCH_APP_ARGS passes them flags.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { hr, sleepUntil } from './clock';
import { pct } from './format';
import { App, buildApp, option, ROOT } from './nest/apps';
import {
  cpuPerGrant,
  type OpenLoopSummary,
  poissonArrivals,
  type RequestOutcome,
  seededRandom,
  summarizeOpenLoop,
} from './open-loop';
import { type BenchRedis, startRedis } from './redis-server';
import { median } from './stats';

/** --smoke (CI): this library's variant only, a short window, gated on lost updates and crashes as quick. */
const SMOKE = process.argv.includes('--smoke');
const QUICK = SMOKE || process.argv.includes('--quick');
const MODE = SMOKE ? 'smoke' : QUICK ? 'quick' : 'full';
const ROUNDS = Number(option('rounds', QUICK ? '1' : '3'));
/** Measured window and the warm-up before it, ms: one arrival stream, only the window's arrivals count. */
const WINDOW_MS = Number(option('window', SMOKE ? '1000' : QUICK ? '3000' : '10000'));
const WARMUP_MS = Number(option('warmup', SMOKE ? '500' : QUICK ? '1000' : '2000'));
/** The client gives up on a request this long after its arrival, ms. */
const TIMEOUT_MS = Number(option('timeout', '2000'));
/** Offered loads as fractions of the capacity of the hot ids. */
const LOADS = option('loads', SMOKE ? '1.2' : '0.5,1.2')
  .split(',')
  .map(Number);
const SEED = Number(option('seed', '1'));
/** Another build of this library (a directory inside the project), for the `-baseline` variants. */
const BASELINE = option('baseline', '');
/** Each request says when its client gives up (x-request-deadline), unless --no-deadline-header. */
const DEADLINE_HEADER = !process.argv.includes('--no-deadline-header');
/** The critical section's work between its GET and SET, ms: every application, the capacity's included. */
const WORK_MS = option('work', '2');
process.env.BENCH_WORK_MS = WORK_MS;
/** The standing-line rule's target for ours-handler-standing, ms. */
const STANDING_TARGET = option('standing-target', '25');
/** The paced target for ours-handler-places, in places of the key's line. */
const SHED_PLACES = option('places', '5');
/** The restart scenario (see the usage above). */
const RESTART = process.argv.includes('--restart');
/** How long the load runs before the restart, and after it, ms; the seconds compared after it. */
const BEFORE_RESTART_MS = 10_000;
const AFTER_RESTART_MS = 30_000;
const INSTANCES = 3;
const HOT_IDS = 4;
/** How long the critical section is run back to back to measure one id's capacity, ms. */
const CAPACITY_MS = 1000;
/** Longest wait for the applications to finish requests their clients gave up on, ms. */
const DRAIN_MS = 30_000;

/**
 * Each variant: the application variant (bench/nest/app.ts) and its environment. A client gives up after
 * TIMEOUT_MS, so each library is told to wait about as long, in the way it offers.
 */
const VARIANTS: Record<string, { app: string; env: Record<string, string>; what: string }> = {
  ours: {
    app: 'ours',
    env: { BENCH_WAIT_TIMEOUT: String(TIMEOUT_MS) },
    what: `@Locked('order:<0>', { ttl: 5000, waitTimeout: ${TIMEOUT_MS} }): FIFO queue woken by push`,
  },
  'ours-handler': {
    app: 'ours-handler',
    env: { BENCH_WAIT_TIMEOUT: String(TIMEOUT_MS) },
    what: 'the same on the route handler: the wait ends when the client closes the connection',
  },
  'ours-baseline': {
    app: 'ours-baseline',
    env: { BENCH_WAIT_TIMEOUT: String(TIMEOUT_MS) },
    what: 'ours on the build given as --baseline, to compare two builds in one run',
  },
  'ours-handler-baseline': {
    app: 'ours-handler-baseline',
    env: { BENCH_WAIT_TIMEOUT: String(TIMEOUT_MS) },
    what: 'ours-handler on the build given as --baseline, to compare two builds in one run',
  },
  'ours-handler-no-deadline': {
    app: 'ours-handler',
    env: { BENCH_WAIT_TIMEOUT: String(TIMEOUT_MS), BENCH_NO_DEADLINE: '1' },
    what: 'ours-handler taking nothing from a request (requests: false)',
  },
  'ours-handler-no-shed': {
    app: 'ours-handler',
    env: { BENCH_WAIT_TIMEOUT: String(TIMEOUT_MS), BENCH_NO_SHED: '1' },
    what: 'ours-handler turning nobody away at the door (shed: false)',
  },
  'ours-handler-door': {
    app: 'ours-handler',
    env: { BENCH_WAIT_TIMEOUT: String(TIMEOUT_MS), BENCH_SHED_DOOR: '1' },
    what: "ours-handler with the door alone, no standing-line rule ('door' under the shed hook)",
  },
  'ours-handler-places': {
    app: 'ours-handler',
    env: { BENCH_WAIT_TIMEOUT: String(TIMEOUT_MS), BENCH_SHED_PLACES: SHED_PLACES },
    what: `ours-handler with the paced target at ${SHED_PLACES} places ({ places: ${SHED_PLACES} } under the shed hook)`,
  },
  'ours-handler-standing': {
    app: 'ours-handler',
    env: { BENCH_WAIT_TIMEOUT: String(TIMEOUT_MS), BENCH_STANDING_LINE: STANDING_TARGET },
    what: `ours-handler with a fixed standing-line rule: { target: ${STANDING_TARGET} } under the shed hook (CoDel-like)`,
  },
  'ours-all-routes': {
    app: 'ours-all-routes',
    env: { BENCH_WAIT_TIMEOUT: String(TIMEOUT_MS) },
    what: 'ours with requests: true written out (the default)',
  },
  'nest-redlock': {
    app: 'nest-redlock',
    env: {},
    what: 'redlock defaults: 10 retries, 200 ms ± 100 ms apart',
  },
  'nest-redlock-10ms': {
    app: 'nest-redlock',
    env: { BENCH_RETRY_MS: '10', BENCH_WAIT_TIMEOUT: String(TIMEOUT_MS) },
    what: `settings { retryDelay: 10, retryJitter: 5, retryCount: ${Math.ceil(TIMEOUT_MS / 10)} }`,
  },
  murlock: {
    app: 'murlock',
    env: {},
    what: 'wait 1000, maxAttempts 3, blocking false: sleeps 1, 2, 3 s, then throws',
  },
  'murlock-10ms': {
    app: 'murlock',
    env: { BENCH_RETRY_MS: '10', BENCH_WAIT_TIMEOUT: String(TIMEOUT_MS) },
    what: `@MurLock(5000, 10, 'id'), maxAttempts ${Math.ceil(TIMEOUT_MS / 10)}: a fixed 10 ms retry`,
  },
};
const VARIANT_NAMES = option('variants', SMOKE ? 'ours' : Object.keys(VARIANTS).join(',')).split(',');
for (const name of VARIANT_NAMES) {
  if (!VARIANTS[name]) throw new Error(`unknown variant ${name} (${Object.keys(VARIANTS).join(', ')})`);
}

/** One request: what the open-loop summary needs, and what went wrong. */
interface Outcome extends RequestOutcome {
  /** The HTTP status of a non-2xx answer, or the socket error's code. */
  status?: number | string;
  /** Which application it was sent to. */
  instance?: number;
}

/** One POST /pay/<id>, given up on (socket destroyed) `TIMEOUT_MS` after its arrival. */
function send(agent: Agent, port: number, id: string, arrival: number): Promise<Outcome> {
  return new Promise((resolve) => {
    const outcome: Outcome = { arrival, granted: Number.NaN, failed: Number.NaN };
    let settled = false;
    const settle = (fields: Partial<Outcome>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(Object.assign(outcome, fields));
    };
    const req = request(
      {
        agent,
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: `/pay/${id}`,
        // Every variant is told when its client gives up; only ours reads it (docs/nest.md, "Deadlines").
        headers: DEADLINE_HEADER
          ? {
              'content-length': 0,
              // Whole ms since the epoch, as a client sends it.
              'x-request-deadline': String(Math.floor(Date.now() + (arrival + TIMEOUT_MS - hr()))),
            }
          : { 'content-length': 0 },
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          settle(status >= 200 && status < 300 ? { granted: hr() } : { failed: hr(), status });
        });
        res.on('error', (error: NodeJS.ErrnoException) =>
          settle({ failed: hr(), status: error.code ?? 'error' }),
        );
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) =>
      settle({ failed: hr(), status: error.code ?? 'error' }),
    );
    // From the arrival, not from now: a request sent late has used part of its time already.
    const timer = setTimeout(
      () => {
        settle({ failed: hr(), timedOut: true });
        req.destroy();
      },
      Math.max(0, arrival + TIMEOUT_MS - hr()),
    );
    req.end();
  });
}

/**
 * CPU time so far, µs: the three applications together, Redis, this harness, and the whole machine (all
 * processes, to see what else ran). NaN for the applications when one has exited (the run reports the
 * crash).
 */
async function readCpu(
  apps: App[],
  redis: BenchRedis,
): Promise<{ at: number; app: number; redis: number; harness: number; machine: number }> {
  const [redisUs, ...appUs] = await Promise.all([
    redis.admin.cpuUs(),
    ...apps.map((app) => app.cpu().catch(() => Number.NaN)),
  ]);
  const harness = process.cpuUsage();
  let machine = 0;
  for (const { times } of cpus()) machine += (times.user + times.nice + times.sys + times.irq) * 1000;
  return {
    at: hr(),
    app: appUs.reduce((a, b) => a + b, 0),
    redis: redisUs,
    harness: harness.user + harness.system,
    machine,
  };
}

/**
 * Waits until no application has a `/pay` request in its handler, twice in a row with the same counts:
 * a request its client gave up on may still be waiting for the lock, and may still run the critical
 * section. Then the critical sections completed per id, all applications together.
 */
async function drain(apps: App[]): Promise<{ drained: boolean; done: Map<string, number> }> {
  // An application that exited took its counts with it: no lost-update figure then.
  if (apps.some((app) => app.crashed)) return { drained: false, done: new Map() };
  const deadline = hr() + DRAIN_MS;
  let previous = '';
  for (;;) {
    const all = await Promise.all(apps.map((app) => app.sections())).catch(() => undefined);
    if (!all) return { drained: false, done: new Map() };
    const done = new Map<string, number>();
    for (const { done: byId } of all) {
      for (const [id, n] of Object.entries(byId)) done.set(id, (done.get(id) ?? 0) + n);
    }
    const idle = all.every((s) => s.inflight === 0);
    const counts = JSON.stringify([...done]);
    if (idle && counts === previous) return { drained: true, done };
    if (hr() > deadline) return { drained: false, done };
    previous = idle ? counts : '';
    await sleepUntil(hr() + 200);
  }
}

/** What one variant did at one load in one round. */
interface LevelRun extends OpenLoopSummary {
  round: number;
  variant: string;
  load: number;
  targetPerS: number;
  /** Non-2xx answers and socket errors before the timeout, by status or error code (window arrivals). */
  failures: Record<string, number>;
  /** Critical sections completed minus the final counters, all ids of the run; null if not drained. */
  lost: number | null;
  /** Counter increments beyond the sections counted (a counting fault; 0 when all is well). */
  surplus: number;
  /** Critical sections completed (SET done) on the servers, all arrivals including the warm-up. */
  done: number;
  /** 2xx answers the client received, all arrivals including the warm-up. */
  answered: number;
  /** Sections completed for a client that had already given up: done − answered. */
  unanswered: number;
  appCpuUs: number;
  redisCpuUs: number;
  harnessCpuUs: number;
  /** CPU used by applications, Redis and harness over the window, in cores. */
  busyCores: number;
  /** CPU used by every other process on the machine over the window, in cores: another load skews it all. */
  otherCores: number;
  drained: boolean;
  /** The first application's goodput (answers within the timeout per s) in seconds 1-3 and 10-30. */
  firstInstance: { seconds1to3: number; seconds10to30: number };
  crashed?: string;
}

/** One load level on running applications: fresh ids, arrivals, settle, drain, count. */
async function runLevel(
  apps: App[],
  redis: BenchRedis,
  variant: string,
  round: number,
  level: number,
  ratePerS: number,
  phase: { warmupMs: number; windowMs: number; idLevel?: number } = {
    warmupMs: WARMUP_MS,
    windowMs: WINDOW_MS,
  },
): Promise<LevelRun> {
  // Fresh ids, so their counters start at 0 (a restart keeps the level before's: the same hot keys, whose
  // line the other instances know); the same arrivals for every variant of a round and load.
  const ids = Array.from({ length: HOT_IDS }, (_, k) => `r${round}l${phase.idLevel ?? level}i${k}`);
  const arrivalsRandom = seededRandom(SEED * 1_000_003 + round * 1000 + level);
  const idRandom = seededRandom(SEED * 1_000_033 + round * 1000 + level);
  const start = hr() + 100;
  const from = start + phase.warmupMs;
  const to = from + phase.windowMs;
  const arrivals = poissonArrivals(ratePerS, start, to, arrivalsRandom);
  // Open loop: unbounded sockets, so a request never waits for a free one.
  const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
  const cpu = (async () => {
    await sleepUntil(from);
    const before = await readCpu(apps, redis);
    await sleepUntil(to);
    return { before, after: await readCpu(apps, redis) };
  })();
  const pending: Promise<Outcome>[] = [];
  for (let i = 0; i < arrivals.length; ) {
    const now = hr();
    for (; i < arrivals.length && arrivals[i] <= now; i++) {
      const id = ids[Math.floor(idRandom() * HOT_IDS)];
      pending.push(
        send(agent, apps[i % INSTANCES].port, id, arrivals[i]).then((o) => ({
          ...o,
          instance: i % INSTANCES,
        })),
      );
    }
    if (i < arrivals.length) await sleepUntil(arrivals[i]);
  }
  const outcomes = await Promise.all(pending);
  const observedUntil = hr();
  agent.destroy();
  const { before, after } = await cpu;
  const summary = summarizeOpenLoop(outcomes, { from, to, timeoutMs: TIMEOUT_MS, observedUntil });
  // The first application's answers in time per second of the burst, from its arrivals: after a restart,
  // the new instance's.
  const firstInstance = (fromS: number, toS: number) =>
    outcomes.filter(
      (o) =>
        o.instance === 0 &&
        o.arrival >= from + fromS * 1000 &&
        o.arrival < from + toS * 1000 &&
        o.granted - o.arrival <= TIMEOUT_MS,
    ).length /
    (toS - fromS);

  const failures: Record<string, number> = {};
  for (const o of outcomes) {
    // The requests summarizeOpenLoop counts as errors: window arrivals failed otherwise than by timing out.
    if (o.arrival < from || o.arrival >= to || o.timedOut || Number.isNaN(o.failed)) continue;
    if (o.failed - o.arrival > TIMEOUT_MS) continue;
    failures[String(o.status)] = (failures[String(o.status)] ?? 0) + 1;
  }
  const answered = outcomes.filter((o) => !Number.isNaN(o.granted)).length;
  const { drained, done } = await drain(apps);
  const counters = await redis.admin.values(ids.map((id) => `balance:${id}`));
  const doneTotal = ids.reduce((n, id) => n + (done.get(id) ?? 0), 0);
  // A section that completed but whose increment is not in the counter was overwritten by another.
  const lost = ids.reduce((n, id, k) => n + Math.max(0, (done.get(id) ?? 0) - counters[k]), 0);
  // The other way round, an increment no application counted: a fault of the counting, not of the lock.
  const surplus = ids.reduce((n, id, k) => n + Math.max(0, counters[k] - (done.get(id) ?? 0)), 0);
  // CPU over the window per request served in it (what goodput counts), whenever it arrived.
  const servedInWindow = Math.round((summary.goodputPerS * (to - from)) / 1000);
  const windowUs = (after.at - before.at) * 1000;
  const ours = after.app - before.app + after.redis - before.redis + after.harness - before.harness;
  const crashed = apps.find((app) => app.crashed)?.crashed;
  return {
    round,
    variant,
    load: LOADS[level],
    targetPerS: ratePerS,
    ...summary,
    failures,
    lost: drained && !crashed ? lost : null,
    surplus,
    done: doneTotal,
    answered,
    unanswered: doneTotal - answered,
    appCpuUs: cpuPerGrant(before.app, after.app, servedInWindow),
    redisCpuUs: cpuPerGrant(before.redis, after.redis, servedInWindow),
    harnessCpuUs: cpuPerGrant(before.harness, after.harness, servedInWindow),
    busyCores: ours / windowUs,
    otherCores: (after.machine - before.machine - ours) / windowUs,
    drained,
    firstInstance: { seconds1to3: firstInstance(0, 3), seconds10to30: firstInstance(10, 30) },
    ...(crashed ? { crashed } : {}),
  };
}

/** One variant in one round: a fresh Redis and three fresh applications, every load level in turn. */
async function runVariant(variant: string, round: number, capacityPerS: number): Promise<LevelRun[]> {
  const redis = await startRedis();
  const { app, env } = VARIANTS[variant];
  const apps: App[] = [];
  const runs: LevelRun[] = [];
  try {
    const build: Record<string, string> = app.endsWith('-baseline')
      ? { BENCH_DIST: join(ROOT, BASELINE) }
      : {};
    const appEnv = { ...env, ...build, BENCH_SECTIONS: '1', BENCH_QUIET: '1' };
    for (let i = 0; i < INSTANCES; i++) apps.push(await App.start(app, redis.port, appEnv));
    if (RESTART) {
      const rate = LOADS[0] * capacityPerS;
      await runLevel(apps, redis, variant, round, 0, rate, { warmupMs: 0, windowMs: BEFORE_RESTART_MS });
      // A deploy: the first instance goes and a new one takes its place, straight into the same load on the
      // same keys (its section counts go with it: the run's lost-update figure then counts only what the
      // others saw, and the counters show a surplus).
      await apps[0].stop();
      apps[0] = await App.start(app, redis.port, appEnv);
      const after = await runLevel(apps, redis, variant, round, 1, rate, {
        warmupMs: 0,
        windowMs: AFTER_RESTART_MS,
        idLevel: 0,
      });
      const run = { ...after, load: LOADS[0] };
      const { seconds1to3, seconds10to30 } = run.firstInstance;
      console.log(
        `round ${round + 1} ${variant.padEnd(18)} restarted at ${pct(run.load)}: its goodput ${seconds1to3.toFixed(0)}/s in seconds 1-3, ${seconds10to30.toFixed(0)}/s in 10-30 (${(seconds1to3 / seconds10to30).toFixed(2)} x), all ${run.goodputPerS.toFixed(0)}/s`,
      );
      return [run];
    }
    for (let level = 0; level < LOADS.length; level++) {
      const run = await runLevel(apps, redis, variant, round, level, LOADS[level] * capacityPerS);
      runs.push(run);
      console.log(
        `round ${round + 1} ${variant.padEnd(18)} ${pct(run.load).padStart(4)}: offered ${run.offeredPerS.toFixed(0)}/s, goodput ${run.goodputPerS.toFixed(0)}/s, p99 ${ms(run.latency.p99)} ms, timeouts ${run.timedOut}, failures ${failureText(run.failures)}, lost ${run.lost ?? '?'}`,
      );
      if (run.crashed) break;
    }
  } finally {
    await Promise.all(apps.map((a) => a.stop()));
    await redis.stop();
  }
  return runs;
}

/** Serial capacity of one hot id: the unlocked critical section back to back, in one application. */
async function measureCapacity(): Promise<{ serialPerS: number; capacityPerS: number }> {
  const redis = await startRedis();
  const app = await App.start('none', redis.port);
  try {
    await app.serial(CAPACITY_MS / 3);
    const { count, ms: elapsed } = await app.serial(CAPACITY_MS);
    const serialPerS = (count / elapsed) * 1000;
    return { serialPerS, capacityPerS: serialPerS * HOT_IDS };
  } finally {
    await app.stop();
    await redis.stop();
  }
}

const ms = (x: number) => (Number.isNaN(x) ? '—' : x < 10 ? x.toFixed(1) : x.toFixed(0));
const us = (x: number) => (Number.isNaN(x) ? '—' : `${x.toFixed(0)}`);
const failureText = (f: Record<string, number>) =>
  Object.entries(f)
    .map(([status, n]) => `${status}×${n}`)
    .join(', ') || '0';

/** Per load and variant: medians over rounds of rates, latencies and CPU; totals of the counts. */
function table(runs: LevelRun[]) {
  return LOADS.map((load) => ({
    load,
    rows: VARIANT_NAMES.map((variant) => {
      const rs = runs.filter((r) => r.variant === variant && r.load === load);
      const failures: Record<string, number> = {};
      for (const r of rs)
        for (const [k, n] of Object.entries(r.failures)) failures[k] = (failures[k] ?? 0) + n;
      const lost = rs.some((r) => r.lost === null) ? null : rs.reduce((n, r) => n + (r.lost ?? 0), 0);
      return {
        variant,
        rounds: rs.length,
        offeredPerS: median(rs.map((r) => r.offeredPerS)),
        goodputPerS: median(rs.map((r) => r.goodputPerS)),
        p50: median(rs.map((r) => r.latency.p50)),
        p90: median(rs.map((r) => r.latency.p90)),
        p99: median(rs.map((r) => r.latency.p99)),
        max: Math.max(...rs.map((r) => r.latency.max)),
        timedOut: rs.reduce((n, r) => n + r.timedOut, 0),
        arrived: rs.reduce((n, r) => n + r.arrived, 0),
        failures,
        lost,
        unanswered: rs.reduce((n, r) => n + r.unanswered, 0),
        appCpuUs: median(rs.map((r) => r.appCpuUs)),
        redisCpuUs: median(rs.map((r) => r.redisCpuUs)),
        busyCores: median(rs.map((r) => r.busyCores)),
        otherCores: Math.max(...rs.map((r) => r.otherCores)),
        crashed: rs.find((r) => r.crashed)?.crashed,
      };
    }),
  }));
}

function print(rows: ReturnType<typeof table>, capacityPerS: number): void {
  for (const { load, rows: byVariant } of rows) {
    console.log(
      `\n${pct(load)} of capacity (${(load * capacityPerS).toFixed(0)} req/s over ${HOT_IDS} hot ids, ${INSTANCES} instances); ` +
        `medians over ${ROUNDS} round(s), counts summed, max the largest:\n`,
    );
    console.log(
      '| variant | offered req/s | goodput req/s | p50 / p90 / p99 / max ms | timeouts / arrived | failures | lost updates | done after timeout | app CPU µs/req | Redis CPU µs/req | cores busy |',
    );
    console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
    for (const r of byVariant) {
      console.log(
        `| ${r.variant}${r.crashed ? ' (crashed)' : ''} | ${r.offeredPerS.toFixed(0)} | ${r.goodputPerS.toFixed(0)} | ${ms(r.p50)} / ${ms(r.p90)} / ${ms(r.p99)} / ${ms(r.max)} | ${r.timedOut} / ${r.arrived} | ${failureText(r.failures)} | ${r.lost ?? '? (not drained)'} | ${r.unanswered} | ${us(r.appCpuUs)} | ${us(r.redisCpuUs)} | ${r.busyCores.toFixed(2)} |`,
      );
    }
    const other = Math.max(...byVariant.map((r) => r.otherCores));
    if (other > 0.2) {
      console.log(
        `\nother processes used up to ${other.toFixed(2)} cores during these windows: the figures are skewed`,
      );
    }
  }
}

async function main(): Promise<void> {
  if (!process.argv.includes('--no-build')) buildApp();
  const capacity = await measureCapacity();
  console.log(
    `capacity: one hot id ${capacity.serialPerS.toFixed(0)} req/s (GET, ${WORK_MS} ms, SET back to back, no lock), ` +
      `${HOT_IDS} hot ids ${capacity.capacityPerS.toFixed(0)} req/s; loads ${LOADS.map((l) => `${pct(l)} = ${(l * capacity.capacityPerS).toFixed(0)} req/s`).join(', ')}\n`,
  );
  const runs: LevelRun[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const order = VARIANT_NAMES.map((_, i) => VARIANT_NAMES[(i + round) % VARIANT_NAMES.length]);
    for (const variant of order) runs.push(...(await runVariant(variant, round, capacity.capacityPerS)));
  }
  const rows = table(runs);
  print(rows, capacity.capacityPerS);

  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const date = new Date().toISOString();
  const record = {
    date,
    mode: MODE,
    options: {
      rounds: ROUNDS,
      windowMs: WINDOW_MS,
      warmupMs: WARMUP_MS,
      timeoutMs: TIMEOUT_MS,
      deadlineHeader: DEADLINE_HEADER,
      loads: LOADS,
      instances: INSTANCES,
      hotIds: HOT_IDS,
      seed: SEED,
      workMs: Number(WORK_MS),
      standingTargetMs: Number(STANDING_TARGET),
      shedPlaces: Number(SHED_PLACES),
    },
    capacity,
    variants: Object.fromEntries(VARIANT_NAMES.map((v) => [v, VARIANTS[v].what])),
    table: rows,
    runs,
  };
  const json = `${JSON.stringify(record, null, 2)}\n`;
  const file = `nest-load-${RESTART ? 'restart-' : ''}${MODE}-${date.replace(/[:.]/g, '-')}.json`;
  writeFileSync(join(dir, file), json);
  writeFileSync(join(dir, `latest-nest-load-${MODE}.json`), json);
  console.log(`\nraw results: bench/results/${file}`);

  const broken = runs.filter((r) => (r.lost ?? 0) > 0 || r.crashed);
  for (const r of broken) {
    console.error(
      `${r.variant} at ${pct(r.load)}, round ${r.round + 1}: ${r.crashed ?? `${r.lost} lost updates`}`,
    );
  }
  for (const r of runs.filter((r) => r.surplus > 0 && !r.crashed)) {
    console.error(`${r.variant} at ${pct(r.load)}: ${r.surplus} increments no application counted`);
  }
  const undrained = runs.filter((r) => !r.drained);
  for (const r of undrained) {
    console.error(`${r.variant} at ${pct(r.load)}: requests still in the handlers after ${DRAIN_MS} ms`);
  }
  if (QUICK && broken.length > 0) process.exitCode = 1;
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
