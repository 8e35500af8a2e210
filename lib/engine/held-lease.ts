/**
 * The client side of one held lock: its validity on the monotonic clock, the watchdog that renews it,
 * and the AbortSignal that fires when it can no longer be trusted. Timers are unref'd: a forgotten
 * lease never keeps the process alive. No method lets a rejection escape unobserved.
 */
import { type LockLossReason, LockLostError } from '../errors/lock-lost.error';
import { LockNotHeldError } from '../errors/lock-not-held.error';
import { LockNotReplicatedError } from '../errors/lock-not-replicated.error';
import { RedisUnavailableError } from '../errors/redis-unavailable.error';
import './dispose-symbol';
import type { Lease } from '../lease';
import type { ExtendOutcome, HandedOn, LockStore, LockTicket, Successor } from '../store/lock-store';
import type { LeaseObserver } from '../telemetry/lease-observer';
import { now, safetyMargin, validFor } from './clock';

export interface LeaseHost {
  readonly store: LockStore;
  /**
   * Called when the lease is released or lost, so the host stops tracking it; `heldFor`, how long it
   * was held (ms), the first time only.
   */
  forget(lease: HeldLease, heldFor: number | undefined): void;
  validateTtl(ttl: unknown): number;
  /**
   * The local hand-off: gives the lock, held in Redis as `handedOn` says, to the first of `followers`
   * (this service's waiters next in line) still waiting, at once, on the owner's validity left (until
   * `validUntil`, before any margin: each lease keeps its own), without telling Redis. False when none can take it (all gone, or the service is
   * closing): the caller then releases in Redis as usual.
   */
  handOff(handedOn: HandedOn, followers: readonly Successor[], validUntil: number): boolean;
  /**
   * How many grants made by this service's own calls (a release's reply, mostly) have reached its waiters
   * so far.
   */
  readonly ownGrants: number;
  /** `next` follows a lease whose hold lasts `holdMs`: tells that waiter, as a head note would. */
  follow(next: Successor, holdMs: number): void;
  /** This service's waiters for `key` ask Redis where they stand (a grant to one may have been missed). */
  recheck(key: string): void;
  /** Cancels `ticket` in Redis until Redis confirms it, for `lifetime` ms at most (take-back.ts). */
  takeBack(ticket: LockTicket, lifetime: number): void;
}

/** How a lease was granted beyond its fence and validity: its followers, and how it was handed on locally. */
export interface GrantLinks {
  readonly next?: readonly Successor[];
  readonly handedOn?: HandedOn;
  /** The waiter's check still on its way (see Waiter): Redis must run it before the release. */
  readonly unanswered?: Promise<unknown>;
}

type State = 'held' | 'released' | 'lost';

/** A lease this service obtained (one key or several): what `using` and the reentrancy scope need of it. */
export interface OwnedLease extends Lease {
  /** Held and, as far as this process can tell, still valid (every key of it). */
  readonly isHeld: boolean;
  /** Why it was lost, once it was. */
  readonly lossReason: LockLostError | undefined;
  /** The single-key leases it is made of, for the reentrancy scope. */
  readonly parts: readonly HeldLease[];
}

/** What a caller asked of the lease it will hold: renewal, and how long to hold it at least. */
export interface LeaseTerms {
  /** Extend the lease every ttl/3 while held. */
  readonly renew: boolean;
  /** A release sooner than this after the grant (ms) leaves the lock held until then; 0: none. */
  readonly minHold: number;
  /** Renewal stops this long after the grant (ms), and the lease is lost ('max-hold'); Infinity: never. */
  readonly maxHold: number;
  /** What reports on the lease (telemetry), when anything listens. */
  readonly observer?: LeaseObserver;
}

/**
 * The release handed the lock to a waiter of this service: the caller goes on only after the new
 * holder's start, a chain of promise steps, has run, so that what the caller does next (another call
 * that writes to Redis, say) does not run between those steps, on the lock's critical path (a local
 * hand-off took 0.3 ms, p50, instead of 0.03). Promise steps, not a timer: fake timers in a user's tests
 * must not hold a release up. Twelve cover the chain from the waiter to an `await` on `acquire()`.
 */
