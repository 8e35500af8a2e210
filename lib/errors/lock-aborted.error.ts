import { LockError } from './lock.error';
import { quote } from './log-text';

/** The caller's AbortSignal fired while waiting for the lock; `cause` is the signal's reason. */
export class LockAbortedError extends LockError {
  constructor(key: string, cause: unknown) {
    super(
      'LOCK_ABORTED',
      `Waiting for lock ${quote(key)} was aborted by the caller's signal (its reason is error.cause). ` +
        'The call holds no lock: retry with a live signal if the work is still wanted.',
      { key, cause },
    );
  }
}
