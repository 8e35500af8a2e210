/**
 * The one seam between the lock's protocol and a Redis client library. Everything the protocol needs
 * from a client is here: a script call (EVALSHA, and EVAL when the server has never seen the script), a
 * script and a WAIT sent back to back on the same connection, one-off commands (INFO, PING, SCAN), the
 * masters of a Cluster, a connection of its own for the wake-up subscription, and the connection's
 * state and its "ready" / "down" / "end" events. ioredis (ioredis-connection.ts) and node-redis
 * (node-redis-connection.ts) each implement it; the scripts, the stores and the engine never learn
 * which one is underneath.
 *
 * A client is recognised by its shape, never by `instanceof`: an application may load a second copy of
 * either library (a monorepo, a bundled dependency), whose classes are not ours.
 */
import { IoredisConnection, isIoredisClient } from './ioredis-connection';
import { isNodeRedisClient, NodeRedisConnection } from './node-redis-connection';

/**
 * Where a connection is. `idle`: not connecting yet (ioredis' lazyConnect); `connecting`: on its way to
 * `ready` for the first time; `down`: lost, being retried (commands would only wait in the client's
 * offline queue, so the lock fails them at once); `ended`: closed by the application, or never opened.
 */
export type ConnectionState = 'idle' | 'connecting' | 'ready' | 'down' | 'ended';

/** A Lua script, with its SHA1 (the name EVALSHA calls it by) and how many of its arguments are keys. */
export interface Script {
  readonly name: string;
  readonly lua: string;
  readonly sha: string;
  readonly keys: number;
}

/** Calls one script: keys first, then arguments; one EVALSHA, and EVAL on NOSCRIPT. */
export type ScriptCall = (args: readonly (string | number)[]) => Promise<unknown>;

/** A reply, and the socket it arrived on (compared, never used). */
export interface Delivered {
  value: unknown;
  via: unknown;
}

export type ConnectionEvent = 'ready' | 'down' | 'end';

export interface RedisConnection {
  /** The application's client, as given: the lock never closes it. */
  readonly client: object;
  readonly library: 'ioredis' | 'node-redis';
  /** One server (possibly a Sentinel-managed master), or a Cluster. */
  readonly cluster: boolean;
  /** `host:port` (or the socket path) of the server, for messages and reports. */
  readonly name: string;
  readonly state: ConnectionState;
  /** The client's own word for its state, for messages. */
  readonly status: string;
  /**
   * Settles on the outcome of the connection attempt under way: resolves once ready, rejects once it
   * failed (starting an `idle` connection first). One attempt's listeners serve every caller.
   */
  attempt(): Promise<void>;
  /**
   * `ready`: (again) ready for commands; `down`: the connection was lost (commands in flight will get no
   * reply); `end`: no more reconnecting. Returns the function that removes the listener.
   */
  on(event: ConnectionEvent, listener: () => void): () => void;
  /**
   * For a client that finds its master through Sentinel: moves it (and its wake-up connections) to a
   * new master as soon as the sentinels announce one, until the returned function is called.
   */
  followFailovers?(): () => void;
  /** The function that calls `script` on this connection (defined once per client and script). */
  script(script: Script): ScriptCall;
  /**
   * Sends `commands` back to back on the one connection serving `key`, in one write, so that Redis runs
   * them in that order with nothing of this client's in between; each reply comes with its socket.
   */
  inOrder(key: string, commands: readonly (readonly (string | number)[])[]): Promise<Delivered>[];
  /** Sends one command (INFO, PING, SCAN, HMGET); `key` routes it on a Cluster. */
  command(args: readonly (string | number)[], key?: string): Promise<unknown>;
  /**
   * The servers the locks live on: each master of a Cluster (waiting up to `timeout` ms for a Cluster
   * still connecting to learn them), or this one.
   */
  masters(timeout: number): Promise<RedisConnection[]>;
  /** Opens a connection of its own for the wake-up subscription (on a Cluster: to one node). */
  subscriber(): Promise<Subscriber>;
  /**
   * Whether a call that failed with `error` is worth sending again while its caller still waits: a
   * Cluster client that dropped it while moving to the nodes of a new topology (ioredis resends such
   * calls by itself, so it has none).
   */
  retryable?(error: unknown): boolean;
}

/** The wake-up subscription's own connection. */
export interface Subscriber {
  /** Subscribed and connected: pushes are being delivered. */
  readonly ready: boolean;
  /** Subscribes to `channel`, each message going to `onMessage`; resolves once Redis confirmed it. */
  subscribe(channel: string, onMessage: (message: string) => void): Promise<void>;
  /**
   * Called each time the connection came back and the subscription is live again, pushes sent in
   * between having been missed. Only a single server's subscriber reconnects: a Cluster node's ends.
   */
  onResubscribed(listener: () => void): void;
  /** Called once when the connection ends for good. */
  onEnd(listener: () => void): void;
  /** Asks Redis to close (QUIT) within `timeout` ms, then drops the socket. */
  close(timeout: number): Promise<void>;
  /** Drops the socket at once. */
  drop(): void;
}

/**
 * A client the Redis store runs on: an ioredis `Redis` or `Cluster`, or a node-redis client or Cluster
 * (`createClient()`, `createCluster()`), connected. Told apart by shape at run time (isRedisClient), so
 * neither library's types are needed to use this one.
 */
export type RedisClient = IoredisClientLike | NodeRedisClientLike;

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

/** The shape of a node-redis client, Cluster or Sentinel, as far as telling it apart goes (see above). */
export interface NodeRedisClientLike {
  readonly isOpen: boolean;
  /** Not on redis 5's Cluster. */
  readonly isReady?: boolean;
  // biome-ignore lint/suspicious/noExplicitAny: node-redis' own members, not repeated here
  [member: string]: any;
}

/** Connections already made, by client: one set of script definitions and listeners per client. */
const connections = new WeakMap<object, RedisConnection>();

/** Whether `value` is a client the Redis store can use: ioredis, or node-redis (client, cluster, sentinel). */
export function isRedisClient(value: unknown): value is RedisClient {
  return isIoredisClient(value) || isNodeRedisClient(value);
}

/** The connection for `client` (which must pass isRedisClient), the same each time for one client. */
export function connectionOf(client: object): RedisConnection {
  let connection = connections.get(client);
  if (!connection) {
    connection = isIoredisClient(client) ? new IoredisConnection(client) : new NodeRedisConnection(client);
    connections.set(client, connection);
  }
  return connection;
}
