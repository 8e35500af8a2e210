/**
 * A health check of the lock's Redis connection in the shape @nestjs/terminus (11 and 12) expects,
 * without depending on terminus: `{ [key]: { status: 'up' | 'down', responseTime?, message? } }`. It
 * never throws and never waits past its timeout: a health endpoint must answer while Redis does not.
 */
import { Inject, Injectable } from '@nestjs/common';
import { LockService } from '../lock.service';

/** The status of one check, as terminus reports it. */
export interface RedisLockHealthStatus {
  status: 'up' | 'down';
  /** Round trip of the PING, ms (when it answered). */
  responseTime?: number;
  /** Why it is down. */
  message?: string;
}

export type RedisLockHealthResult = Record<string, RedisLockHealthStatus>;

export interface RedisLockHealthOptions {
  /** Longest wait for the PING reply, ms. Default 1 000. */
  timeout?: number;
}

const DEFAULT_TIMEOUT = 1_000;

@Injectable()
export class RedisLockHealthIndicator {
  constructor(@Inject(LockService) private readonly locks: LockService) {}

  /** PINGs the lock's Redis. Resolves `down` (never rejects) when it is unreachable, slow or failing. */
  async isHealthy(key = 'redis-lock', options: RedisLockHealthOptions = {}): Promise<RedisLockHealthResult> {
    const down = (message: string): RedisLockHealthResult => ({ [key]: { status: 'down', message } });
    const timeout = options?.timeout ?? DEFAULT_TIMEOUT;
    if (!Number.isInteger(timeout) || timeout <= 0) {
      return down(`invalid timeout ${String(timeout)}: give a positive integer of ms`);
    }
    const client = this.locks.client;
    // A client that is not connected would park the PING in its offline queue: report at once.
    if (client.status !== 'ready') return down(`Redis connection is ${client.status}`);
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    try {
      const reply = await Promise.race([
        client.ping(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no reply to PING within ${timeout} ms`)), timeout);
        }),
      ]);
      if (reply !== 'PONG') return down(`unexpected reply to PING: ${String(reply)}`);
      return { [key]: { status: 'up', responseTime: Math.round((performance.now() - started) * 100) / 100 } };
    } catch (error) {
      return down(error instanceof Error ? error.message : String(error));
    } finally {
      clearTimeout(timer);
    }
  }
}
