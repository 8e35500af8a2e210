/**
 * ioredis (5 and 6) as the lock sees it: a `Redis` (a server, or a master found through Sentinel) or a
 * `Cluster`, told apart from other clients by its shape; the lock's connection on it
 * (ioredis-connection.ts, with sentinel-follower.ts); and the connections the Nest module opens with it
 * (owned-ioredis.ts).
 */
import type { Cluster, Redis } from 'ioredis';
import type { ClientLibrary } from '../client-library';
import { IoredisConnection } from './ioredis-connection';
import { openIoredis } from './owned-ioredis';

/**
 * The shape of an ioredis client, as far as telling it apart goes. The rest of its members are open
 * (typed by ioredis, which this library's types do not import, so an application may install only
 * node-redis): `locks.client.ping()` compiles, with a cast to `Redis` for its exact types.
 */
export interface IoredisClientLike {
  readonly status: string;
  // biome-ignore lint/suspicious/noExplicitAny: ioredis' own signature, not repeated here
  defineCommand(name: string, definition: any): void;
  // biome-ignore lint/suspicious/noExplicitAny: see above
  [member: string]: any;
}

/** The duck type of an ioredis Redis or Cluster. */
function isIoredisClient(value: unknown): value is IoredisClientLike {
  if (value === null || typeof value !== 'object') return false;
  const c = value as Record<string, unknown>;
  return (
    typeof c.defineCommand === 'function' &&
    typeof c.duplicate === 'function' &&
    typeof c.subscribe === 'function' &&
    typeof c.status === 'string'
  );
}

export const ioredisLibrary: ClientLibrary<IoredisClientLike, 'ioredis'> = {
  name: 'ioredis',
  packageName: 'ioredis',
  isClient: isIoredisClient,
  connection: (client) => new IoredisConnection(client as Redis | Cluster),
  openOwned: openIoredis,
};
