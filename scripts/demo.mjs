#!/usr/bin/env node
// The demo: three sample instances on one Redis, concurrent requests at all three, once through the
// locked endpoints and once through their unlocked twins, and a report a person can read at a glance.
// Exits non-zero if a locked number is wrong, so it doubles as an end-to-end test.
// Every instance serves the lock board at /locks: its address is printed at the start. Options:
//   --linger             keep the instances contending after the report, until Ctrl-C, to watch the board
//   --screenshot <file>  a PNG of the board while ten requests queue (needs chromium: CHROMIUM_PATH)
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const INSTANCES = ['a', 'b', 'c'];
const children = new Set();
const args = process.argv.slice(2);
const linger = args.includes('--linger');
const screenshot = args.includes('--screenshot') ? args[args.indexOf('--screenshot') + 1] : undefined;
if (args.includes('--screenshot') && !screenshot) {
  console.error('--screenshot needs a file name, as in --screenshot docs/lock-board.png');
  process.exit(2);
}

/** A PNG of the board at `url` once it shows `waiting` queued requests (chromium via playwright-core). */
async function shoot(url, waiting, file) {
  const { chromium } = require('playwright-core');
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-sync',
    ],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    await page.goto(url);
    await page.waitForFunction(
      (n) => document.querySelectorAll('[data-testid="queue-entry"]').length >= n,
      waiting,
    );
    // A later refresh, so the waits of the other instances' waiters have grown from the first sighting.
    await page.waitForTimeout(1_500);
    await page.screenshot({ path: file, fullPage: true });
  } finally {
    await browser.close();
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function start(command, args, env, readyText, label) {
  const child = spawn(command, args, {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${label} did not start:\n${output}`)), 20_000);
    const onData = (chunk) => {
      output += chunk;
      if (output.includes(readyText)) {
        clearTimeout(timer);
        resolve({ child, output: () => output });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (chunk) => (output += chunk));
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${label} exited (${code ?? signal}) before it was ready:\n${output}`));
    });
  });
}

async function stopAll() {
  return Promise.all(
    [...children].map(
      (child) =>
        new Promise((resolve) => {
          const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
          child.once('exit', (code, signal) => {
            clearTimeout(timer);
            resolve({ code, signal });
          });
          child.kill('SIGTERM');
        }),
    ),
  );
}

const call = async (base, method, path) => {
  const response = await fetch(base + path, { method });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
};
/** `n` requests at once, spread round-robin over the instances. */
const burst = (bases, n, method, path) =>
  Promise.all(Array.from({ length: n }, (_, i) => call(bases[i % bases.length], method, path)));

