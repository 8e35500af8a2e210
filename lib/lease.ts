/** A held lock. Obtained from LockService.acquire / tryAcquire / using. */
export interface Lease {
  /** The lock key as the caller gave it (without prefix); for a lease on several keys, the first of `keys`. */
  readonly key: string;
  /** Every key this lease covers, in canonical order (sorted, duplicates collapsed): one for most leases. */
  readonly keys: readonly string[];
  /** This holder's unique token; Redis records it as the owner (of every key of a multi-key lease). */
  readonly token: string;
  /**
   * Fencing token: strictly greater than every token handed out earlier for this key. Pass it to the
   * resource you write to and have it reject writes carrying a lower token. On several keys, the highest
   * of `fences`.
   */
  readonly fence: number;
  /** Each key's fencing token, by key. */
  readonly fences: Readonly<Record<string, number>>;
  /**
   * Each key's owner token, by key: what `inspect(key).holder` shows while this lease holds it. The keys
   * of a multi-key lease have tokens of their own, all derived from `token` (the first key's).
   */
  readonly tokens: Readonly<Record<string, string>>;
  /**
   * Aborts with a LockLostError when the lease stops being valid before it is released (on several
   * keys: when any of them does; the error names that key).
   */
  readonly signal: AbortSignal;
  /** Resets the lease to `ttl` ms from now (default: its ttl). Throws LockNotHeldError if no longer held. */
  extend(ttl?: number): Promise<void>;
  /**
   * Releases the lock and hands it to the next waiter; with `minHold`, sooner than minHold after the
   * grant, the lock stays held (unrenewed) until then. Calling it again is a no-op; throws
   * LockNotHeldError if the lease had already expired or been taken over.
   */
  release(): Promise<void>;
  /** `await using lease = await locks.acquire(key)` releases at the end of the block. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** What `inspect` reports about a lock. */
export interface LockInfo {
  key: string;
  /** Whether some holder (or a granted waiter that has yet to confirm) owns the lock (a semaphore: a permit). */
  held: boolean;
  /** The owner's token (a semaphore: the holder whose hold ends first), or null when free. */
  holder: string | null;
  /**
   * Milliseconds until the current hold expires unless renewed; 0 when free. A lock kept by `minHold`
   * after its work ended shows as held by the same holder, with the time it is still kept for.
   */
  ttl: number;
  /** Waiters queued behind the holder. */
  queueLength: number;
  /**
   * Places kept in line for multi-key calls that still wait for an earlier key: not counted in
   * `queueLength`, never granted, and passed over until claimed (docs/protocol.md, "Several keys").
   */
  reserved: number;
  /** The last fencing token handed out, or 0 if none is remembered. */
  fence: number;
  /** What kind of lock the key is now: a mutex, a semaphore (`permits`) or a read-write lock (`mode`). */
  kind: 'mutex' | 'semaphore' | 'read-write';
  /**
   * How many callers may hold the lock at once: 1 for a mutex, a semaphore's permits (0 when only its
   * line is left); 0 for a read-write lock, whose readers are not counted against a bound.
   */
  permits: number;
  /** A read-write lock's mode now: `read` while readers hold it, `write` while a writer does, else null. */
  mode?: 'read' | 'write' | null;
  /**
   * Every holder with its token, ms until its hold ends and its fence, the first to end first: at most
   * one for a mutex, up to `permits` for a semaphore. A grant not confirmed yet counts.
   */
  holders: LockHolder[];
  /**
   * The waiters' tokens in line order (the first is served next), where the store lists them (Redis and
   * memory; not a quorum). Reservations are left out.
   */
  waiting?: LockWaiter[];
  /** The store's clock when it was read, epoch ms. */
  serverTime?: number;
  /** A quorum's nodes, each one's own view (a node that did not answer: why), in the order given. */
  nodes?: LockNodeView[];
}

/** One quorum node's view of a lock (see LockInfo.nodes). */
export type LockNodeView =
  | { node: string; holder: string | null; ttl: number; queueLength: number; fence: number }
  | { node: string; error: string };

/** One waiter in a lock's line, as `inspect` reports it. */
export interface LockWaiter {
  token: string;
  /** A read-write lock's waiter's mode. */
  mode?: 'read' | 'write';
  /** How long it has waited, ms: only for the asking service's own waiters (`inspect`, `list`). */
  waitedMs?: number;
}

/** One holder of a lock, as `inspect` reports it. */
export interface LockHolder {
  token: string;
  /** ms until the hold ends unless renewed. */
  ttl: number;
  /** Its fencing token (for a mutex, the last one handed out). */
  fence: number;
  /** A read-write lock's holder's mode. */
  mode?: 'read' | 'write';
  /**
   * How long it has held the lock, ms, by the store's clock (from its fence, which is the store's time
   * of the grant in µs; during a run of local hand-offs, from the run's first grant). Absent when the
   * fence is not such a time.
   */
  heldMs?: number;
}
