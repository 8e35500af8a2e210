/**
 * One caller waiting in a lock's queue. It never polls: it is woken by a push on the service's wake
 * channel (a grant, or a note that it reached the head of the queue). Its one timer fires at its
 * deadline or at a fallback re-check, set for the moment the current hold would run out, so that a
 * crashed holder or a lost push costs latency, never a hang. A thousand waiters are a thousand of
 * these objects, so each keeps to one promise, one timer and no closures it does not need.
 *
 * A grant, pushed or in its own service's release reply, lets the waiter start at once, before Redis
 * has confirmed it, as long as the grant is certainly still valid: the grant's server time plus the
 * claim window, mapped to the local monotonic clock with an offset bound taken from this waiter's own
 * round trips (see docs/protocol.md). The lease confirms it later, only if its work lasts that long.
 */

import { LockError } from '../errors/lock.error';
import { LockAbortedError } from '../errors/lock-aborted.error';
import { LockNotReplicatedError } from '../errors/lock-not-replicated.error';
import { LockServiceClosedError } from '../errors/lock-service-closed.error';
import { LockShedError } from '../errors/lock-shed.error';
import type { LockTimeoutError } from '../errors/lock-timeout.error';
import { RedisUnavailableError } from '../errors/redis-unavailable.error';
import { MAX_MS } from '../options/option-checks';
import {
  type AcquireMode,
  type AcquireReply,
  CLOCK_RATE_DRIFT,
  type HandedOn,
  type JoinDoor,
  type LockStore,
  type LockTicket,
  type Successor,
} from '../store/lock-store';
import type { EngineCall } from './call';
import { now, safetyMargin, validFor } from './clock';

export interface WaiterHost<T> {
  readonly store: LockStore;
  /**
   * Whether a pushed grant may be used before the store confirms it. Not with replicas: the grant must
   * be acknowledged by them first, and that takes the waiter's own confirming call.
   */
  readonly startsOnPush: boolean;
  /** A grant the replicas did not acknowledge (it was given back) sends the waiter back in line. */
  readonly waitsOnUnreplicated: boolean;
  register(waiter: Waiter<T>): void;
  unregister(waiter: Waiter<T>): void;
  /** A waiter whose cancel failed: cancelled again until Redis hears it, a late grant to it passed on. */
  takeBack(ticket: LockTicket, lifetime: number): void;
  /**
   * The error of a waiter whose time ran out after `waitedMs`: a refusal for overload if the host cut its
   * wait (its deadline, or its key's standing line), else its own waitTimeout's.
   */
  timedOut(waiter: Waiter<T>, waitedMs: number): LockTimeoutError;
  /** Turns a grant into what the waiter's promise resolves with (a lease); may throw (service closed). */
  granted(waiter: Waiter<T>, grant: Granted): T;
  /**
   * A join of `key` reached the store's door: `door` as it was sent (a pace it offered is kept there
   * now), and the pace (ms per place) a cold door was set by, if the store told one.
   */
  joined(key: string, door: JoinDoor | undefined, pace: number | undefined): void;
}

export interface Granted {
  fence: number;
  /** End of validity on the local monotonic clock. */
  validUntil: number;
  /** False when Redis has yet to confirm the grant (the lease confirms it later). */
  confirmed: boolean;
  /** The waiters next in line after this one, of this service, with the fences set aside for them. */
  next?: readonly Successor[];
  /** Handed on locally: the lease records the hand-off in Redis when it must (LockStore.transfer). */
  handedOn?: HandedOn;
  /** A check of the waiter's still unanswered as it starts: the lease's release waits for its answer. */
  unanswered?: Promise<unknown>;
}

/**
 * How long a place in a queue (or a reservation) outlives its caller's last call: the time the caller
 * may still wait (at most what a timer holds), plus a claim window.
 */
export function queueLifetime(waitLeft: number, claimWindow: number): number {
  return Math.max(1, Math.ceil(Math.min(MAX_MS, waitLeft))) + claimWindow;
}

