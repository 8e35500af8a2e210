// RedisLockHealthIndicator against real redis-servers: up with a response time, down (never a rejection)
// when Redis is stopped or frozen, within its timeout, up again once the connection comes back, a clear
// `down` for a bad timeout, and the whole thing through @nestjs/terminus 12 over real HTTP.
import { afterEach, describe, expect, it } from '@jest/globals';
import { Controller, Get, type INestApplication, Inject, Module } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import request from 'supertest';
import {
  LockService,
  RedisLockHealthIndicator,
  type RedisLockHealthResult,
  RedisLockModule,
} from '../../lib';
import { elapsedSince } from '../support/lock-fixtures';
import { bootApp } from '../support/nest-apps';
import { type RedisServer, startRedis, useRedis } from '../support/redis-server';

/** A server that stays up for the tests that only read; the others start (and break) their own. */
const shared = useRedis();
const ownServers: RedisServer[] = [];

afterEach(async () => {
  await Promise.all(ownServers.splice(0).map((server) => server.dispose()));
});

/** A redis-server of the test's own, disposed after it: for the tests that stop or freeze Redis. */
async function ownServer(): Promise<RedisServer> {
  const server = await startRedis();
  ownServers.push(server);
  return server;
}

type Client = LockService['client'];

/**
 * An `up` result on the tests' servers, which keep nothing on disk: the server's INFO facts and the one
 * warning that follows from them (no persistence). test/nest/server-warnings.spec.ts covers the rest.
 */
const upWithServers = {
  status: 'up',
  responseTime: expect.any(Number),
  servers: expect.objectContaining({}),
  warnings: [expect.stringMatching(/has no append-only file/)],
};

/** Resolves when `client` emits `event`, or at once if `already` holds; fails clearly after `timeoutMs`. */
function when(client: Client, event: 'ready' | 'close', already: boolean, timeoutMs = 10_000): Promise<void> {
  if (already) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      client.off(event, onEvent);
      reject(
        new Error(`the client did not emit '${event}' within ${timeoutMs} ms (status ${client.status})`),
      );
    }, timeoutMs);
    const onEvent = (): void => {
      clearTimeout(timer);
      resolve();
    };
    client.once(event, onEvent);
  });
}

/** The module's connection is up (it connects in the background when the application initializes). */
const connected = (client: Client): Promise<void> => when(client, 'ready', client.status === 'ready');

/** Boots an application with the module on its own connection to `url`; waits until it is connected. */
/** Stops `server`, then waits until `app`'s client has seen its socket close: from then on nothing can answer. */
async function stopAndLose(server: RedisServer, app: INestApplication): Promise<void> {
  const lost = when(app.get(LockService).client, 'close', false);
  await server.stop();
  await lost;
}

async function boot(url: string): Promise<{ app: INestApplication; health: RedisLockHealthIndicator }> {
  const app = await bootApp({ imports: [RedisLockModule.forRoot({ url })] });
  await connected(app.get(LockService).client);
  return { app, health: app.get(RedisLockHealthIndicator) };
}

/** Runs the check, timing it; a rejection would fail the test with its reason. */
async function timedCheck(
  health: RedisLockHealthIndicator,
  timeout: number,
): Promise<{ result: RedisLockHealthResult; ms: number }> {
  const started = performance.now();
  const result = await health.isHealthy('redis-lock', { timeout });
  return { result, ms: elapsedSince(started) };
}

