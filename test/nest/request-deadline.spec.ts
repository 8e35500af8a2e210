// A request's deadline reaches its locked calls, over real HTTP on Express and Fastify: sent by the
// client or a proxy (grpc-timeout, x-envoy-expected-rq-timeout-ms, an absolute x-request-deadline) or
// the module's budget counted from the request's arrival. A request whose deadline comes before its
// turn is answered 503 while the lock is still held (its waitTimeout is far beyond the test), leaves the
// line, and nothing runs for it. Headers a module does not read, or cannot parse, change nothing.
import http from 'node:http';
import { describe, expect, it } from '@jest/globals';
import {
  type ArgumentsHost,
  Catch,
  Controller,
  type ExceptionFilter,
  Injectable,
  Param,
  Post,
  UseFilters,
  UseGuards,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  Locked,
  LockTimeoutError,
  LockUsageError,
  RedisLockModule,
  type RedisLockModuleOptions,
} from '../../lib';
import { deadlineOf } from '../../lib/nest/request-deadline';
import { sleep } from '../support/event-loop';
import { lockService, until } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';
import { type Platform, ran, startLockedApp } from './locked-routes.fixture';

const server = useRedis();

/** The LockTimeoutErrors that reached the filter of the route that keeps them. */
const timeouts: LockTimeoutError[] = [];

/** Keeps the LockTimeoutError (the cause of the 503 the module made of it) and answers 503. */
@Catch()
class KeepTimeouts implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const cause =
      exception instanceof LockTimeoutError ? exception : (exception as { cause?: unknown }).cause;
    if (cause instanceof LockTimeoutError) timeouts.push(cause);
    const response = host.switchToHttp().getResponse();
    const reply = response.raw ?? response;
    reply.statusCode = 503;
    reply.end();
  }
}

/** Work done before the handler, which the request's client waits through too. */
@Injectable()
class SlowGuard {
  async canActivate(): Promise<boolean> {
    await sleep(300);
    return true;
  }
}

/** A locked handler behind a guard that takes 300 ms of the request's time. */
@Controller('audits')
class Audits {
  @Post(':id')
  @UseGuards(SlowGuard)
  @UseFilters(KeepTimeouts)
  @Locked('audit:<0>')
  async audit(@Param('id') id: string): Promise<string> {
    ran.push(`audit ${id}`);
    return 'audited';
  }
}

const start = (platform: Platform, options: Partial<RedisLockModuleOptions> = {}) =>
  startLockedApp(server().url, platform, options, { controllers: [Audits], providers: [SlowGuard] });

function post(
  port: number,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const request = http.request({ host: '127.0.0.1', port, path, method: 'POST', headers }, (response) => {
      let body = '';
      response.on('data', (chunk) => (body += chunk));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, body, headers: response.headers }),
      );
    });
    request.on('error', reject);
    request.end();
  });
}

const cases: Array<{
  what: string;
  path: string;
  key: string;
  headers: Record<string, string> | (() => Record<string, string>);
}> = [
  {
    what: 'a @Locked handler, from grpc-timeout',
    path: '/orders/1/pay',
    key: 'order:1',
    headers: { 'grpc-timeout': '300m' },
  },
  {
    what: 'a @LockedRoute, from x-envoy-expected-rq-timeout-ms',
    path: '/orders/1/ship',
    key: 'shipment:1',
    headers: { 'x-envoy-expected-rq-timeout-ms': '300' },
  },
  {
    what: 'a @Locked service method a @Locked handler calls, from an absolute x-request-deadline',
    path: '/orders/2/settle',
    key: 'stock:2',
    headers: () => ({ 'x-request-deadline': String(Date.now() + 300) }),
  },
  {
    what: "a @Locked service method a route with no lock calls (the README's shape), from x-request-deadline",
    path: '/orders/3/reserve',
    key: 'stock:3',
    headers: () => ({ 'x-request-deadline': String(Date.now() + 300) }),
  },
  {
    what: 'LockService.using a route with no lock calls, from grpc-timeout',
    path: '/orders/3/count',
    key: 'count:3',
    headers: { 'grpc-timeout': '300m' },
  },
];

