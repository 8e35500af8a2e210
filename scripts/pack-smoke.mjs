#!/usr/bin/env node
// Proves the PACKED package works in real consumer applications, outside this repository:
//   1. `npm pack` the built package and check what the tarball holds (dist JS + typings, README, CHANGELOG,
//      docs/, LICENSE; no sources, tests, benchmarks, sample or Lua files: the Lua is embedded in the JS),
//      that every relative link of its Markdown reaches a file (and heading) inside it, and that the
//      Markdown names no path of the repository that does not ship.
//   2. A Nest 12 ES-module app (`"type": "module"`, `import` of the CommonJS build) and
//   3. a Nest 11 CommonJS app (`require`), each installed from the tarball in a temp dir, once with
//      ioredis alone and once with node-redis (`redis` 6 and 5) alone (the module connects with
//      whichever is installed), and the Nest 11 app once more on Fastify instead of Express (it has no
//      Express installed), against a redis-server started here on a free port. Each app runs a @Locked
//      method twice concurrently (the calls must exclude each other), calls LockService.using, closes,
//      and must then exit by itself (no timer or socket left open). Over HTTP, a busy lock must reach the app's own catch-all
//      filter as a 409 with Retry-After, and a client that gives up while its request waits at a @Locked
//      service method called by a route with no lock (the README's shape) must leave the line, with
//      nothing run for it. Then the `nestjs-redis-lock/testing` entry: the same
//      @Locked pair on RedisLockTestingModule (in memory, no connection), and a TypeScript file importing
//      both entries, type-checked with the leg's module resolution (nodenext for ESM, node10 for CommonJS).
// Needs `npm run build` first and redis-server on PATH. PACK_SMOKE_KEEP=1 keeps the temp dir;
// `--pack-only` stops after step 1. The apps' own dependencies need no build: `--prepare DIR` installs
// them into DIR's apps (and then exits), and `--prepared DIR` runs the smoke on those apps, adding only the
// tarball; CI prepares them beside its own `npm ci`, when the machine mostly waits on the network and disk.
// Exits non-zero on any failure.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const keep = process.env.PACK_SMOKE_KEEP === '1';
/** `--pack-only`: the tarball's contents and links, without the consumer apps (seconds, not minutes). */
const packOnly = process.argv.includes('--pack-only');
const optionValue = (name) => {
  const at = process.argv.indexOf(name);
  if (at < 0) return undefined;
  const value = process.argv[at + 1];
  if (!value || value.startsWith('--')) {
    console.error(`pack-smoke: ${name} needs a directory`);
    process.exit(2);
  }
  return value;
};
const prepareInto = optionValue('--prepare');
const prepared = optionValue('--prepared');
const INSTALL_TIMEOUT = 180_000;
const RUN_TIMEOUT = 60_000;
/**
 * Four type-checks of the Nest typings at once, beside CI's fault and soak runs on two cores, took more
 * than a minute each: checking is slow, not wrong.
 */
const TYPECHECK_TIMEOUT = 240_000;
/** After app.close() the process must be gone within this long. */
const EXIT_AFTER_CLOSE = 5_000;

/** What the type check of a consumer's TypeScript needs. */
const TYPES = ['typescript@^5', '@types/node@^20'];

/** Nest 12 ES-module and Nest 11 CommonJS apps, each with one client library installed alone. */
const nest12 = [
  '@nestjs/common@^12',
  '@nestjs/core@^12',
  '@nestjs/platform-express@^12',
  'reflect-metadata',
  'rxjs',
];
const nest11 = [
  '@nestjs/common@^11',
  '@nestjs/core@^11',
  '@nestjs/platform-express@^11',
  'reflect-metadata',
  'rxjs',
];
const nest11Fastify = [
  ...nest11.filter((dep) => !dep.startsWith('@nestjs/platform-express')),
  '@nestjs/platform-fastify@^11',
];
const ESM = { esm: true, tsconfig: { module: 'nodenext', moduleResolution: 'nodenext' } };
const CJS = { esm: false, tsconfig: { module: 'commonjs', moduleResolution: 'node10' } };
const LEGS = [
  {
    name: 'nest12-esm',
    ...ESM,
    client: 'ioredis',
    // ioredis 6.1's own typings import redis-errors, which ships none: its consumers install them.
    deps: [...nest12, 'ioredis@^6', ...TYPES, '@types/redis-errors'],
  },
  { name: 'nest11-cjs', ...CJS, client: 'ioredis', deps: [...nest11, 'ioredis@^5', ...TYPES] },
  { name: 'nest12-esm-redis6', ...ESM, client: 'redis', deps: [...nest12, 'redis@^6', ...TYPES] },
  {
    name: 'nest11-cjs-redis5',
    ...CJS,
    // node-redis 5's own typings import node:net as a default export.
    tsconfig: { ...CJS.tsconfig, esModuleInterop: true },
    client: 'redis',
    deps: [...nest11, 'redis@^5', ...TYPES],
  },
  // The HTTP checks on Fastify: the lock errors' statuses and Retry-After, the skip, a client that gives
  // up. Its typings are the nest11-cjs leg's, so they are not checked a second time.
  {
    name: 'nest11-cjs-fastify',
    ...CJS,
    http: 'fastify',
    typeCheck: false,
    client: 'ioredis',
    deps: [...nest11Fastify, 'ioredis@^5'],
  },
];

