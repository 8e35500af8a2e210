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
  const owner = `${prefix}{${key}}`;
  return {
    lock: key,
    owner,
    queue: `${owner}:q`,
    fence: `${owner}:fence`,
    // Only semaphores and read-write locks use these: built when asked, not kept by every mutex ticket.
    get holders() {
      return `${owner}:s`;
    },
    get semaphoreQueue() {
      return `${owner}:sq`;
    },
  };
}

/** Channels are per process (per LockService), not per key: one subscription serves every waiter. */
export function wakeChannelPrefix(prefix: string): string {
  return `${prefix}wake:`;
}
