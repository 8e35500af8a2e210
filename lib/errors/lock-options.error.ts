import { LockError } from './lock.error';

/** An option passed to the lock service (or to one call) is invalid; nothing was sent to Redis. */
export class LockOptionsError extends LockError {
  constructor(message: string) {
    super('LOCK_INVALID_OPTIONS', message);
  }
}
