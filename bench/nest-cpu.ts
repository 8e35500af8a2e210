/**
 * What a lock decorator costs a Nest application, per request: one Nest app process per variant (no
 * lock, the module imported but unused, and each library's decorator), `POST /pay/:id` whose service
 * method is locked around GET, 2 ms, SET, on a distinct key per request (uncontended), a fixed number of
 * requests in flight. The app's own CPU time (process.cpuUsage() in the app, read before and after a
 * batch) divided by the requests served; the lock's share is that minus the unlocked app's. The same
 * for `POST /plain/:id`, which never locks, shows what importing each module costs a route without a
 * lock. Redis's CPU per request comes from INFO cpu. Variants run interleaved, in rotated order, each
 * round on a fresh app process; the figure reported is the median over rounds.
 *
 * Usage: npm run bench:nest [-- --rounds 3 --requests 3000 --concurrency 4 --variants ours,murlock]
 * (`--variants ours,ours-board`: the same with the lock board mounted and nobody looking at it;
 * `ours-all-routes`: with the module's requests: true; `ours-handler`: @Locked on the
 * route's handler; `ours-handler-baseline`: that on the --baseline build)
 * To compare with another build of this library in the same run: `--baseline DIR` (a directory inside
 * the project, built with `npx tsc -p tsconfig.build.json --outDir DIR`) adds the variant ours-baseline.
 * BENCH_NODE=/path/to/node runs the applications on another Node; BENCH_APP_ARGS passes them flags.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { App, buildApp, option, ROOT } from './nest/apps';
import { type Admin, startRedis } from './redis-server';
import { median, quantile, sorted } from './stats';

const ALL_VARIANTS = ['none', 'module', 'ours', 'nest-redlock', 'murlock'] as const;
const LOCKS = [
  'ours',
  'nest-redlock',
  'murlock',
  'ours-baseline',
  'ours-board',
  'ours-all-routes',
  'ours-handler',
  'ours-handler-baseline',
];

const ROUNDS = Number(option('rounds', '3'));
const REQUESTS = Number(option('requests', '3000'));
const CONCURRENCY = Number(option('concurrency', '4'));
const WARMUP = Number(option('warmup', '1000'));
const CHUNKS = 5;
const BASELINE = option('baseline', '');
// Once each: `--variants ...,ours-baseline --baseline DIR` names it twice.
const VARIANTS = [
  ...new Set([
    ...option('variants', ALL_VARIANTS.join(',')).split(','),
    ...(BASELINE ? ['ours-baseline'] : []),
  ]),
];

interface Batch {
  /** App CPU (user + system) per request, µs. */
  cpu: number;
  /** Redis CPU per request, µs. */
  redisCpu: number;
  /** Request latency p50 / p99, ms. */
  p50: number;
  p99: number;
  /** Requests that did not answer 201. */
  failed: number;
}

/** The application of `variant`; `ours-baseline` runs on the build in BASELINE. */
const startApp = (variant: string, redisPort: number) =>
  App.start(variant, redisPort, variant.endsWith('-baseline') ? { BENCH_DIST: join(ROOT, BASELINE) } : {});

let nextId = 0;

/** `count` POSTs to `/route/<distinct id>`, `CONCURRENCY` in flight; latencies in ms and failures. */
async function load(
  port: number,
  route: string,
  count: number,
): Promise<{ latencies: number[]; failed: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const latencies: number[] = [];
  let failed = 0;
  let sent = 0;
  const one = () =>
    new Promise<void>((resolve) => {
      const started = performance.now();
      const req = request(
        { agent, host: '127.0.0.1', port, method: 'POST', path: `/${route}/${++nextId}` },
        (res) => {
          res.resume();
          res.on('end', () => {
            if (res.statusCode !== 201) failed++;
            latencies.push(performance.now() - started);
            resolve();
          });
        },
      );
      req.on('error', () => {
        failed++;
        resolve();
      });
      req.end();
    });
  const loop = async () => {
    while (sent < count) {
      sent++;
      await one();
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, loop));
  agent.destroy();
  return { latencies, failed };
}

/** Totals of one route over several chunks: app and Redis CPU, latencies, failures. */
interface Tally {
  cpu: number;
  redisCpu: number;
  latencies: number[];
  failed: number;
  requests: number;
}

const tally = (): Tally => ({ cpu: 0, redisCpu: 0, latencies: [], failed: 0, requests: 0 });

async function chunk(app: App, redis: Admin, route: string, count: number, into: Tally): Promise<void> {
  const cpu0 = await app.cpu();
  const redis0 = await redis.cpuUs();
  const { latencies, failed } = await load(app.port, route, count);
  into.cpu += (await app.cpu()) - cpu0;
  into.redisCpu += (await redis.cpuUs()) - redis0;
  into.latencies.push(...latencies);
  into.failed += failed;
  into.requests += count;
}

function batch(t: Tally): Batch {
  const s = sorted(t.latencies);
  return {
    cpu: t.cpu / t.requests,
    redisCpu: t.redisCpu / t.requests,
    p50: quantile(s, 0.5),
    p99: quantile(s, 0.99),
    failed: t.failed,
  };
}

/** Per variant: the HTTP batches of each route, and the in-process calls (CPU per call, µs). */
type Results = Record<
  string,
  { pay: Batch[]; plain: Batch[]; direct: { locked: number; unlocked: number }[] }
