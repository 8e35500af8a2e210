/**
 * Runs Lua scripts on one ioredis client, each registered with `defineCommand` so a call is one
 * EVALSHA. Fails fast instead of parking calls in ioredis' offline queue, times out calls that get no
 * reply, and while the client is still connecting makes calls wait for that attempt only. Shared by the
 * single-server protocol (LockScripts) and each node of a quorum (QuorumNode).
 */
import { createHash } from 'node:crypto';
import { RedisUnavailableError } from '../errors/redis-unavailable.error';
import { CallDeadlines } from './call-deadlines';
import type { RedisClient } from './lock-scripts';
import { OFFLINE, translateRedisError } from './redis-errors';

export interface ScriptSource {
  lua: string;
  /** How many of a call's arguments are keys. */
  keys: number;
}

type ScriptFn = (...args: (string | number)[]) => Promise<unknown>;

/** States on the way to 'ready': a call waits for the outcome of this attempt, not for a reconnect loop. */
const CONNECTING = new Set(['wait', 'connecting', 'connect']);

export class ScriptRunner<N extends string> {
  private readonly commands: Record<N, string>;
  /** The connection attempt calls are waiting on, while the client is still connecting. */
  private connecting: Promise<void> | undefined;
  /** Times out calls that get no reply within commandTimeout. */
  private readonly deadlines: CallDeadlines;

  constructor(
    private readonly client: RedisClient,
    private readonly commandTimeout: number,
    sources: Record<N, ScriptSource>,
  ) {
    // Names carry the script's hash, so two versions of this library can share one client.
    const commands = {} as Record<N, string>;
    for (const name of Object.keys(sources) as N[]) {
      const { lua, keys } = sources[name];
      const command = `redisLock_${name}_${createHash('sha1').update(lua).digest('hex').slice(0, 10)}`;
      if (typeof (client as unknown as Record<string, unknown>)[command] !== 'function') {
        client.defineCommand(command, { numberOfKeys: keys, lua });
      }
      commands[name] = command;
    }
    this.commands = commands;
    this.deadlines = new CallDeadlines(commandTimeout);
  }

  /**
   * Sends one script call. Fails fast with RedisUnavailableError when the connection is down (rather
   * than parking the call in ioredis' offline queue) or when no reply arrives within commandTimeout.
   * While the client is still connecting, the call waits for that attempt only: it is sent once the
   * client is ready and fails as soon as the attempt fails, so a closed port or an unreachable Cluster
   * answers in milliseconds, and no script reaches Redis after its caller was told it failed to connect.
   */
  run(name: N, key: string, args: (string | number)[]): Promise<unknown> {
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
