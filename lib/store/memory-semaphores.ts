/**
 * The semaphores and read-write locks of a MemoryLockBackend: keys that several callers hold at once
 * (up to `permits`; or readers together, a writer alone), served first come first served. It follows
 * semaphore.lua step by step (docs/protocol.md, "Semaphores" and "Read-write locks"): one line
 * per key with no barging, free permits granted to the first waiters in order and reserved for their
 * claim window until they confirm, a waiter whose service closed skipped, a hold that ended dropped when
 * next looked at, and the head of the line told when the first hold ends.
 */
import { kindRefusal } from '../errors/lock-usage.error';
import type {
  AcquireMode,
  AcquireReply,
  ExtendOutcome,
  JoinDoor,
  LockSnapshot,
  LockTicket,
  WakeMessage,
} from './lock-store';
import { claimWindowOf, isReaderToken } from './token';

interface Hold {
  /** When the hold ends, on the store's clock (ms). */
  until: number;
  fence: number;
}

interface SemaphoreState {
  /** As semaphore.lua's: the permits, or "rw" for a read-write lock. */
  kind: string;
  permits: number;
  /** Holders by token. */
  holders: Map<string, Hold>;
  queue: string[];
  /** When the line expires unless a waiter joins again (ms). */
  queueUntil: number;
}

/** What the semaphores use of their backend. */
export interface SemaphoreHost {
  /** The next fence of `key` (one counter with its mutex grants). */
  fence(key: string, now: number): number;
  /** Delivers a wake-up; false when the waiter's service is gone. */
  deliver(token: string, message: WakeMessage): boolean;
  /** Whether `key` is held or waited for as a mutex. */
  isMutex(key: string, now: number): boolean;
  /** A join's door on `key`: its places, and the pace a cold one was set by (prelude.lua, join_door). */
  door(key: string, door: JoinDoor | undefined, now: number): { places?: number; pace?: number };
}

const FREE = -2;

export class MemorySemaphores {
  private readonly keys = new Map<string, SemaphoreState>();

  constructor(private readonly host: SemaphoreHost) {}

  /** Semaphores held or waited for right now. */

  /** The kind of `key` (its permits, or "rw") when it is in use (held or waited for), else undefined. */
  kindOf(key: string, now: number): string | undefined {
    return this.state(key, now)?.kind;
  }

  /** The key's state with ended holds and an expired line dropped; undefined (and forgotten) when idle. */
  private state(key: string, now: number): SemaphoreState | undefined {
    const sem = this.keys.get(key);
    if (!sem) return undefined;
    for (const [token, hold] of sem.holders) if (hold.until <= now) sem.holders.delete(token);
    if (sem.queue.length > 0 && sem.queueUntil <= now) sem.queue = [];
    if (sem.holders.size === 0 && sem.queue.length === 0) {
      this.keys.delete(key);
      return undefined;
    }
    return sem;
  }

  /** The state to take the key in, refusing a key used as another kind of lock (as semaphore.lua). */
  private stateFor(ticket: LockTicket, kind: string, now: number): SemaphoreState {
    const { key } = ticket;
    if (this.host.isMutex(key, now)) throw kindRefusal(key, `LOCKKIND 1 ${kind}`);
    const found = this.state(key, now);
    if (found) {
      if (found.kind !== kind) throw kindRefusal(key, `LOCKKIND ${found.kind} ${kind}`);
      return found;
    }
    const permits = kind === 'rw' ? 0 : Number(kind);
    const sem: SemaphoreState = { kind, permits, holders: new Map(), queue: [], queueUntil: 0 };
    this.keys.set(key, sem);
    return sem;
  }

  /** ms until the first hold ends, or FREE. */
  private firstHoldLeft(sem: SemaphoreState, now: number): number {
    let first = Number.POSITIVE_INFINITY;
    for (const { until } of sem.holders.values()) first = Math.min(first, until);
    return first === Number.POSITIVE_INFINITY ? FREE : Math.max(Math.ceil(first - now), 0);
  }

  /**
   * Whether `token` could hold the key now, beside its holders: a semaphore while a permit is free; a
   * read-write lock when nobody holds it, or a reader when readers do (a writer is always alone).
   */
  private fits(sem: SemaphoreState, token: string): boolean {
    if (sem.kind !== 'rw') return sem.holders.size < sem.permits;
    if (sem.holders.size === 0) return true;
    const [first] = sem.holders.keys();
    return isReaderToken(token) && isReaderToken(first);
  }

  /**
   * Grants the key to the first waiters in line, in order, while the first of them fits; `caller` (when in line) gets its full
   * ttl, anyone else its claim window. Returns the caller's fence if it was served, and how many were.
   */
  private serve(
    key: string,
    sem: SemaphoreState,
    now: number,
    caller?: LockTicket,
  ): [number | false, number] {
    let mine: number | false = false;
    let granted = 0;
    while (sem.queue.length > 0 && this.fits(sem, sem.queue[0])) {
      const head = sem.queue.shift() as string;
      const fence = this.host.fence(key, now);
      if (caller && head === caller.token) {
        sem.holders.set(head, { until: now + caller.ttl, fence });
        mine = fence;
      } else if (this.host.deliver(head, { kind: 'grant', token: head, fence, serverMs: now })) {
        sem.holders.set(head, { until: now + claimWindowOf(head), fence });
      } else {
        continue; // its service is gone: skip it rather than reserve a permit for it
      }
      granted++;
    }
    return [mine, granted];
  }

