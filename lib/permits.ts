/**
 * The `permits` option: how many callers may hold one key at once. 1 (the default) is the mutex; more
 * make the key a fair semaphore (docs/protocol.md, "Semaphores").
 */
import { describeValue } from './describe-value';
import { LockOptionsError } from './errors/lock-options.error';

/**
 * The most permits a key may have. Each holder is an entry in Redis that every grant and release reads
 * about, and a limit this high is no limit at all: a larger number is a mistake, not a setting.
 */
export const MAX_PERMITS = 10_000;

/** Validates `permits`; undefined means 1, the mutex. Throws LockOptionsError. */
export function resolvePermits(value: unknown): number {
  if (value === undefined) return 1;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_PERMITS) {
    throw new LockOptionsError(
      `permits must be an integer from 1 to ${MAX_PERMITS}: how many callers may hold the key at once ` +
        `(1, the default, is a mutex), got ${describeValue(value)}.`,
    );
  }
  return value;
}

/**
 * Refuses a semaphore where there is none: on several keys (a multi-key call holds each key as a mutex)
 * or on a store without semaphores (a quorum of independent masters).
 */
export function checkPermitsCall(permits: number, keys: number, storeHasSemaphores: boolean): void {
  if (permits === 1) return;
  if (!storeHasSemaphores) {
    throw new LockOptionsError(
      `permits (${permits}) needs locks in one Redis (or Cluster) or in memory: a quorum of independent ` +
        'masters (Redlock) has no semaphores. Leave permits out, or keep the semaphore in one Redis.',
    );
  }
  if (keys > 1) {
    throw new LockOptionsError(
      `permits (${permits}) applies to one key, and this call is on ${keys}: a call on several keys holds ` +
        'each of them as a mutex. Take the semaphore in a call of its own, on its own key.',
    );
  }
}
