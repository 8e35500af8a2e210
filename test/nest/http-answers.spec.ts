// What a locked route answers over real HTTP, on Express and on Fastify: a skip is the route's own 2xx
// with no body (not a 500 from an Observable that completed empty); a key function that throws is the
// application's fault, a 500 with the function's stack in the log; a request that lacks a key's value is
// a 400 that names the placeholder; a key function's own HttpException answers as it says.
import { describe, expect, it } from '@jest/globals';
import {
  Body,
  Controller,
  type INestApplication,
  Injectable,
  type LoggerService,
  NotFoundException,
  Param,
  Post,
  UseInterceptors,
} from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import request from 'supertest';
import { Locked, LockedRoute, LockInterceptor, RedisLockModule } from '../../lib';
import { type Deferred, deferred } from '../support/deferred';
import { bootApp } from '../support/nest-apps';
import { useRedis } from '../support/redis-server';

const server = useRedis();

/** What the application logged at error level: Nest's exception handler logs a 500's error there. */
class Captured implements LoggerService {
  readonly errors: string[] = [];
  log() {}
  warn() {}
  debug() {}
  verbose() {}
  error(...parts: unknown[]) {
    this.errors.push(parts.map((part) => (part instanceof Error ? part.stack : String(part))).join('\n'));
  }
}

/** The one add in progress, held until the test lets it finish. */
let adding: { entered: Deferred<void>; finish: Deferred<void> } | undefined;

const normalize = undefined as unknown as (id: string) => string;

@Injectable()
class Orders {
  // A bug in the application's key code: `normalize` is not a function.
  @Locked((dto: { id: string }) => `order:${normalize(dto.id)}`)
  async buggy(_dto: { id: string }): Promise<string> {
    return 'ran';
  }

  @Locked('order:<0.orderId>')
  async ship(_dto: { orderId?: string }): Promise<string> {
    return 'shipped';
  }

  @Locked((dto: { id?: string }) => {
    if (!dto.id) throw new NotFoundException('no such order');
    return `order:${dto.id}`;
  })
  async refund(_dto: { id?: string }): Promise<string> {
    return 'refunded';
  }
}

@Controller('carts')
class Carts {
  constructor(private readonly orders: Orders) {}

  @Post(':id/skip')
  @UseInterceptors(LockInterceptor)
  @LockedRoute('cartskip:<0.params.id>', { waitTimeout: 0, onTimeout: 'skip' })
  async add(@Param('id') id: string) {
    const held = adding;
    held?.entered.resolve();
    await held?.finish.promise;
    return { added: id };
  }

  @Post('buggy')
  buggy(@Body() dto: { id: string }) {
    return this.orders.buggy(dto);
  }

  @Post('ship')
  ship(@Body() dto: { orderId?: string }) {
    return this.orders.ship(dto);
  }

  @Post('refund')
  refund(@Body() dto: { id?: string }) {
    return this.orders.refund(dto);
  }
}

async function shop(platform: 'express' | 'fastify'): Promise<{ app: INestApplication; logs: Captured }> {
  const logs = new Captured();
  const app = await bootApp({
    imports: [RedisLockModule.forRoot({ url: server().url })],
    controllers: [Carts],
    providers: [Orders],
    logger: logs,
    adapter: platform === 'fastify' ? new FastifyAdapter() : undefined,
  });
  if (platform === 'fastify') await app.getHttpAdapter().getInstance().ready();
  return { app, logs };
}

describe.each(['express', 'fastify'] as const)('on %s', (platform) => {
  it("@LockedRoute with onTimeout 'skip': the skipped requests get the route's 201 with no body", async () => {
    const { app, logs } = await shop(platform);
    const http = () => request(app.getHttpServer());
    const held = { entered: deferred<void>(), finish: deferred<void>() };
    adding = held;
    const first = http()
      .post('/carts/7/skip')
      .then((response) => response);
    await held.entered.promise;
    // The held request finishes whatever the others got, so that a failure here does not hang the app.
    const skipped = await Promise.all([http().post('/carts/7/skip'), http().post('/carts/7/skip')]).finally(
      () => held.finish.resolve(),
    );
    for (const response of skipped) {
      expect(response.status).toBe(201);
      expect(response.text).toBe('');
    }
    const done = await first;
    expect(done.status).toBe(201);
    expect(done.body).toEqual({ added: '7' });
    adding = undefined;
    expect(logs.errors).toEqual([]);
  });

  it('a key function that throws is a 500, logged with its stack', async () => {
    const { app, logs } = await shop(platform);
    const response = await request(app.getHttpServer()).post('/carts/buggy').send({ id: '7' });
    expect(response.status).toBe(500);
    const logged = logs.errors.join('\n');
    expect(logged).toMatch(/LockUsageError: @Locked\(fn\) on Orders\.buggy: the key function threw/);
    // The function's own stack, down to the line of this file that threw.
    expect(logged).toMatch(
      /Caused by: TypeError: normalize is not a function\n\s+at .*http-answers\.spec\.ts/,
    );
  });

  it('a request without a value the key is made of is a 400 that names it', async () => {
    const { app, logs } = await shop(platform);
    const response = await request(app.getHttpServer()).post('/carts/ship').send({});
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({
      code: 'LOCK_INVALID_KEY',
      message: 'The lock key could not be built from this request: <0.orderId> is undefined.',
    });
    expect(logs.errors).toEqual([]);
  });

  it('a value that breaks the key is a 400 that names its placeholder and what is wrong with it', async () => {
    const { app, logs } = await shop(platform);
    const post = (body: string) =>
      request(app.getHttpServer()).post('/carts/ship').set('content-type', 'application/json').send(body);
    const answers: Array<[string, string]> = [
      ['{"orderId":"a{b"}', '<0.orderId> holds a brace ({ or }), which a lock key may not contain.'],
      [
        '{"orderId":"a\\ud800"}',
        '<0.orderId> holds half of a UTF-16 surrogate pair alone, which is not valid Unicode.',
      ],
      [
        JSON.stringify({ orderId: 'x'.repeat(2_000) }),
        'the key built from <0.orderId> is 2006 characters, over the 1024-character limit of a lock key.',
      ],
    ];
    for (const [body, why] of answers) {
      const response = await post(body);
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({
        code: 'LOCK_INVALID_KEY',
        message: `The lock key could not be built from this request: ${why}`,
      });
    }
    expect(logs.errors).toEqual([]);
  });

  it("a key function's own HttpException answers as it says", async () => {
    const { app } = await shop(platform);
    const response = await request(app.getHttpServer()).post('/carts/refund').send({});
    expect(response.status).toBe(404);
    expect(response.body).toMatchObject({ message: 'no such order' });
  });
});
