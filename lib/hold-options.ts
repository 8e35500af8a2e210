/**
 * The checks of `minHold` and `maxHold` against each other and the lease's ttl (lock-options.ts reads
 * them, for the service's defaults and for each call).
 */
import { LockOptionsError } from './errors/lock-options.error';
import { milliseconds } from './option-checks';

/**
 * `minHold` must fit in the lease: a lock kept after its work ended is not renewed, so it cannot outlast
 * the ttl it was granted with.
 */
export function checkMinHold(minHold: number, ttl: number, minHoldName: string, ttlName: string): void {
  if (minHold > ttl) {
    throw new LockOptionsError(
      `${minHoldName} (${minHold} ms) must not be longer than ${ttlName} (${ttl} ms): the lock is not ` +
        'renewed once its work has ended, so it cannot be held longer than its ttl. Lower minHold or raise ttl.',
    );
  }
}

/** A maxHold in ms: an integer up to what a timer holds, or Infinity for no cap. */
export function maxHoldMilliseconds(name: string, value: unknown, minTtl: number): number {
  if (value === Number.POSITIVE_INFINITY) return value;
  return milliseconds(name, value, minTtl, ', or Infinity for no cap');
}

/**
 * `maxHold` caps renewal, so it must leave the lease its first ttl and its minHold: below either, the
 * cap would cut a lease short that nothing else would, and be a mistake for one of them.
 */
export function checkMaxHold(
  maxHold: number,
  names: { maxHold: string; ttl: string; minHold: string },
  ttl: number,
  minHold: number,
): void {
  if (maxHold < minHold) {
    throw new LockOptionsError(
      `${names.maxHold} (${maxHold} ms) must not be shorter than ${names.minHold} (${minHold} ms): the lock is ` +
        'kept at least minHold, so it cannot be given up sooner. Raise maxHold or lower minHold.',
    );
  }
  if (maxHold < ttl) {
    throw new LockOptionsError(
      `${names.maxHold} (${maxHold} ms) must not be shorter than ${names.ttl} (${ttl} ms): maxHold caps renewal, ` +
        'and a lease already lasts its ttl without any. Raise maxHold to at least the ttl, or lower the ttl.',
    );
  }
}