/**
 * Hands a released lock to the first of `followers` (same service, next in line, fences set aside by
 * the store) that can still take it. Followers that gave up meanwhile are passed over: their tokens join
 * `handed`, so they leave the line with the one that takes it. False when none took it (the lease then
 * releases in Redis, which serves the line).
 */
export function handOnLocally<T>(
  waiters: ReadonlyMap<string, Waiter<T>>,
  handedOn: HandedOn,
  followers: readonly Successor[],
  validUntil: number,
): boolean {
  const handed = [...handedOn.handed];
  for (let i = 0; i < followers.length; i++) {
    const { token, fence } = followers[i];
    handed.push(token);
    const next = followers.slice(i + 1);
    if (waiters.get(token)?.takeOver(fence, validUntil, { from: handedOn.from, handed }, next)) return true;
  }
  return false;
}

/** Retry delay after a failed re-check while Redis is unreachable. */
const RETRY_MS = 100;

/**
 * Where a waiter is; every transition is one method of Waiter (`send`, `answered`, `settle`).
 * - `waiting`: in line (or about to join), no call on its way; its one timer is set.
 * - `calling`: a call to the store is on its way, sent in `mode` (`first`: the waiter's first call,
 *   which fails fast). `again`: a check was asked for meanwhile, sent once this one is answered.
 * - `done`: granted, or given up; nothing it receives changes it any more.
 * `late` (waiting or calling): a grant reached it too late to start on (its process was stalled):
 * until a `late` call is answered, its checks say so, and Redis puts it back at the front of the line
 * if the grant moved on.
 */
export type WaiterState =
  | { readonly is: 'waiting'; late: boolean }
  | {
      readonly is: 'calling';
      readonly mode: AcquireMode;
      readonly first: boolean;
      /**
       * The call on its way. A grant that reaches the waiter meanwhile passes it to the lease as
       * `unanswered`: its client may send it after later commands (a cluster client retries each across
       * a failover on its own timer), and run after the lease's release it would take the free lock, or
       * join the line again, under a token nobody uses any more. So the release waits for its answer.
       */
      reply: Promise<AcquireReply>;
      late: boolean;
      again: boolean;
    }
  | { readonly is: 'done' };
type Calling = Extract<WaiterState, { is: 'calling' }>;
/** A calling state's reply until the store's call returns it. */
const NO_REPLY: Promise<AcquireReply> = new Promise(() => {});

export class Waiter<T> {
  private readonly deadline: number;
  /** For a call with a deadline: the last moment a grant may be started on (EngineCall.startWithin). */
  private readonly startBy: number | undefined;
  private readonly done: Promise<T>;
  private resolve!: (value: T) => void;
  private reject!: (error: unknown) => void;
  private state: WaiterState = { is: 'waiting', late: false };
  private lastError: unknown;
  /** Upper bound of (server clock - local clock), in ms, from this waiter's round trips. */
  private offsetBound = Number.POSITIVE_INFINITY;
  private cancelled: Promise<void> | undefined;
  /** When the fallback re-check is due (monotonic ms); the one timer fires at this or the deadline. */
  private recheckAt = Number.POSITIVE_INFINITY;
  private timer: NodeJS.Timeout | undefined;
  private readonly onAbort: (() => void) | undefined;
  private onQueued: (() => void) | undefined;
  /** Its place in line as it joined (1: first), where the store says it: how the line's pace is learnt. */
  place: number | undefined;

