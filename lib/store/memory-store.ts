/**
 * An in-memory store: the same lock, for one process. Several LockServices opened on one
 * MemoryLockBackend share its locks, which is how several instances are simulated in one process (unit
 * tests, single-process apps). It follows the Redis scripts step by step (docs/protocol.md): a FIFO queue
 * per key with no barging, grants handed to the next waiter and reserved for its claim window until it
 * confirms, a waiter whose service closed skipped at once, fences strictly increasing, `minHold`.
 *
 * Like Redis it keeps no timers: a lease or queue past its expiry is dropped when next looked at, and
 * waiters re-check when a hold ends, woken by the same hold notes. So it never keeps a process alive.
 * Its clock is the monotonic clock of the process. Wake-ups are delivered on a microtask, after the
 * call that caused them, as a push would arrive after the script that sent it.
 */
import { performance } from 'node:perf_hooks';
import { setBounded } from '../bounded-map';
import { kindRefusal } from '../errors/lock-usage.error';
import type {
  AcquireMode,
  AcquireReply,
  ExtendOutcome,
  JoinDoor,
  KeyList,
  LockBackend,
  LockSnapshot,
  LockStore,
  LockTicket,
  TicketTerms,
  WakeHandlers,
  WakeMessage,
} from './lock-store';
import { MemorySemaphores } from './memory-semaphores';
import { claimWindowOf, instanceOf, kindOf, ticketFields } from './token';

interface LockState {
  owner: string | null;
  /** When the owner's hold ends, on the store's clock (ms). */
  ownerUntil: number;
  queue: string[];
  /** When the queue expires unless a waiter joins again (ms). */
  queueUntil: number;
}

/** A ticket, with the reservation its multi-key call made on its key (reserve()), if any. */
interface MemoryTicket extends LockTicket {
  reserved?: string;
}

/** A reservation is "^<expires ms>^<token>", as in Redis (reserve.lua). */
const isReservation = (entry: string): boolean => entry.startsWith('^');

function parseReservation(entry: string): { expires: number; token: string } {
  const split = entry.indexOf('^', 1);
  return { expires: Number(entry.slice(1, split)), token: entry.slice(split + 1) };
}

/** The owner's remaining hold in ms, or -2 when free (as Redis' PTTL). */
const FREE = -2;
/** How long a lock's last fence is remembered after its last grant, for inspect(), ms. */
const FENCE_RETENTION = 3_600_000;
/** Forgotten fences are swept after this many grants, so the sweep costs O(1) per grant on average. */
const SWEEP_EVERY = 1_024;
/** How long a pace left for a key is kept (and not replaced), ms (prelude.lua's PACE_TTL). */
const PACE_TTL = 10_000;

export class MemoryLockBackend implements LockBackend {
  private readonly locks = new Map<string, LockState>();
  private readonly sessions = new Map<string, WakeHandlers>();
  private nextSession = 0;
  /** One counter for every lock, so fences strictly increase per lock even after a lock was forgotten. */
  private lastFence = Math.floor(Date.now() * 1000);
  /** The last fence of each lock granted within FENCE_RETENTION: what inspect() reports. */
  private readonly fences = new Map<string, { fence: number; at: number }>();
  private grants = 0;
  /** The pace each key's line moves at, as a service that saw it left it: prelude.lua's join_door. */
  private readonly paces = new Map<string, { perPlace: number; until: number }>();
  /** The keys used with permits: semaphore.lua's counterpart. */
  private readonly semaphores = new MemorySemaphores({
    fence: (key, now) => this.fence(key, now),
    door: (key, door, now) => this.door(key, door, now),
    deliver: (token, message) => this.deliver(token, message),
    isMutex: (key, now) => this.state(key, now) !== undefined,
  });

