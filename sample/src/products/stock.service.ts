import { Injectable } from '@nestjs/common';
import { Locked } from 'nestjs-redis-lock';
import { Data, pause } from '../data';

export interface Reservation {
  product: string;
  reserved: boolean;
  left: number;
  instance: string;
}

/** Reserve one unit: read the stock, check it, write it back. Never oversell. */
@Injectable()
export class StockService {
  constructor(private readonly data: Data) {}

  @Locked('stock:<0>', { waitTimeout: 15_000 })
  reserve(productId: string): Promise<Reservation> {
    return this.take(productId);
  }

  reserveUnlocked(productId: string): Promise<Reservation> {
    return this.take(productId);
  }

  async restock(productId: string, units: number): Promise<void> {
    await this.data.redis.set(`sample:stock:${productId}`, String(units));
    await this.data.redis.del(`sample:sold:${productId}`);
  }

  async level(productId: string): Promise<{ stock: number; sold: number }> {
    const [stock, sold] = await this.data.redis.mget(`sample:stock:${productId}`, `sample:sold:${productId}`);
    return { stock: Number(stock ?? 0), sold: Number(sold ?? 0) };
  }

  private async take(productId: string): Promise<Reservation> {
    const { redis, instance } = this.data;
    const left = Number((await redis.get(`sample:stock:${productId}`)) ?? 0);
    if (left <= 0) return { product: productId, reserved: false, left, instance };
    await pause(5); // pricing, fraud checks: anything between the read and the write
    await redis.set(`sample:stock:${productId}`, String(left - 1));
    await redis.incr(`sample:sold:${productId}`);
    return { product: productId, reserved: true, left: left - 1, instance };
  }
}
