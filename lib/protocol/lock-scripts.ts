/**
 * Runs the lock's Lua scripts: one script per state transition (acquire, reserve, release, release
 * later, cancel, extend, inspect), registered with ioredis `defineCommand` so each call is one EVALSHA. This class is the
 * whole Redis protocol seen from Node. Its only state beyond the scripts' names is the connection
 * attempt that calls made while the client connects wait on, and the deadlines of the calls in flight
 * (one timer for all of them).
 */
import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { RedisUnavailableError } from '../errors/redis-unavailable.error';
import type { AcquireMode, AcquireReply, LockSnapshot } from '../store/lock-store';
import { CallDeadlines } from './call-deadlines';
import type { LockKeys } from './keys';
import {
  acquireLua,
  cancelLua,
  commonLua,
  extendLua,
  inspectLua,
  preludeLua,
  releaseLaterLua,
  releaseLua,
  reserveLua,
} from './lua/scripts.generated';
import { OFFLINE, translateRedisError } from './redis-errors';

export type RedisClient = Redis | Cluster;

/** A Cluster client: one node per slot, and PUBLISH counts only the receivers on the node it ran on. */
export function isCluster(client: RedisClient): client is Cluster {
  return (client as { isCluster?: boolean }).isCluster === true;
}

/** Parameters every owner-changing script takes (ARGV[1..6] in prelude.lua). */
export interface ScriptContext {
  keys: LockKeys;
  token: string;
  ttl: number;
  claimWindow: number;
  channelPrefix: string;
  trustReceivers: boolean;
  fenceRetention: number;
  /** The caller's reservation on this key (reserve.lua), once made. */
  reserved?: string;
}

export type { AcquireMode, AcquireReply, LockSnapshot } from '../store/lock-store';

type ScriptName = 'acquire' | 'reserve' | 'release' | 'releaseLater' | 'cancel' | 'extend' | 'inspect';
type ScriptFn = (...args: (string | number)[]) => Promise<unknown>;

const COMMON_MARK = '-- @common\n';

/**
 * An owner-changing script: the prelude (arguments, fence), then the script with the hand-off helpers
 * spliced in at its `-- @common` line, after any fast path, so an uncontended call skips defining them.
 */
function ownerScript(name: string, lua: string): string {
  const at = lua.indexOf(COMMON_MARK);
  if (at < 0) throw new Error(`${name}.lua lacks its "${COMMON_MARK.trim()}" line`);
  return preludeLua + lua.slice(0, at) + commonLua + lua.slice(at + COMMON_MARK.length);
}
const SOURCES: Record<ScriptName, { lua: string; keys: number }> = {
  acquire: { lua: ownerScript('acquire', acquireLua), keys: 3 },
  reserve: { lua: ownerScript('reserve', reserveLua), keys: 3 },
  release: { lua: ownerScript('release', releaseLua), keys: 3 },
  releaseLater: { lua: ownerScript('release-later', releaseLaterLua), keys: 3 },
  cancel: { lua: ownerScript('cancel', cancelLua), keys: 3 },
  extend: { lua: extendLua, keys: 1 },
  inspect: { lua: inspectLua, keys: 3 },
};

/** States on the way to 'ready': a call waits for the outcome of this attempt, not for a reconnect loop. */
const CONNECTING = new Set(['wait', 'connecting', 'connect']);

