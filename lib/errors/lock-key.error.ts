import { LockError } from './lock.error';

/** A lock key (or a key template) is not usable: wrong type, empty, too long, braces, bad characters. */
export class LockKeyError extends LockError {
  /**
   * For a key built from a call's arguments: what was wrong with them, in words fit for the caller (over
   * HTTP, the 400's message): the placeholder and why, never the class, the method or a value.
   */
  readonly detail?: string;

  constructor(message: string, key?: string, cause?: unknown, detail?: string) {
    super('LOCK_INVALID_KEY', message, { key, cause });
    if (detail !== undefined) this.detail = detail;
  }
}