const started = Date.now();
const secs = (ms) => `${(ms / 1000).toFixed(1)}s`;
const log = (msg) => console.log(`[pack-smoke ${secs(Date.now() - started).padStart(6)}] ${msg}`);

let redis;
let tmp;
process.on('exit', () => redis?.kill('SIGKILL'));
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    redis?.kill('SIGKILL');
    if (tmp && !keep) rmSync(tmp, { recursive: true, force: true });
    process.exit(130);
  });
}

/** Runs a command; resolves { code, signal, stdout, stderr, ms }. Kills it (and says so) after `timeout`. */
function run(cmd, args, { cwd, timeout, env, onLine } = {}) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const child = spawn(cmd, args, { cwd, env: env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let pending = '';
    let timedOut = false;
    child.stdout.on('data', (d) => {
      stdout += d;
      if (!onLine) return;
      pending += d;
      const lines = pending.split('\n');
      pending = lines.pop();
      for (const line of lines) onLine(line, child);
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const timer = timeout
      ? setTimeout(() => {
          timedOut = true;
          child.kill('SIGKILL');
        }, timeout)
      : undefined;
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve({
        code: -1,
        signal: null,
        stdout,
        stderr: `${stderr}${error.message}`,
        ms: Date.now() - t0,
        timedOut,
      });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - t0, end: Date.now(), timedOut });
    });
  });
}

const tail = (text, lines = 25) => text.trim().split('\n').slice(-lines).join('\n');

// --- 1. pack -------------------------------------------------------------------------------------

async function pack() {
  const res = await run('npm', ['pack', '--json', '--pack-destination', tmp], { cwd: root, timeout: 60_000 });
  if (res.code !== 0) throw new Error(`npm pack failed (exit ${res.code}):\n${tail(res.stderr)}`);
  const [info] = JSON.parse(res.stdout.slice(res.stdout.indexOf('[')));
  const files = info.files.map((f) => f.path);
  const problems = [];
  for (const must of [
    'package.json',
    'README.md',
    'CHANGELOG.md',
    'LICENSE',
    'dist/index.js',
    'dist/index.d.ts',
    'dist/testing/index.js',
    'dist/testing/index.d.ts',
  ]) {
    if (!files.includes(must)) problems.push(`missing ${must}`);
  }
  // The Lua scripts are embedded by scripts/embed-lua.mjs into this module; no .lua file is read at run time.
  if (!files.includes('dist/protocol/lua/scripts.generated.js')) {
    problems.push('missing dist/protocol/lua/scripts.generated.js (the embedded Lua scripts)');
  }
  for (const file of files) {
    const allowed =
      ['package.json', 'README.md', 'CHANGELOG.md', 'LICENSE'].includes(file) ||
      /^docs\/[\w/.-]+\.(md|svg|png)$/.test(file) ||
      (file.startsWith('dist/') && !file.startsWith('dist/sample/') && /\.(js|d\.ts)$/.test(file));
    if (!allowed) problems.push(`unexpected file ${file}`);
    if (/^(dist\/)?(test|bench|sample|lib|scripts)\//.test(file) || file.startsWith('dist/docs/')) {
      problems.push(`must not ship ${file}`);
    }
    if (file.endsWith('.ts') && !file.endsWith('.d.ts')) problems.push(`TypeScript source ${file}`);
    if (file.endsWith('.lua')) problems.push(`Lua file ${file} (the build embeds the Lua in JS)`);
  }
  problems.push(...brokenLinks(files), ...repositoryPaths(files));
  if (problems.length) throw new Error(`tarball ${info.filename}:\n  ${[...new Set(problems)].join('\n  ')}`);
  return { tarball: join(tmp, info.filename), files: files.length, size: info.size };
}

/**
 * Every relative link of the shipped Markdown (README.md, docs/) must reach a file in the tarball, and
 * an anchor a heading (or `<a id>`) of that file: what a reader of the package follows.
 */
