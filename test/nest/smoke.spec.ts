import { describe, expect, it } from '@jest/globals';
import { Controller, Injectable, Module, Param, ParseIntPipe, Post } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { Locked, LockService, RedisLockModule } from '../../lib';
import { sleep } from '../support/event-loop';
import { useRedis } from '../support/redis-server';

const server = useRedis();

@Injectable()
class Orders {
  paid = 0;
  @Locked('order:<0>')
  async pay(id: number): Promise<number> {
    const before = this.paid;
    await sleep(20);
    this.paid = before + 1;
    return id;
  }
}

@Controller('orders')
class OrdersController {
  constructor(private readonly orders: Orders) {}
  @Post(':id/pay')
  @Locked('http:<0>')
  pay(@Param('id', ParseIntPipe) id: number) {
    return this.orders.pay(id);
  }
}

describe('smoke', () => {
  it('wires', async () => {
    @Module({ controllers: [OrdersController], providers: [Orders] })
    class Feature {}
    const ref = await Test.createTestingModule({
      imports: [RedisLockModule.forRoot({ url: server().url }), Feature],
    }).compile();
    const app = ref.createNestApplication();
    await app.init();
    const res = await Promise.all([1, 2, 3].map(() => request(app.getHttpServer()).post('/orders/7/pay')));
    expect(res.map((r) => r.status)).toEqual([201, 201, 201]);
    expect(app.get(Orders).paid).toBe(3);
    expect(app.get(LockService)).toBeInstanceOf(LockService);
    await app.close();
  });
});
