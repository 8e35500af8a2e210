/**
 * node-redis (the `redis` package, 4 to 6) as the lock sees it: a client, Cluster or Sentinel client
 * (`createClient()`, `createCluster()`, `createSentinel()`), told apart from other clients by its shape;
 * the lock's connection on it (node-redis-connection.ts); and the connections the Nest module opens with
 * it (owned-node-redis.ts).
 */
import type { ClientLibrary } from '../client-library';
import { isNodeRedisClient, NodeRedisConnection } from './node-redis-connection';
import { openNodeRedis } from './owned-node-redis';

/** The shape of a node-redis client, Cluster or Sentinel, as far as telling it apart goes (see IoredisClientLike). */
export interface NodeRedisClientLike {
  readonly isOpen: boolean;
  /** Not on redis 5's Cluster. */
  readonly isReady?: boolean;
  // biome-ignore lint/suspicious/noExplicitAny: node-redis' own members, not repeated here
  [member: string]: any;
}

export const nodeRedisLibrary: ClientLibrary<NodeRedisClientLike, 'node-redis'> = {
  name: 'node-redis',
  packageName: 'redis',
  isClient: (value): value is NodeRedisClientLike => isNodeRedisClient(value),
  connection: (client) => new NodeRedisConnection(client),
  openOwned: openNodeRedis,
};