  constructor(
    private readonly host: WaiterHost<T>,
    readonly ticket: LockTicket,
    readonly started: number,
    /** The call waiting (its waitTimeout and signal here; passed back to the host when granted). */
    readonly call: EngineCall,
  ) {
    this.deadline = started + call.options.waitTimeout;
    if (call.startWithin !== undefined) this.startBy = started + call.startWithin;
    const { signal } = call.options;
    if (signal) this.onAbort = () => this.fail(new LockAbortedError(this.key, signal.reason));
    this.done = new Promise<T>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  get token(): string {
    return this.ticket.token;
  }

  get key(): string {
    return this.ticket.key;
  }

  /** Where it is (WaiterState). */
  get is(): WaiterState['is'] {
    return this.state.is;
  }

  private get settled(): boolean {
    return this.state.is === 'done';
  }

  /** The call on its way, if any: a grant started on meanwhile hands it to the lease (`unanswered`). */
  private get inFlight(): Promise<AcquireReply> | undefined {
    return this.state.is === 'calling' && this.state.reply !== NO_REPLY ? this.state.reply : undefined;
  }

  /**
   * Joins the queue and resolves when granted; rejects with a typed error otherwise. `first` is the mode
   * of the first call: `join` for a ticket the store has not seen, `wait` to claim a reservation.
   * `onQueued` runs once, when a reply first says the caller is in line rather than granted. A first
   * join carries the call's door (EngineCall.door): past it, it is turned away (LockShedError).
   */
  run(first: 'join' | 'wait' = 'join', onQueued?: () => void): Promise<T> {
    this.onQueued = onQueued;
    this.host.register(this);
    this.arm();
    const { signal } = this.call.options;
    if (signal && this.onAbort) {
      signal.addEventListener('abort', this.onAbort, { once: true });
      if (signal.aborted) {
        this.onAbort();
        return this.done;
      }
    }
    this.send(first, true);
    return this.done;
  }

  /**
   * A grant was pushed to this waiter or came in its service's release reply. `next`: its followers,
   * used only if the waiter starts on this grant: a fence read back by a confirming call could be one
   * set aside for them.
   */
  onGrant(fence: number, serverMs: number, next?: readonly Successor[]): void {
    if (this.settled) return;
    const received = now();
    if (this.pastDeadline()) {
      this.expire(received); // its cancel passes the grant on
      return;
    }
    const window = this.ticket.claimWindow;
    // The end of the grant's reservation, at the earliest, on the local clock: its server time less the
    // bound on (server - local) from this waiter's round trips, less the drift the wait allows and 1 ms.
    const drift = (received - this.started) * CLOCK_RATE_DRIFT;
    const validUntil = serverMs - this.offsetBound - drift - 1 + window;
    if (!this.host.startsOnPush || received >= validUntil - safetyMargin(window)) {
      this.askLate();
      return;
    }
    this.win({ fence, validUntil, confirmed: false, next, unanswered: this.inFlight });
  }

  /**
   * Too late to start on a grant (or no round trip to bound the clocks yet): Redis confirms it first. If
   * it moved on meanwhile, this waiter keeps its place: it was first in line when it was granted.
   */
  private askLate(): void {
    const { state } = this;
    if (state.is === 'done') return;
    state.late = true;
    this.check();
  }

  /**
   * The local hand-off: an owner of this service that this waiter follows in line is done and hands the
   * lock on without a round trip. The waiter starts at once on the rest of the owner's validity
   * (`validUntil`), under the fence Redis set aside for it, with the followers after it (`next`); the
   * lease records the hand-off (`handedOn`) only if its work is long. Returns the lease, or undefined
   * when the waiter has settled or less than half its claim window is left (the owner then tries the
   * next one, or releases in Redis, whose grant brings a whole claim window): a follower never starts
   * with less time to record the hand-off than a pushed grant has to be confirmed.
   */
  takeOver(fence: number, validUntil: number, handedOn: HandedOn, next: readonly Successor[]): T | undefined {
    const { claimWindow } = this.ticket;
    if (this.settled || now() >= validUntil - Math.max(safetyMargin(claimWindow), claimWindow / 2)) {
      return undefined;
    }
    if (this.pastDeadline()) {
      this.expire(now());
      return undefined;
    }
    const grant = { fence, validUntil, confirmed: false, handedOn, next, unanswered: this.inFlight };
    this.settle();
    try {
      const lease = this.host.granted(this, grant);
      this.resolve(lease);
      return lease;
    } catch (error) {
      this.reject(error);
      this.leave();
      return undefined;
    }
  }

  /** This waiter reached the head of the queue: re-check when the current hold runs out (now, if it has). */
  onHead(holdMs: number): void {
    if (this.settled) return;
    if (holdMs <= 0) this.check();
    else this.scheduleCheck(holdMs + 1);
  }

  /** The wake channel reconnected: pushes may have been missed, so ask Redis. */
  onReconnect(): void {
    this.check();
  }

  /** The command connection ended for good: no grant could ever be confirmed, so give up now. */
  onConnectionEnded(): void {
    this.fail(
      new RedisUnavailableError(
        'the connection to Redis ended (disconnect() or quit() on the client, or it stopped reconnecting)',
        this.key,
      ),
    );
  }

  /**
   * It joined before wake-ups flowed, and they could not be made to (`error` says why; the store keeps
   * trying): it waits on, served by its re-checks, and gives `error` as the reason if its time runs out.
   */
  onUnheard(error: unknown): void {
    if (!this.settled) this.lastError = error;
  }

  /** The service is closing; resolves once Redis has been told this waiter left. */
  close(): Promise<void> {
    this.fail(new LockServiceClosedError(this.key));
    return this.cancelled ?? Promise.resolve();
  }

  /** A re-check: now, or once the call on its way is answered. */
  private check(): void {
    const { state } = this;
    if (state.is === 'calling') state.again = true;
    else if (state.is === 'waiting') this.send(state.late ? 'late' : 'wait', false);
  }

  /** waiting → calling: the store is asked (`first`: the waiter's first call, which fails fast). */
  private send(mode: AcquireMode, first: boolean): void {
    this.recheckAt = Number.POSITIVE_INFINITY;
    const sent = now();
    // A waiter without a deadline (waitTimeout Infinity) still leaves a queue key that expires; it
    // refreshes it each time it joins, as every waiter does.
    const queueTtl = queueLifetime(this.deadline - sent, this.ticket.claimWindow);
    const door = mode === 'join' ? this.call.door : undefined;
    // In its state before the store is called: whatever the call sets off at once finds it calling.
    const calling: Calling = {
      is: 'calling',
      mode,
      first,
      reply: NO_REPLY,
      late: mode === 'late',
      again: false,
    };
    this.state = calling;
    calling.reply = this.host.store.acquire(this.ticket, mode, queueTtl, door);
    calling.reply.then(
      (answer) => this.answered(calling, sent, answer),
      (error: unknown) => this.answered(calling, sent, undefined, error),
    );
  }

  /**
   * calling → waiting: the call sent at `sent` was answered with `reply`, or failed with `error`. A
   * waiter already done only passes on a grant it can no longer use.
   */
  private answered(state: Calling, sent: number, reply: AcquireReply | undefined, error?: unknown): void {
    if (this.state !== state) {
      // Settled by a push that won first: this reply is the same grant, now held. Settled by giving up
      // (`cancelled` is set): its cancel passes such a grant on, but only if it reached Redis after this
      // call; a client that held this call back while reconnecting ran it after the cancel had failed,
      // and nothing else would free the lock before its ttl. A release after a cancel that did pass it
      // on finds another owner and changes nothing.
      if (reply?.granted && this.cancelled !== undefined)
        this.host.store.release(this.ticket).catch(() => {});
      return;
    }
    // A `late` call answered: the waiter is back in line or granted, its later checks plain. One that
    // failed is sent again as it was.
    this.state = { is: 'waiting', late: state.late && (reply === undefined || state.mode !== 'late') };
    if (reply === undefined) this.failed(error, state.first);
    else this.checked(reply, sent, state.again);
  }

  /** A call failed: the waiter gives up, or re-checks later (a check asked for meanwhile is that one). */
  private failed(error: unknown, first: boolean): void {
    if (error instanceof LockNotReplicatedError) {
      // The grant was given back. Back in line (at the end), or give up, as the option says; a retry
      // costs at least the replicas' timeout already spent, so this never spins.
      if (!this.host.waitsOnUnreplicated) this.fail(error);
      else {
        this.lastError = error;
        this.scheduleCheck(1);
      }
      return;
    }
    // The first call fails fast: the caller learns at once that Redis is unreachable. Redis refusing the
    // command (a lock key of another type, scripting disabled) is not transient: no retry either.
    if (first || (error instanceof LockError && error.code === 'LOCK_REDIS_ERROR')) {
      this.fail(error);
      return;
    }
    this.lastError = error;
    this.scheduleCheck(RETRY_MS);
  }

  private checked(reply: AcquireReply, sent: number, again: boolean): void {
    // A refused grant stays the reason given at the deadline: the caller should learn of the replicas.
    if (!(this.lastError instanceof LockNotReplicatedError)) this.lastError = undefined;
    this.offsetBound = Math.min(this.offsetBound, reply.serverMs - sent);
    // Only a join's reply says its place, or that it was turned away: the store ran its door.
    if (!reply.granted && (reply.place !== undefined || reply.turnedAway !== undefined))
      this.host.joined(this.key, this.call.door, reply.pace);
    if (!reply.granted && reply.turnedAway !== undefined) {
      this.turnAway(reply.turnedAway, reply.pace);
      return;
    }
    if (!reply.granted && reply.place !== undefined) this.place = reply.place;
    if (reply.granted && this.pastDeadline()) {
      this.expire(now()); // its cancel passes the grant on
      return;
    }
    if (reply.granted) {
      this.win({
        fence: reply.fence,
        validUntil: (reply.from ?? sent) + validFor(this.host.store, this.ticket.ttl),
        confirmed: true,
      });
      return;
    }
    if (this.onQueued) {
      const queued = this.onQueued;
      this.onQueued = undefined;
      queued();
    }
    if (again) {
      this.check();
      return;
    }
    // The head re-checks as the hold ends; the others a claim window later, in case the head is gone:
    // a grant to it lasts that long. The waiter's own window (the smaller of the service's and its ttl)
    // stands for the head's: waiters on one key mostly come from one call site with one ttl, and one
    // whose head has a longer window only re-checks once more.
    const hold = Math.max(reply.ownerTtl, 0);
    this.scheduleCheck(hold + (reply.isHead ? 1 : this.ticket.claimWindow));
  }

  /** ms from `at` to the deadline, at most what a timer holds (a waiter without a deadline has none). */
  private timeLeft(at: number): number {
    return Math.min(MAX_MS, this.deadline - at);
  }

  /**
   * Re-checks after `delay`, or sooner if one is already due sooner: a head note that arrived while a
   * check was in flight (a busy process reads its sockets in any order) asked for a re-check as the
   * hold ends, which that check's reply, sent before the hand-off, must not push back to the old
   * holder's ttl.
   */
  private scheduleCheck(delay: number): void {
    this.recheckAt = Math.min(this.recheckAt, now() + Math.max(1, delay));
    this.arm();
  }

  /**
   * (Re)sets the one timer for the earlier of the deadline and the fallback re-check. With no deadline
   * (waitTimeout Infinity) and no re-check due, as while a check is in flight, there is no timer: the
   * check's reply sets the next one. A re-check beyond what a timer holds fires at that limit instead.
   */
  private arm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const at = Math.min(this.deadline, this.recheckAt);
    if (at === Number.POSITIVE_INFINITY) return;
    this.timer = setTimeout(Waiter.fire, Math.min(MAX_MS, Math.max(0, Math.ceil(at - now()))), this);
  }