  openStore(handlers: WakeHandlers, instanceName?: string): LockStore {
    const session = `m${(++this.nextSession).toString(36)}`;
    const id = instanceName === undefined ? session : `${instanceName}@${session}`;
    this.sessions.set(id, handlers);
    return new MemoryLockStore(this, id);
  }

  /** Locks held or queued right now (idle locks take no memory). */
  get size(): number {
    return this.liveKeys(this.now()).length;
  }

  /** The keys with a holder or a waiter now, mutexes then semaphores; idle ones are forgotten on the way. */
  private liveKeys(now: number): string[] {
    const mutexes = [...this.locks.keys()].filter((key) => this.state(key, now) !== undefined);
    return [...mutexes, ...this.semaphores.liveKeys(now)];
  }

  /** @internal */ now(): number {
    return performance.now();
  }

  /** @internal */ closeSession(id: string): void {
    this.sessions.delete(id);
  }

  /** @internal */ isOpen(id: string): boolean {
    return this.sessions.has(id);
  }

  /** The lock's state with anything expired dropped; undefined (and forgotten) when idle. */
  private state(key: string, now: number): LockState | undefined {
    const lock = this.locks.get(key);
    if (!lock) return undefined;
    if (lock.owner !== null && lock.ownerUntil <= now) lock.owner = null;
    if (lock.queue.length > 0 && lock.queueUntil <= now) lock.queue = [];
    if (lock.owner === null && lock.queue.length === 0) {
      this.locks.delete(key);
      return undefined;
    }
    return lock;
  }

  private stateFor(key: string, now: number): LockState {
    const found = this.state(key, now);
    if (found) return found;
    const lock: LockState = { owner: null, ownerUntil: 0, queue: [], queueUntil: 0 };
    this.locks.set(key, lock);
    return lock;
  }

  /**
   * prelude.lua's join_door: the places of a join's door, and the pace a cold one was set by. A pace left
   * is kept for PACE_TTL, and not replaced meanwhile; past MAX_REMEMBERED_KEYS keys the oldest is forgotten.
   */
  private door(key: string, door: JoinDoor | undefined, now: number): { places?: number; pace?: number } {
    if (door === undefined) return {};
    const left = this.paces.get(key);
    const live = left !== undefined && left.until > now ? left : undefined;
    if (!('waitMs' in door)) {
      if (!live && door.offer) {
        // Deleted first: a replaced pace counts as the newest, not as the oldest kept.
        this.paces.delete(key);
        setBounded(this.paces, key, { perPlace: door.perPlaceMs, until: now + PACE_TTL });
      }
      return { places: door.places };
    }
    if (!live || !(live.perPlace > 0)) return {};
    return { places: Math.max(1, Math.floor(door.waitMs / live.perPlace)), pace: live.perPlace };
  }

  private fence(key: string, now: number): number {
    this.lastFence = Math.max(this.lastFence + 1, Math.floor(Date.now() * 1000));
    this.fences.delete(key); // re-inserted last: the map stays in order of last grant
    this.fences.set(key, { fence: this.lastFence, at: now });
    if (++this.grants % SWEEP_EVERY === 0) {
      for (const [name, { at }] of this.fences) {
        if (at > now - FENCE_RETENTION) break;
        this.fences.delete(name);
      }
    }
    return this.lastFence;
  }

  private deliver(token: string, message: WakeMessage): boolean {
    const handlers = this.sessions.get(instanceOf(token));
    if (!handlers) return false;
    queueMicrotask(() => {
      // The service may have closed since: a push to a closed subscription goes nowhere.
      if (this.sessions.get(instanceOf(token)) === handlers) handlers.onWake(message);
    });
    return true;
  }

  /**
   * Index of the first waiter in line that can take the lock, or -1: reservations (a later key of a
   * multi-key call, see reserve()) are passed over, keeping their places.
   */
  private firstActive(lock: LockState): number {
    return lock.queue.findIndex((entry) => !isReservation(entry));
  }

