/**
 * Which store a LockService's first argument calls for: one Redis (a server or a Cluster), a quorum of
 * independent masters (Redlock), or a backend such as MemoryLockBackend; and the store opened on it.
 */

import { isRedisClient, type RedisClient } from '../clients';
import { LockUsageError } from '../errors/lock-usage.error';
import type { ResolvedServiceOptions } from '../options/service-options';
import { isLockBackend, type LockBackend, type LockStore, type WakeHandlers } from './lock-store';
import { checkQuorum, QuorumLockStore } from './quorum-store';
import { RedisLockStore } from './redis-store';

/** The first argument, told apart and checked. */
export type StoreSource =
  | { kind: 'redis'; redis: RedisClient }
  | { kind: 'quorum'; quorum: readonly RedisClient[] }
  | { kind: 'backend'; backend: LockBackend };

/** Throws LockUsageError for anything that is not a client, a quorum's clients or a backend. */
export function storeSource(client: unknown): StoreSource {
  if (Array.isArray(client)) return { kind: 'quorum', quorum: checkQuorum(client) };
  if (isRedisClient(client)) return { kind: 'redis', redis: client };
  if (isLockBackend(client)) return { kind: 'backend', backend: client };
  throw new LockUsageError(
    'LockService needs a Redis client as its first argument (ioredis new Redis(...) or new Cluster(...), ' +
      'or node-redis createClient() or createCluster(), connected), ' +
      'an array of 3, 5 or 7 clients of independent Redis masters, or a lock backend such as ' +
      'new MemoryLockBackend().',
  );
}

/** Opens the store on `source` with the service's options; `replicas` only where it applies. */
export function openStore(
  source: StoreSource,
  options: ResolvedServiceOptions,
  handlers: WakeHandlers,
): LockStore {
  const { prefix, instanceName, claimWindow, commandTimeout, nodeTimeout, replicas } = options;
  if (replicas && source.kind !== 'redis') {
    throw new LockUsageError(
      `replicas applies to one Redis server or a Sentinel-managed master, not to ${source.kind === 'quorum' ? 'a quorum of independent masters (each node is its own master: run them without replicas)' : 'a lock backend'}. Leave it unset.`,
    );
  }
  switch (source.kind) {
    case 'quorum':
      return new QuorumLockStore(
        source.quorum,
        {
          prefix,
          instanceName,
          nodeTimeout,
          nodeTimeoutCap: nodeTimeoutCap(nodeTimeout, options.defaults.ttl),
        },
        handlers,
      );
    case 'redis':
      return new RedisLockStore(
        source.redis,
        { prefix, instanceName, claimWindow, commandTimeout, replicas },
        handlers,
      );
    default:
      return source.backend.openStore(handlers, instanceName);
  }
}

/**
 * A quorum node's reply is waited for longer while its replies are slow (a busy machine), up to 4 times
 * nodeTimeout, and never past a third of the default ttl: a grant takes two rounds to the nodes and must
 * still be valid after them (nodeTimeout itself is checked to be within that third).
 */
function nodeTimeoutCap(nodeTimeout: number, ttl: number): number {
  return Math.min(4 * nodeTimeout, Math.floor(ttl / 3));
}