  private static fire<T>(this: void, waiter: Waiter<T>): void {
    waiter.timer = undefined;
    // Node's timers run off a loop clock cached before the timer was set, so one can fire a fraction
    // of a millisecond early: never give up before the full waitTimeout has passed.
    const time = now();
    if (time >= waiter.deadline) {
      // Its first call unanswered: its reply may be read in this turn of the loop, after the timers.
      if (waiter.unheard) setImmediate(Waiter.expireNow, waiter);
      else waiter.expire(time);
      return;
    }
    if (time >= waiter.recheckAt - 1) {
      waiter.recheckAt = Number.POSITIVE_INFINITY;
      // After the sockets are read: a process that was stalled runs its due timers first, and a grant
      // already waiting on the wake connection must be seen before the re-check (it makes it a late one).
      setImmediate(Waiter.recheckNow, waiter);
    }
    if (!waiter.settled && !waiter.timer) waiter.arm();
  }

  private static recheckNow<T>(this: void, waiter: Waiter<T>): void {
    waiter.check();
  }

  private static expireNow<T>(this: void, waiter: Waiter<T>): void {
    if (!waiter.settled) waiter.expire(now());
  }

  /** Its first call is still on its way: Redis has not answered it at all yet. */
  private get unheard(): boolean {
    return this.state.is === 'calling' && this.state.first;
  }