>;

async function main(): Promise<void> {
  if (!process.argv.includes('--no-build')) buildApp();
  const server = await startRedis();
  const results: Results = {};
  for (const variant of VARIANTS) results[variant] = { pay: [], plain: [], direct: [] };
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const order = VARIANTS.map((_, i) => VARIANTS[(i + round) % VARIANTS.length]);
      for (const variant of order) {
        const app = await startApp(variant, server.port);
        try {
          await load(app.port, 'pay', WARMUP);
          await load(app.port, 'plain', WARMUP);
          // The two routes alternate in chunks, so drift in the machine's load (and the JIT's late
          // work) hits both alike.
          const pay = tally();
          const plain = tally();
          for (let i = 0; i < CHUNKS; i++) {
            await chunk(app, server.admin, 'pay', REQUESTS / CHUNKS, pay);
            await chunk(app, server.admin, 'plain', REQUESTS / CHUNKS, plain);
          }
          results[variant].pay.push(batch(pay));
          results[variant].plain.push(batch(plain));
          await app.direct(true, WARMUP, CONCURRENCY);
          let locked = 0;
          let unlocked = 0;
          for (let i = 0; i < CHUNKS; i++) {
            locked += await app.direct(true, REQUESTS / CHUNKS, CONCURRENCY);
            unlocked += await app.direct(false, REQUESTS / CHUNKS, CONCURRENCY);
          }
          results[variant].direct.push({ locked: locked / CHUNKS, unlocked: unlocked / CHUNKS });
        } finally {
          await app.stop();
        }
        const last = results[variant].pay.at(-1) as Batch;
        console.log(
          `round ${round + 1} ${variant.padEnd(12)} pay ${last.cpu.toFixed(0)} µs/req, plain ${(results[variant].plain.at(-1) as Batch).cpu.toFixed(0)} µs/req`,
        );
      }
    }
  } finally {
    await server.stop();
  }
  report(results);
}

function report(results: Results): void {
  const med = (variant: string, route: 'pay' | 'plain', field: keyof Batch) =>
    median(results[variant][route].map((b) => b[field]));
  const base = results.none ? med('none', 'pay', 'cpu') : Number.NaN;
  const basePlain = results.none ? med('none', 'plain', 'cpu') : Number.NaN;
  const shares: Record<string, number> = {};
  console.log(
    `\nNest app CPU per request, median of ${ROUNDS} rounds × ${REQUESTS} requests, ${CONCURRENCY} in flight, distinct keys:\n`,
  );
  console.log(
    '| variant | app CPU / locked request | lock share | app CPU / unlocked route | vs no module | Redis CPU / request | p50 / p99 ms | failed |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const variant of VARIANTS) {
    const cpu = med(variant, 'pay', 'cpu');
    const plain = med(variant, 'plain', 'cpu');
    const share = cpu - base;
    if (LOCKS.includes(variant)) shares[variant] = share;
    const failed = results[variant].pay.reduce((n, b) => n + b.failed, 0);
    console.log(
      `| ${variant} | ${cpu.toFixed(0)} µs | ${LOCKS.includes(variant) ? `${share.toFixed(0)} µs` : '—'} | ${plain.toFixed(0)} µs | ${(plain - basePlain).toFixed(1)} µs | ${med(variant, 'pay', 'redisCpu').toFixed(0)} µs | ${med(variant, 'pay', 'p50').toFixed(2)} / ${med(variant, 'pay', 'p99').toFixed(2)} | ${failed} |`,
    );
  }
  console.log('\nThe service method called in-process (no HTTP), CPU per call:\n');
  console.log('| variant | locked call | unlocked call | lock share |');
  console.log('| --- | --- | --- | --- |');
  const directShares: Record<string, number> = {};
  for (const variant of VARIANTS) {
    const locked = median(results[variant].direct.map((d) => d.locked));
    const unlocked = median(results[variant].direct.map((d) => d.unlocked));
    if (LOCKS.includes(variant)) directShares[variant] = locked - unlocked;
    console.log(
      `| ${variant} | ${locked.toFixed(0)} µs | ${unlocked.toFixed(0)} µs | ${LOCKS.includes(variant) ? `${(locked - unlocked).toFixed(0)} µs` : '—'} |`,
    );
  }
  const peers = ['nest-redlock', 'murlock'].filter((p) => shares[p] !== undefined);
  if (shares.ours !== undefined && peers.length > 0) {
    const leanest = Math.min(...peers.map((p) => shares[p]));
    console.log(
      `\nlock share: ours ${shares.ours.toFixed(0)} µs = ${(shares.ours / leanest).toFixed(2)} × the leanest Nest peer's (${leanest.toFixed(0)} µs); target ≤ 1.0 ×`,
    );
  }
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file =
    VARIANTS.length === ALL_VARIANTS.length && !BASELINE ? 'latest-nest.json' : 'latest-nest-partial.json';
  const record = {
    date: new Date().toISOString(),
    rounds: ROUNDS,
    requests: REQUESTS,
    concurrency: CONCURRENCY,
    results,
  };
  writeFileSync(join(dir, file), `${JSON.stringify(record, null, 2)}\n`);
  console.log(`raw results: bench/results/${file}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
