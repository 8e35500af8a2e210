/**
 * Runs the lock's Lua scripts: one script per state transition (acquire, reserve, release, release
 * later, cancel, extend, inspect), each one EVALSHA (ScriptRunner: fail fast, time out, wait for a
 * connection attempt). This class is the whole single-server Redis protocol seen from Node.
 */
import { LockNotReplicatedError, type ReplicatedWrite } from '../errors/lock-not-replicated.error';
import { quote } from '../errors/log-text';
import type { RedisConnection } from './connection';
import type { RedisKeys } from './keys';
import {
  acquireLua,
  cancelLua,
  commonLua,
  extendLua,
  inspectLua,
  preludeLua,
  queueLua,
  releaseLaterLua,
  releaseLua,
  reserveLua,
  semaphoreAcquireLua,
  semaphoreCancelLua,
  semaphoreExtendLua,
  semaphoreLua,
  semaphoreReleaseLaterLua,
  semaphoreReleaseLua,
  transferLua,
} from './lua/scripts.generated';
import type {
  AcquireMode,
  AcquireReply,
  ExtendOutcome,
  JoinDoor,
  LockSnapshot,
  Successor,
  TransferReply,
  WakeMessage,
} from './replies';
import { type Acknowledged, type ReplicaAck, ScriptRunner, type ScriptSource } from './script-runner';

/** extend.lua's reply (1 held, -1 owner key gone, 0 another owner) as an outcome. */
export function extendOutcome(reply: unknown): ExtendOutcome {
  return reply === 1 ? 'extended' : reply === -1 ? 'missing' : 'taken';
}

/**
 * How long a lock's fencing counter outlives its last grant, ms. Fences stay increasing without it (a
 * fence is never below the server clock in µs); the counter only carries them across a clock step back
 * (of up to this much, plus the time the lock sat unused) and across grants within one µs. A minute:
 * keys built from requests are as many as the requests, and each costs its counter for this long after
 * its last grant (docs/guarantees.md, "Bounded footprint").
 */
export const FENCE_RETENTION_MS = 60_000;

/** Parameters every owner-changing script takes (ARGV[1..6] in prelude.lua). */
export interface ScriptContext {
  keys: RedisKeys;
  token: string;
  ttl: number;
  claimWindow: number;
  channelPrefix: string;
  trustReceivers: boolean;
  fenceRetention: number;
  /** The caller's reservation on this key (reserve.lua), once made. */
  reserved?: string;
  /** semaphore.lua's kind: a semaphore's permits, or "rw" for a read-write lock; absent for a mutex. */
  kind?: string;
}

export type { AcquireMode, AcquireReply, LockSnapshot } from './replies';

type ScriptName =
  | 'acquire'
  | 'reserve'
  | 'release'
  | 'releaseLater'
  | 'cancel'
  | 'transfer'
  | 'extend'
  | 'inspect'
  | SemaphoreScript;

/** A semaphore's scripts (semaphore.lua), by the mutex script each one stands in for. */
const SEMAPHORE = {
  acquire: 'semaphoreAcquire',
  release: 'semaphoreRelease',
  releaseLater: 'semaphoreReleaseLater',
  cancel: 'semaphoreCancel',
  extend: 'semaphoreExtend',
} as const;
type SemaphoreScript = (typeof SEMAPHORE)[keyof typeof SEMAPHORE];

/** A semaphore script: the prelude, queue.lua and semaphore.lua's helpers, then the script itself. */
const semaphoreScript = (lua: string): ScriptSource => ({
  lua: preludeLua + queueLua + semaphoreLua + lua,
  keys: 5,
});

const COMMON_MARK = '-- @common\n';

/**
 * An owner-changing script: the prelude (arguments, fence), queue.lua where it appends to the line
 * (`joins`), then the script with the hand-off helpers spliced in at its `-- @common` line, after any
 * fast path, so an uncontended call (or a join behind a held lock) skips defining them. A script that
 * never hands the lock on (`handsOn: false`) has no such line.
 */
