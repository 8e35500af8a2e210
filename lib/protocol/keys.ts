/**
 * Names of the Redis keys and channels of a lock (`RedisKeys`; what a caller passes as keys is `LockKeys`). Every key of lock K carries the hash tag {K}, so all
 * of them live in one Cluster slot and one script can touch them together.
 */
export interface RedisKeys {
  /** The lock key as the caller gave it (what errors name), not a Redis key. */
  lock: string;
  /** Holds the owner's token; its PX expiry is the lease. */
  owner: string;
  /** FIFO list of waiting tokens. */
  queue: string;
  /** Highest fencing token handed out. */
  fence: string;
  /** A semaphore's holders, scored by when each hold ends (its owner key is then a hash of their fences). */
  holders: string;
  /** A semaphore's own FIFO line. */
  semaphoreQueue: string;
}

export function redisKeys(prefix: string, key: string): RedisKeys {
  return new KeyNames(prefix, key);
}

/** Built for every call: a class, so the semaphore's names are getters on its prototype, not on each. */
class KeyNames implements RedisKeys {
  readonly owner: string;
  readonly queue: string;
  readonly fence: string;

  constructor(
    prefix: string,
    readonly lock: string,
  ) {
    this.owner = `${prefix}{${lock}}`;
    this.queue = `${this.owner}:q`;
    this.fence = `${this.owner}:fence`;
  }

  // Only semaphores and read-write locks use these: built when asked, not kept by every mutex ticket.
  get holders(): string {
    return `${this.owner}:s`;
  }

  get semaphoreQueue(): string {
    return `${this.owner}:sq`;
  }
}

/** Channels are per process (per LockService), not per key: one subscription serves every waiter. */
export function wakeChannelPrefix(prefix: string): string {
  return `${prefix}wake:`;
}