describe('RedisLockHealthIndicator', () => {
  it('is up with a numeric response time under the default key while Redis answers', async () => {
    const { health } = await boot(shared().url);
    const result = await health.isHealthy();
    expect(result).toEqual({ 'redis-lock': upWithServers });
    const { responseTime } = result['redis-lock'];
    expect(Number.isFinite(responseTime)).toBe(true);
    expect(responseTime).toBeGreaterThanOrEqual(0);
  });

  it('reports under the key it is given, and only under that key', async () => {
    const { health } = await boot(shared().url);
    const result = await health.isHealthy('payments-redis');
    expect(Object.keys(result)).toEqual(['payments-redis']);
    expect(result['payments-redis'].status).toBe('up');
  });

  it('resolves down at once, well within its timeout, when the Redis server is stopped', async () => {
    const server = await ownServer();
    const { app, health } = await boot(server.url);
    await stopAndLose(server, app);
    const { result, ms } = await timedCheck(health, 5_000);
    expect(result['redis-lock']).toEqual({
      status: 'down',
      message: expect.stringMatching(/Redis connection is/),
    });
    expect(ms).toBeLessThan(250);
  });

  it('resolves down no later than about its timeout when the Redis server is frozen (SIGSTOP)', async () => {
    const server = await ownServer();
    const { health } = await boot(server.url);
    const timeout = 500;
    // The connection stays open while the process is stopped: only the PING's timeout can tell.
    server.pause();
    try {
      const { result, ms } = await timedCheck(health, timeout);
      expect(result['redis-lock']).toEqual({
        status: 'down',
        message: `no reply to PING within ${timeout} ms`,
      });
      expect(ms).toBeGreaterThanOrEqual(timeout - 20);
      expect(ms).toBeLessThan(timeout + 500);
    } finally {
      server.resume();
    }
    // Once thawed it answers again on the very same connection.
    expect((await health.isHealthy())['redis-lock'].status).toBe('up');
  });

  it('is up again once the connection is back after a Redis restart', async () => {
    const server = await ownServer();
    const { app, health } = await boot(server.url);
    const client = app.get(LockService).client;
    await stopAndLose(server, app);
    expect((await health.isHealthy())['redis-lock'].status).toBe('down');

    const back = when(client, 'ready', false);
    await server.restart();
    // ioredis reconnects by itself; 'ready' is the moment it can serve commands again.
    await back;
    const result = await health.isHealthy();
    expect(result).toEqual({ 'redis-lock': upWithServers });
  });

  it.each<[string, unknown]>([
    ['0', 0],
    ['-5', -5],
    ['1.5', 1.5],
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ["'100' (a string)", '100'],
  ])('timeout %s gives down with a message naming it, without a throw', async (_, timeout) => {
    const { health } = await boot(shared().url);
    const check = health.isHealthy('redis-lock', { timeout: timeout as number });
    await expect(check).resolves.toEqual({
      'redis-lock': { status: 'down', message: expect.stringMatching(/^invalid timeout .*positive integer/) },
    });
    expect((await check)['redis-lock'].message).toContain(String(timeout));
  });
});

describe('RedisLockHealthIndicator with @nestjs/terminus 12 over HTTP', () => {
  @Controller('health')
  class HealthController {
    constructor(
      @Inject(HealthCheckService) private readonly health: HealthCheckService,
      @Inject(RedisLockHealthIndicator) private readonly redisLock: RedisLockHealthIndicator,
    ) {}

    @Get()
    @HealthCheck()
    check() {
      return this.health.check([() => this.redisLock.isHealthy('redis-lock', { timeout: 500 })]);
    }
  }

  @Module({ imports: [TerminusModule.forRoot({ logger: false })], controllers: [HealthController] })
  class HealthModule {}

  async function bootHttp(url: string): Promise<INestApplication> {
    const app = await bootApp({ imports: [RedisLockModule.forRoot({ url }), HealthModule] });
    await connected(app.get(LockService).client);
    return app;
  }

  it('answers 200 with status ok and the indicator up while Redis answers', async () => {
    const app = await bootHttp(shared().url);
    const res = await request(app.getHttpServer()).get('/health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 'ok',
      info: { 'redis-lock': upWithServers },
      error: {},
      details: { 'redis-lock': upWithServers },
    });
  });

  it('answers 503 with the indicator under error when Redis is stopped', async () => {
    const server = await ownServer();
    const app = await bootHttp(server.url);
    await stopAndLose(server, app);
    const res = await request(app.getHttpServer()).get('/health');
    expect(res.status).toBe(503);
    expect(res.body.status).toBe('error');
    expect(res.body.info).toEqual({});
    expect(res.body.error).toEqual({
      'redis-lock': { status: 'down', message: expect.stringMatching(/Redis connection is/) },
    });
  });

  it('answers 503 within about the indicator timeout when Redis is frozen', async () => {
    const server = await ownServer();
    const app = await bootHttp(server.url);
    server.pause();
    try {
      const started = performance.now();
      const res = await request(app.getHttpServer()).get('/health');
      expect(elapsedSince(started)).toBeLessThan(500 + 500);
      expect(res.status).toBe(503);
      expect(res.body.error).toEqual({
        'redis-lock': { status: 'down', message: 'no reply to PING within 500 ms' },
      });
    } finally {
      server.resume();
    }
  });
});
