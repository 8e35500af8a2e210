import { LockError } from './lock.error';
import { quote } from './log-text';

/** `release()` or `extend()` was called on a lease that Redis no longer records as the holder. */
export class LockNotHeldError extends LockError {
  constructor(key: string, action: 'release' | 'extend') {
    super(
      'LOCK_NOT_HELD',
      `Cannot ${action} lock ${quote(key)}: this lease no longer holds it (it expired or was taken over). ` +
        'Watch lease.signal to stop work when a lease is lost, or use a longer ttl / renew: true.',
      { key },
    );
  }
}
