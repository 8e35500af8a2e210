import { Injectable } from '@nestjs/common';
import { Locked, LockService } from 'nestjs-redis-lock';
import { Data, pause } from '../data';

export interface PaymentResult {
  order: string;
  charged: boolean;
  instance: string;
  /** The lock's fencing token for this payment (0 for the unlocked twin). */
  fence: number;
}

/** Pay an order once: check "already paid?", call the payment provider, record it. */
@Injectable()
export class OrdersService {
  constructor(
    private readonly data: Data,
    private readonly locks: LockService,
  ) {}

  @Locked('order:<0>', { ttl: 10_000, waitTimeout: 10_000 })
  async pay(orderId: string): Promise<PaymentResult> {
    return this.charge(orderId, this.locks.currentLease()?.fence ?? 0);
  }

  /** The same code without the lock, to show what goes wrong across instances. */
  async payUnlocked(orderId: string): Promise<PaymentResult> {
    return this.charge(orderId, 0);
  }

  async charges(orderId: string): Promise<number> {
    return Number((await this.data.redis.get(`sample:order:${orderId}:charges`)) ?? 0);
  }

  private async charge(orderId: string, fence: number): Promise<PaymentResult> {
    const { redis, instance } = this.data;
    const result = { order: orderId, instance, fence };
    if (await redis.get(`sample:order:${orderId}:paid`)) return { ...result, charged: false };
    await pause(50); // the payment provider's round trip
    await redis.incr(`sample:order:${orderId}:charges`);
    await redis.set(`sample:order:${orderId}:paid`, instance);
    return { ...result, charged: true };
  }
}