  /** Drops the reservations at the front of the line that expired or whose service closed. */
  private dropGoneReservations(lock: LockState, now: number): void {
    while (lock.queue.length > 0 && isReservation(lock.queue[0])) {
      const { expires, token } = parseReservation(lock.queue[0]);
      if (expires > now && this.isOpen(instanceOf(token))) return;
      lock.queue.shift();
    }
  }

  /** Tells the first waiter in line when the current hold ends; waiters whose service closed are dropped. */
  private notifyHead(lock: LockState, holdMs: number): void {
    for (;;) {
      const at = this.firstActive(lock);
      if (at < 0) return;
      const head = lock.queue[at];
      if (this.deliver(head, { kind: 'head', token: head, holdMs })) return;
      lock.queue.splice(at, 1);
    }
  }

  /** Hands the free lock to the first live waiter; the caller's own fence if it was the one. */
  private handOff(
    key: string,
    lock: LockState,
    caller: LockTicket | null,
    now: number,
  ): number | 'other' | false {
    let head: string | undefined;
    for (;;) {
      if (head === undefined) {
        this.dropGoneReservations(lock, now);
        const at = this.firstActive(lock);
        if (at < 0) return false;
        head = lock.queue.splice(at, 1)[0];
      }
      const fence = this.fence(key, now);
      if (caller && head === caller.token) {
        lock.owner = head;
        lock.ownerUntil = now + caller.ttl;
        this.notifyHead(lock, caller.ttl);
        return fence;
      }
      if (this.deliver(head, { kind: 'grant', token: head, fence, serverMs: now })) {
        const window = claimWindowOf(head);
        lock.owner = head;
        lock.ownerUntil = now + window;
        this.notifyHead(lock, window);
        return 'other';
      }
      head = undefined; // its service is gone: skip it rather than stall
    }
  }

  private giveUp(key: string, lock: LockState, now: number): void {
    if (this.handOff(key, lock, null, now) !== 'other') lock.owner = null;
  }

  /** Queues the caller (claiming its reservation's place if it has one there). */
  /** `late`: the ticket was granted and learnt of it too late; it goes back to the front (AcquireMode). */
  private joinQueue(
    lock: LockState,
    ticket: MemoryTicket,
    queueTtl: number,
    now: number,
    late: boolean,
  ): void {
    if (lock.queue.includes(ticket.token)) {
      if (late && lock.queue[0] !== ticket.token) {
        lock.queue = lock.queue.filter((entry) => entry !== ticket.token);
        lock.queue.unshift(ticket.token);
      }
      return;
    }
    const reserved = ticket.reserved === undefined ? -1 : lock.queue.indexOf(ticket.reserved);
    if (reserved >= 0) lock.queue[reserved] = ticket.token;
    else this.push(lock, ticket.token, queueTtl, now, late);
  }

  private push(lock: LockState, entry: string, queueTtl: number, now: number, front = false): void {
    if (front) lock.queue.unshift(entry);
    else lock.queue.push(entry);
    lock.queueUntil = Math.max(lock.queueUntil, now + queueTtl);
  }

  /** @internal */ reserve(ticket: MemoryTicket, queueTtl: number): void {
    const now = this.now();
    const lock = this.stateFor(ticket.key, now);
    const entry = `^${Math.round(now + queueTtl)}^${ticket.token}`;
    this.push(lock, entry, queueTtl, now);
    ticket.reserved = entry;
  }

