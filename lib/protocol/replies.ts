/**
 * The replies of the lock's scripts and the wake-ups they push, as every store speaks them (the Redis
 * protocol here, and the memory and quorum stores alike): the vocabulary of the store seam
 * (store/lock-store.ts), kept at the bottom so that the protocol depends on nothing above it.
 */

/**
 * `try`: never queue. `join`: a waiter's first call, with a ticket the store has not seen. `wait`: a
 * waiter's later calls (re-check, confirm a grant), which find it queued or granted. `late`: a `wait`
 * from a waiter that was granted the lock but learnt of it too late to start on it (its process was
 * stalled, and the grant may have moved on): if it is no longer the owner, it goes back to the front of
 * the line, where it was granted from, not to the back.
 */
export type AcquireMode = 'try' | 'join' | 'wait' | 'late';

/** The outcome of an acquire call. `serverMs` is the store's clock, comparable only with itself. */
export type AcquireReply =
  | {
      granted: true;
      fence: number;
      serverMs: number;
      /**
       * When the lease's validity counts from (local monotonic ms, before the command that granted it was
       * sent), for a store that may wait before sending it (a quorum's connections still opening). Absent:
       * from before the call.
       */
      from?: number;
    }
  | {
      granted: false;
      ownerTtl: number;
      serverMs: number;
      isHead: boolean;
      /** A join's place in line as it joined (1: first), where the store says it. */
      place?: number;
      /** A join turned away at the door (`door`), not queued: how many were in line. */
      turnedAway?: number;
      /** The pace (ms per place) a cold join's door was set by (JoinDoor `waitMs`), as the store had it. */
      pace?: number;
    };

/**
 * A join's door (LockStore.acquire). `places`: the most that may be in line before it, set from the pace
 * its service has seen (`perPlaceMs`, ms per place), which the join offers to the store as the key's pace
 * for services that have not seen the line move when `offer` is set. `waitMs`: from such a service, the
 * wait the join could spend; the store sets the door by the pace left for the key (and says it, `pace`),
 * or sets none when it has none.
 */
export type JoinDoor =
  | { readonly places: number; readonly perPlaceMs: number; readonly offer: boolean }
  | { readonly waitMs: number };

/**
 * What a renewal found. `extended`: the caller holds the lock, now for the ttl asked. `missing`: no owner
 * at all (its key expired, was evicted under `maxmemory`, or was deleted), so the lease ended without a
 * successor being granted by its queue. `taken`: another caller owns it.
 */
export type ExtendOutcome = 'extended' | 'missing' | 'taken';

/** One holder of a lock: its token, ms until its hold ends, and its fence (0 when not known). */
export interface HolderSnapshot {
  token: string;
  ttl: number;
  fence: number;
}

/** One lock's state, read in one step. */
export interface LockSnapshot {
  /** The owner (a semaphore: the holder whose hold ends first), or null when free. */
  owner: string | null;
  /** ms until the current hold expires (a semaphore: the first to end); negative when free. */
  ownerTtl: number;
  /** Waiters in line, reservations not counted. */
  queueLength: number;
  /** Reservations in line (see reserve). */
  reserved: number;
  fence: number;
  /** 1 for a mutex; a semaphore's permits (0 when only its line is left, or for a read-write lock). Absent: 1. */
  permits?: number;
  /** A read-write lock (its tokens say which holders and waiters read). */
  readWrite?: boolean;
  /** The waiting tokens in line order (reservations left out), where the store lists them. */
  waiting?: string[];
  /** A semaphore's holders, the first to end first; absent for a mutex (see owner). */
  holders?: HolderSnapshot[];
  /** The store's clock when it was read, epoch ms (fences are its µs at their grant). */
  serverMs?: number;
  /** A quorum's nodes, each one's own view, in the order the store was given them. */
  nodes?: NodeSnapshot[];
}

/** One quorum node's view of a lock, or why it did not answer. */
export type NodeSnapshot =
  | { node: string; owner: string | null; ownerTtl: number; queueLength: number; fence: number }
  | { node: string; error: string };

/** Lock keys found under a store's prefix (see LockStore.list). */
export interface KeyList {
  keys: string[];
  /** More were there than the limit, or the scan stopped at its bound. */
  truncated: boolean;
}

/**
 * A follower: one of the waiters at the very front of the line after a new owner that belong to the
 * owner's own service. That service may hand the lock to them itself, one after another, without asking
 * Redis (see LockStore.transfer), each under the fence the store set aside for it. They get no head
 * note: the service relays the hold to them.
 */
export interface Successor {
  readonly token: string;
  readonly fence: number;
}

/**
 * A wake-up for one waiter: a grant (with its followers, in line order), or a note to the head of the
 * queue that the hold ends in `holdMs`. `pushed`: the grant was published from another process's call
 * (one of its own service's calls, in a release reply or published, counts as the service's own grant:
 * LeaseHost.ownGrants).
 */
export type WakeMessage =
  | {
      kind: 'grant';
      token: string;
      fence: number;
      serverMs: number;
      next?: readonly Successor[];
      pushed?: boolean;
    }
  | { kind: 'head'; token: string; holdMs: number };

/** What a transfer found (as a renewal would), and the new owner's followers, if it was asked to name them. */
export interface TransferReply {
  outcome: ExtendOutcome;
  next?: readonly Successor[];
}
