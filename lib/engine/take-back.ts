/**
 * Tickets of this service that Redis may still hold for nobody: a call failed after its script may have
 * run (its reply lost with the connection, or none came in time), or a waiter gave up and could not tell
 * Redis. node-redis fails a command whose connection dropped, where ioredis sends it again, so a grant
 * whose reply was lost would otherwise keep the lock for its whole ttl while its caller was told Redis
 * was unavailable. Until a cancel reaches Redis it is sent again (it frees a grant to the ticket, or its
 * place in line, and does nothing if neither is there); a grant pushed to one of them meanwhile is passed
 * on at once. While the client is disconnected a cancel fails at once without reaching the network, so
 * the retries cost timers, and the first after the reconnect frees the lock.
 */
import { setBounded } from '../bounded-map';
import { RedisUnavailableError, wasSent } from '../errors/redis-unavailable.error';
import type { LockStore, LockTicket } from '../store/lock-store';
import { now } from './clock';

/** The first retry's delay; each next one doubles, up to RETRY_MAX_MS. */
const RETRY_MIN_MS = 25;
const RETRY_MAX_MS = 500;

interface Pending {
  readonly ticket: LockTicket;
  readonly until: number;
  timer?: NodeJS.Timeout;
}

/** Whether a call that failed with `error` may have taken the lock or a place in line all the same. */
export function mayHaveRun(error: unknown): boolean {
  return error instanceof RedisUnavailableError && wasSent(error);
}

export class TakeBacks {
  private readonly pending = new Map<string, Pending>();

  constructor(private readonly store: LockStore) {}

  /** Cancels `ticket` until Redis confirms it, for `lifetime` ms at most (after which Redis has let it go). */
  add(ticket: LockTicket, lifetime: number): void {
    if (this.pending.has(ticket.token)) return;
    const entry: Pending = { ticket, until: now() + lifetime };
    setBounded(this.pending, ticket.token, entry);
    this.schedule(entry, RETRY_MIN_MS);
  }

  /** A grant pushed to `token`: if it is taken back, it is passed on now. */
  onGrant(token: string): void {
    const entry = this.pending.get(token);
    if (entry) this.attempt(entry, RETRY_MIN_MS);
  }

  /** One last attempt for each ticket still held, then no more retries. */
  async close(): Promise<void> {
    const entries = [...this.pending.values()];
    this.pending.clear();
    for (const entry of entries) clearTimeout(entry.timer);
    await Promise.all(entries.map((entry) => this.store.cancel(entry.ticket).catch(() => false)));
  }

  private schedule(entry: Pending, delay: number): void {
    entry.timer = setTimeout(() => this.attempt(entry, Math.min(delay * 2, RETRY_MAX_MS)), delay);
    entry.timer.unref();
  }

  private attempt(entry: Pending, nextDelay: number): void {
    clearTimeout(entry.timer);
    entry.timer = undefined;
    const { token } = entry.ticket;
    this.store.cancel(entry.ticket).then(
      () => {
        if (this.pending.get(token) === entry) this.pending.delete(token);
      },
      () => {
        if (this.pending.get(token) !== entry || entry.timer) return;
        if (now() >= entry.until) this.pending.delete(token);
        else this.schedule(entry, nextDelay);
      },
    );
  }
}