const nextHolderFirst = async (): Promise<void> => {
  for (let step = 0; step < 12; step++) await undefined;
};

export class HeldLease implements OwnedLease {
  readonly key: string;
  readonly token: string;
  readonly fence: number;
  readonly parts: readonly HeldLease[] = [this];
  /** Created on first use of `signal`: most leases are released without anyone reading it. */
  private controller: AbortController | undefined;
  private lostReason: LockLostError | undefined;
  private state: State = 'held';
  private ttl: number;
  private validUntil: number;
  private confirmed: boolean;
  private renewTimer: NodeJS.Timeout | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  private maxHoldTimer: NodeJS.Timeout | undefined;
  private readonly renew: boolean;
  private readonly minHold: number;
  private readonly observer: LeaseObserver | undefined;
  /** A check its waiter sent before this grant reached it, not yet answered: the release waits for it. */
  private unanswered: Promise<void> | undefined;
  /** This service's waiters next in line after this lease, to hand the lock to locally on release. */
  private followers: readonly Successor[];
  /** How the lock came to this lease by a local hand-off, until Redis has recorded it (transfer). */
  private handedOn: HandedOn | undefined;
  /** A transfer is on its way to Redis: the lock's name there is about to change. */
  private recording = false;
  /**
   * When this process learnt of the grant (monotonic). The grant was made in Redis before that, so a
   * minHold counted from here holds the lock at least minHold after the grant, never less.
   */
  private readonly grantedAt = now();
  /** When renewal stops and the lease is given up (monotonic): grantedAt + maxHold, or Infinity. */
  private readonly holdEnds: number;

  /**
   * Its place in line as it joined (1: first), for a lease granted to a waiter the store told its place:
   * how its line's pace is learnt (admission.ts).
   */
  grantedFrom: number | undefined;

  constructor(
    private readonly host: LeaseHost,
    private readonly ticket: LockTicket,
    fence: number,
    validUntil: number,
    terms: LeaseTerms,
    /** False for a grant the waiter started on before Redis confirmed it (see Waiter). */
    confirmed: boolean,
    links?: GrantLinks,
  ) {
    this.renew = terms.renew;
    this.minHold = terms.minHold;
    this.observer = terms.observer;
    this.observer?.attached();
    this.key = ticket.key;
    this.token = ticket.token;
    this.fence = fence;
    this.ttl = ticket.ttl;
    this.validUntil = validUntil;
    this.confirmed = confirmed;
    this.followers = links?.next ?? [];
    this.handedOn = links?.handedOn;
    if (links?.unanswered) {
      const answered = () => {
        this.unanswered = undefined;
      };
      this.unanswered = links.unanswered.then(answered, answered);
    }
    this.holdEnds = this.grantedAt + terms.maxHold;
    this.armExpiry();
    if (Number.isFinite(terms.maxHold)) this.armMaxHold();
    if (!confirmed) {
      // Most work handed off this way (pushed, or handed on locally) ends well inside its validity, so
      // the confirmation (for a local hand-off, its record: transfer) waits for half of what is left of
      // it: a short critical section releases without ever sending it (one round trip and one script
      // less per hand-off), a longer one keeps the other half for retries.
      this.scheduleRenewal((validUntil - safetyMargin(ticket.claimWindow) - now()) / 2);
    } else if (this.renew) this.scheduleRenewal(this.ttl / 3);
  }

  /** How many callers may hold the key at once: 1 for a mutex. */
  get permits(): number {
    return this.ticket.permits ?? 1;
  }

  /** A read-write lock's mode, or undefined. */
  get mode(): 'read' | 'write' | undefined {
    return this.ticket.mode;
  }

  get keys(): readonly string[] {
    return [this.key];
  }

  get fences(): Readonly<Record<string, number>> {
    return Object.freeze({ [this.key]: this.fence });
  }

  get tokens(): Readonly<Record<string, string>> {
    return Object.freeze({ [this.key]: this.token });
  }