  /** @internal */ acquire(
    ticket: MemoryTicket,
    asked: AcquireMode,
    queueTtl: number,
    door?: JoinDoor,
  ): AcquireReply {
    const now = this.now();
    const kind = kindOf(ticket);
    if (kind) return this.semaphores.acquire(ticket, kind, asked, queueTtl, now, door);
    // One key is one kind of lock (semaphore.lua): a mutex call on a semaphore in use is refused.
    const found = this.semaphores.kindOf(ticket.key, now);
    if (found !== undefined) throw kindRefusal(ticket.key, `LOCKKIND ${found} 1`);
    const late = asked === 'late';
    const mode = late ? 'wait' : asked;
    const lock = this.stateFor(ticket.key, now);
    const { token } = ticket;
    const waiting = (queued: boolean): AcquireReply & { granted: false } => {
      const head = queued ? this.firstActive(lock) : -1;
      return {
        granted: false,
        ownerTtl: lock.owner === null ? FREE : Math.ceil(lock.ownerUntil - now),
        serverMs: now,
        isHead: head >= 0 && lock.queue[head] === token,
      };
    };
    const granted = (fence: number): AcquireReply => ({ granted: true, fence, serverMs: now });
    // Nobody could use the free lock (only reservations in line, or waiters that are gone).
    const take = (): AcquireReply => {
      lock.owner = token;
      lock.ownerUntil = now + ticket.ttl;
      return granted(this.fence(ticket.key, now));
    };
    if (lock.queue.length === 0 && lock.owner === null) return take();
    if (mode !== 'wait') {
      if (lock.queue.length === 0 || lock.owner !== null) {
        if (mode === 'try') return waiting(false);
        // acquire.lua's door and place: a join turned away is not queued, one that joins learns its place.
        const inLine = lock.queue.length;
        const { places, pace } = mode === 'join' ? this.door(ticket.key, door, now) : {};
        const told = pace === undefined ? {} : { pace };
        if (places !== undefined && inLine >= places)
          return { ...waiting(false), turnedAway: inLine, ...told };
        this.push(lock, token, queueTtl, now);
        return { ...waiting(true), place: lock.queue.length, ...told };
      }
      // Free, but others queued first: FIFO, so the first waiter goes first.
      if (mode === 'join') this.push(lock, token, queueTtl, now);
      const fence = this.handOff(ticket.key, lock, ticket, now);
      if (typeof fence === 'number') return granted(fence);
      if (fence === 'other') return waiting(mode === 'join');
      return take();
    }
    if (lock.owner === token) {
      lock.ownerUntil = now + ticket.ttl;
      return granted(this.fences.get(ticket.key)?.fence ?? 0);
    }
    this.joinQueue(lock, ticket, queueTtl, now, late);
    if (lock.owner === null) {
      const fence = this.handOff(ticket.key, lock, ticket, now);
      if (typeof fence === 'number') return granted(fence);
      if (fence === false) return take();
    }
    return waiting(true);
  }

  /** @internal */ release(ticket: LockTicket): boolean {
    const now = this.now();
    if (kindOf(ticket)) return this.semaphores.release(ticket, now);
    const lock = this.state(ticket.key, now);
    if (!lock || lock.owner !== ticket.token) return false;
    this.giveUp(ticket.key, lock, now);
    this.state(ticket.key, now);
    return true;
  }

  /** @internal */ releaseLater(ticket: LockTicket, holdMs: number): boolean {
    const now = this.now();
    if (kindOf(ticket)) return this.semaphores.releaseLater(ticket, holdMs, now);
    const lock = this.state(ticket.key, now);
    if (!lock || lock.owner !== ticket.token) return false;
    lock.ownerUntil = now + holdMs;
    this.notifyHead(lock, holdMs);
    return true;
  }

  /** @internal */ cancel(ticket: MemoryTicket): boolean {
    const now = this.now();
    if (kindOf(ticket)) return this.semaphores.cancel(ticket, now);
    const lock = this.state(ticket.key, now);
    if (!lock) return false;
    const head = this.firstActive(lock);
    const wasHead = head >= 0 && lock.queue[head] === ticket.token;
    lock.queue = lock.queue.filter((entry) => entry !== ticket.token && entry !== ticket.reserved);
    if (lock.owner === ticket.token) {
      this.giveUp(ticket.key, lock, now);
      this.state(ticket.key, now);
      return true;
    }
    if (wasHead) {
      const hold = lock.owner === null ? 0 : Math.max(Math.ceil(lock.ownerUntil - now), 0);
      this.notifyHead(lock, hold);
    }
    this.state(ticket.key, now);
    return false;
  }

