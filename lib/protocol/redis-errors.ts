/**
 * How the lock's scripts and the fenced store read the state of their ioredis client and the errors
 * it rejects with, so that both fail the same way: fast and typed.
 */
import { LockError } from '../errors/lock.error';
import { RedisUnavailableError } from '../errors/redis-unavailable.error';

/** Connection states in which a command would sit in ioredis' offline queue instead of being sent. */
export const OFFLINE = new Set(['reconnecting', 'close', 'end']);

/**
 * Redis' own replies (wrong type, script errors) are protocol errors, LOCK_REDIS_ERROR, worded by
 * `rejected` from Redis' message; anything else is the connection (RedisUnavailableError).
 */
export function translateRedisError(
  error: unknown,
  key: string,
  rejected: (message: string) => string,
): LockError {
  if (error instanceof LockError) return error;
  const name = error instanceof Error ? error.name : '';
  const message = error instanceof Error ? error.message : String(error);
  if (name === 'ReplyError')
    return new LockError('LOCK_REDIS_ERROR', rejected(message), { key, cause: error });
  return new RedisUnavailableError(message, key, error);
}
