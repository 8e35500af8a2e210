// Shared by the @Locked end-to-end suites (test/nest/locked-*.spec.ts): the module's options for a test
// Redis, and the synchronisation tools the suites measure exclusion with: a deferred, a
// critical-section meter that holds handlers at a gate the test opens, and waits on a lock's state read
// with inspect() (never a sleep standing in for synchronisation).
import { setImmediate as nextTurn } from 'node:timers/promises';
import type request from 'supertest';
import type { LockInfo, LockService, RedisLockModuleOptions } from '../../lib';
import { deferred } from '../support/deferred';
import { until } from '../support/lock-fixtures';
import type { RedisServer } from '../support/redis-server';

/**
 * Module options reaching `server` over a connection the module opens. The short `disconnectTimeout`
 * works around the module's shutdown leaving ioredis' 2 s destroy timer running when the app closes
 * before its connection was ready (tests that never take a lock), which keeps jest from exiting.
 */
export function connection(server: RedisServer): Pick<RedisLockModuleOptions, 'url' | 'redis'> {
  return { url: server.url, redis: { disconnectTimeout: 100 } };
}

export { type Deferred, deferred } from '../support/deferred';

/**
 * Counts the calls running inside a critical section. Each call enters, waits at a gate until the test
 * opens it, yields a few turns of the event loop (so that calls the lock failed to exclude would overlap
 * and show in `max`), then leaves.
 */
export class Meter {
  /** Calls inside the section right now. */
  running = 0;
  /** Most calls ever inside at once. */
  max = 0;
  /** Calls that entered so far. */
  entered = 0;
  private readonly gate = deferred();
  private readonly watchers: Array<{ count: number; done: () => void }> = [];

  /** Runs one call through the section and returns `value`. */
  async pass<T>(value: T): Promise<T> {
    this.entered++;
    this.running++;
    this.max = Math.max(this.max, this.running);
    for (const watcher of this.watchers.filter((w) => this.entered >= w.count)) watcher.done();
    try {
      await this.gate.promise;
      for (let turn = 0; turn < 5; turn++) await nextTurn();
      return value;
    } finally {
      this.running--;
    }
  }

  /** Lets every call waiting at the gate (and every later one) through. */
  open(): void {
    this.gate.resolve();
  }

  /** Resolves once `count` calls have entered the section; rejects after `timeoutMs` (a clear failure). */
  entries(count: number, timeoutMs = 15_000): Promise<void> {
    if (this.entered >= count) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${this.entered} of ${count} calls entered within ${timeoutMs} ms`)),
        timeoutMs,
      );
      this.watchers.push({
        count,
        done: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }
}

/** Resolves once the lock `key` satisfies `predicate`, read with inspect() (fails after 15 s). */
export function lockState(
  locks: LockService,
  key: string,
  predicate: (info: LockInfo) => boolean,
): Promise<LockInfo> {
  return until(() => locks.inspect(key), predicate);
}

/** Resolves once `count` callers are queued behind the holder of `key`. */
export function queued(locks: LockService, key: string, count: number): Promise<LockInfo> {
  return lockState(locks, key, (info) => info.held && info.queueLength >= count);
}

/** Sends a supertest request now (a supertest Test only starts when awaited) and returns its response. */
export function send(test: request.Test): Promise<request.Response> {
  return test.then((response) => response);
}
