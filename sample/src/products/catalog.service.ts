import { Injectable } from '@nestjs/common';
import { Locked } from 'nestjs-redis-lock';
import { Data, pause } from '../data';

export interface Product {
  id: string;
  name: string;
  /** Where this answer came from. */
  source: 'cache' | 'database';
  instance: string;
}

const CACHE_SECONDS = 60;

/**
 * Cache-aside reads without a stampede: on a miss, one caller per product loads from the (slow)
 * database under the lock while the others wait for it, then find the cache filled.
 */
@Injectable()
export class CatalogService {
  constructor(private readonly data: Data) {}

  async get(id: string): Promise<Product> {
    return (await this.cached(id)) ?? this.loadOnce(id);
  }

  /** The unlocked twin: every caller that misses goes to the database. */
  async getUnlocked(id: string): Promise<Product> {
    return (await this.cached(id)) ?? this.load(id);
  }

  @Locked('cache:<0>', { waitTimeout: 15_000 })
  async loadOnce(id: string): Promise<Product> {
    // Whoever held the lock before us may have filled the cache already: check again.
    return (await this.cached(id)) ?? this.load(id);
  }

  async databaseHits(id: string): Promise<number> {
    return Number((await this.data.redis.get(`sample:db-hits:${id}`)) ?? 0);
  }

  async evict(id: string): Promise<void> {
    await this.data.redis.del(`sample:cache:${id}`, `sample:db-hits:${id}`);
  }

  private async cached(id: string): Promise<Product | undefined> {
    const raw = await this.data.redis.get(`sample:cache:${id}`);
    return raw ? { ...JSON.parse(raw), source: 'cache', instance: this.data.instance } : undefined;
  }

  private async load(id: string): Promise<Product> {
    await this.data.redis.incr(`sample:db-hits:${id}`);
    await pause(this.data.options.dbDelayMs); // the slow query the cache exists for
    const product = { id, name: `Product ${id}` };
    await this.data.redis.set(`sample:cache:${id}`, JSON.stringify(product), 'EX', CACHE_SECONDS);
    return { ...product, source: 'database', instance: this.data.instance };
  }
}
