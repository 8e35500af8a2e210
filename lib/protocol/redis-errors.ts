/**
 * How the lock's scripts and the fenced store read the errors their client rejects with, so that both
 * fail the same way: fast and typed.
 */
import { LockError } from '../errors/lock.error';
import { RedisUnavailableError } from '../errors/redis-unavailable.error';

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

/**
 * An error reply from Redis itself, as opposed to a timeout or a lost connection: ioredis' ReplyError,
 * or node-redis' ErrorReply (and its SimpleError, BlobError), told by name since either library may be
 * loaded twice.
 */
export function isReplyError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'ReplyError') return true;
  for (
    let proto = Object.getPrototypeOf(error);
    proto && proto !== Error.prototype;
    proto = Object.getPrototypeOf(proto)
  ) {
    if (proto.constructor?.name === 'ErrorReply') return true;
  }
  return false;
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