  /**
   * A call whose deadline cut its wait (to the deadline less the key's usual hold, or shorter while its
   * line stands) reads a grant after that wait ran out: its work would end too late for a caller gone or
   * about to go, so the grant is passed on instead. On a busy event loop a grant's socket can be read in
   * the same turn its waiter's time ran out, before the timer. A call whose own waitTimeout ended its
   * wait first may read its grant later still (a process stalled past its deadline): it too passes on a
   * grant read once its deadline less that hold has come. A wait with no deadline takes its grant
   * whenever it comes.
   */
  private pastDeadline(): boolean {
    const time = now();
    return (
      (this.call.deadline !== undefined && time >= this.deadline) ||
      (this.startBy !== undefined && time >= this.startBy)
    );
  }

  private expire(time: number): void {
    const waited = Math.round(time - this.started);
    if (this.lastError instanceof LockError) {
      this.fail(this.lastError);
      return;
    }
    const timedOut = this.host.timedOut(this, waited);
    // Kept out by no holder: Redis never answered (stalled, or its client reconnecting or following a
    // new master), and a 409 for a lock nobody was seen to hold would send the caller the wrong way.
    if (this.unheard && timedOut.retryAfterMs === undefined) {
      this.fail(
        new RedisUnavailableError(
          `no reply to the call within its waitTimeout of ${this.call.options.waitTimeout} ms (the server ` +
            'is stalled, or the client is reconnecting or following a new master; nothing showed the lock ' +
            'held)',
          this.key,
        ),
      );
      return;
    }
    this.fail(timedOut);
  }

