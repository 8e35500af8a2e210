/**
 * The sample's own data lives in Redis too, under `sample:` keys, so several instances share it: the
 * orders' charges, the products' stock and cache, the pretend database's hit counter, the job's runs.
 * The critical sections below are deliberately non-atomic (read, await, write): exactly the code a lock
 * has to protect.
 */
import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';

export const SAMPLE_OPTIONS = Symbol('SAMPLE_OPTIONS');

export interface SampleOptions {
  redisUrl: string;
  instance: string;
  dbDelayMs: number;
}

export const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

@Injectable()
export class Data implements OnApplicationShutdown {
  readonly redis: Redis;

  constructor(@Inject(SAMPLE_OPTIONS) readonly options: SampleOptions) {
    this.redis = new Redis(options.redisUrl, { maxRetriesPerRequest: 1 });
    this.redis.on('error', () => {}); // the lock module logs connection trouble once; no need twice
  }

  get instance(): string {
    return this.options.instance;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
