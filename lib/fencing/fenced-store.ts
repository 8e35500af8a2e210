/**
 * Makes the fencing token useful for data kept in Redis: a write carries the writer's `lease.fence`
 * and is refused when the resource has already accepted a newer one, in one script, so the check and
 * the write cannot be separated by another writer. For SQL, the same rule is a `WHERE fence <= $token`
 * (docs/recipes.md).
 *
 * Like the lock, it fails fast: bad arguments are a LockUsageError before anything is sent, and a
 * connection that is down (or a reply that does not come within `commandTimeout`) is a
 * RedisUnavailableError instead of a wait in the client's offline queue.
 */
import { createHash } from 'node:crypto';
import { connectionOf, isRedisClient, type RedisClient } from '../clients';
import { LockError } from '../errors/lock.error';
import { LockUsageError } from '../errors/lock-usage.error';
import { RedisUnavailableError } from '../errors/redis-unavailable.error';
import { describeValue } from '../options/describe-value';
import { milliseconds } from '../options/option-checks';
import { DEFAULT_COMMAND_TIMEOUT } from '../options/service-options';
import { CallDeadlines } from '../protocol/call-deadlines';
import type { RedisConnection, ScriptCall } from '../protocol/connection';
import { fencedWriteLua } from '../protocol/lua/scripts.generated';
import { translateRedisError } from '../protocol/redis-errors';
import { OFFLINE } from '../protocol/script-runner';

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

export interface FencedStoreOptions {
  /** Longest wait for a reply before the call fails with RedisUnavailableError, in ms. Default 5 000. */
  commandTimeout?: number;
}

const SCRIPT = {
  name: 'fencedWrite',
  lua: fencedWriteLua,
  sha: createHash('sha1').update(fencedWriteLua).digest('hex'),
  keys: 1,
};

function hasLoneSurrogate(value: string): boolean {
  return /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(value);
}

function checkKey(key: unknown): string {
  if (typeof key !== 'string' || key.length === 0) {
    throw new LockUsageError(
      `A fenced key must be a non-empty string (the resource's Redis key), got ${describeValue(key)}.`,
    );
  }
  if (hasLoneSurrogate(key)) {
    throw new LockUsageError(
      'A fenced key must be well-formed Unicode (it contains a lone surrogate, so two different keys would ' +
        'name the same Redis key). Fix the input, or hash or base64-encode it.',
    );
  }
  return key;
}

export class FencedStore {
  private readonly write: ScriptCall;
  private readonly connection: RedisConnection;
  private detach: Array<() => void> = [];
  private readonly commandTimeout: number;
  /** Times out calls that get no reply within commandTimeout (one timer for all of them). */
  private readonly deadlines: CallDeadlines;
  /** Pending calls to fail at once if the connection goes down; one listener pair serves them all. */
  private readonly pending = new Set<() => void>();
  private readonly onDown = (): void => {
    for (const fail of [...this.pending]) fail();
  };

