import { LockError } from './lock.error';

/**
 * A `@Locked` key function threw: a fault of the application's code, not of the request, so over HTTP it
 * is a 500, logged with the function's own stack (this error's stack ends with it). A key function that
 * means to refuse a request throws an HttpException of its own, which passes through as it is.
 */
export class LockKeyFunctionError extends LockError {
  constructor(message: string, cause: unknown) {
    super('LOCK_KEY_FUNCTION_FAILED', message, { cause });
    if (cause instanceof Error && cause.stack) this.stack = `${this.stack}\nCaused by: ${cause.stack}`;
  }
}