describe.each(['express', 'fastify'] as const)('on %s, a request with a deadline', (platform) => {
  it.each(cases)('$what: answered 503 while the lock is held, out of line, nothing run', async (c) => {
    ran.length = 0;
    const { locks, port } = await start(platform);
    const holder = await locks.acquire(c.key, { ttl: 30_000, renew: true });
    const headers = typeof c.headers === 'function' ? c.headers() : c.headers;
    const response = await post(port, c.path, headers);
    expect(response.status).toBe(503);
    expect(JSON.parse(response.body)).toMatchObject({ code: 'LOCK_TIMEOUT' });
    expect(holder.signal.aborted).toBe(false);
    expect((await locks.inspect(c.key)).queueLength).toBe(0);
    await holder.release();
    expect(ran).toEqual([]);
  });

  it('from the module’s budget, counted from the request’s arrival: time spent in a guard is spent', async () => {
    ran.length = 0;
    timeouts.length = 0;
    const { locks, port } = await start(platform, { requests: { budget: 600 } });
    const holder = await locks.acquire('audit:1', { ttl: 30_000, renew: true });
    expect((await post(port, '/audits/1', {})).status).toBe(503);
    // The guard took at least 300 ms of the 600: at most 300 were left when the call began to wait.
    expect(timeouts).toHaveLength(1);
    expect(timeouts[0].deadline?.leftMs).toBeLessThanOrEqual(300);
    await holder.release();
    expect(ran).toEqual([]);
  });

  it("from the module's budget, for a @Locked service method a route with no lock calls", async () => {
    ran.length = 0;
    const { locks, port } = await start(platform, { requests: { budget: 300 } });
    const holder = await locks.acquire('stock:4', { ttl: 30_000, renew: true });
    const response = await post(port, '/orders/4/reserve', {});
    expect(response.status).toBe(503);
    expect(response.headers['retry-after']).toMatch(/^\d+$/);
    expect((await locks.inspect('stock:4')).queueLength).toBe(0);
    await holder.release();
    expect(ran).toEqual([]);
  });

  it('a request with no deadline, one the module does not follow (requests: false), or one it cannot parse waits its turn', async () => {
    ran.length = 0;
    const { locks, port } = await start(platform, { requests: false });
    const other = await start(platform);
    const holder = await locks.acquire('order:7', { ttl: 30_000, renew: true });
    const unread = post(port, '/orders/7/pay', { 'grpc-timeout': '1m' });
    const unparsed = post(other.port, '/orders/7/pay', {
      'grpc-timeout': '1 ms',
      'x-request-deadline': 'soon',
    });
    await until(
      () => locks.inspect('order:7'),
      (info) => info.queueLength === 2,
    );
    await holder.release();
    expect((await unread).status).toBe(201);
    expect((await unparsed).status).toBe(201);
    expect(ran).toEqual(['handler 7', 'handler 7']);
  });
});

describe.each(['express', 'fastify'] as const)('on %s, a request turned away at the door', (platform) => {
  it('is answered 503 at once, with a Retry-After from the line, unqueued, nothing run', async () => {
    ran.length = 0;
    const { locks, port } = await start(platform);
    const others = [lockService(server()), lockService(server())];
    // The app's service learns the line's pace: about 400 ms a place.
    for (let i = 0; i < 3; i++) {
      const holder = await others[0].acquire('order:9');
      const waiting = locks.acquire('order:9', { waitTimeout: 10_000 });
      await until(
        () => locks.inspect('order:9'),
        (info) => info.queueLength === 1,
      );
      await sleep(400); // the hold it waits through
      await holder.release();
      await (await waiting).release();
    }
    const holder = await others[0].acquire('order:9', { ttl: 30_000, renew: true });
    const waiting = [];
    for (let i = 0; i < 4; i++) {
      waiting.push(others[1].acquire('order:9', { waitTimeout: 60_000 }));
      await until(
        () => locks.inspect('order:9'),
        (info) => info.queueLength === i + 1,
      );
    }
    // A second to wait, 4 in line at 400 ms or more each: turned away; the line clears in 1.6 s or more.
    const response = await post(port, '/orders/9/pay', { 'grpc-timeout': '1S' });
    expect(response.status).toBe(503);
    // Not the module's 1 s: at least 4 × 400 ms, rounded up.
    expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(2);
    expect(JSON.parse(response.body)).toMatchObject({ code: 'LOCK_TIMEOUT' });
    expect((await locks.inspect('order:9')).queueLength).toBe(4);
    await holder.release();
    for (const lease of waiting) await (await lease).release();
    expect(ran).toEqual([]);
  });
});

