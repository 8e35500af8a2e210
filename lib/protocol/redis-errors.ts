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
  const message = error instanceof Error ? error.message : String(error);
  if (isReplyError(error)) return new LockError('LOCK_REDIS_ERROR', rejected(message), { key, cause: error });
  return new RedisUnavailableError(message, key, error);
}

/** An error reply from Redis itself (ioredis' ReplyError), as opposed to a timeout or a lost connection. */
export function isReplyError(error: unknown): boolean {
  return error instanceof Error && error.name === 'ReplyError';
}

/**
 * `reply`, or a rejection with "no reply to <command> within <ms> ms" once `ms` have passed: for the
 * one-off commands (PING, INFO) that do not go through a ScriptRunner's deadlines.
 */
export async function replyWithin<T>(reply: Promise<T>, ms: number, command: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      reply,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no reply to ${command} within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
