/**
 * One caller waiting in a lock's queue. It never polls: it is woken by a push on the service's wake
 * channel (a grant, or a note that it reached the head of the queue). Its only timers are its
 * deadline and one fallback re-check, set for the moment the current hold would run out, so that a
 * crashed holder or a lost push costs latency, never a hang.
 *
 * A pushed grant lets the waiter start at once, before Redis has confirmed it, as long as the grant is
 * certainly still valid: the grant's server time plus the claim window, mapped to the local monotonic
 * clock with an offset bound taken from this waiter's own round trips (see docs/protocol.md).
 */

import { LockError } from '../errors/lock.error';
import { LockAbortedError } from '../errors/lock-aborted.error';
import { LockServiceClosedError } from '../errors/lock-service-closed.error';
import { LockTimeoutError } from '../errors/lock-timeout.error';
import type { AcquireReply, LockScripts, ScriptContext } from '../protocol/lock-scripts';
import { now, safetyMargin } from './clock';

export interface WaiterHost {
  readonly scripts: LockScripts;
  readonly claimWindow: number;
  register(waiter: Waiter): void;
  unregister(waiter: Waiter): void;
  /** Remembers a waiter whose cancel failed, so a late grant to it can be passed on. */
  orphan(ctx: ScriptContext, lifetime: number): void;
}

export interface Granted {
  fence: number;
  /** End of validity on the local monotonic clock. */
  validUntil: number;
  /** False when Redis has yet to confirm the grant (the lease confirms it right away). */
  confirmed: boolean;
}

/** Retry delay after a failed re-check while Redis is unreachable. */
const RETRY_MS = 100;

export class Waiter {
  private readonly started: number;
  private readonly deadline: number;
  private readonly done: Promise<Granted>;
  private resolve!: (granted: Granted) => void;
  private reject!: (error: unknown) => void;
  private settled = false;
  private checking = false;
  private recheck = false;
  private lastError: unknown;
  /** Upper bound of (server clock - local clock), in ms, from this waiter's round trips. */
  private offsetBound = Number.POSITIVE_INFINITY;
  private cancelled: Promise<void> | undefined;
  private fallbackTimer: NodeJS.Timeout | undefined;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private readonly onAbort = () => this.fail(new LockAbortedError(this.key, this.signal?.reason));

  constructor(
    private readonly host: WaiterHost,
    readonly ctx: ScriptContext,
    readonly key: string,
    started: number,
    waitTimeout: number,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.started = started;
    this.deadline = started + waitTimeout;
    this.done = new Promise<Granted>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  get token(): string {
    return this.ctx.token;
  }

  /** Joins the queue and resolves when granted; rejects with a typed error otherwise. */
  run(): Promise<Granted> {
    this.host.register(this);
    this.deadlineTimer = setTimeout(() => this.expire(), Math.max(0, this.deadline - now()));
    this.signal?.addEventListener('abort', this.onAbort, { once: true });
    if (this.signal?.aborted) this.onAbort();
    else this.check(true);
    return this.done;
  }

  /** A grant was pushed to this waiter. */
  onGrant(fence: number, serverMs: number): void {
    if (this.settled) return;
    const elapsed = now() - this.started;
    // Clocks may drift apart a little while we wait: allow 0.1 % of the wait plus 1 ms.
    const validUntil = serverMs + this.host.claimWindow - this.offsetBound - elapsed / 1000 - 1;
    if (now() < validUntil - safetyMargin(this.host.claimWindow)) {
      this.win({ fence, validUntil, confirmed: false });
    } else {
      // Too late (or no round trip to bound the clocks yet): let Redis confirm it first.
      this.check(false);
    }
  }

  /** This waiter reached the head of the queue: re-check when the current hold runs out. */
  onHead(holdMs: number): void {
    if (this.settled) return;
    this.scheduleCheck(holdMs + 1);
  }

  /** The wake channel reconnected: pushes may have been missed, so ask Redis. */
  onReconnect(): void {
    if (!this.settled) this.check(false);
  }

  /** The service is closing; resolves once Redis has been told this waiter left. */
  close(): Promise<void> {
    this.fail(new LockServiceClosedError(this.key));
    return this.cancelled ?? Promise.resolve();
  }

  private check(first: boolean): void {
    if (this.settled) return;
    if (this.checking) {
      this.recheck = true;
      return;
    }
    this.checking = true;
    clearTimeout(this.fallbackTimer);
    const sent = now();
    const queueTtl = Math.max(1, Math.ceil(this.deadline - sent)) + this.host.claimWindow;
    this.host.scripts.acquire(this.ctx, 'wait', queueTtl).then(
      (reply) => this.checked(reply, sent),
      (error: unknown) => {
        this.checking = false;
        if (this.settled) return;
        // The first call fails fast: the caller learns at once that Redis is unreachable.
        if (first) return this.fail(error);
        this.lastError = error;
        this.scheduleCheck(RETRY_MS);
      },
    );
  }

  private checked(reply: AcquireReply, sent: number): void {
    this.checking = false;
    this.lastError = undefined;
    this.offsetBound = Math.min(this.offsetBound, reply.serverMs - sent);
    // If we gave up meanwhile, our cancel was sent after this check and passes any grant on.
    if (this.settled) return;
    if (reply.granted) {
      this.win({ fence: reply.fence, validUntil: sent + this.ctx.ttl, confirmed: true });
      return;
    }
    if (this.recheck) {
      this.recheck = false;
      this.check(false);
      return;
    }
    // The head re-checks as the hold ends; the others a claim window later, in case the head is gone.
    const hold = Math.max(reply.ownerTtl, 0);
    this.scheduleCheck(hold + (reply.isHead ? 1 : this.host.claimWindow));
  }

  private scheduleCheck(delay: number): void {
    clearTimeout(this.fallbackTimer);
    this.fallbackTimer = setTimeout(() => this.check(false), Math.max(1, delay));
  }

  private expire(): void {
    const waited = Math.round(now() - this.started);
    const error =
      this.lastError instanceof LockError ? this.lastError : new LockTimeoutError(this.key, waited);
    this.fail(error);
  }

  private win(granted: Granted): void {
    if (this.settle()) this.resolve(granted);
  }

  private fail(error: unknown): void {
    if (!this.settle()) return;
    this.reject(error);
    // Leave the queue; if a grant raced in, Redis passes it on. If Redis cannot be told, a later
    // grant to this token is passed on when it arrives (or, unconfirmed, expires after a claim window).
    this.cancelled = this.host.scripts.cancel(this.ctx).then(
      () => undefined,
      () => this.host.orphan(this.ctx, Math.max(0, this.deadline - now()) + 2 * this.host.claimWindow),
    );
  }

  private settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    clearTimeout(this.fallbackTimer);
    clearTimeout(this.deadlineTimer);
    this.signal?.removeEventListener('abort', this.onAbort);
    this.host.unregister(this);
    return true;
  }
}