describe('the module option requests', () => {
  it('each invalid value fails the module’s start with LockUsageError', async () => {
    const asked =
      /^requests must be true \(follow each request: its close and its deadline\), false \(take nothing from it\) or \{ budget \} \(ms from a request's arrival\), got /;
    const budget = (got: string) =>
      new RegExp(
        `^requests\\.budget must be an integer number of milliseconds between 1 and 2147483647, got ${got}\\.$`,
      );
    for (const [requests, message] of [
      [5, asked],
      ['yes', asked],
      [null, asked],
      [['budget'], asked],
      [{}, budget('undefined')],
      [{ budget: 0 }, budget('0')],
      [{ budget: -1 }, budget('-1')],
      [{ budget: 1.5 }, budget('1.5')],
      [{ budget: '2000' }, budget('"2000"')],
      [{ timeout: 1 }, /Unknown option "timeout" in requests \(known: budget\)/],
      [{ Budget: 1 }, /Unknown option "Budget" in requests: did you mean "budget"\?/],
    ] as const) {
      const compiled = Test.createTestingModule({
        imports: [
          RedisLockModule.forRoot({
            url: server().url,
            requests,
          } as unknown as RedisLockModuleOptions),
        ],
      }).compile();
      await expect(compiled).rejects.toThrow(LockUsageError);
      await expect(compiled).rejects.toThrow(message);
    }
  });
});

describe('a request’s deadline', () => {
  const request = (headers: Record<string, string>) => ({ headers }) as unknown as http.IncomingMessage;
  const settings = undefined; // no budget

  it('reads every unit of grpc-timeout, and the earliest of all that are sent', () => {
    const before = Date.now();
    const fromNow = (value: string) =>
      (deadlineOf(request({ 'grpc-timeout': value }), settings) ?? 0) - before;
    expect(fromNow('2H')).toBeGreaterThanOrEqual(7_200_000);
    expect(fromNow('2M')).toBeGreaterThanOrEqual(120_000);
    expect(fromNow('2S')).toBeGreaterThanOrEqual(2_000);
    expect(fromNow('250m')).toBeGreaterThanOrEqual(250);
    expect(fromNow('250m')).toBeLessThan(250 + 1_000);
    expect(fromNow('5000000u')).toBeGreaterThanOrEqual(5_000);
    expect(fromNow('5000000n')).toBeGreaterThanOrEqual(5);
    const absolute = before + 100;
    const all = deadlineOf(
      request({
        'grpc-timeout': '5S',
        'x-envoy-expected-rq-timeout-ms': '3000',
        'x-request-deadline': String(absolute),
      }),
      4_000,
    );
    expect(all).toBe(absolute);
    expect(deadlineOf(request({ 'x-request-deadline': new Date(absolute).toISOString() }), settings)).toBe(
      absolute,
    );
    // ms since the epoch with a fraction, as arithmetic on performance.now() gives it.
    expect(deadlineOf(request({ 'x-request-deadline': `${absolute}.375` }), settings)).toBe(absolute + 0.375);
  });

  it('is none when nothing is sent and no budget is set, or what is sent does not parse', () => {
    expect(deadlineOf(request({}), settings)).toBeUndefined();
    for (const value of ['', '1', '123456789S', '1s', '-1S', '1.5S']) {
      expect(deadlineOf(request({ 'grpc-timeout': value }), settings)).toBeUndefined();
    }
    expect(deadlineOf(request({ 'x-envoy-expected-rq-timeout-ms': '1e3' }), settings)).toBeUndefined();
    expect(deadlineOf(request({ 'x-request-deadline': 'tomorrow' }), settings)).toBeUndefined();
    expect(deadlineOf(request({ 'x-request-deadline': '1764000000000.' }), settings)).toBeUndefined();
  });

  it('x-request-deadline: ms since the epoch, an RFC 3339 date or an HTTP date; anything else is none', () => {
    const at = Date.UTC(2026, 11, 3, 10, 0, 0);
    const read = (value: string) => deadlineOf(request({ 'x-request-deadline': value }), settings);
    const table: Array<[string, number | undefined]> = [
      [String(at), at],
      [`${at}.25`, at + 0.25],
      ['0', undefined],
      ['1764756000', undefined],
      ['2026-12-03T10:00:00Z', at],
      ['2026-12-03T10:00:00.500Z', at + 500],
      ['2026-12-03t10:00:00z', at],
      ['2026-12-03 10:00:00Z', at],
      ['2026-12-03T11:00:00+01:00', at],
      ['Thu, 03 Dec 2026 10:00:00 GMT', at],
      // Date.parse reads each of these as some date, most of them long past: none is a deadline.
      ['-1', undefined],
      ['-123456', undefined],
      ['-12345', undefined],
      ['1 2', undefined],
      ['2026', undefined],
      ['2026-12-03', undefined],
      ['2026-12-03T10:00:00', undefined],
      ['1e3', undefined],
      ['Dec', undefined],
      ['Dec 3 2026', undefined],
      ['Thursday, 03-Dec-26 10:00:00 GMT', undefined],
      ['Thu Dec  3 10:00:00 2026', undefined],
      [' 1764756000000', undefined],
      ['0x10', undefined],
      ['Infinity', undefined],
      ['1'.repeat(17), undefined],
      ['2026-13-03T10:00:00Z', undefined],
    ];
    for (const [value, expected] of table) expect([value, read(value)]).toEqual([value, expected]);
  });
});
