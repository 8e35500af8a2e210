import { LockError } from './lock.error';

/**
 * Redis could not be reached (disconnected, reconnecting, or no reply in time). Thrown at once rather
 * than after the client's offline queue gives up, so callers can fail fast (HTTP 503, retry later).
 */
export class RedisUnavailableError extends LockError {
  constructor(detail: string, key?: string, cause?: unknown) {
    super('LOCK_REDIS_UNAVAILABLE', `Redis is unavailable: ${detail}. Check the connection and retry.`, {
      key,
      cause,
    });
  }
}