  /**
   * @param client the client holding the resources, ioredis or node-redis (it may be the lock's own).
   * @param options `commandTimeout` (ms, default 5 000).
   */
  constructor(client: RedisClient, options?: FencedStoreOptions) {
    if (!isRedisClient(client)) {
      throw new LockUsageError(
        'FencedStore needs a Redis client (ioredis new Redis(...) or new Cluster(...), or node-redis ' +
          `createClient() or createCluster()), got ${describeValue(client)}.`,
      );
    }
    if (options !== undefined && (options === null || typeof options !== 'object')) {
      throw new LockUsageError(`FencedStore options must be an object, got ${describeValue(options)}.`);
    }
    const timeout = milliseconds('commandTimeout', options?.commandTimeout ?? DEFAULT_COMMAND_TIMEOUT, 1);
    this.commandTimeout = timeout;
    this.deadlines = new CallDeadlines(timeout);
    this.connection = connectionOf(client);
    this.write = this.connection.script(SCRIPT);
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
    checkKey(key);
    if (typeof fence !== 'number' || !Number.isSafeInteger(fence) || fence < 0) {
      throw new LockUsageError(
        `fence must be a lease's fence (a non-negative safe integer), got ${describeValue(fence)}. ` +
          'Pass lease.fence as it is.',
      );
    }
    if (typeof value !== 'string') {
      throw new LockUsageError(
        `A fenced value must be a string, got ${describeValue(value)}. Serialize objects with ` +
          'JSON.stringify and binary data with base64.',
      );
    }
    if (hasLoneSurrogate(value)) {
      throw new LockUsageError(
        'A fenced value must be well-formed Unicode (it contains a lone surrogate, which Redis would store ' +
          'as U+FFFD). Encode binary data with base64.',
      );
    }
    if (options !== undefined && (options === null || typeof options !== 'object')) {
      throw new LockUsageError(`set() options must be an object, got ${describeValue(options)}.`);
    }
    let ttl: unknown;
    try {
      ttl = options?.ttl ?? 0;
    } catch (error) {
      throw new LockUsageError('Reading the option ttl threw; pass plain values.', { cause: error });
    }
    if (typeof ttl !== 'number' || !Number.isSafeInteger(ttl) || ttl < 0) {
      throw new LockUsageError(
        `ttl must be a non-negative safe integer of ms (0 keeps the resource), got ${describeValue(ttl)}.`,
      );
    }
    const [written, newest] = (await this.call(key, 'write', () =>
      this.write([key, String(fence), value, ttl as number]),
    )) as [number, string];
    return { written: written === 1, fence: Number(newest) };
  }

  /** The stored value and the fence of the write that stored it. */
  async get(key: string): Promise<FencedValue> {
    checkKey(key);
    const [value, fence] = (await this.call(key, 'read', () =>
      this.connection.command(['HMGET', key, 'v', 'f'], key),
    )) as [string | null, string | null];
    return { value: value ?? null, fence: Number(fence ?? 0) };
  }

  /**
   * Sends one command, failing fast with RedisUnavailableError when the connection is down or goes down
   * before the reply (instead of parking the call in the client's offline queue), or after commandTimeout.
   */
  private call<T>(key: string, what: 'write' | 'read', send: () => Promise<T>): Promise<T> {
    const shown = describeValue(key);
    if (OFFLINE.has(this.connection.state)) {
      return Promise.reject(new RedisUnavailableError(`connection is ${this.connection.status}`, key));
    }
    const rejected = (message: string): string =>
      `Redis rejected a fenced store command for ${shown}: ${message}. Is that key used by something else?`;
    const outcome =
      what === 'write' ? ` (the fenced ${what} to ${shown} may or may not have been applied)` : '';
    return new Promise<T>((resolve, reject) => {
      let done = false;
      const finish = (error: LockError | undefined, value?: T): void => {
        if (done) return;
        done = true;
        this.deadlines.settle(deadline);
        this.pending.delete(down);
        if (this.pending.size === 0) for (const detach of this.detach.splice(0)) detach();
        if (error) reject(error);
        else resolve(value as T);
      };
      const down = (): void =>
        finish(new RedisUnavailableError(`the connection closed before the reply${outcome}`, key));
      const deadline = this.deadlines.start(() =>
        finish(new RedisUnavailableError(`no reply within ${this.commandTimeout} ms${outcome}`, key)),
      );
      if (this.pending.size === 0) {
        this.detach = [this.connection.on('down', this.onDown), this.connection.on('end', this.onDown)];
      }
      this.pending.add(down);
      let sent: Promise<T>;
      try {
        sent = send();
      } catch (error) {
        finish(translateRedisError(error, key, rejected));
        return;
      }
      sent.then(
        (value) => finish(undefined, value),
        (error: unknown) => finish(translateRedisError(error, key, rejected)),
      );
    });
  }
}