  /** @internal */ extend(ticket: LockTicket, ttl: number): ExtendOutcome {
    const now = this.now();
    if (kindOf(ticket)) return this.semaphores.extend(ticket, ttl, now);
    const lock = this.state(ticket.key, now);
    if (!lock || lock.owner === null) return 'missing';
    if (lock.owner !== ticket.token) return 'taken';
    lock.ownerUntil = now + ttl;
    return 'extended';
  }

  /** @internal */ list(limit: number, filter?: string): KeyList {
    const keys = this.liveKeys(this.now()).filter((key) => !filter || key.includes(filter));
    return { keys: keys.slice(0, limit), truncated: keys.length > limit };
  }

  /** @internal */ inspect(key: string): LockSnapshot {
    const now = this.now();
    const fence = this.fences.get(key)?.fence ?? 0;
    const semaphore = this.semaphores.inspect(key, now, fence);
    if (semaphore) return semaphore;
    const lock = this.state(key, now);
    const waiting = lock?.queue.filter((entry) => !isReservation(entry)) ?? [];
    return {
      owner: lock?.owner ?? null,
      ownerTtl: lock && lock.owner !== null ? Math.ceil(lock.ownerUntil - now) : FREE,
      queueLength: waiting.length,
      reserved: (lock?.queue.length ?? 0) - waiting.length,
      fence,
      permits: 1,
      waiting,
      serverMs: Date.now(),
    };
  }
}

/** One LockService's view of a MemoryLockBackend. */
class MemoryLockStore implements LockStore {
  private sequence = 0;
  private closed = false;

  constructor(
    private readonly backend: MemoryLockBackend,
    private readonly id: string,
  ) {}

  get instance(): string {
    return this.id;
  }

  ticket(key: string, terms: TicketTerms): LockTicket {
    return ticketFields(this.id, ++this.sequence, key, terms);
  }

  // Every call answers on a later turn, as a round trip would: callers never see a reply within the
  // same synchronous step that sent it.
  acquire(ticket: LockTicket, mode: AcquireMode, queueTtl: number, door?: JoinDoor): Promise<AcquireReply> {
    return Promise.resolve().then(() => this.backend.acquire(ticket, mode, queueTtl, door));
  }

  reserve(ticket: LockTicket, queueTtl: number): Promise<void> {
    return Promise.resolve().then(() => this.backend.reserve(ticket, queueTtl));
  }

  release(ticket: LockTicket): Promise<boolean> {
    return Promise.resolve().then(() => this.backend.release(ticket));
  }

  releaseLater(ticket: LockTicket, holdMs: number): Promise<boolean> {
    return Promise.resolve().then(() => this.backend.releaseLater(ticket, holdMs));
  }

  cancel(ticket: LockTicket): Promise<boolean> {
    return Promise.resolve().then(() => this.backend.cancel(ticket));
  }

  extend(ticket: LockTicket, ttl: number): Promise<ExtendOutcome> {
    return Promise.resolve().then(() => this.backend.extend(ticket, ttl));
  }

  inspect(key: string): Promise<LockSnapshot> {
    return Promise.resolve().then(() => this.backend.inspect(key));
  }

  list(limit: number, filter?: string): Promise<KeyList> {
    return Promise.resolve().then(() => this.backend.list(limit, filter));
  }

  get wakeReady(): boolean {
    return !this.closed;
  }

  subscribeWakes(): Promise<void> {
    return this.closed ? Promise.reject(new Error('store closed')) : Promise.resolve();
  }

  async close(): Promise<void> {
    // Its waiters' places are skipped from now on, as a closed subscription's are in Redis.
    this.closed = true;
    this.backend.closeSession(this.id);
  }
}
