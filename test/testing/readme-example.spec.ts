// orders.service.spec.ts: a unit test of a service with @Locked methods, no Redis needed.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { Locked, LockTimeoutError } from 'nestjs-redis-lock';
import { LockService, RedisLockTestingModule } from 'nestjs-redis-lock/testing';

@Injectable()
class OrdersService {
  readonly charges: string[] = [];
  private readonly paid = new Set<string>();

  /** Pays an order once, however many requests ask at the same moment. */
  @Locked('order:<0>', { waitTimeout: 1_000 })
  async pay(orderId: string): Promise<boolean> {
    if (this.paid.has(orderId)) return false;
    await new Promise((resolve) => setTimeout(resolve, 20)); // the payment provider's round trip
    this.charges.push(orderId);
    this.paid.add(orderId);
    return true;
  }
}

describe('OrdersService', () => {
  let moduleRef: TestingModule;

  beforeEach(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [RedisLockTestingModule.forRoot()],
      providers: [OrdersService],
    }).compile();
    await moduleRef.init();
  });

  afterEach(() => moduleRef.close());

  it('charges an order once when five requests pay it at the same time', async () => {
    const orders = moduleRef.get(OrdersService);
    const results = await Promise.all([1, 2, 3, 4, 5].map(() => orders.pay('42')));
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(orders.charges).toEqual(['42']);
  });

  it('gives up with LockTimeoutError while another holder keeps the order', async () => {
    const lease = await moduleRef.get(LockService).acquire('order:42', { ttl: 5_000 });
    await expect(moduleRef.get(OrdersService).pay('42')).rejects.toBeInstanceOf(LockTimeoutError);
    await lease.release();
    await expect(moduleRef.get(OrdersService).pay('42')).resolves.toBe(true);
  });
});
