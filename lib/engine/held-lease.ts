/**
 * The client side of one held lock: its validity on the monotonic clock, the watchdog that renews it,
 * and the AbortSignal that fires when it can no longer be trusted. Timers are unref'd: a forgotten
 * lease never keeps the process alive. No method lets a rejection escape unobserved.
 */
import { type LockLossReason, LockLostError } from '../errors/lock-lost.error';
import { LockNotHeldError } from '../errors/lock-not-held.error';
import { LockNotReplicatedError } from '../errors/lock-not-replicated.error';
import './dispose-symbol';
import type { Lease } from '../lease';
import type { ExtendOutcome, LockStore, LockTicket } from '../store/lock-store';
import { now, safetyMargin, validFor } from './clock';

export interface LeaseHost {
  readonly store: LockStore;
  /** Called once when the lease is released or lost, so the host stops tracking it. */
  forget(lease: HeldLease): void;
  validateTtl(ttl: unknown): number;
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
}

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
  private readonly renew: boolean;
  private readonly minHold: number;
  /**
   * When this process learnt of the grant (monotonic). The grant was made in Redis before that, so a
   * minHold counted from here holds the lock at least minHold after the grant, never less.
   */
  private readonly grantedAt = now();

  constructor(
    private readonly host: LeaseHost,
    private readonly ticket: LockTicket,
    fence: number,
    validUntil: number,
    terms: LeaseTerms,
    /** False for a grant the waiter started on before Redis confirmed it (see Waiter). */
    confirmed: boolean,
  ) {
    this.renew = terms.renew;
    this.minHold = terms.minHold;
    this.key = ticket.key;
    this.token = ticket.token;
    this.fence = fence;
    this.ttl = ticket.ttl;
    this.validUntil = validUntil;
    this.confirmed = confirmed;
    this.armExpiry();
    if (!confirmed) {
      // Most work handed off this way ends well inside the claim window, so the confirmation waits for
      // half of what is left of it: a short critical section releases without ever sending it (one
      // round trip and one script less per hand-off), a longer one keeps the other half for retries.
      this.scheduleRenewal((validUntil - safetyMargin(ticket.claimWindow) - now()) / 2);
    } else if (this.renew) this.scheduleRenewal(this.ttl / 3);
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
    if (this.state !== 'held') throw new LockNotHeldError(this.key, 'extend');
    const sent = now();
    let outcome: ExtendOutcome;
    try {
      outcome = await this.host.store.extend(this.ticket, next);
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
    if (this.state === 'released') return;
    // Even a lease declared lost is released in Redis: it may still have been ours there.
    this.stop('released');
    // Released before its minHold: Redis keeps the lock, unrenewed, for the time left (whole ms, rounded
    // up, so it is never held for less).
    const left = Math.ceil(this.minHold - (now() - this.grantedAt));
    const ok =
      left > 0
        ? await this.host.store.releaseLater(this.ticket, left)
        : await this.host.store.release(this.ticket, this.fence);
    if (!ok) throw new LockNotHeldError(this.key, 'release');
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }

  /** Gives up the lease locally without touching Redis (the service is closing or Redis is gone). */
  lose(reason: LockLossReason, detail: string, cause?: unknown): void {
    if (this.state !== 'held') return;
    this.stop('lost');
    this.lostReason = new LockLostError(this.key, reason, detail, cause);
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
    this.state = state;
    clearTimeout(this.renewTimer);
    clearTimeout(this.expiryTimer);
    this.host.forget(this);
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
    if (this.state === 'held' && now() >= this.validUntil - this.margin()) this.expire();
  }

  private expire(): void {
    if (!this.confirmed) {
      this.lose('grant-unconfirmed', 'the grant could not be confirmed before its claim window ended');
    } else if (this.renew) {
      this.lose('renewal-failed', 'renewal could not be confirmed by Redis before the lease expired');
    } else {
      this.lose('ttl-elapsed', 'its ttl ran out before it was released (use renew: true or extend())');
    }
  }

  private scheduleRenewal(delay: number): void {
    clearTimeout(this.renewTimer);
    this.renewTimer = setTimeout(() => this.refresh(), Math.max(0, delay));
    this.renewTimer.unref();
  }

  /** One renewal (or the confirmation of an early-started grant); retries until validity runs out. */
  private refresh(): void {
    if (this.state !== 'held') return;
    const sent = now();
    this.host.store.extend(this.ticket, this.ttl).then(
      (outcome) => {
        if (this.state !== 'held') return;
        if (outcome !== 'extended') {
          this.loseTo(outcome);
          return;
        }
        this.confirmed = true;
        this.prolong(sent + validFor(this.host.store, this.ttl));
      },
      (error: unknown) => {
        if (this.state !== 'held') return;
        if (error instanceof LockNotReplicatedError) {
          this.loseUnreplicated(error);
          return;
        }
        // Redis unreachable or slow: try again soon; the expiry timer decides when hope runs out.
        this.scheduleRenewal(Math.min(this.ttl / 10, Math.max(0, this.validUntil - now()) / 2));
      },
    );
  }
}
