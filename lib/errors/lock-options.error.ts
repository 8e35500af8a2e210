import { LockError } from './lock.error';

/**
 * An option passed to the lock service (or to one call, the module or @Locked) is invalid; nothing was
 * sent to Redis. The message names the option and the value expected; `cause` is set when reading the
 * option itself threw.
 */
export class LockOptionsError extends LockError {
  constructor(message: string, cause?: unknown) {
    super('LOCK_INVALID_OPTIONS', message, { cause });
  }
}