async function main() {
  const started = performance.now();
  const redisPort = await freePort();
  await start(
    'redis-server',
    [
      '--port',
      String(redisPort),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--loglevel',
      'notice',
    ],
    {},
    'Ready to accept connections',
    'redis-server',
  );
  const redisUrl = `redis://127.0.0.1:${redisPort}`;
  const ports = await Promise.all(INSTANCES.map(() => freePort()));
  await Promise.all(
    INSTANCES.map((name, i) =>
      start(
        'node',
        ['dist/sample/main.js'],
        { REDIS_URL: redisUrl, PORT: String(ports[i]), INSTANCE: name, DB_DELAY_MS: '300' },
        'listening on',
        `instance ${name}`,
      ),
    ),
  );
  const bases = ports.map((port) => `http://127.0.0.1:${port}`);
  console.log(`lock board: ${bases[0]}/locks (every instance has one at /locks)`);
  const run = Date.now().toString(36);
  const rows = [];
  const failures = [];
  const expectLocked = (what, ok, detail) => {
    if (!ok) failures.push(`${what}: ${detail}`);
  };

  // 1. Pay one order 30 times at once through three instances.
  await burst(bases, 30, 'POST', `/orders/${run}-locked/pay`);
  await burst(bases, 30, 'POST', `/orders/${run}-unlocked/pay-unlocked`);
  const charged = (await call(bases[0], 'GET', `/orders/${run}-locked`)).body.charges;
  const chargedUnlocked = (await call(bases[0], 'GET', `/orders/${run}-unlocked`)).body.charges;
  rows.push(['payments charged for one order (30 concurrent pays)', charged, chargedUnlocked, '1']);
  expectLocked('payments', charged === 1, `charged ${charged} times`);

  // 2. Sell 10 units to 60 concurrent buyers.
  for (const p of ['locked', 'unlocked'])
    await call(bases[0], 'POST', `/products/${run}-${p}/restock?units=10`);
  const sold = (await burst(bases, 60, 'POST', `/products/${run}-locked/reserve`)).filter(
    (r) => r.body?.reserved,
  ).length;
  const soldUnlocked = (await burst(bases, 60, 'POST', `/products/${run}-unlocked/reserve-unlocked`)).filter(
    (r) => r.body?.reserved,
  ).length;
  rows.push(['units sold from a stock of 10 (60 concurrent buyers)', sold, soldUnlocked, '10']);
  expectLocked('stock', sold === 10, `sold ${sold} of 10 units`);

  // 3. A cold cache key read 30 times at once.
  await burst(bases, 30, 'GET', `/products/${run}-hot`);
  await burst(bases, 30, 'GET', `/products/${run}-cold/unlocked`);
  const hits = (await call(bases[0], 'GET', `/products/${run}-hot/stats`)).body.databaseHits;
  const hitsUnlocked = (await call(bases[0], 'GET', `/products/${run}-cold/stats`)).body.databaseHits;
  rows.push(['database hits for one cold cache key (30 concurrent reads)', hits, hitsUnlocked, '1']);
  expectLocked('cache', hits === 1, `${hits} database hits`);

  // 4. Ten requests queue behind a holder, arriving in a known order through alternating instances.
  const { LockService } = require(join(root, 'dist/index.js'));
  const { Redis } = require('ioredis');
  const redis = new Redis(redisUrl);
  const locks = new LockService(redis, { instanceName: 'demo' });
  await call(bases[0], 'DELETE', '/queue');
  const holder = await locks.acquire('queue:demo');
  const tickets = Array.from({ length: 10 }, (_, i) => `t${i + 1}`);
  const served = [];
  for (const [i, ticket] of tickets.entries()) {
    served.push(call(bases[i % bases.length], 'POST', `/queue/${ticket}`));
    // The next ticket is sent only once this one is visibly queued: that fixes the arrival order.
    while ((await locks.inspect('queue:demo')).queueLength < i + 1)
      await new Promise((r) => setTimeout(r, 5));
  }
  if (screenshot) await shoot(`${bases[1]}/locks`, tickets.length, screenshot);
  await holder.release();
  await Promise.all(served);
  const order = (await call(bases[0], 'GET', '/queue')).body;
  rows.push(['order queued requests were served in', order.join(' '), '—', tickets.join(' ')]);
  expectLocked('fifo', order.join() === tickets.join(), `served ${order.join(' ')}`);
  await locks.close();
  redis.disconnect();

  // 5. The scheduled report: every instance's scheduler fires each slot, one instance builds it.
  const runs = (await call(bases[0], 'GET', '/jobs/report')).body;
  const slots = new Map();
  for (const r of runs) slots.set(r.slot, (slots.get(r.slot) ?? 0) + 1);
  const duplicated = [...slots.values()].filter((n) => n > 1).length;
  rows.push(['report slots built more than once', duplicated, '—', '0']);
  expectLocked('cron', duplicated === 0, `${duplicated} slots built twice`);

  if (linger) await contendUntilInterrupted(bases);
  const exits = await stopAll();
  const unclean = exits.filter((e) => e.code !== 0);
  expectLocked(
    'shutdown',
    unclean.length === 0,
    `${unclean.length} processes did not exit cleanly on SIGTERM`,
  );

  const width = [60, 18, 18, 20];
  const line = (cells) => cells.map((c, i) => String(c).padEnd(width[i])).join(' ');
  console.log(`\nnestjs-redis-lock demo: ${INSTANCES.length} instances on one Redis (${redisUrl})\n`);
  console.log(line(['', 'with @Locked', 'without', 'correct']));
  for (const row of rows) console.log(line(row));
  console.log(
    `\n${failures.length === 0 ? 'PASS' : 'FAIL'} in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  for (const f of failures) console.log(`  wrong with the lock: ${f}`);
  process.exitCode = failures.length === 0 ? 0 : 1;
}

/** Waves of queued requests through every instance, until Ctrl-C: something to watch on the board. */
async function contendUntilInterrupted(bases) {
  console.log(`\nContending until Ctrl-C: watch ${bases[0]}/locks`);
  let stop = false;
  process.once('SIGINT', () => {
    stop = true;
  });
  for (let wave = 1; !stop; wave++) {
    await Promise.all([
      burst(bases, 8, 'POST', `/queue/w${wave}`),
      burst(bases, 6, 'POST', `/orders/w${wave % 5}/pay`),
      burst(bases, 6, 'GET', `/products/w${wave % 3}`),
    ]);
  }
}

main().catch(async (error) => {
  console.error(error);
  await stopAll();
  process.exitCode = 1;
});