function ownerScript(name: string, lua: string, { joins = false, handsOn = true } = {}): string {
  const head = preludeLua + (joins ? queueLua : '');
  if (!handsOn) return head + lua;
  const at = lua.indexOf(COMMON_MARK);
  if (at < 0) throw new Error(`${name}.lua lacks its "${COMMON_MARK.trim()}" line`);
  return head + lua.slice(0, at) + commonLua + lua.slice(at + COMMON_MARK.length);
}
const SOURCES: Record<ScriptName, ScriptSource> = {
  acquire: { lua: ownerScript('acquire', acquireLua, { joins: true }), keys: 3 },
  reserve: { lua: ownerScript('reserve', reserveLua, { joins: true, handsOn: false }), keys: 3 },
  release: { lua: ownerScript('release', releaseLua), keys: 3 },
  releaseLater: { lua: ownerScript('release-later', releaseLaterLua), keys: 3 },
  cancel: { lua: ownerScript('cancel', cancelLua), keys: 3 },
  transfer: { lua: ownerScript('transfer', transferLua), keys: 3 },
  extend: { lua: extendLua, keys: 1 },
  inspect: { lua: inspectLua, keys: 5 },
  semaphoreAcquire: semaphoreScript(semaphoreAcquireLua),
  semaphoreRelease: semaphoreScript(semaphoreReleaseLua),
  semaphoreReleaseLater: semaphoreScript(semaphoreReleaseLaterLua),
  semaphoreCancel: semaphoreScript(semaphoreCancelLua),
  semaphoreExtend: semaphoreScript(semaphoreExtendLua),
};

/** ARGV[11..13] of a join (acquire.lua): the door's places, a cold join's wait, the pace to offer. */
function doorArgv(door: JoinDoor): (string | number)[] {
  if ('waitMs' in door) return ['', Math.floor(door.waitMs)];
  return [door.places, '', door.offer ? door.perPlaceMs.toFixed(3) : ''];
}

function acquireReply(reply: (number | string)[]): AcquireReply {
  const [granted, second, serverUs, head, count, away, pace] = reply as number[];
  if (granted === 1) return { granted: true, fence: second, serverMs: serverUs / 1000 };
  const waiting = {
    granted: false,
    ownerTtl: second,
    serverMs: serverUs / 1000,
    isHead: head === 1,
  } as const;
  if (reply.length < 5) return waiting;
  const told = pace === undefined ? {} : { pace: Number(pace) };
  return away === 1 ? { ...waiting, turnedAway: count, ...told } : { ...waiting, place: count, ...told };
}

/**
 * Followers named by a script (common.lua, followers_of): their tokens joined by spaces, in line order,
 * and the fence set aside for the first; each next one has the next fence. "": none.
 */
export function followers(tokens: unknown, firstFence: number): Successor[] | undefined {
  if (typeof tokens !== 'string' || tokens === '') return undefined;
  return successors(tokens.split(' '), firstFence);
}

/** Followers in line order, the first with `firstFence` and each next one with the next fence. */
export function successors(tokens: readonly string[], firstFence: number): Successor[] | undefined {
  return tokens.length > 0 ? tokens.map((token, i) => ({ token, fence: firstFence + i })) : undefined;
}

/** What release.lua answered: whether the caller held the lock, and a grant it made to a waiter of its own service. */
interface Released {
  held: boolean;
  grant?: Extract<WakeMessage, { kind: 'grant' }>;
}

function released(reply: unknown): Released {
  if (!Array.isArray(reply)) return { held: reply === 1 };
  const [token, fence, serverUs, next, held] = reply as [string, number, number, string, number];
  return {
    held: held === 1,
    grant: { kind: 'grant', token, fence, serverMs: serverUs / 1000, next: followers(next, fence + 1) },
  };
}

/**
 * A lease handed on locally that Redis has not recorded yet: the lock is held there under `from`'s
 * token, and `handed` are the followers that took it since (the lease's own token last), still in line.
 * `From`: what the caller keeps of the lease it was handed from (a store's ticket).
 */
export interface HandedOn<From extends { readonly token: string } = { readonly token: string }> {
  readonly from: From;
  readonly handed: readonly string[];
}

export class LockScripts {
  private readonly runner: ScriptRunner<ScriptName>;

  /**
   * @param ack replicas that must acknowledge every grant and renewal (the `replicas` option): each
   *   acquire and extend is then followed by WAIT (or WAITAOF) in the same round trip.
   */
  constructor(
    connection: RedisConnection,
    commandTimeout: number,
    private readonly ack?: ReplicaAck,
    /** Wakes a waiter of this service granted in a release's reply (nothing is published to it). */
    private readonly onGrant: (grant: Extract<WakeMessage, { kind: 'grant' }>) => void = () => {},
  ) {
    this.runner = new ScriptRunner(connection, commandTimeout, SOURCES);
  }

