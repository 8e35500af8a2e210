/**
 * The sample's own data lives in Redis too, under `sample:` keys, so several instances share it: the
 * orders' charges, the products' stock and cache, the pretend database's hit counter, the job's runs.
 * Without Redis it is kept in this process instead (MemoryData), like the locks.
 * The critical sections below are deliberately non-atomic (read, await, write): exactly the code a lock
 * has to protect.
 */
import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';
import { type DataCommands, MemoryData } from './memory-data';

export const SAMPLE_OPTIONS = Symbol('SAMPLE_OPTIONS');

export interface SampleOptions {
  /** Undefined: no Redis was found; locks and data are kept in this process. */
  redisUrl?: string;
  instance: string;
  dbDelayMs: number;
  /** Set: the lock board asks for it (HTTP Basic, any user name). */
  boardPassword?: string;
}

export const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

@Injectable()
export class Data implements OnApplicationShutdown {
  /** An ioredis client, or its in-memory stand-in when there is no Redis. */
  readonly redis: DataCommands;
  private readonly close: () => Promise<void>;

  constructor(@Inject(SAMPLE_OPTIONS) readonly options: SampleOptions) {
    if (options.redisUrl === undefined) {
      this.redis = new MemoryData();
      this.close = async () => {};
      return;
    }
    const redis = new Redis(options.redisUrl, { maxRetriesPerRequest: 1 });
    redis.on('error', () => {}); // the lock module logs connection trouble once; no need twice
    this.redis = redis;
    this.close = async () => {
      await redis.quit().catch(() => redis.disconnect());
    };
  }

  get instance(): string {
    return this.options.instance;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }
}
