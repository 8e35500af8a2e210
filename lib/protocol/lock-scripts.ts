/**
 * Runs the lock's Lua scripts: one script per state transition (acquire, release, cancel, extend,
 * inspect), registered with ioredis `defineCommand` so each call is one EVALSHA. This class is the
 * whole Redis protocol seen from Node; it owns no timers and no state beyond the scripts' names.
 */
import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { LockError } from '../errors/lock.error';
import { RedisUnavailableError } from '../errors/redis-unavailable.error';
import type { LockKeys } from './keys';
import { acquireLua, cancelLua, commonLua, extendLua, inspectLua, releaseLua } from './lua/scripts.generated';

export type RedisClient = Redis | Cluster;

/** Parameters every owner-changing script takes (ARGV[1..6] in common.lua). */
export interface ScriptContext {
  keys: LockKeys;
  token: string;
  ttl: number;
  claimWindow: number;
  channelPrefix: string;
  trustReceivers: boolean;
  fenceRetention: number;
}

export type AcquireReply =
  | { granted: true; fence: number; serverMs: number }
  | { granted: false; ownerTtl: number; serverMs: number; isHead: boolean };

export interface LockSnapshot {
  owner: string | null;
  ownerTtl: number;
  queueLength: number;
  fence: number;
}

type ScriptName = 'acquire' | 'release' | 'cancel' | 'extend' | 'inspect';
type ScriptFn = (...args: (string | number)[]) => Promise<unknown>;

const SOURCES: Record<ScriptName, { lua: string; keys: number }> = {
  acquire: { lua: commonLua + acquireLua, keys: 3 },
  release: { lua: commonLua + releaseLua, keys: 3 },
  cancel: { lua: commonLua + cancelLua, keys: 3 },
  extend: { lua: extendLua, keys: 1 },
  inspect: { lua: inspectLua, keys: 3 },
};

/** Connection states in which a command would sit in ioredis' offline queue instead of being sent. */
const OFFLINE = new Set(['reconnecting', 'close', 'end']);

export class LockScripts {
  private readonly commands: Record<ScriptName, string>;

  constructor(
    private readonly client: RedisClient,
    private readonly commandTimeout: number,
  ) {
    // Names carry the script's hash, so two versions of this library can share one client.
    const commands = {} as Record<ScriptName, string>;
    for (const name of Object.keys(SOURCES) as ScriptName[]) {
      const { lua, keys } = SOURCES[name];
      const command = `redisLock_${name}_${createHash('sha1').update(lua).digest('hex').slice(0, 10)}`;
      if (typeof (client as unknown as Record<string, unknown>)[command] !== 'function') {
        client.defineCommand(command, { numberOfKeys: keys, lua });
      }
      commands[name] = command;
    }
    this.commands = commands;
  }

  async acquire(ctx: ScriptContext, mode: 'try' | 'wait', queueTtl: number): Promise<AcquireReply> {
    const reply = (await this.run('acquire', ctx.keys.owner, this.argv(ctx, mode, queueTtl))) as number[];
    if (reply[0] === 1) return { granted: true, fence: reply[1], serverMs: reply[2] / 1000 };
    return { granted: false, ownerTtl: reply[1], serverMs: reply[2] / 1000, isHead: reply[3] === 1 };
  }

  /** Returns false when the caller did not hold the lock. */
  async release(ctx: ScriptContext): Promise<boolean> {
    return (await this.run('release', ctx.keys.owner, this.argv(ctx))) === 1;
  }

  /** Leaves the queue; returns true when a grant had raced in (it was passed on). */
  async cancel(ctx: ScriptContext): Promise<boolean> {
    return (await this.run('cancel', ctx.keys.owner, this.argv(ctx))) === 1;
  }

  /** Resets the lease to `ttl`; returns false when the caller does not hold the lock. */
  async extend(keys: LockKeys, token: string, ttl: number): Promise<boolean> {
    return (await this.run('extend', keys.owner, [keys.owner, token, ttl])) === 1;
  }

  async inspect(keys: LockKeys): Promise<LockSnapshot> {
    const [owner, ownerTtl, queueLength, fence] = (await this.run('inspect', keys.owner, [
      keys.owner,
      keys.queue,
      keys.fence,
    ])) as [string | null, number, number, number];
    return { owner: owner ?? null, ownerTtl, queueLength, fence };
  }

  private argv(ctx: ScriptContext, ...extra: (string | number)[]): (string | number)[] {
    const { keys } = ctx;
    return [
      keys.owner,
      keys.queue,
      keys.fence,
      ctx.token,
      ctx.ttl,
      ctx.claimWindow,
      ctx.channelPrefix,
      ctx.trustReceivers ? '1' : '0',
      ctx.fenceRetention,
      ...extra,
    ];
  }

  /**
   * Sends one script call. Fails fast with RedisUnavailableError when the connection is down (rather
   * than parking the call in ioredis' offline queue) or when no reply arrives within commandTimeout.
   */
  private run(name: ScriptName, key: string, args: (string | number)[]): Promise<unknown> {
    if (OFFLINE.has(this.client.status)) {
      return Promise.reject(new RedisUnavailableError(`connection is ${this.client.status}`, key));
    }
    const fn = (this.client as unknown as Record<string, ScriptFn>)[this.commands[name]];
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new RedisUnavailableError(`no reply within ${this.commandTimeout} ms`, key));
      }, this.commandTimeout);
      fn.apply(this.client, args).then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(translateError(error, key));
        },
      );
    });
  }
}

/** Redis' own replies (wrong type, script errors) are protocol errors; anything else is the connection. */
function translateError(error: unknown, key: string): LockError {
  if (error instanceof LockError) return error;
  const name = error instanceof Error ? error.name : '';
  const message = error instanceof Error ? error.message : String(error);
  if (name === 'ReplyError') {
    return new LockError('LOCK_REDIS_ERROR', `Redis rejected a lock command for "${key}": ${message}`, {
      key,
      cause: error,
    });
  }
  return new RedisUnavailableError(message, key, error);
}