  private win(grant: Granted): void {
    if (!this.settle()) return;
    try {
      this.resolve(this.host.granted(this, grant));
    } catch (error) {
      this.reject(error);
    }
  }

  /** Turned away at the door: not in line, so there is nothing to leave. `told`: a cold door's pace. */
  private turnAway(inLine: number, told: number | undefined): void {
    if (!this.settle()) return;
    const { door } = this.call;
    const perPlaceMs = door && 'perPlaceMs' in door ? door.perPlaceMs : (told ?? 0);
    const waitMs = door && 'waitMs' in door ? door.waitMs : (door?.places ?? 0) * perPlaceMs;
    this.reject(new LockShedError(this.key, inLine, perPlaceMs, Math.round(waitMs)));
  }

  private fail(error: unknown): void {
    if (!this.settle()) return;
    this.reject(error);
    this.leave();
  }

  private leave(): void {
    // Leave the queue; if a grant raced in, Redis passes it on. If Redis cannot be told, it is told
    // once it can be, until its place in line or a grant whose reply was lost has expired.
    const { ttl, claimWindow } = this.ticket;
    this.cancelled = this.host.store.cancel(this.ticket).then(
      () => undefined,
      () => this.host.takeBack(this.ticket, Math.max(this.timeLeft(now()) + claimWindow, ttl) + claimWindow),
    );
  }

  /** → done: its timer and abort listener go, and the host forgets it. False if it was done already. */
  private settle(): boolean {
    if (this.state.is === 'done') return false;
    this.state = { is: 'done' };
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.onAbort) this.call.options.signal?.removeEventListener('abort', this.onAbort);
    this.host.unregister(this);
    return true;
  }
}