export class LockScripts {
  private readonly commands: Record<ScriptName, string>;
  /** The connection attempt calls are waiting on, while the client is still connecting. */
  private connecting: Promise<void> | undefined;
  /** Times out calls that get no reply within commandTimeout. */
  private readonly deadlines: CallDeadlines;

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
    this.deadlines = new CallDeadlines(commandTimeout);
  }

  async acquire(ctx: ScriptContext, mode: AcquireMode, queueTtl: number): Promise<AcquireReply> {
    const args = this.argv(ctx, mode, queueTtl, ctx.reserved ?? '');
    const reply = (await this.run('acquire', ctx.keys.owner, args)) as number[];
    if (reply[0] === 1) return { granted: true, fence: reply[1], serverMs: reply[2] / 1000 };
    return { granted: false, ownerTtl: reply[1], serverMs: reply[2] / 1000, isHead: reply[3] === 1 };
  }

  /** Keeps a place in line that the caller claims later; returns the reservation. */
  async reserve(ctx: ScriptContext, queueTtl: number): Promise<string> {
    return (await this.run('reserve', ctx.keys.owner, this.argv(ctx, queueTtl))) as string;
  }

  /** Returns false when the caller did not hold the lock. */
  async release(ctx: ScriptContext): Promise<boolean> {
    return (await this.run('release', ctx.keys.owner, this.argv(ctx))) === 1;
  }

  /**
   * Keeps the lock held, unrenewed, for `holdMs` more (what is left of its minHold), then lets it expire
   * to the queue. Returns false when the caller did not hold the lock.
   */
  async releaseLater(ctx: ScriptContext, holdMs: number): Promise<boolean> {
    return (await this.run('releaseLater', ctx.keys.owner, this.argv(ctx, holdMs))) === 1;
  }

  /** Leaves the queue; returns true when a grant had raced in (it was passed on). */
  async cancel(ctx: ScriptContext): Promise<boolean> {
    return (await this.run('cancel', ctx.keys.owner, this.argv(ctx, ctx.reserved ?? ''))) === 1;
  }

  /** Resets the lease to `ttl`; returns false when the caller does not hold the lock. */
  async extend(keys: LockKeys, token: string, ttl: number): Promise<boolean> {
    return (await this.run('extend', keys.owner, [keys.owner, token, ttl])) === 1;
  }

  async inspect(keys: LockKeys): Promise<LockSnapshot> {
    const [owner, ownerTtl, queueLength, fence, reserved] = (await this.run('inspect', keys.owner, [
      keys.owner,
      keys.queue,
      keys.fence,
    ])) as [string | null, number, number, number, number];
    return { owner: owner ?? null, ownerTtl, queueLength, reserved, fence };
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
   * While the client is still connecting, the call waits for that attempt only: it is sent once the
   * client is ready and fails as soon as the attempt fails, so a closed port or an unreachable Cluster
   * answers in milliseconds, and no script reaches Redis after its caller was told it failed to connect.
   */
  private run(name: ScriptName, key: string, args: (string | number)[]): Promise<unknown> {
    const status = this.client.status;
    if (OFFLINE.has(status)) {
      return Promise.reject(new RedisUnavailableError(`connection is ${status}`, key));
    }
    const fn = (this.client as unknown as Record<string, ScriptFn>)[this.commands[name]];
    return new Promise((resolve, reject) => {
      const deadline = this.deadlines.start(() =>
        reject(new RedisUnavailableError(`no reply within ${this.commandTimeout} ms`, key)),
      );
      const send = (): void => {
        // A call that already timed out while the client was connecting is never sent.
        if (!this.deadlines.pending(deadline)) return;
        fn.apply(this.client, args).then(
          (value) => {
            if (this.deadlines.settle(deadline)) resolve(value);
          },
          (error: unknown) => {
            if (this.deadlines.settle(deadline)) reject(translateRedisError(error, key, lockRejection(key)));
          },
        );
      };
      if (!CONNECTING.has(status)) {
        send();
        return;
      }
      this.whenConnected().then(send, () => {
        if (this.deadlines.settle(deadline)) {
          reject(new RedisUnavailableError(`could not connect (connection is ${this.client.status})`, key));
        }
      });
    });
  }

  /**
   * Settles on the outcome of the connection attempt under way: resolves on 'ready', rejects on
   * 'close' or 'end'. One set of listeners per attempt, however many calls wait on it.
   */
  private whenConnected(): Promise<void> {
    if (this.connecting) return this.connecting;
    const client = this.client;
    const attempt = new Promise<void>((resolve, reject) => {
      const settle = (failed: boolean): void => {
        client.off('ready', onReady);
        client.off('close', onFailed);
        client.off('end', onFailed);
        this.connecting = undefined;
        if (failed) reject(new Error(`connection is ${client.status}`));
        else resolve();
      };
      const onReady = (): void => settle(false);
      const onFailed = (): void => settle(true);
      client.once('ready', onReady);
      client.once('close', onFailed);
      client.once('end', onFailed);
    });
    attempt.catch(() => {}); // every caller handles the failure; none may leave it unhandled
    this.connecting = attempt;
    // A lazyConnect client has not started connecting: start it, as sending a command would have.
    if (client.status === 'wait') client.connect().catch(() => {});
    return attempt;
  }
}

/** The wording of a lock command Redis refused (a wrong type on a lock key, a script error). */
const lockRejection =
  (key: string) =>
  (message: string): string =>
    `Redis rejected a lock command for "${key}": ${message}`;
