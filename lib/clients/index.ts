/**
 * The Redis client libraries the lock runs on, listed once: a client the application passes in is
 * recognised here and given its connection, and the Nest module opens connections of its own here, on
 * a library picked by name. Adding a library is one folder beside this file (its ClientLibrary) and one
 * line in LIBRARIES; nothing else names the libraries' code.
 */
import { createRequire } from 'node:module';
import type { RedisConnection } from '../protocol/connection';
import type { ClientLibrary, OwnedConnection, OwnedRequest } from './client-library';
import { ioredisLibrary } from './ioredis/ioredis-library';
import { nodeRedisLibrary } from './node-redis/node-redis-library';

export type { OutageReporter, OwnedConnection, OwnedRequest } from './client-library';
export type { IoredisClientLike } from './ioredis/ioredis-library';
export type { NodeRedisClientLike } from './node-redis/node-redis-library';

/** Each library the lock supports, in the order a client is tested against them. */
const LIBRARIES = [ioredisLibrary, nodeRedisLibrary] as const;

type Library = (typeof LIBRARIES)[number];
/** The name of a supported library: `'ioredis'`, `'node-redis'`. */
export type ClientLibraryName = Library['name'];

/** The clients of `L`, a library of the list. */
type ClientOf<L> = L extends ClientLibrary<infer Client, string> ? Client : never;

/**
 * A client the Redis store runs on: one of a listed library's (an ioredis `Redis` or `Cluster`, or a
 * node-redis client or Cluster, `createClient()`, `createCluster()`), connected. Told apart by shape at
 * run time (isRedisClient), so no library's types are needed to use this one.
 */
export type RedisClient = ClientOf<Library>;

/** The library `value` is a client of, if any. */
function libraryOf(value: unknown): Library | undefined {
  return LIBRARIES.find((library) => library.isClient(value));
}

/** Connections already made, by client: one set of script definitions and listeners per client. */
const connections = new WeakMap<object, RedisConnection>();

/** Whether `value` is a client the Redis store can use: ioredis, or node-redis (client, cluster, sentinel). */
export function isRedisClient(value: unknown): value is RedisClient {
  return (
    libraryOf(value) !== undefined || (typeof value === 'object' && value !== null && connections.has(value))
  );
}

/**
 * Makes `client` a client the store runs on through `connection`, a RedisConnection of no listed
 * library: how the deterministic simulation puts the lock's own code over a simulated Redis. Not part
 * of the package's API.
 */
export function attachConnection(client: object, connection: RedisConnection): void {
  connections.set(client, connection);
}

/** The connection for `client` (which must pass isRedisClient), the same each time for one client. */
export function connectionOf(client: object): RedisConnection {
  let connection = connections.get(client);
  if (!connection) {
    const library = libraryOf(client);
    if (!library) throw new TypeError('not a client of a Redis client library the lock supports');
    connection = (library as ClientLibrary<object>).connection(client);
    connections.set(client, connection);
  }
  return connection;
}

/** One library the application installed, ready to open the module's own connections. */
export interface InstalledLibrary {
  open(request: OwnedRequest): OwnedConnection[];
}

/**
 * `name`'s library as the application installed it, loaded now (the libraries are optional peer
 * dependencies, so none is loaded before a connection is opened), or `undefined` if it is not installed.
 */
export function installedLibrary(name: ClientLibraryName): InstalledLibrary | undefined {
  const library = LIBRARIES.find((candidate) => candidate.name === name) as ClientLibrary<object>;
  const loaded = tryLoad(library.packageName);
  if (loaded === undefined) return undefined;
  return { open: (request) => library.openOwned(loaded, request) };
}

/**
 * `require` where it exists (the published CommonJS build); from the working directory in an ES module
 * host such as a test runner, which resolves the application's own packages.
 */
const load: NodeJS.Require =
  typeof require === 'function' ? require : createRequire(`${process.cwd()}/package.json`);

function tryLoad(packageName: string): unknown {
  try {
    return load(packageName);
  } catch (error) {
    if ((error as { code?: string }).code === 'MODULE_NOT_FOUND') return undefined;
    throw error;
  }
}