  /** Stops following the connection (see ScriptRunner.close). */
  close(): void {
    this.runner.close();
  }

  private run(name: ScriptName, key: string, args: (string | number)[]): Promise<unknown> {
    return this.runner.run(name, key, args);
  }

  /** The script for `ctx`'s kind of lock: a semaphore's stand-in when it has permits. */
  private named(name: keyof typeof SEMAPHORE, ctx: ScriptContext): ScriptName {
    return ctx.kind ? SEMAPHORE[name] : name;
  }

  /**
   * `listenLater`: a join from a service whose wake subscription is not live yet keeps its place this
   * long (ms) though pushes reach nobody (prelude.lua, listening_later). `door`: a join's door
   * (acquire.lua, semaphore-acquire.lua, prelude.lua's join_door).
   */
  async acquire(
    ctx: ScriptContext,
    mode: AcquireMode,
    queueTtl: number,
    listenLater?: number,
    door?: JoinDoor,
  ): Promise<AcquireReply> {
    // The optional arguments only when given: an argument less for every other call.
    const doorArgs = door ? doorArgv(door) : [];
    const later = listenLater === undefined ? (doorArgs.length > 0 ? [''] : []) : [listenLater];
    const args =
      ctx.reserved || later.length > 0
        ? this.argv(ctx, mode, queueTtl, ...(ctx.kind ? [] : [ctx.reserved ?? '']), ...later, ...doorArgs)
        : this.argv(ctx, mode, queueTtl);
    const name = this.named('acquire', ctx);
    if (!this.ack) return acquireReply((await this.run(name, ctx.keys.lock, args)) as (number | string)[]);
    // A waiter's re-check is acknowledged too: it is how a hand-off is confirmed (the PEXPIRE it writes
    // comes after the hand-off in the replication stream, so acknowledging it covers both).
    let acked: Acknowledged;
    try {
      acked = await this.runner.runAcknowledged(name, ctx.keys.lock, args, this.ack);
    } catch (error) {
      // The script may have granted before the wait failed (WAITAOF refused, no reply in time): give it
      // back, or it would stay held by a caller that was told it failed. Harmless if it was not granted.
      // Not awaited: on a connection that stopped answering it would double the caller's wait, and on
      // one that answers it still runs before anything the caller sends next.
      this.release(ctx).catch(() => {});
      throw error;
    }
    const reply = acquireReply(acked.value as (number | string)[]);
    if (!reply.granted || this.enough(acked)) return reply;
    // Not acknowledged in time: a failover now could lose the grant, so it is not used. Given back,
    // it goes to the next in line as any release would.
    await this.release(ctx).catch(() => {});
    throw this.refusal(ctx.keys.lock, 'grant', acked);
  }

  /** Keeps a place in line that the caller claims later; returns the reservation. */
  async reserve(ctx: ScriptContext, queueTtl: number): Promise<string> {
    return (await this.run('reserve', ctx.keys.lock, this.argv(ctx, queueTtl))) as string;
  }

  /**
   * Returns false when the caller did not hold the lock. A grant to a waiter of this service comes in
   * the reply rather than as a push: it is passed to onGrant here, whoever released. `handedOn`: the
   * caller is a follower the lock was handed to locally, not recorded (LockStore.release).
   */
  async release(ctx: ScriptContext, handedOn?: HandedOn): Promise<boolean> {
    const args = handedOn ? this.argv(ctx, handedOn.from.token, ...handedOn.handed) : this.argv(ctx);
    const { held, grant } = released(await this.run(this.named('release', ctx), ctx.keys.lock, args));
    if (grant) this.onGrant(grant);
    return held;
  }

  /**
   * Records a local hand-off: `to` (a follower of this service) owns the lock held under
   * `handedOn.from`, for `to`'s ttl, and the followers handed it so far leave the line; `follow`: name
   * `to`'s own followers. Idempotent: repeated after a lost reply, it renews.
   */
  async transfer(to: ScriptContext, handedOn: HandedOn, follow: boolean): Promise<TransferReply> {
    const args = this.argv(to, handedOn.from.token, follow ? '1' : '0', ...handedOn.handed);
    const reply = (await this.run('transfer', to.keys.lock, args)) as unknown[];
    const outcome = extendOutcome(reply[0]);
    return { outcome, next: outcome === 'extended' ? followers(reply[1], Number(reply[2])) : undefined };
  }