function brokenLinks(files) {
  const problems = [];
  const markdown = files.filter((file) => file.endsWith('.md'));
  const anchors = new Map(
    markdown.map((file) => [file, headingAnchors(readFileSync(join(root, file), 'utf8'))]),
  );
  for (const file of markdown) {
    const text = readFileSync(join(root, file), 'utf8').replace(/```[\s\S]*?```/g, '');
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      if (/^[a-z][a-z+.-]*:/i.test(target)) continue;
      const [path, anchor] = target.split('#');
      const resolved = path === '' ? file : posix.normalize(posix.join(posix.dirname(file), path));
      if (!files.includes(resolved)) {
        // The source tree (lib/, bench/, test/) is not in the package: a page names such a path as text.
        problems.push(`${file}: link ${target} reaches ${resolved}, which is not in the package`);
      } else if (anchor && resolved.endsWith('.md') && !anchors.get(resolved).has(anchor)) {
        problems.push(`${file}: link ${target}: ${resolved} has no heading #${anchor}`);
      }
    }
  }
  return problems;
}

/**
 * The shipped Markdown names only what ships: a path into the repository's test/, bench/, chaos/,
 * scripts/ or sample/ means nothing to a reader of the package (CONTRIBUTING.md, which does not ship,
 * has them).
 */
function repositoryPaths(files) {
  const problems = [];
  for (const file of files.filter((name) => name.endsWith('.md'))) {
    const lines = readFileSync(join(root, file), 'utf8').split('\n');
    for (const [at, line] of lines.entries()) {
      for (const [path] of line.matchAll(/(?<![\w./-])(?:test|bench|chaos|scripts|sample)\/[\w./-]*/g)) {
        problems.push(`${file}:${at + 1} names ${path}, which is not in the package`);
      }
    }
  }
  return problems;
}

/** The anchors GitHub and npm give a document's headings (lower case, punctuation dropped, - for spaces). */
function headingAnchors(text) {
  const anchors = new Set();
  const seen = new Map();
  for (const [, heading] of text.replace(/```[\s\S]*?```/g, '').matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  for (const [, id] of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(id);
  return anchors;
}

// --- redis ---------------------------------------------------------------------------------------

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function ping(port) {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => done(String(d).startsWith('+PONG')));
  });
}

async function startRedis() {
  for (let attempt = 1; attempt <= 3; attempt++) {
    const port = await freePort();
    const child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    redis = child;
    let output = '';
    let exited = false;
    child.stdout.on('data', (d) => {
      output += d;
    });
    child.stderr.on('data', (d) => {
      output += d;
    });
    child.on('error', (error) => {
      exited = true;
      output += error.message;
    });
    child.on('exit', () => {
      exited = true;
    });
    const deadline = Date.now() + 5_000;
    while (!exited && Date.now() < deadline) {
      if (await ping(port)) return port;
      await new Promise((r) => setTimeout(r, 50));
    }
    child.kill('SIGKILL');
    redis = undefined;
    if (attempt === 3 || !exited)
      throw new Error(`redis-server did not start on port ${port}:\n${tail(output)}`);
  }
}

// --- 2/3. consumer apps --------------------------------------------------------------------------

/**
 * The consumer: plain JS, so decorators are applied by hand. The ESM app calls the decorator functions
 * directly; the CommonJS app goes through Reflect.decorate with `design:paramtypes`, as tsc emits it.
 */