  /** Tells the first waiter when the first hold ends; waiters whose service closed are dropped. */
  private notifyHead(sem: SemaphoreState, now: number): void {
    const holdMs = this.firstHoldLeft(sem, now);
    while (sem.queue.length > 0) {
      const head = sem.queue[0];
      if (this.host.deliver(head, { kind: 'head', token: head, holdMs })) return;
      sem.queue.shift();
    }
  }

  acquire(
    ticket: LockTicket,
    kind: string,
    asked: AcquireMode,
    queueTtl: number,
    now: number,
    door?: JoinDoor,
  ): AcquireReply {
    const late = asked === 'late';
    const mode = late ? 'wait' : asked;
    const sem = this.stateFor(ticket, kind, now);
    const { token, key } = ticket;
    const waiting = (queued = true): AcquireReply & { granted: false } => ({
      granted: false,
      ownerTtl: this.firstHoldLeft(sem, now),
      serverMs: now,
      isHead: queued && sem.queue[0] === token,
    });
    const own = sem.holders.get(token);
    if (mode === 'wait' && own) {
      own.until = now + ticket.ttl;
      return { granted: true, fence: own.fence, serverMs: now };
    }
    if (sem.queue.length === 0 && this.fits(sem, token)) {
      const fence = this.host.fence(key, now);
      sem.holders.set(token, { until: now + ticket.ttl, fence });
      return { granted: true, fence, serverMs: now };
    }
    if (mode === 'try') return waiting(false);
    const at = sem.queue.indexOf(token);
    // semaphore-acquire.lua's door and place: a join turned away is not queued, one that joins learns its place.
    const inLine = sem.queue.length;
    const { places, pace } = mode === 'join' && at < 0 ? this.host.door(key, door, now) : {};
    const told = pace === undefined ? {} : { pace };
    if (places !== undefined && inLine >= places) return { ...waiting(false), turnedAway: inLine, ...told };
    let place: number | undefined;
    if (at < 0 || (late && at > 0)) {
      if (at > 0) sem.queue.splice(at, 1);
      if (late) sem.queue.unshift(token);
      else place = sem.queue.push(token);
      sem.queueUntil = Math.max(sem.queueUntil, now + queueTtl);
    }
    const [fence, granted] = this.serve(key, sem, now, ticket);
    if (granted > 0) this.notifyHead(sem, now);
    if (fence !== false) return { granted: true, fence, serverMs: now };
    return mode === 'join' && place !== undefined ? { ...waiting(), place, ...told } : waiting();
  }

  /** A permit given back: the line is served and its new head told. */
  private leave(key: string, sem: SemaphoreState, token: string, now: number): void {
    sem.holders.delete(token);
    const [, granted] = this.serve(key, sem, now);
    if (granted > 0) this.notifyHead(sem, now);
    this.state(key, now);
  }

  release(ticket: LockTicket, now: number): boolean {
    const sem = this.state(ticket.key, now);
    if (!sem?.holders.has(ticket.token)) return false;
    this.leave(ticket.key, sem, ticket.token, now);
    return true;
  }

  releaseLater(ticket: LockTicket, holdMs: number, now: number): boolean {
    const sem = this.state(ticket.key, now);
    const hold = sem?.holders.get(ticket.token);
    if (!sem || !hold) return false;
    hold.until = now + holdMs;
    this.notifyHead(sem, now);
    return true;
  }

  cancel(ticket: LockTicket, now: number): boolean {
    const sem = this.state(ticket.key, now);
    if (!sem) return false;
    const wasHead = sem.queue[0] === ticket.token;
    sem.queue = sem.queue.filter((entry) => entry !== ticket.token);
    if (sem.holders.has(ticket.token)) {
      this.leave(ticket.key, sem, ticket.token, now);
      return true;
    }
    if (wasHead) this.notifyHead(sem, now);
    this.state(ticket.key, now);
    return false;
  }

  extend(ticket: LockTicket, ttl: number, now: number): ExtendOutcome {
    const hold = this.state(ticket.key, now)?.holders.get(ticket.token);
    if (!hold) return 'missing';
    hold.until = now + ttl;
    return 'extended';
  }

  /** The key's snapshot when it is a semaphore in use, else undefined. */
  inspect(key: string, now: number, fence: number): LockSnapshot | undefined {
    const sem = this.state(key, now);
    if (!sem) return undefined;
    const holders = [...sem.holders]
      .map(([token, hold]) => ({ token, ttl: Math.ceil(hold.until - now), fence: hold.fence }))
      .sort((a, b) => a.ttl - b.ttl);
    return {
      owner: holders[0]?.token ?? null,
      ownerTtl: holders[0]?.ttl ?? FREE,
      queueLength: sem.queue.length,
      reserved: 0,
      fence,
      permits: sem.permits,
      readWrite: sem.kind === 'rw',
      waiting: [...sem.queue],
      holders,
      serverMs: Date.now(),
    };
  }

  /** The keys with a holder or a waiter now. */
  liveKeys(now: number): string[] {
    return [...this.keys.keys()].filter((key) => this.state(key, now) !== undefined);
  }
}
