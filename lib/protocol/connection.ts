/**
 * The one seam between the lock's protocol and a Redis client library. Everything the protocol needs
 * from a client is here: a script call (EVALSHA, and EVAL when the server has never seen the script), a
 * script and a WAIT sent back to back on the same connection, one-off commands (INFO, PING, SCAN), the
 * masters of a Cluster, a connection of its own for the wake-up subscription, and the connection's
 * state and its "ready" / "down" / "end" events. Each client library implements it in a folder of its
 * own under lib/clients/, which also recognises its clients; this file names none of them, so the
 * scripts, the stores and the engine never learn which one is underneath.
 */

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
  /** The client library's name (`'ioredis'`, `'node-redis'`), for messages. */
  readonly library: string;
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