function appSource(esm, leg, http = 'express') {
  const imports = esm
    ? `import 'reflect-metadata';
import { request } from 'node:http';
import { Catch, Controller, HttpException, Inject, Injectable, Module, Post, Req, UseInterceptors } from '@nestjs/common';
import { HttpAdapterHost, NestFactory } from '@nestjs/core';
import { LockedRoute, LockInterceptor, RedisLockBoardModule, RedisLockModule, LockService, Locked } from 'nestjs-redis-lock';
import { RedisLockTestingModule, LockService as TestingEntryLockService } from 'nestjs-redis-lock/testing';`
    : `'use strict';
require('reflect-metadata');
const { request } = require('node:http');
const { Catch, Controller, HttpException, Inject, Injectable, Module, Post, Req, UseInterceptors } = require('@nestjs/common');
const { HttpAdapterHost, NestFactory } = require('@nestjs/core');
const { LockedRoute, LockInterceptor, RedisLockBoardModule, RedisLockModule, LockService, Locked } = require('nestjs-redis-lock');
const { RedisLockTestingModule, LockService: TestingEntryLockService } = require('nestjs-redis-lock/testing');`;

  const decorate = esm
    ? `// Decorators called by hand.
Object.defineProperty(
  OrderService.prototype,
  'pay',
  Locked('order:<0>', { ttl: 5000, waitTimeout: 20000 })(
    OrderService.prototype,
    'pay',
    Object.getOwnPropertyDescriptor(OrderService.prototype, 'pay'),
  ),
);
Inject(LockService)(OrderService, undefined, 0);
Injectable()(OrderService);
class AppModule {}
Module({ imports: [RedisLockModule.forRoot({ url: process.env.REDIS_URL })], providers: [OrderService] })(AppModule);
class TestAppModule {}
Module({ imports: [RedisLockTestingModule.forRoot()], providers: [OrderService] })(TestAppModule);`
    : `// What tsc emits for decorators (with emitDecoratorMetadata), through Reflect.decorate.
Object.defineProperty(
  OrderService.prototype,
  'pay',
  Reflect.decorate(
    [Locked('order:<0>', { ttl: 5000, waitTimeout: 20000 })],
    OrderService.prototype,
    'pay',
    Object.getOwnPropertyDescriptor(OrderService.prototype, 'pay'),
  ),
);
OrderService = Reflect.decorate([Injectable(), Reflect.metadata('design:paramtypes', [LockService])], OrderService);
let AppModule = class AppModule {};
AppModule = Reflect.decorate(
  [Module({ imports: [RedisLockModule.forRoot({ url: process.env.REDIS_URL })], providers: [OrderService] })],
  AppModule,
);
let TestAppModule = class TestAppModule {};
TestAppModule = Reflect.decorate(
  [Module({ imports: [RedisLockTestingModule.forRoot()], providers: [OrderService] })],
  TestAppModule,
);`;

  const adapter =
    http !== 'fastify'
      ? ''
      : esm
        ? "\nimport { FastifyAdapter } from '@nestjs/platform-fastify';"
        : "\nconst { FastifyAdapter } = require('@nestjs/platform-fastify');";
  return `${imports}${adapter}

const LEG = ${JSON.stringify(leg)};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const check = (ok, what) => {
  if (!ok) throw new Error('check failed: ' + what);
};

${esm ? 'class OrderService {' : 'let OrderService = class OrderService {'}
  constructor(locks) {
    this.locks = locks;
    this.running = 0;
    this.maxRunning = 0;
    this.order = [];
  }
  async pay(orderId, label) {
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    this.order.push(label);
    const lease = this.locks.currentLease();
    await sleep(200);
    this.running--;
    return { label, key: lease && lease.key, token: lease && lease.token, fence: lease && lease.fence };
  }
}${esm ? '' : ';'}
${decorate}

// Over HTTP (decorators called by hand in both legs): a lock error must reach the application's own
// catch-all filter as an HttpException, converted where this Nest hands the error to its filters.
class HttpOrders {
  async pay(id) {
    return { paid: id };
  }
}
// Its wait bounds every call, the first on a free lock included: 50 ms let a first call on a fresh
// connection, on a machine busy with the other legs' type-checks, time out on a free lock (409).
Object.defineProperty(
  HttpOrders.prototype,
  'pay',
  Locked('order:<0>', { waitTimeout: 2000 })(HttpOrders.prototype, 'pay', Object.getOwnPropertyDescriptor(HttpOrders.prototype, 'pay')),
);
Injectable()(HttpOrders);
class PayController {
  constructor(orders) {
    this.orders = orders;
  }
  pay(req) {
    return this.orders.pay(req.params.id);
  }
}
Req()(PayController.prototype, 'pay', 0);
Post('pay/:id')(PayController.prototype, 'pay', Object.getOwnPropertyDescriptor(PayController.prototype, 'pay'));
Inject(HttpOrders)(PayController, undefined, 0);
Controller()(PayController);
// A route locked by the interceptor that skips when busy: the skip answers the route's 201, no body.
class CartController {
  add(req) {
    return { added: req.params.id };
  }
}
Req()(CartController.prototype, 'add', 0);
for (const decorator of [
  LockedRoute('cartskip:<0.params.id>', { waitTimeout: 0, onTimeout: 'skip' }),
  UseInterceptors(LockInterceptor),
  Post('cart/:id'),
]) {
  decorator(CartController.prototype, 'add', Object.getOwnPropertyDescriptor(CartController.prototype, 'add'));
}
Controller()(CartController);
// The README's shape: a route with no lock calling a @Locked service method, after an await. A client
// that gives up while it waits takes its waiter out of the line as the connection closes, with no
// setting, and nothing runs for it.
const waited = [];
class WaitService {
  async wait(id) {
    waited.push(id);
    return { waited: id };
  }
}
Object.defineProperty(
  WaitService.prototype,
  'wait',
  Locked('wait:<0>', { waitTimeout: 60000 })(WaitService.prototype, 'wait', Object.getOwnPropertyDescriptor(WaitService.prototype, 'wait')),
);
Injectable()(WaitService);
class WaitController {
  constructor(service) {
    this.service = service;
  }
  async wait(req) {
    await new Promise((resolve) => setImmediate(resolve));
    return this.service.wait(req.params.id);
  }
}
Req()(WaitController.prototype, 'wait', 0);
Post('wait/:id')(WaitController.prototype, 'wait', Object.getOwnPropertyDescriptor(WaitController.prototype, 'wait'));
Inject(WaitService)(WaitController, undefined, 0);
Controller()(WaitController);
class AllExceptions {
  constructor(host) {
    this.host = host;
  }
  catch(error, context) {
    const status = error instanceof HttpException ? error.getStatus() : 500;
    const code = error instanceof HttpException && error.cause ? error.cause.code : undefined;
    this.host.httpAdapter.reply(context.switchToHttp().getResponse(), { status, code }, status);
  }
}
Catch()(AllExceptions);
class HttpAppModule {}
Module({
  imports: [RedisLockModule.forRoot({ url: process.env.REDIS_URL }), RedisLockBoardModule.forRoot()],
  controllers: [PayController, CartController, WaitController],
  providers: [HttpOrders, WaitService],
})(HttpAppModule);

/** Resolves once \`condition\` holds, checked every 5 ms; fails after \`ms\`. */
async function until(condition, ms, what) {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('check failed: ' + what + ' within ' + ms + ' ms');
    await sleep(5);
  }
}

/** GET without keep-alive: status and the JSON body. */
function getJson(url) {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false }, (res) => {
      let body = '';
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(body || 'null') }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** POST without keep-alive (nothing left open after close): status, Retry-After and the JSON body. */
function post(url) {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent: false }, (res) => {
      let body = '';
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode, retryAfter: res.headers['retry-after'], body: JSON.parse(body || 'null') }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function main() {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
  const result = {};
  try {
    const orders = app.get(OrderService);
    const locks = app.get(LockService);
    check(locks instanceof LockService, 'app.get(LockService) is a LockService');
    check(orders.locks === locks, 'LockService injected into the consumer service');

    const id = LEG + '-42';
    const t0 = Date.now();
    const [a, b] = await Promise.all([orders.pay(id, 'a'), orders.pay(id, 'b')]);
    result.lockedMs = Date.now() - t0;
    result.maxRunning = orders.maxRunning;
    check(orders.maxRunning === 1, 'concurrent @Locked calls exclude each other (max running ' + orders.maxRunning + ')');
    check(result.lockedMs >= 380, 'the two 200 ms calls ran one after the other (' + result.lockedMs + ' ms)');
    check(a.key === 'order:' + id && b.key === 'order:' + id, 'lease key from the template: ' + a.key + ', ' + b.key);
    check(a.token && b.token && a.token !== b.token, 'each call held its own lease');
    const [first, second] = orders.order[0] === 'a' ? [a, b] : [b, a];
    check(first.fence > 0 && second.fence > first.fence, 'the later holder has the greater fencing token: ' + first.fence + ', ' + second.fence);

    const usingKey = 'using:' + LEG;
    const value = await locks.using(usingKey, async (lease) => {
      check(lease.key === usingKey && typeof lease.token === 'string', 'using() passes the lease');
      const current = locks.currentLease(usingKey);
      check(current && current.token === lease.token, 'currentLease() inside using() is its lease');
      const info = await locks.inspect(usingKey);
      check(info.held && info.holder === lease.token, 'inspect() shows the holder');
      return 'done';
    });
    check(value === 'done', 'using() returns the function result');
    check((await locks.inspect(usingKey)).held === false, 'using() released the lock');
  } finally {
    await app.close();
  }

  // The testing entry: the same tokens on the in-memory store, no connection.
  check(TestingEntryLockService === LockService, 'nestjs-redis-lock/testing exports the same LockService');
  const testApp = await NestFactory.createApplicationContext(TestAppModule, { logger: ['error', 'warn'] });
  try {
    const orders = testApp.get(OrderService);
    const locks = testApp.get(LockService);
    check(orders.locks === locks, 'the testing module provides LockService');
    check(locks.redisClient === undefined, 'the testing module opens no Redis connection');
    const [a, b] = await Promise.all([orders.pay('t-1', 'a'), orders.pay('t-1', 'b')]);
    check(orders.maxRunning === 1, '@Locked on the testing module excludes (max running ' + orders.maxRunning + ')');
    check(a.key === 'order:t-1' && b.fence > 0 && a.fence !== b.fence, 'testing module leases: ' + a.fence + ', ' + b.fence);
    result.testingMaxRunning = orders.maxRunning;
  } finally {
    await testApp.close();
  }
  const http = await NestFactory.create(HttpAppModule, ...${http === 'fastify' ? '[new FastifyAdapter(), ' : '['}{ logger: false }]);
  try {
    http.useGlobalFilters(new AllExceptions(http.get(HttpAdapterHost)));
    await http.listen(0, '127.0.0.1');
    const url = 'http://127.0.0.1:' + http.getHttpServer().address().port + '/pay/' + LEG;
    const free = await post(url);
    check(free.status === 201, 'a free lock over HTTP answers 201 (got ' + free.status + ')');
    const held = await http.get(LockService).acquire('order:' + LEG);
    const board = await getJson('http://127.0.0.1:' + http.getHttpServer().address().port + '/locks/api/locks');
    check(
      board.status === 200 && board.body.locks.some((l) => l.key === 'order:' + LEG && l.holder === held.token),
      'the lock board lists the held lock (got ' + board.status + ' ' + JSON.stringify(board.body).slice(0, 200) + ')',
    );
    const busy = await post(url);
    await held.release();
    check(
      busy.status === 409 && busy.body.code === 'LOCK_TIMEOUT' && busy.retryAfter === '1',
      'a busy lock reaches the application catch-all filter as a 409 with Retry-After (got ' + busy.status + ' ' + JSON.stringify(busy.body) + ', Retry-After ' + busy.retryAfter + ')',
    );
    result.httpBusy = busy.status;

    const cart = 'http://127.0.0.1:' + http.getHttpServer().address().port + '/cart/' + LEG;
    const added = await post(cart);
    check(added.status === 201 && added.body && added.body.added === LEG, 'a free @LockedRoute runs (got ' + added.status + ')');
    const cartHeld = await http.get(LockService).acquire('cartskip:' + LEG);
    const skipped = await post(cart);
    await cartHeld.release();
    check(
      skipped.status === 201 && skipped.body === null,
      "a busy @LockedRoute with onTimeout 'skip' answers 201 with no body (got " + skipped.status + ' ' + JSON.stringify(skipped.body) + ')',
    );
    result.httpSkipped = skipped.status;

    const waitKey = 'wait:' + LEG;
    const locks = http.get(LockService);
    const waitHeld = await locks.acquire(waitKey);
    const gone = request('http://127.0.0.1:' + http.getHttpServer().address().port + '/wait/' + LEG, { method: 'POST', agent: false });
    gone.on('error', () => {});
    gone.end();
    const inLine = (n) => async () => (await locks.inspect(waitKey)).queueLength === n;
    await until(inLine(1), 10000, 'the request to a route calling a held @Locked service method waits in line');
    gone.destroy();
    // Its wait is a minute long: the waiter leaves because its client closed the connection.
    await until(inLine(0), 10000, 'a client that gave up leaves the line as its connection closes');
    await waitHeld.release();
    await (await locks.acquire(waitKey, { waitTimeout: 5000 })).release();
    check(waited.length === 0, 'nothing ran for a client that gave up (ran for ' + JSON.stringify(waited) + ')');
    result.httpClosedLeft = true;
  } finally {
    await http.close();
  }
  console.log('PACK_SMOKE_CLOSED ' + JSON.stringify(result));
  // Diagnostics only (read by the parent if the process does not exit): what is still open right now.
  setImmediate(() => console.log('PACK_SMOKE_RESOURCES ' + JSON.stringify(process.getActiveResourcesInfo())));
}

main().catch((error) => {
  console.error(error && error.stack ? error.stack : error);
  process.exitCode = 1;
});
`;
}

