/**
 * The client side of one held lock: its validity on the monotonic clock, the watchdog that renews it,
 * and the AbortSignal that fires when it can no longer be trusted. Timers are unref'd: a forgotten
 * lease never keeps the process alive. No method lets a rejection escape unobserved.
 */
import { LockLostError } from '../errors/lock-lost.error';
import { LockNotHeldError } from '../errors/lock-not-held.error';
import './dispose-symbol';
import type { Lease } from '../lease';
import type { LockScripts, ScriptContext } from '../protocol/lock-scripts';
import { now, safetyMargin } from './clock';

export interface LeaseHost {
  readonly scripts: LockScripts;
  /** Called once when the lease is released or lost, so the host stops tracking it. */
  forget(lease: HeldLease): void;
  validateTtl(ttl: unknown): number;
}

type State = 'held' | 'released' | 'lost';

export class HeldLease implements Lease {
  readonly key: string;
  readonly token: string;
  readonly fence: number;
  private readonly controller = new AbortController();
  private state: State = 'held';
  private ttl: number;
  private validUntil: number;
  private confirmed: boolean;
  private renewTimer: NodeJS.Timeout | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly host: LeaseHost,
    private readonly ctx: ScriptContext,
    key: string,
    fence: number,
    validUntil: number,
    private readonly renew: boolean,
    /** False for a grant the waiter started on before Redis confirmed it (see Waiter). */
    confirmed: boolean,
  ) {
    this.key = key;
    this.token = ctx.token;
    this.fence = fence;
    this.ttl = ctx.ttl;
    this.validUntil = validUntil;
    this.confirmed = confirmed;
    this.armExpiry();
    if (!confirmed) this.refresh();
    else if (renew) this.scheduleRenewal(this.ttl / 3);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The owner key in Redis (prefix and hash tag included): how reentrancy scopes find this lease. */
  get redisKey(): string {
    return this.ctx.keys.owner;
  }

  /** Held and, as far as this process can tell, still valid. */
  get isHeld(): boolean {
    return this.state === 'held';
  }

  async extend(ttl?: number): Promise<void> {
    const next = ttl === undefined ? this.ttl : this.host.validateTtl(ttl);
    if (this.state !== 'held') throw new LockNotHeldError(this.key, 'extend');
    const sent = now();
    const ok = await this.host.scripts.extend(this.ctx.keys, this.token, next);
    if (!ok) {
      this.lose('Redis no longer records this lease as the owner');
      throw new LockNotHeldError(this.key, 'extend');
    }
    this.ttl = next;
    this.confirmed = true;
    this.prolong(sent + next);
  }

  async release(): Promise<void> {
    if (this.state === 'released') return;
    // Even a lease declared lost is released in Redis: it may still have been ours there.
    this.stop('released');
    const ok = await this.host.scripts.release(this.ctx);
    if (!ok) throw new LockNotHeldError(this.key, 'release');
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }

  /** Gives up the lease locally without touching Redis (the service is closing or Redis is gone). */
  lose(reason: string, cause?: unknown): void {
    if (this.state !== 'held') return;
    this.stop('lost');
    this.controller.abort(new LockLostError(this.key, reason, cause));
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
  }

  /** Declares the lease lost shortly before its validity ends unless an extension moved it. */
  private armExpiry(): void {
    clearTimeout(this.expiryTimer);
    // An unconfirmed grant only lives for the claim window, so its margin is sized from that window.
    const margin = safetyMargin(this.confirmed ? this.ttl : this.ctx.claimWindow);
    const delay = Math.max(0, this.validUntil - margin - now());
    this.expiryTimer = setTimeout(() => {
      this.lose(
        this.confirmed
          ? this.renew
            ? 'renewal could not be confirmed by Redis before the lease expired'
            : 'its ttl ran out before it was released (use renew: true or extend())'
          : 'the grant could not be confirmed before its claim window ended',
      );
    }, delay);
    this.expiryTimer.unref();
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
    this.host.scripts.extend(this.ctx.keys, this.token, this.ttl).then(
      (ok) => {
        if (this.state !== 'held') return;
        if (!ok) {
          this.lose(
            this.confirmed
              ? 'Redis no longer records this lease as the owner (expired, deleted or taken over)'
              : 'the grant expired before it could be confirmed',
          );
          return;
        }
        this.confirmed = true;
        this.prolong(sent + this.ttl);
      },
      () => {
        // Redis unreachable or slow: try again soon; the expiry timer decides when hope runs out.
        if (this.state !== 'held') return;
        this.scheduleRenewal(Math.min(this.ttl / 10, Math.max(0, this.validUntil - now()) / 2));
      },
    );
  }
}
