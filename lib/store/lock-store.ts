/**
 * What the lock engine asks of the place its locks live: the seam between the engine (lib/engine/:
 * waiters, leases, renewal, signals, errors) and a store (Redis or a Cluster, an in-memory store, or a
 * quorum of Redis masters). Nothing here knows about Nest or about Redis.
 *
 * A store is opened once per LockService. Every call a caller makes on one lock carries the ticket the
 * store issued for it; wake-ups addressed to this service's waiters (a grant, a note that the current
 * hold ends in so many ms) arrive through the handlers given at opening. A lost wake-up must only ever
 * cost latency: every ownership change is recorded in the store first, and a waiter re-checks it.
 */

import type { HandedOn as ProtocolHandedOn } from '../protocol/lock-scripts';
import type {
  AcquireMode,
  AcquireReply,
  ExtendOutcome,
  JoinDoor,
  KeyList,
  LockSnapshot,
  TransferReply,
  WakeMessage,
} from '../protocol/replies';

/**
 * Time before a lease's validity ends at which the engine declares it lost: ttl/10, at most 250 ms. A
 * store whose grants can come back with little validity left (a quorum's, after two rounds) grants
 * only with more than this left, so no call returns a lease that is lost already.
 */
export function safetyMargin(ttl: number): number {
  return Math.min(Math.ceil(ttl / 10), 250);
}

/**
 * How far the rate of a Redis server's clock may stray from this process' monotonic clock: 1 %. A bound
 * relating the two loosens by this share of the time since it was taken, and a quorum's validity
 * allows as much of the ttl for the nodes' expiry clocks. A clock slewed faster (as a time daemon may
 * while it corrects a large offset) is outside what the lock assumes.
 */
export const CLOCK_RATE_DRIFT = 0.01;

/** One caller's claim on one lock: issued by the store, passed back with each call about it. */
export interface LockTicket {
  /** The lock key, as the caller gave it. */
  readonly key: string;
  /** The caller's identity as owner or waiter: unique per call, opaque to the engine. */
  readonly token: string;
  /** Lease time to live, ms. */
  readonly ttl: number;
  /** How long a grant to this caller stays reserved until it confirms, ms (at most its ttl). */
  readonly claimWindow: number;
  /** A semaphore's permits (more than 1): how many callers may hold the key at once. Absent: a mutex. */
  readonly permits?: number;
  /** A read-write lock's mode. Absent: a mutex or a semaphore. */
  readonly mode?: 'read' | 'write';
}

/** The kind of lock a ticket is for: a semaphore's permits (above 1), or a read-write lock's mode. */
export interface TicketKind {
  readonly permits?: number;
  readonly mode?: 'read' | 'write';
}

/** What a ticket is made for: the call's ttl and claim window, its place in a multi-key call, its kind of lock. */
export interface TicketTerms {
  readonly ttl: number;
  readonly claimWindow: number;
  readonly member?: TicketMember;
  readonly kind?: TicketKind;
}

/** Which multi-key call a ticket belongs to: its first key's token, and this key's place after it. */
export interface TicketMember {
  readonly of: string;
  readonly index: number;
}

// The replies and wake-ups every store speaks (protocol/replies.ts), re-exported as the seam's own.
export type {
  AcquireMode,
  AcquireReply,
  ExtendOutcome,
  HolderSnapshot,
  JoinDoor,
  KeyList,
  LockSnapshot,
  NodeSnapshot,
  Successor,
  TransferReply,
  WakeMessage,
} from '../protocol/replies';

/** A lease handed on locally, from one of this store's tickets (the protocol's HandedOn). */
export type HandedOn = ProtocolHandedOn<LockTicket>;

/** How a store reaches the engine that opened it. */
export interface WakeHandlers {
  /** A wake-up addressed to one of this service's waiters. */
  onWake(message: WakeMessage): void;
  /** Wake-ups came back after a break: some may have been missed, so every waiter re-checks. */
  onResubscribed(): void;
  /** The store can no longer be reached for good (the application ended its connection). */
  onEnded(): void;
}