/** A leg's app with its dependencies and the tarball, in one npm install. */
function prepareAndAdd(leg, tarball) {
  return prepareLeg({ ...leg, deps: [...leg.deps, tarball] }, tmp);
}

/** Makes the leg's app in `base` and installs its dependencies (saved in its package.json): no tarball yet. */
async function prepareLeg(leg, base) {
  const dir = join(base, leg.name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify({ name: `pack-smoke-${leg.name}`, private: true, type: leg.esm ? 'module' : 'commonjs' }, null, 2)}\n`,
  );
  log(`${leg.name}: npm install ${leg.deps.join(' ')}`);
  return npmInstall(dir, leg.deps);
}

function npmInstall(dir, packages) {
  return run(
    'npm',
    ['install', '--no-audit', '--no-fund', '--prefer-offline', '--no-package-lock', ...packages],
    {
      cwd: dir,
      timeout: INSTALL_TIMEOUT,
    },
  );
}

const installFailure = (install) =>
  install.timedOut
    ? `npm install timed out after ${secs(INSTALL_TIMEOUT)}`
    : `npm install failed (exit ${install.code}):\n${tail(install.stderr)}`;

async function runLeg(leg, tarball, redisUrl) {
  const dir = join(tmp, leg.name);
  const out = { name: leg.name, ok: false, installMs: 0, runMs: 0, detail: '' };
  // Prepared: its dependencies are in, the tarball goes on top. Otherwise all of it in one install.
  if (prepared) log(`${leg.name}: npm install the tarball beside the prepared dependencies`);
  const install = prepared ? await npmInstall(dir, [tarball]) : await prepareAndAdd(leg, tarball);
  writeFileSync(join(dir, 'main.js'), appSource(leg.esm, leg.name, leg.http));
  out.installMs = install.ms;
  if (install.code !== 0) {
    out.detail = installFailure(install);
    return out;
  }
  const version = (pkg) => {
    try {
      return JSON.parse(readFileSync(join(dir, 'node_modules', pkg, 'package.json'), 'utf8')).version;
    } catch {
      return '?';
    }
  };
  out.versions = `@nestjs/core ${version('@nestjs/core')}, ${leg.client} ${version(leg.client)}`;
  // Alone: the other client library must not have come in (both are optional peer dependencies).
  const other = leg.client === 'redis' ? 'ioredis' : 'redis';
  if (existsSync(join(dir, 'node_modules', other))) {
    out.detail = `${other} was installed too: it must stay an optional peer dependency`;
    return out;
  }
  log(`${leg.name}: installed in ${secs(install.ms)} (${out.versions}); running the app`);

  let closedAt;
  let result;
  let resources = '';
  let killedAfterClose = false;
  const env = { ...process.env, REDIS_URL: redisUrl };
  delete env.NODE_OPTIONS;
  const app = await run(process.execPath, ['main.js'], {
    cwd: dir,
    env,
    timeout: RUN_TIMEOUT,
    onLine: (line, child) => {
      if (line.startsWith('PACK_SMOKE_CLOSED ')) {
        closedAt = Date.now();
        result = JSON.parse(line.slice('PACK_SMOKE_CLOSED '.length));
        setTimeout(() => {
          if (child.exitCode === null && child.signalCode === null) {
            killedAfterClose = true;
            child.kill('SIGKILL');
          }
        }, EXIT_AFTER_CLOSE).unref();
      } else if (line.startsWith('PACK_SMOKE_RESOURCES ')) {
        resources = line.slice('PACK_SMOKE_RESOURCES '.length);
      }
    },
  });
  out.runMs = app.ms;
  if (killedAfterClose) {
    out.detail = `did not exit within ${secs(EXIT_AFTER_CLOSE)} of app.close() (open handles: ${resources || 'unknown'})`;
  } else if (app.timedOut) {
    out.detail = `timed out after ${secs(RUN_TIMEOUT)} before app.close() returned:\n${tail(app.stdout + app.stderr)}`;
  } else if (app.code !== 0) {
    out.detail = `exit ${app.code ?? app.signal}:\n${tail(app.stderr || app.stdout)}`;
  } else if (!result) {
    out.detail = 'exited 0 without reporting app.close()';
  } else {
    const types =
      leg.typeCheck === false ? { ok: true, detail: 'types not checked again' } : await typeCheck(dir, leg);
    out.ok = types.ok;
    out.detail =
      `@Locked pair ${result.lockedMs} ms (max concurrent ${result.maxRunning}; testing module ` +
      `${result.testingMaxRunning}), exited ${Math.max(0, app.end - closedAt)} ms after app.close(); ` +
      types.detail;
  }
  return out;
}

/**
 * A consumer's TypeScript importing both entries, checked with the leg's module resolution: `exports`
 * serves nodenext, `typesVersions` serves node10. The @ts-expect-error lines prove the types are real (an
 * `any` would make them unused, which is an error).
 */
const typesSource = (leg) => `import { LockService, RedisLockModule } from 'nestjs-redis-lock';
${leg.client === 'redis' ? "import { createClient, createCluster } from 'redis';" : "import { Cluster, Redis } from 'ioredis';"}
import { MemoryLockBackend, RedisLockTestingModule, type RedisLockTestingOptions } from 'nestjs-redis-lock/testing';

const options: RedisLockTestingOptions = { defaults: { ttl: 5_000 }, client: new MemoryLockBackend() };
export const modules = [RedisLockTestingModule.forRoot(options), RedisLockModule.forRoot({ url: 'redis://h:6379' })];
export const locks: LockService = LockService.inMemory();
// @ts-expect-error ttl is a number of milliseconds
RedisLockTestingModule.forRoot({ defaults: { ttl: '5s' } });
// @ts-expect-error client is a client, an array of clients or a backend
RedisLockTestingModule.forRoot({ client: 'memory' });
// The application's own client, of the library it installed, is accepted as it is typed.
${
  leg.client === 'redis'
    ? `export const own = [RedisLockModule.forRoot({ client: createClient() }), new LockService(createCluster({ rootNodes: [] }))];`
    : `export const own = [RedisLockModule.forRoot({ client: new Redis({ lazyConnect: true }) }), new LockService(new Cluster([]))];`
}
// @ts-expect-error a client must be a client
RedisLockModule.forRoot({ client: 'redis://h:6379' });
`;

async function typeCheck(dir, leg) {
  const file = leg.esm ? 'types.mts' : 'types.ts';
  writeFileSync(join(dir, file), typesSource(leg));
  const compilerOptions = { ...leg.tsconfig, strict: true, noEmit: true, target: 'es2022', types: ['node'] };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: [file] }, null, 2));
  const tsc = await run(process.execPath, [join(dir, 'node_modules/typescript/bin/tsc'), '-p', dir], {
    cwd: dir,
    timeout: TYPECHECK_TIMEOUT,
  });
  const how = `types checked (${leg.tsconfig.moduleResolution}) in ${(tsc.ms / 1000).toFixed(1)}s`;
  if (tsc.code === 0) return { ok: true, detail: how };
  const why = tsc.timedOut ? `killed after ${TYPECHECK_TIMEOUT / 1000}s` : tail(tsc.stdout + tsc.stderr);
  return { ok: false, detail: `${how} FAILED:\n${why}` };
}

// --- main ----------------------------------------------------------------------------------------

/** `--prepare DIR`: each leg's app in DIR with its dependencies, for a later `--prepared DIR`. */
async function prepare(base) {
  mkdirSync(base, { recursive: true });
  const installs = await Promise.all(LEGS.map((leg) => prepareLeg(leg, base)));
  let failed = false;
  for (const [i, install] of installs.entries()) {
    const ok = install.code === 0;
    failed ||= !ok;
    console.log(
      `  ${ok ? 'PASS' : 'FAIL'}  ${LEGS[i].name.padEnd(18)} install ${secs(install.ms)}${ok ? '' : `\n${installFailure(install)}`}`,
    );
  }
  console.log(`  prepared in ${secs(Date.now() - started)}: ${failed ? 'FAIL' : 'PASS'}`);
  process.exitCode = failed ? 1 : 0;
}

async function main() {
  if (prepareInto) return prepare(prepareInto);
  if (prepared && !LEGS.every((leg) => existsSync(join(prepared, leg.name, 'node_modules')))) {
    console.error(`pack-smoke: ${prepared} holds no prepared apps. Run with --prepare ${prepared} first.`);
    process.exit(2);
  }
  if (!existsSync(join(root, 'dist', 'index.js'))) {
    console.error('pack-smoke: dist/index.js not found. Run `npm run build` first.');
    process.exit(2);
  }
  tmp = prepared ?? mkdtempSync(join(tmpdir(), 'nestjs-redis-lock-pack-smoke-'));
  const rows = [];
  let failed = false;
  try {
    const t0 = Date.now();
    let packed;
    try {
      packed = await pack();
      rows.push([
        'PASS',
        'pack',
        secs(Date.now() - t0),
        `${packed.files} files, ${(packed.size / 1024).toFixed(1)} kB`,
      ]);
      log(`packed ${packed.tarball}`);
    } catch (error) {
      rows.push(['FAIL', 'pack', secs(Date.now() - t0), error.message]);
      failed = true;
    }
    if (packed && packOnly) log('--pack-only: the consumer apps are not run');
    else if (packed) {
      const port = await startRedis();
      log(`redis-server on 127.0.0.1:${port}`);
      const legs = await Promise.all(
        LEGS.map((leg) => runLeg(leg, packed.tarball, `redis://127.0.0.1:${port}`)),
      );
      for (const leg of legs) {
        if (!leg.ok) failed = true;
        rows.push([
          leg.ok ? 'PASS' : 'FAIL',
          leg.name,
          `install ${secs(leg.installMs)}, run ${secs(leg.runMs)}`,
          [leg.versions, leg.detail].filter(Boolean).join('; '),
        ]);
      }
    }
  } catch (error) {
    failed = true;
    rows.push(['FAIL', 'setup', '', error.message]);
  } finally {
    redis?.kill('SIGKILL');
    redis = undefined;
    if (keep) log(`kept ${tmp}`);
    else rmSync(tmp, { recursive: true, force: true });
  }
  console.log('\npack-smoke summary');
  for (const [status, name, time, detail] of rows) {
    console.log(`  ${status}  ${name.padEnd(18)} ${time.padEnd(26)} ${detail}`);
  }
  console.log(`  total ${secs(Date.now() - started)}: ${failed ? 'FAIL' : 'PASS'}`);
  if (failed && !keep) console.log('  (PACK_SMOKE_KEEP=1 keeps the temp apps for a closer look)');
  process.exitCode = failed ? 1 : 0;
}

await main();
