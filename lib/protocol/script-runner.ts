/**
 * Runs Lua scripts on one connection (connection.ts: ioredis or node-redis), each call one EVALSHA.
 * Fails fast instead of parking calls in the client's offline queue, times out calls that get no reply,
 * and while the client is still connecting makes calls wait for that attempt only. Shared by the
 * single-server protocol (LockScripts) and each node of a quorum (QuorumNode).
 */
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { kindRefusal } from '../errors/lock-usage.error';
import { quote } from '../errors/log-text';
import { neverSent, RedisUnavailableError } from '../errors/redis-unavailable.error';
import { CallDeadlines } from './call-deadlines';
import type { ConnectionState, Delivered, RedisConnection, Script, ScriptCall } from './connection';
import { isReplyError, translateRedisError } from './redis-errors';
import type { ReplyPace } from './reply-pace';

export interface ScriptSource {
  lua: string;
  /** How many of a call's arguments are keys. */
  keys: number;
}

/** Replicas that must acknowledge a script's writes before its reply counts (WAIT, or WAITAOF). */
export interface ReplicaAck {
  /** Replicas that must acknowledge. */
  readonly count: number;
  /** How long Redis waits for them, ms. */
  readonly timeout: number;
  /** WAITAOF: the master's own AOF fsync too, and the replicas' fsyncs rather than their receipt. */
  readonly aof: boolean;
}

/** A script's reply, and how far its writes got before the wait ended. */
export interface Acknowledged {
  value: unknown;
  /** Replicas that acknowledged. */
  replicas: number;
  /** With `aof`: whether the master fsynced its AOF; otherwise true. */
  local: boolean;
  /**
   * The script's reply and the wait's came over different connections (`replicas` is then 0): the
   * connection dropped in between and the client sent the wait again on its new one, maybe to another
   * server, where it says nothing about the script's writes.
   */
  reconnected?: true;
}

/** States on the way to 'ready': a call waits for the outcome of this attempt, not for a reconnect loop. */
export const CONNECTING: ReadonlySet<ConnectionState> = new Set(['idle', 'connecting']);
/** States in which a command would sit in the client's offline queue instead of being sent. */
export const OFFLINE: ReadonlySet<ConnectionState> = new Set(['down', 'ended']);
/** The pause before a call a Cluster client gave up while its nodes moved is sent again, ms. */
const RETRY_DELAY = 100;

export class ScriptRunner<N extends string> {
  private readonly calls: Record<N, ScriptCall>;
  /** Each script's source and full SHA1, for the acknowledged path, which sends EVALSHA itself. */
  private readonly scripts: Record<N, Script>;
  /** Times out calls that get no reply within commandTimeout. */
  private readonly deadlines: CallDeadlines;
  /** Acknowledged calls wait for replicas as well: their deadline is longer by the WAIT's timeout. */
  private ackDeadlines: CallDeadlines | undefined;
  /**
   * The scripts the acknowledged path has run over the current connection: sent as EVALSHA; any other
   * as EVAL, which loads it. A NOSCRIPT reply cannot hold back the WAIT pipelined behind the EVALSHA,
   * and that WAIT waits for replicas in vain (on the new connection to a just-promoted master, which
   * has no replica yet, for all of its timeout) before the retry's own WAIT waits again. Forgotten when
   * the client connects again: it may have reached another server, one that never saw them.
   */
  private readonly loaded = new Set<N>();
  private detachReady: (() => void) | undefined;

  /**
   * `pace`: the timeout follows the replies (a quorum node's, reply-pace.ts), `commandTimeout` being its
   * least; without it, every call has `commandTimeout`.
   */
  constructor(
    private readonly connection: RedisConnection,
    private readonly commandTimeout: number,
    sources: Record<N, ScriptSource>,
    private readonly pace?: ReplyPace,
  ) {
    const calls = {} as Record<N, ScriptCall>;
    const scripts = {} as Record<N, Script>;
    for (const name of Object.keys(sources) as N[]) {
      const { lua, keys } = sources[name];
      const sha = createHash('sha1').update(lua).digest('hex');
      scripts[name] = { name, lua, keys, sha };
      calls[name] = connection.script(scripts[name]);
    }
    this.calls = calls;
    this.scripts = scripts;
    this.deadlines = new CallDeadlines(pace ? () => pace.timeout : commandTimeout);
  }

