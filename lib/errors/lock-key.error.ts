import { LockError } from './lock.error';

/** A lock key (or a key template) is not usable: wrong type, empty, too long, braces, bad characters. */
export class LockKeyError extends LockError {
  constructor(message: string, key?: string, cause?: unknown) {
    super('LOCK_INVALID_KEY', message, { key, cause });
  }
}