  /**
   * Keeps the lock held, unrenewed, for `holdMs` more (what is left of its minHold), then lets it expire
   * to the queue. Returns false when the caller did not hold the lock.
   */
  async releaseLater(ctx: ScriptContext, holdMs: number): Promise<boolean> {
    return (await this.run(this.named('releaseLater', ctx), ctx.keys.lock, this.argv(ctx, holdMs))) === 1;
  }

  /** Leaves the queue; returns true when a grant had raced in (it was passed on). */
  async cancel(ctx: ScriptContext): Promise<boolean> {
    const args = ctx.kind ? this.argv(ctx) : this.argv(ctx, ctx.reserved ?? '');
    return (await this.run(this.named('cancel', ctx), ctx.keys.lock, args)) === 1;
  }

  /** Resets the lease to `ttl` if the caller holds the lock; else says whether the key is gone or taken. */
  async extend(ctx: ScriptContext, ttl: number): Promise<ExtendOutcome> {
    const { keys } = ctx;
    const name = this.named('extend', ctx);
    const args = ctx.kind ? this.argv({ ...ctx, ttl }) : [keys.owner, ctx.token, ttl];
    if (!this.ack) return extendOutcome(await this.run(name, keys.lock, args));
    const acked = await this.runner.runAcknowledged(name, keys.lock, args, this.ack);
    const outcome = extendOutcome(acked.value);
    if (outcome !== 'extended' || this.enough(acked)) return outcome;
    throw this.refusal(keys.lock, 'renewal', acked);
  }

  private enough(acked: Acknowledged): boolean {
    return acked.local && acked.replicas >= (this.ack?.count ?? 0);
  }

  private refusal(key: string, write: ReplicatedWrite, acked: Acknowledged): LockNotReplicatedError {
    const { count, timeout } = this.ack as ReplicaAck;
    const what = `${write === 'grant' ? 'the grant' : 'the renewal'} of ${quote(key)}`;
    const released = write === 'grant' ? ', so it was released' : '';
    const detail = acked.reconnected
      ? `the connection to Redis dropped before the replicas acknowledged ${what} (a failover, or a ` +
        `dropped connection), and the new one cannot tell whether they have it${released}`
      : acked.local
        ? undefined
        : `the master did not fsync ${what} to its append-only file within ${timeout} ms (WAITAOF)${released}`;
    return new LockNotReplicatedError(key, write, acked.replicas, count, timeout, detail);
  }

  async inspect(keys: RedisKeys): Promise<LockSnapshot> {
    const reply = (await this.run('inspect', keys.lock, [
      keys.owner,
      keys.queue,
      keys.fence,
      keys.holders,
      keys.semaphoreQueue,
    ])) as [
      string | null,
      number,
      number,
      number,
      number,
      number | string,
      string[],
      (string | number)[],
      number,
    ];
    const [owner, ownerTtl, queueLength, fence, reserved, kind, waiting, flat, serverMs] = reply;
    const readWrite = kind === 'rw';
    const permits = readWrite ? 0 : Number(kind);
    const holders = [];
    for (let i = 0; i < flat.length; i += 3) {
      holders.push({ token: String(flat[i]), ttl: Number(flat[i + 1]), fence: Number(flat[i + 2]) });
    }
    return {
      owner: owner ?? null,
      ownerTtl,
      queueLength,
      reserved,
      fence,
      permits,
      readWrite,
      waiting,
      // A mutex's one holder is its owner (lock-info.ts): inspect.lua lists holders only for the others.
      holders: kind === 1 ? undefined : holders,
      serverMs,
    };
  }

  private argv(ctx: ScriptContext, ...extra: (string | number)[]): (string | number)[] {
    const { keys } = ctx;
    if (ctx.kind) {
      // semaphore.lua: its own line second, then its holders and the mutex's line; the kind last.
      const { token, ttl, claimWindow, channelPrefix, trustReceivers, fenceRetention, kind } = ctx;
      return [
        ...[keys.owner, keys.semaphoreQueue, keys.fence, keys.holders, keys.queue],
        ...[token, ttl, claimWindow, channelPrefix, trustReceivers ? '1' : '0', fenceRetention, kind],
        ...extra,
      ];
    }
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
}