  /** Sends one script call (one EVALSHA), failing fast and typed as `send` says. */
  run(name: N, key: string, args: (string | number)[]): Promise<unknown> {
    const call = this.calls[name];
    const { pace } = this;
    if (!pace) return this.send(key, this.deadlines, this.commandTimeout, () => call(args));
    return this.send(key, this.deadlines, pace.timeout, () => {
      const sent = performance.now();
      const reply = call(args);
      reply.then(
        () => pace.sample(performance.now() - sent),
        () => {},
      );
      return reply;
    });
  }

  /**
   * Sends one script call followed by WAIT (or WAITAOF) on the same connection, in the same round trip:
   * Redis answers the wait once `ack.count` replicas have acknowledged every write this connection made
   * so far, the script's included, or once `ack.timeout` has passed. Fails as `run` does; a call whose
   * script ran but whose wait failed rejects too, so the caller must treat its writes as unconfirmed.
   */
  runAcknowledged(name: N, key: string, args: (string | number)[], ack: ReplicaAck): Promise<Acknowledged> {
    const timeout = this.commandTimeout + ack.timeout;
    this.ackDeadlines ??= new CallDeadlines(timeout);
    this.detachReady ??= this.connection.on('ready', () => this.loaded.clear());
    return this.send(key, this.ackDeadlines, timeout, () => this.scriptThenWait(name, args, ack));
  }

  /** Stops following the connection's events (the client is the application's, and outlives this). */
  close(): void {
    this.detachReady?.();
    this.detachReady = undefined;
  }

