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

/** Refusals of calls that never left the process (the connection was down): nothing of them ran in Redis. */
const unsent = new WeakSet<RedisUnavailableError>();

/** Marks `error` as the refusal of a call that was never sent. */
export function neverSent(error: RedisUnavailableError): RedisUnavailableError {
  unsent.add(error);
  return error;
}

/** False for a call refused before it was sent; otherwise Redis may have run it, its reply lost. */
export function wasSent(error: RedisUnavailableError): boolean {
  return !unsent.has(error);
}