  get signal(): AbortSignal {
    this.expireIfDue();
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.lostReason) this.controller.abort(this.lostReason);
    }
    return this.controller.signal;
  }

  /** Why the lease was lost, once it was (read without creating the signal). */
  get lossReason(): LockLostError | undefined {
    return this.lostReason;
  }

  /** Held and, as far as this process can tell, still valid. */
  get isHeld(): boolean {
    this.expireIfDue();
    return this.state === 'held';
  }

  async extend(ttl?: number): Promise<void> {
    const next = ttl === undefined ? this.ttl : this.host.validateTtl(ttl);
    this.endHoldIfDue();
    if (this.state !== 'held') throw new LockNotHeldError(this.key, 'extend');
    const sent = now();
    let outcome: ExtendOutcome;
    try {
      // Handed on locally: Redis knows the lock under another token until the hand-off is recorded.
      outcome = await (this.handedOn ? this.record(next) : this.host.store.extend(this.ticket, next));
    } catch (error) {
      if (error instanceof LockNotReplicatedError) this.loseUnreplicated(error);
      throw error;
    }
    if (outcome !== 'extended') {
      this.loseTo(outcome);
      throw new LockNotHeldError(this.key, 'extend');
    }
    this.ttl = next;
    this.confirmed = true;
    this.prolong(sent + validFor(this.host.store, next));
  }

  async release(): Promise<void> {
    if (this.unanswered) await this.unanswered;
    if (this.state === 'released') return;
    const wasHeld = this.state === 'held';
    const validTo = this.validUntil - this.margin();
    // Not while a transfer is on its way: the lock's name in Redis is about to change.
    const handOff = this.state === 'held' && this.followers.length > 0 && !this.recording && now() < validTo;
    // Even a lease declared lost is released in Redis: it may still have been ours there.
    this.stop('released');
    // Released before its minHold: Redis keeps the lock, unrenewed, for the time left (whole ms, rounded
    // up, so it is never held for less).
    const left = Math.ceil(this.minHold - (now() - this.grantedAt));
    let ok: boolean;
    if (left > 0) ok = await this.releaseLater(left);
    else {
      // This service's own waiter is next in line: it starts now, without a round trip to Redis, and
      // Redis hears of it only when that waiter's work is long or the last follower is done.
      const handedOn = this.handedOn ?? { from: this.ticket, handed: [] };
      if (handOff && this.host.handOff(handedOn, this.followers, this.validUntil)) {
        await nextHolderFirst();
        return;
      }
      const grants = this.host.ownGrants;
      ok = await this.host.store
        .release(this.ticket, this.fence, this.recording ? undefined : this.handedOn)
        .catch(this.releaseFailed);
      if (this.host.ownGrants !== grants) await nextHolderFirst();
    }
    if (!ok) {
      if (wasHeld) this.lostOnItsWay();
      throw new LockNotHeldError(this.key, 'release');
    }
  }

  /**
   * A release that found the lock no longer ours, from a lease this process still counted as held: it
   * was lost, most often as its ttl ran out while the release was on its way (Redis expired the key
   * between the send and the script). The loss is recorded so that `using`, whose work is done, reports
   * it as it reports a loss seen sooner.
   */
  private lostOnItsWay(): void {
    const ranOut = now() >= this.validUntil - this.margin();
    this.lostReason = ranOut
      ? new LockLostError(this.key, ...this.expiry())
      : new LockLostError(
          this.key,
          'key-missing',
          'its release found the lock no longer its own in Redis (evicted, deleted, or released by an operator)',
        );
    this.controller?.abort(this.lostReason);
  }

  /** releaseLater for a lease handed on locally records the hand-off first: Redis knows the lock by name. */
  private async releaseLater(left: number): Promise<boolean> {
    const { store } = this.host;
    if (this.handedOn && store.transfer) {
      const { outcome } = await store.transfer(this.ticket, this.handedOn, false);
      if (outcome !== 'extended') return false;
    }
    return store.releaseLater(this.ticket, left);
  }

  /**
   * The release got no answer, yet Redis may have run it: a grant it made to a waiter of this service
   * came only in the lost reply (nothing was published), so that key's waiters here re-check now.
   */
  private readonly releaseFailed = (error: unknown): never => {
    this.host.recheck(this.key);
    // Unsent, or lost on its way with its connection (node-redis sends nothing again): the lock may still
    // be held in Redis, under the token Redis knows it by, until the ttl it was last given: Redis has
    // let it go one ttl after its validity here at the latest.
    if (error instanceof RedisUnavailableError) {
      const lifetime = Math.max(this.validUntil - now(), 0) + this.ttl;
      this.host.takeBack(this.handedOn?.from ?? this.ticket, lifetime);
    }
    throw error;
  };

  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }

  /** Gives up the lease locally without touching Redis (the service is closing or Redis is gone). */
  lose(reason: LockLossReason, detail: string, cause?: unknown): void {
    if (this.state !== 'held') return;
    this.stop('lost');
    this.lostReason = new LockLostError(this.key, reason, detail, cause);
    this.observer?.ended(this, this.lostReason);
    this.controller?.abort(this.lostReason);
  }

  /** Lost because an extension found the lock no longer ours: its key gone, or another owner. */
  private loseTo(outcome: Exclude<ExtendOutcome, 'extended'>): void {
    const grant = this.confirmed ? '' : ' before its grant could be confirmed';
    if (outcome === 'missing') {
      this.lose(
        'key-missing',
        `its key was gone from Redis at renewal${grant} (expired, evicted under maxmemory, or deleted)`,
      );
    } else {
      this.lose('taken-over', `Redis records another owner at renewal${grant}`);
    }
  }

  /**
   * A renewal (or confirmation) the replicas did not acknowledge: the lease may not survive a failover,
   * so it is not trusted. Redis still holds it until it is released or its ttl runs out.
   */
  private loseUnreplicated(error: LockNotReplicatedError): void {
    this.lose(
      'not-replicated',
      `${error.acknowledged} of the ${error.required} replicas asked for acknowledged its renewal within ${error.timeout} ms`,
      error,
    );
  }

  private stop(state: State): void {
    // A lost lease is reported by lose(), with its reason; its release later is not a second end.
    if (this.state === 'held' && state === 'released') this.observer?.ended(this, undefined);
    const heldFor = this.state === 'held' ? now() - this.grantedAt : undefined;
    this.state = state;
    clearTimeout(this.renewTimer);
    clearTimeout(this.expiryTimer);
    clearTimeout(this.maxHoldTimer);
    this.host.forget(this, heldFor);
  }

  private prolong(validUntil: number): void {
    if (this.state !== 'held') return;
    this.validUntil = validUntil;
    this.armExpiry();
    if (this.renew) this.scheduleRenewal(this.ttl / 3);
    else clearTimeout(this.renewTimer); // an extend() confirmed a grant whose confirmation was pending
  }

  /** How long before its validity ends a lease is declared lost. */
  private margin(): number {
    // An unconfirmed grant only lives for the claim window, so its margin is sized from that window.
    return safetyMargin(this.confirmed ? this.ttl : this.ticket.claimWindow);
  }

  /** Declares the lease lost shortly before its validity ends unless an extension moved it. */
  private armExpiry(): void {
    clearTimeout(this.expiryTimer);
    const delay = Math.max(0, this.validUntil - this.margin() - now());
    this.expiryTimer = setTimeout(() => this.expire(), delay);
    this.expiryTimer.unref();
  }

  /**
   * The expiry timer's check, made on the spot. A process that was frozen (GC pause, SIGSTOP, a
   * suspended VM) resumes with its own code first and its timers after: reading `signal` or `isHeld`
   * then already tells the truth, so `using` never starts work on a lease that ran out meanwhile.
   */
  private expireIfDue(): void {
    this.endHoldIfDue();
    if (this.state === 'held' && now() >= this.validUntil - this.margin()) this.expire();
  }

  /**
   * Node's timers run on a clock read once per turn of the event loop, so one can fire up to a ms before
   * its delay has passed on performance.now(): a timer that fires early is set again for the rest.
   */
  private armMaxHold(): void {
    this.maxHoldTimer = setTimeout(
      () => {
        if (now() >= this.holdEnds) this.endHold();
        else this.armMaxHold();
      },
      Math.max(0, Math.ceil(this.holdEnds - now())),
    );
    this.maxHoldTimer.unref();
  }

  private endHoldIfDue(): void {
    if (this.state === 'held' && now() >= this.holdEnds) this.endHold();
  }

  /**
   * maxHold has passed: no renewal is sent any more, and the work is told to stop now, while the lock
   * is still held in Redis (until the last renewal's ttl runs out, or a release). The next waiter is
   * served when it expires, not before: the work that hung may still be running until it reads its
   * signal.
   */
  private endHold(): void {
    this.lose(
      'max-hold',
      `it was held for its maxHold (${Math.round(this.holdEnds - this.grantedAt)} ms), so renewal stopped; ` +
        'Redis keeps it until its ttl runs out or it is released',
    );
  }

  private expire(): void {
    this.lose(...this.expiry());
  }

  /** Why a lease whose validity ran out was lost, and what to say of it. */
  private expiry(): [LockLossReason, string] {
    if (!this.confirmed)
      return ['grant-unconfirmed', 'the grant could not be confirmed before its claim window ended'];
    if (this.renew)
      return ['renewal-failed', 'renewal could not be confirmed by Redis before the lease expired'];
    return ['ttl-elapsed', 'its ttl ran out before it was released (use renew: true or extend())'];
  }

  private scheduleRenewal(delay: number): void {
    clearTimeout(this.renewTimer);
    this.renewTimer = setTimeout(() => this.refresh().catch(() => {}), Math.max(0, delay));
    this.renewTimer.unref();
  }

  /**
   * One renewal, or the confirmation of an early-started grant, or the record of a local hand-off (which
   * also confirms it); retried until validity runs out. Resolves with what Redis found; rejects when it
   * could not be asked (a retry is then scheduled).
   */
  private refresh(): Promise<ExtendOutcome> {
    // A process frozen past maxHold runs its renewal timer before the maxHold one: no renewal then.
    this.endHoldIfDue();
    if (this.state !== 'held') return Promise.resolve<ExtendOutcome>('extended');
    const sent = now();
    const { store } = this.host;
    const call = this.handedOn ? this.record(this.ttl) : store.extend(this.ticket, this.ttl);
    return call.then(
      (outcome) => {
        if (this.state !== 'held') return outcome;
        if (outcome !== 'extended') {
          this.loseTo(outcome);
          return outcome;
        }
        const renewal = this.confirmed;
        this.confirmed = true;
        this.prolong(sent + validFor(store, this.ttl));
        if (renewal) this.observer?.renewed(this);
        return outcome;
      },
      (error: unknown) => {
        if (this.state === 'held') {
          if (error instanceof LockNotReplicatedError) this.loseUnreplicated(error);
          // Redis unreachable or slow: try again soon; the expiry timer decides when hope runs out.
          else this.scheduleRenewal(Math.min(this.ttl / 10, Math.max(0, this.validUntil - now()) / 2));
        }
        throw error;
      },
    );
  }

  /**
   * Records the local hand-off that made this lease (transfer), for `ttl`: the lease then owns the lock
   * in Redis in its own name. When it has no followers left, the reply names any now first in line.
   */
  private record(ttl: number): Promise<ExtendOutcome> {
    const { store } = this.host;
    const handedOn = this.handedOn;
    // Only a store with transfer names followers, so only its leases are ever handed on.
    if (!store.transfer || !handedOn) return Promise.resolve<ExtendOutcome>('missing');
    this.recording = true;
    const to = ttl === this.ticket.ttl ? this.ticket : { ...this.ticket, ttl };
    return store.transfer(to, handedOn, this.followers.length === 0).then(
      ({ outcome, next }) => {
        this.recording = false;
        if (outcome === 'extended') this.handedOn = undefined;
        if (next) {
          if (this.state === 'held') this.followers = next;
          this.host.follow(next[0], ttl);
        }
        return outcome;
      },
      (error: unknown) => {
        this.recording = false;
        throw error;
      },
    );
  }
}

/**
 * No call returns a lease that is lost already: one whose validity ran out before it could be returned
 * (the process stalled after the grant) is given back, and the call rejects with its LockLostError.
 * A reentrant lease (`Lease` but not owned) was checked held by its caller.
 */
export async function alive(lease: Lease | null): Promise<Lease | null> {
  const owned = lease as OwnedLease | null;
  if (owned === null || !('isHeld' in owned) || owned.isHeld) return lease;
  await owned.release().catch(() => {});
  throw owned.lossReason;
}
