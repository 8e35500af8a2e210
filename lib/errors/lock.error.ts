/** Stable codes carried by every error this library throws; match on `code`, not on messages. */
export type LockErrorCode =
  | 'LOCK_TIMEOUT'
  | 'LOCK_LOST'
  | 'LOCK_NOT_HELD'
  | 'LOCK_INVALID_KEY'
  | 'LOCK_KEY_FUNCTION_FAILED'
  | 'LOCK_INVALID_OPTIONS'
  | 'LOCK_ABORTED'
  | 'LOCK_REDIS_UNAVAILABLE'
  | 'LOCK_REDIS_ERROR'
  | 'LOCK_SERVICE_CLOSED'
  | 'LOCK_ORDER'
  | 'LOCK_KIND';

/** Base class of every error raised by the lock: catch this to handle them all. */
export class LockError extends Error {
  /** A stable, machine-readable reason. */
  readonly code: LockErrorCode;
  /** The lock key the error is about, when there is one. */
  readonly key?: string;

  constructor(code: LockErrorCode, message: string, options?: { key?: string; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    if (options?.key !== undefined) this.key = options.key;
  }
}
