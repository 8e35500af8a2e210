import { LockError } from './lock.error';

/** The lock was not granted within `waitTimeout` (or at once, for a try-once call that had to throw). */
export class LockTimeoutError extends LockError {
  /** How long the caller waited, in milliseconds. */
  readonly waitedMs: number;

  constructor(key: string, waitedMs: number) {
    super(
      'LOCK_TIMEOUT',
      `Lock "${key}" was not granted within ${waitedMs} ms: another holder kept it. ` +
        'Raise waitTimeout, shorten the critical section, or use tryAcquire to skip instead of waiting.',
      { key },
    );
    this.waitedMs = waitedMs;
  }
}
