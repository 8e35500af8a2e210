import { LockError } from './lock.error';

/**
 * A held lease stopped being valid before it was released: renewal failed, the key was deleted or
 * taken over, or Redis could not confirm an extension before the lease's validity ran out.
 * Delivered as `lease.signal.reason`; work still running must stop.
 */
export class LockLostError extends LockError {
  constructor(key: string, reason: string, cause?: unknown) {
    super('LOCK_LOST', `Lock "${key}" was lost: ${reason}. Work done under it is no longer exclusive.`, {
      key,
      cause,
    });
  }
}
