// @Locked across two application instances on one Redis, over real HTTP: an order is paid once, other
// orders are not held up, and lock errors become 409 / 503 responses with Retry-After.
import { describe, expect, it } from '@jest/globals';
import {
  Controller,
  type INestApplication,
  Inject,
  Injectable,
  Module,
  Param,
  ParseIntPipe,
  Post,
} from '@nestjs/common';
import type { Redis } from 'ioredis';
import request from 'supertest';
import { Locked, RedisLockModule, type RedisLockModuleExtras } from '../../lib';
import { lockService, until } from '../support/lock-fixtures';
import { bootApp } from '../support/nest-apps';
import { startRedis, useRedis } from '../support/redis-server';

const server = useRedis();

/** Called from inside the critical section, so a test can hold a payment at a point it controls. */
let insideHook: (id: number) => Promise<void> = async () => {};
const REDIS = Symbol('redis');

@Injectable()
class Payments {
  constructor(@Inject(REDIS) private readonly redis: Redis) {}

  /** Charges an order unless it is paid: a check-then-act that only the lock makes safe. */
  @Locked('order:<0>', { waitTimeout: 10_000 })
  async pay(id: number): Promise<{ charged: boolean }> {
    if (await this.redis.get(`order:${id}:paid`)) return { charged: false };
    await insideHook(id);
    await this.redis.incr(`order:${id}:charges`);
    await this.redis.set(`order:${id}:paid`, '1');
    return { charged: true };
  }

  @Locked('order:<0>', { waitTimeout: 100 })
  async payOrGiveUp(id: number): Promise<string> {
    return `paid ${id}`;
  }
}

@Controller('orders')
class OrdersController {
  constructor(private readonly payments: Payments) {}

  @Post(':id/pay')
  pay(@Param('id', ParseIntPipe) id: number) {
    return this.payments.pay(id);
  }

  @Post(':id/quick-pay')
  quickPay(@Param('id', ParseIntPipe) id: number) {
    return this.payments.payOrGiveUp(id);
  }
}

async function instance(url: string, extras: RedisLockModuleExtras = {}): Promise<INestApplication> {
  @Module({
    controllers: [OrdersController],
    providers: [Payments, { provide: REDIS, useFactory: () => server().client() }],
  })
  class Shop {}
  return bootApp({ imports: [RedisLockModule.forRoot({ url, ...extras }), Shop] });
}

describe('@Locked over HTTP, two application instances', () => {
  it('concurrent payments of one order through both instances charge it once', async () => {
    insideHook = async () => {};
    const [a, b] = [await instance(server().url), await instance(server().url)];
    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, i) => request((i % 2 ? a : b).getHttpServer()).post('/orders/1/pay')),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(10).fill(201));
    expect(responses.filter((r) => r.body.charged)).toHaveLength(1);
    expect(await server().client().get('order:1:charges')).toBe('1');
  });

  it('different orders are paid in parallel: one holds its lock while the other runs to completion', async () => {
    const [a, b] = [await instance(server().url), await instance(server().url)];
    let otherDone!: () => void;
    const otherPaid = new Promise<void>((resolve) => {
      otherDone = resolve;
    });
    // Order 2 stays inside its critical section until order 3 has been paid on the other instance:
    // if the two locks excluded each other, this would deadlock and the test would time out.
    insideHook = async (id) => {
      if (id === 2) await otherPaid;
    };
    const first = request(a.getHttpServer()).post('/orders/2/pay');
    const firstDone = first.then((r) => r);
    await expectHeld('order:2');
    const second = await request(b.getHttpServer()).post('/orders/3/pay');
    expect(second.status).toBe(201);
    otherDone();
    expect((await firstDone).status).toBe(201);
  });

  it('a lock timeout is 409 Conflict with Retry-After and the LOCK_TIMEOUT code', async () => {
    const app = await instance(server().url);
    const holder = await lockService(server()).acquire('order:4');
    const response = await request(app.getHttpServer()).post('/orders/4/quick-pay');
    expect(response.status).toBe(409);
    expect(response.headers['retry-after']).toBe('1');
    expect(response.body).toMatchObject({ statusCode: 409, code: 'LOCK_TIMEOUT' });
    await holder.release();
    expect((await request(app.getHttpServer()).post('/orders/4/quick-pay')).status).toBe(201);
  });

  it('Redis unreachable is 503 Service Unavailable with Retry-After, answered at once', async () => {
    const own = await startRedis();
    try {
      const app = await instance(own.url, {});
      expect((await request(app.getHttpServer()).post('/orders/5/quick-pay')).status).toBe(201);
      await own.stop();
      const started = performance.now();
      const response = await request(app.getHttpServer()).post('/orders/5/quick-pay');
      expect(response.status).toBe(503);
      expect(response.headers['retry-after']).toBe('1');
      expect(response.body).toMatchObject({ statusCode: 503, code: 'LOCK_REDIS_UNAVAILABLE' });
      // Fails fast: not parked in ioredis' offline queue until some timeout.
      expect(performance.now() - started).toBeLessThan(1_000);
    } finally {
      await own.dispose();
    }
  });

  it('with httpErrors: false the typed error reaches Nest unchanged (a 500 by default)', async () => {
    const app = await instance(server().url, { httpErrors: false });
    const holder = await lockService(server()).acquire('order:6');
    const response = await request(app.getHttpServer()).post('/orders/6/quick-pay');
    expect(response.status).toBe(500);
    await holder.release();
  });
});

/** Resolves once some holder owns `key` (checked with plain EXISTS, never a lock call). */
async function expectHeld(key: string): Promise<void> {
  const admin = server().client();
  await until(
    () => admin.exists(`lock:{${key}}`),
    (exists) => exists === 1,
  );
}