  /**
   * The script and the wait, pipelined: EVALSHA if this connection ran it already, else EVAL (see
   * `loaded`). Not through the client's own script call: on NOSCRIPT (a server that lost its scripts,
   * SCRIPT FLUSH) it would resend the script as EVAL after the wait had been answered, and the wait would
   * not cover the script's writes. Here the pair is sent again, EVAL first; only then can one call wait
   * twice.
   */
  private async scriptThenWait(name: N, args: (string | number)[], ack: ReplicaAck): Promise<Acknowledged> {
    const { lua, keys, sha } = this.scripts[name];
    const wait: [string, ...number[]] = ack.aof
      ? ['waitaof', 1, ack.count, ack.timeout]
      : ['wait', ack.count, ack.timeout];
    const key = String(args[0]);
    const pair = (command: 'evalsha' | 'eval', body: string) => {
      const [script, waited] = this.connection.inOrder(key, [[command, body, keys, ...args], wait]);
      return Promise.all([
        script,
        waited.catch((error: unknown) => {
          throw ack.aof ? waitAofRefused(error) : error;
        }),
      ]);
    };
    let replies: Delivered[];
    const known = this.loaded.has(name);
    try {
      replies = await (known ? pair('evalsha', sha) : pair('eval', lua));
    } catch (error) {
      if (!(known && error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error;
      this.loaded.delete(name);
      replies = await pair('eval', lua);
    }
    this.loaded.add(name);
    const [script, acks] = replies;
    const value = script.value;
    // ioredis resends the commands a dropped connection left unanswered once it has reconnected (its
    // autoResendUnfulfilledCommands, on by default), and node-redis writes a queued command once it has:
    // the wait alone, if the script's reply had arrived. A wait on a connection that wrote nothing
    // returns at once with every replica the server has, and after a failover that server is the new
    // master, which never saw the grant.
    if (script.via !== acks.via) return { value, local: true, replicas: 0, reconnected: true };
    if (Array.isArray(acks.value)) {
      return { value, local: Number(acks.value[0]) >= 1, replicas: Number(acks.value[1]) };
    }
    return { value, local: true, replicas: Number(acks.value) };
  }

  /**
   * Sends one call. Fails fast with RedisUnavailableError when the connection is down (rather than
   * parking the call in the client's offline queue) or when no reply arrives within `timeout`. While the
   * client is still connecting, the call waits for that attempt only: it is sent once the client is
   * ready and fails as soon as the attempt fails, so a closed port or an unreachable Cluster answers in
   * milliseconds, and no script reaches Redis after its caller was told it failed to connect.
   */
  private send<T>(
    key: string,
    deadlines: CallDeadlines,
    timeout: number,
    call: () => Promise<T>,
  ): Promise<T> {
    const state = this.connection.state;
    if (OFFLINE.has(state)) {
      return Promise.reject(
        neverSent(new RedisUnavailableError(`connection is ${this.connection.status}`, key)),
      );
    }
    return new Promise((resolve, reject) => {
      let sent = false;
      const deadline = deadlines.start(() => {
        const error = new RedisUnavailableError(`no reply within ${timeout} ms`, key);
        reject(sent ? error : neverSent(error));
      });
      const send = (): void => {
        // A call that already timed out while the client was connecting is never sent.
        if (!deadlines.pending(deadline)) return;
        sent = true;
        call().then(
          (value) => {
            if (deadlines.settle(deadline)) resolve(value);
          },
          (error: unknown) => {
            // A Cluster client that had to give the call up while its nodes moved (a failover) is
            // asked again, as long as the caller still waits for it.
            if (this.connection.retryable?.(error) && deadlines.pending(deadline)) {
              setTimeout(send, RETRY_DELAY).unref();
              return;
            }
            if (deadlines.settle(deadline)) reject(scriptRefusal(error, key));
          },
        );
      };
      if (!CONNECTING.has(state)) {
        send();
        return;
      }
      this.whenConnected().then(send, () => {
        if (deadlines.settle(deadline)) {
          reject(
            neverSent(
              new RedisUnavailableError(`could not connect (connection is ${this.connection.status})`, key),
            ),
          );
        }
      });
    });
  }

  /** Settles on the outcome of the connection attempt under way (RedisConnection.attempt). */
  whenConnected(): Promise<void> {
    return this.connection.attempt();
  }
}

/**
 * WAITAOF refused: before Redis 7.2 it is an unknown command, and it refuses a master without AOF. The
 * reply keeps its type (a Redis error, LOCK_REDIS_ERROR) and says which option asked for it.
 */
function waitAofRefused(error: unknown): unknown {
  if (!(error instanceof Error) || !isReplyError(error)) return error;
  const hint = /unknown command/i.test(error.message)
    ? 'WAITAOF needs Redis 7.2 or later: upgrade, or leave replicas.aof unset'
    : 'the master must run with appendonly yes, or leave replicas.aof unset';
  const refused = new Error(`replicas.aof: ${error.message} (${hint})`, { cause: error });
  // Still Redis' own refusal, whichever client's error class it came in.
  refused.name = 'ReplyError';
  return refused;
}

/** What a refused call stands for: one key used as two kinds of lock (a script's own error), or translateRedisError's. */
function scriptRefusal(error: unknown, key: string): Error {
  const mix = isReplyError(error) ? kindRefusal(key, (error as Error).message) : undefined;
  return mix ?? translateRedisError(error, key, lockRejection(key));
}

/** The wording of a lock command Redis refused (a wrong type on a lock key, a script error). */
const lockRejection =
  (key: string) =>
  (message: string): string =>
    `Redis rejected a lock command for ${quote(key)}: ${message}` +
    (message.startsWith('WRONGTYPE')
      ? '. A key of the lock is used by something else: delete it, or give the locks their own prefix'
      : '');