/** The operations of one LockService on its store. Every method may reject with a LockError. */
export interface LockStore {
  /**
   * A ticket for one call on `key`: a fresh token, with the call's ttl and claim window. For key number
   * `member.index` (from 1) of a multi-key call, a token derived from its first key's (`member.of`): each
   * key has a token of its own, so a late wake-up about one key can never be taken for another's.
   * `kind`: the ticket is for a semaphore (`permits` above 1) or a read-write lock (`mode`).
   */
  ticket(key: string, terms: TicketTerms): LockTicket;
  /**
   * Take the lock, or join its queue (per `mode`), or confirm a grant; idempotent per ticket. A `wait`
   * call whose ticket holds a reservation on the key (reserve) claims it: it is queued at that place.
   * `queueTtl`: how long a place in line outlives this call (the wait left plus a claim window); a `try`
   * never queues, and gets it from a waiting call's first attempt, 0 from tryAcquire. `door`, for a
   * `join`: with its places or more in line the caller is turned away, not queued (reply `turnedAway`);
   * a cold door's places come from the pace left for the key by another service (JoinDoor). A store that
   * keeps no such count ignores it, and says no `place`.
   */
  acquire(ticket: LockTicket, mode: AcquireMode, queueTtl: number, door?: JoinDoor): Promise<AcquireReply>;
  /**
   * Optional. Keeps a place in `ticket.key`'s line for a later key of a multi-key call that still waits
   * for the keys before it: never granted, passed over by every hand-off (so it makes nobody wait), and
   * gone after `queueTtl` ms, when the ticket is cancelled, or when its service closes. The ticket
   * remembers it, so the call's first `wait` on this key is served from that place. A store without it
   * queues each later key at the back when the call asks for it.
   */
  reserve?(ticket: LockTicket, queueTtl: number): Promise<void>;
  /**
   * The owner gives the lock up, handing it to the next waiter; false when it did not own it. `fence`:
   * the lease's fence, for a store that numbers the next grant from it (a quorum's hand-off). `handedOn`:
   * the caller is a follower handed the lock locally and not recorded (only from a store with transfer).
   */
  release(ticket: LockTicket, fence?: number, handedOn?: HandedOn): Promise<boolean>;
  /** The owner's work ended early: keep the lock, unrenewed, `holdMs` more; false when not the owner. */
  releaseLater(ticket: LockTicket, holdMs: number): Promise<boolean>;
  /**
   * Optional (the local hand-off). Records that `to`, a follower of an owner of this service, now owns
   * the lock held under `handedOn.from`, for `to`'s ttl; `to` already started on the rest of that
   * validity. The followers in `handedOn.handed` leave the line. `follow`: `to` has no followers left, so
   * name the waiters of this service now first in line. Repeated after a lost reply, it renews `to`.
   * `extended`: done; `missing` or `taken`: the lock was no longer held under `from`.
   */
  transfer?(to: LockTicket, handedOn: HandedOn, follow: boolean): Promise<TransferReply>;
  /** A waiter gives up (its reservation, if any, goes too); true when a grant had raced in (it was passed on). */
  cancel(ticket: LockTicket): Promise<boolean>;
  /**
   * The owner resets its lease to `ttl` (also how a granted waiter confirms). Says what it found when the
   * caller is not the owner: the owner key gone, or another owner (see ExtendOutcome).
   */
  extend(ticket: LockTicket, ttl: number): Promise<ExtendOutcome>;
  /** One lock's state. */
  inspect(key: string): Promise<LockSnapshot>;
  /**
   * Optional. The keys of the locks held or waited for now (each master of a Cluster, every node of a
   * quorum), at most `limit`, those containing `filter` if given. Scans in bounded steps.
   */
  list?(limit: number, filter?: string): Promise<KeyList>;
  /** The service's id in its tokens (`<instance>:...`). */
  readonly instance?: string;
  /** True once wake-ups for this service's waiters will be delivered. */
  readonly wakeReady: boolean;
  /**
   * Optional. True when a waiter may join before wake-ups are delivered (wakeReady false): the store
   * keeps its place though its pushes reach nobody, and calls `onResubscribed` once they flow if any was
   * missed. The caller joins at once and starts the subscription once it is in line. Otherwise a
   * waiting call tries first, subscribes, and only then joins.
   */
  readonly joinsUnheard?: boolean;
  /** Starts delivering wake-ups (once); rejects when that is not possible now. */
  subscribeWakes(): Promise<void>;
  /**
   * Optional. How much shorter than a ttl a lease is valid for, ms, counted from before the call that
   * took or renewed it: the clock drift a quorum of independent servers must allow (Redlock). None when
   * absent.
   */
  validityDrift?(ttl: number): number;
  /**
   * Optional. False for a store without semaphores and read-write locks: a ticket with `permits` or
   * `mode` is then refused (the engine says so before any call).
   */
  readonly semaphores?: boolean;
  /** Stops wake-ups and frees what the store opened itself (never a client the application passed in). */
  close(): Promise<void>;
}

/** A place locks live that several services share, each opening its own store on it (e.g. MemoryLockBackend). */
export interface LockBackend {
  /**
   * Opens a store for one LockService; wake-ups for its waiters go to `handlers`. `instanceName`: the
   * service's readable name, to put before its id in its tokens.
   */
  openStore(handlers: WakeHandlers, instanceName?: string): LockStore;
}

export function isLockBackend(value: unknown): value is LockBackend {
  return (
    value !== null && typeof value === 'object' && typeof (value as LockBackend).openStore === 'function'
  );
}
