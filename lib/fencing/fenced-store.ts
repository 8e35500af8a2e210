/**
 * Makes the fencing token useful for data kept in Redis: a write carries the writer's `lease.fence`
 * and is refused when the resource has already accepted a newer one, in one script, so the check and
 * the write cannot be separated by another writer. For SQL, the same rule is a `WHERE fence <= $token`
 * (docs/recipes.md).
 */
import { createHash } from 'node:crypto';
import { LockOptionsError } from '../errors/lock-options.error';
import type { RedisClient } from '../protocol/lock-scripts';
import { fencedWriteLua } from '../protocol/lua/scripts.generated';

export interface FencedWriteResult {
  /** False when a newer holder had already written: this writer's lock was lost. */
  written: boolean;
  /** The newest fence the resource has accepted (this writer's when written). */
  fence: number;
}

export interface FencedValue {
  value: string | null;
  /** The fence of the write that stored the value, 0 if none. */
  fence: number;
}

type Script = (key: string, fence: string, value: string, ttl: number) => Promise<[number, string]>;

const COMMAND = `redisLock_fencedWrite_${createHash('sha1').update(fencedWriteLua).digest('hex').slice(0, 10)}`;

export class FencedStore {
  private readonly write: Script;

  /** @param client the ioredis client holding the resources (it may be the lock's own). */
  constructor(private readonly client: RedisClient) {
    if (typeof (client as { defineCommand?: unknown })?.defineCommand !== 'function') {
      throw new LockOptionsError('FencedStore needs an ioredis client (new Redis(...) or new Cluster(...)).');
    }
    const commands = client as unknown as Record<string, Script | undefined>;
    if (typeof commands[COMMAND] !== 'function')
      client.defineCommand(COMMAND, { numberOfKeys: 1, lua: fencedWriteLua });
    this.write = (...args) => (commands[COMMAND] as Script).apply(client, args);
  }

  /**
   * Stores `value` at `key` unless a write with a higher fence was accepted there already.
   * `ttl` (ms, default none) bounds how long the resource is kept.
   */
  async set(
    key: string,
    fence: number,
    value: string,
    options?: { ttl?: number },
  ): Promise<FencedWriteResult> {
    if (typeof key !== 'string' || key.length === 0)
      throw new LockOptionsError('A fenced key must be a non-empty string.');
    if (!Number.isSafeInteger(fence) || fence < 0) {
      throw new LockOptionsError(
        `fence must be a lease's fence (a non-negative safe integer), got ${String(fence)}.`,
      );
    }
    if (typeof value !== 'string') throw new LockOptionsError('A fenced value must be a string.');
    const ttl = options?.ttl ?? 0;
    if (!Number.isInteger(ttl) || ttl < 0)
      throw new LockOptionsError(`ttl must be a non-negative integer of ms, got ${String(ttl)}.`);
    const [written, newest] = await this.write(key, String(fence), value, ttl);
    return { written: written === 1, fence: Number(newest) };
  }

  /** The stored value and the fence of the write that stored it. */
  async get(key: string): Promise<FencedValue> {
    const [value, fence] = await this.client.hmget(key, 'v', 'f');
    return { value: value ?? null, fence: Number(fence ?? 0) };
  }
}
