/**
 * The lock's connection (lib/protocol/connection.ts) on node-redis (`createClient()` and `createCluster()` from
 * `redis` 5 or 6). A script call is one EVALSHA, sent again as EVAL when the server answers NOSCRIPT
 * (a server that never saw the script: a fresh one, or a replica just promoted). The library is never
 * imported: the application's client is all it uses, so `redis` stays an optional peer dependency.
 */
import type {
  ConnectionEvent,
  ConnectionState,
  Delivered,
  RedisConnection,
  Script,
  ScriptCall,
  Subscriber,
} from '../../protocol/connection';
import { answeredWithin, readyWithin } from '../bounded-waits';

type Args = string[];
type Listener = (...args: unknown[]) => void;

/** What the lock uses of a node-redis client (`createClient()`), a Cluster node's included. */
interface NodeRedisClient {
  readonly isOpen: boolean;
  readonly isReady?: boolean;
  readonly options?: { socket?: Record<string, unknown>; url?: string };
  sendCommand(args: Args): Promise<unknown>;
  duplicate(overrides?: Record<string, unknown>): NodeRedisClient;
  connect(): Promise<unknown>;
  subscribe(channel: string, listener: (message: string, channel: string) => void): Promise<void>;
  close?(): Promise<void>;
  quit?(): Promise<unknown>;
  destroy?(): void;
  disconnect?(): Promise<void>;
  on(event: string, listener: Listener): unknown;
  off(event: string, listener: Listener): unknown;
  once(event: string, listener: Listener): unknown;
}

interface ShardNode {
  host: string;
  port: number;
  client?: NodeRedisClient;
}

/** What the lock uses of a node-redis Cluster (`createCluster()`). */
interface NodeRedisCluster {
  readonly isOpen: boolean;
  /** Not in redis 5. */
  readonly isReady?: boolean;
  readonly masters: readonly ShardNode[];
  readonly _options?: {
    rootNodes?: ReadonlyArray<{ url?: string; socket?: { host?: string; port?: number } }>;
  };
  sendCommand(firstKey: string | undefined, isReadonly: boolean, args: Args): Promise<unknown>;
  nodeClient(node: ShardNode): Promise<NodeRedisClient> | NodeRedisClient;
  on(event: string, listener: Listener): unknown;
  off(event: string, listener: Listener): unknown;
  once(event: string, listener: Listener): unknown;
}

/** What the lock uses of a node-redis Sentinel client (`createSentinel()`): it follows the master. */
interface NodeRedisSentinel {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  sendCommand(isReadonly: boolean, args: Args): Promise<unknown>;
  acquire(): Promise<{ sendCommand(isReadonly: boolean, args: Args): Promise<unknown>; release(): void }>;
  getMasterNode(): { host: string; port: number } | undefined;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object';

/** A node-redis Cluster: it routes each command by its first key (`sendCommand(firstKey, ...)`). */
function isNodeRedisCluster(value: Record<string, unknown>): boolean {
  return typeof value.nodeClient === 'function' && Array.isArray(value.masters);
}

/** A node-redis Sentinel client (`createSentinel()`). */
export function isNodeRedisSentinel(value: unknown): boolean {
  return isObject(value) && typeof value.getMasterNode === 'function' && typeof value.acquire === 'function';
}

/**
 * The duck type of a node-redis client or Cluster (and Sentinel, which isNodeRedisSentinel tells apart):
 * `sendCommand`, `duplicate` and the `isOpen` / `isReady` flags, which ioredis has none of.
 */
export function isNodeRedisClient(value: unknown): boolean {
  if (!isObject(value)) return false;
  return (
    typeof value.sendCommand === 'function' &&
    typeof value.duplicate === 'function' &&
    typeof value.isOpen === 'boolean' &&
    // redis 5's Cluster has no isReady.
    (typeof value.isReady === 'boolean' || isNodeRedisCluster(value))
  );
}

/** node-redis takes strings (and Buffers) only. */
const strings = (args: readonly (string | number)[]): Args => args.map(String);

const noScript = (error: unknown): boolean => error instanceof Error && error.message.startsWith('NOSCRIPT');

/** `host:port` of a node-redis client (its socket options, else its URL). */
function clientName(client: NodeRedisClient): string {
  const socket = client.options?.socket as { host?: string; port?: number; path?: string } | undefined;
  if (socket?.path) return socket.path;
  if (socket?.host || socket?.port) return `${socket.host ?? 'localhost'}:${socket.port ?? 6379}`;
  const url = client.options?.url;
  if (url) {
    try {
      const parsed = new URL(url);
      return `${parsed.hostname || 'localhost'}:${parsed.port || 6379}`;
    } catch {
      // An unparsable URL would not have connected; fall through.
    }
  }
  return 'localhost:6379';
}

function clusterName(cluster: NodeRedisCluster): string {
  const root = cluster._options?.rootNodes?.[0];
  if (root?.socket?.host || root?.socket?.port)
    return `${root.socket.host ?? 'localhost'}:${root.socket.port ?? 6379}`;
  if (root?.url) {
    try {
      const parsed = new URL(root.url);
      return `${parsed.hostname}:${parsed.port || 6379}`;
    } catch {
      // Shown as the cluster's first master below.
    }
  }
  const master = cluster.masters[0];
  return master ? `${master.host}:${master.port}` : 'cluster';
}

/**
 * node-redis' errors for a call given up without an answer: the node's client was closed or replaced
 * (the Cluster rediscovering its nodes) or its socket closed. Told by name, as the classes may come from
 * another copy of the library.
 */
const DROPPED = new Set([
  'DisconnectsClientError',
  'ClientClosedError',
  'ClientOfflineError',
  'SocketClosedUnexpectedlyError',
]);

/** node-redis events behind the lock's; `terminated`: the reconnect strategy gave up (redis 6). */
const EVENTS: Record<ConnectionEvent, readonly string[]> = {
  ready: ['ready'],
  down: ['reconnecting', 'terminated'],
  end: ['end', 'terminated'],
};
/** How often a call waiting for a Cluster's first connection looks whether it gave up, ms. */
const CLUSTER_POLL = 50;

const CLUSTER_EVENTS: Record<ConnectionEvent, readonly string[]> = {
  ready: ['connect'],
  down: ['disconnect'],
  end: ['disconnect'],
};

export class NodeRedisConnection implements RedisConnection {
  readonly library = 'node-redis';
  readonly cluster: boolean;
  private readonly fixedName: string | undefined;
  private readonly single: NodeRedisClient | undefined;
  private readonly clustered: NodeRedisCluster | undefined;
  private readonly sentinel: NodeRedisSentinel | undefined;
  /** Connections made so far (`ready` events seen): tells a reply's socket from the next one. */
  private epoch = 0;
  /** Has been ready once: not ready now means lost, not still connecting. */
  private wasReady: boolean;
  private connecting: Promise<void> | undefined;

  constructor(readonly client: object) {
    const c = client as Record<string, unknown>;
    this.cluster = isNodeRedisCluster(c);
    if (this.cluster) {
      this.clustered = client as NodeRedisCluster;
      this.fixedName = clusterName(this.clustered);
    } else if (isNodeRedisSentinel(client)) {
      this.sentinel = client as NodeRedisSentinel;
    } else {
      this.single = client as NodeRedisClient;
      this.fixedName = clientName(this.single);
    }
    const emitter = client as NodeRedisClient;
    this.wasReady = this.ready;
    emitter.on(this.cluster ? 'connect' : 'ready', () => {
      this.epoch++;
      this.wasReady = true;
    });
  }

  /** A Sentinel client's is the master's of the moment. */
  get name(): string {
    if (this.fixedName !== undefined) return this.fixedName;
    const master = this.sentinel?.getMasterNode();
    return master ? `${master.host}:${master.port}` : 'the Sentinel master (not known yet)';
  }

  private get emitter(): NodeRedisClient {
    return this.client as NodeRedisClient;
  }

  /** Connected and answering; redis 5's Cluster has no isReady: open once it has found its masters. */
  private get ready(): boolean {
    const { isOpen, isReady } = this.emitter;
    if (typeof isReady === 'boolean') return isReady;
    return isOpen && (this.wasReady || (this.clustered?.masters.length ?? 0) > 0);
  }

  get state(): ConnectionState {
    if (this.ready) return 'ready';
    if (!this.emitter.isOpen) return 'ended';
    return this.wasReady ? 'down' : 'connecting';
  }

  get status(): string {
    switch (this.state) {
      case 'ready':
        return 'ready';
      case 'ended':
        return 'closed (a node-redis client must be connected: await client.connect())';
      case 'down':
        return 'reconnecting';
      default:
        return 'connecting';
    }
  }

  on(event: ConnectionEvent, listener: () => void): () => void {
    const names = (this.cluster ? CLUSTER_EVENTS : EVENTS)[event];
    for (const name of names) this.emitter.on(name, listener);
    return () => {
      for (const name of names) this.emitter.off(name, listener);
    };
  }

  attempt(): Promise<void> {
    if (this.connecting) return this.connecting;
    const client = this.emitter;
    const ready = this.cluster ? 'connect' : 'ready';
    // A single client's failed attempt is an 'error' (node-redis then waits and retries): listened to
    // only while a call waits on the attempt, so the application's own 'error' handling is left as it
    // is. A Cluster reports errors of single nodes while it goes on connecting, and nothing when it gives
    // up (its connect() rejects, to the application): it is looked at instead.
    const failures = this.cluster ? [] : ['error', ...EVENTS.end];
    const attempt = new Promise<void>((resolve, reject) => {
      let poll: NodeJS.Timeout | undefined;
      const settle = (failed: boolean): void => {
        client.off(ready, onReady);
        for (const name of failures) client.off(name, onFailed);
        clearInterval(poll);
        this.connecting = undefined;
        if (failed) reject(new Error(`connection is ${this.status}`));
        else resolve();
      };
      const onReady = (): void => settle(false);
      const onFailed = (): void => settle(true);
      client.once(ready, onReady);
      for (const name of failures) client.once(name, onFailed);
      if (this.cluster) {
        poll = setInterval(() => {
          if (!client.isOpen) settle(true);
        }, CLUSTER_POLL);
        poll.unref();
      }
    });
    attempt.catch(() => {});
    this.connecting = attempt;
    return attempt;
  }

  script(script: Script): ScriptCall {
    const keys = String(script.keys);
    // The first call on each connection is an EVAL, which loads the script as it runs it. An EVALSHA
    // answered NOSCRIPT would be sent again as EVAL behind whatever this client sent meanwhile, so a
    // call made after it (an inspect after a cancel) would run first. On a Cluster, the first node that
    // runs it loads it; another node's NOSCRIPT still falls back.
    let loadedIn = -1;
    return async (args) => {
      const rest = strings(args);
      if (loadedIn !== this.epoch) {
        loadedIn = this.epoch;
        return this.send(rest[0], ['EVAL', script.lua, keys, ...rest]);
      }
      try {
        return await this.send(rest[0], ['EVALSHA', script.sha, keys, ...rest]);
      } catch (error) {
        if (!noScript(error)) throw error;
        return this.send(rest[0], ['EVAL', script.lua, keys, ...rest]);
      }
    };
  }

  private send(key: string | undefined, args: Args): Promise<unknown> {
    if (this.clustered) return this.clustered.sendCommand(key, false, args);
    if (this.sentinel) return this.sentinel.sendCommand(false, args);
    return (this.single as NodeRedisClient).sendCommand(args);
  }

  retryable(error: unknown): boolean {
    // Not once the application closed the Cluster client: nothing would answer any more.
    if (!this.clustered?.isOpen || !(error instanceof Error)) return false;
    if (/^(CLUSTERDOWN|TRYAGAIN|MASTERDOWN)\b/.test(error.message)) return true;
    return DROPPED.has(error.constructor?.name);
  }

  inOrder(key: string, commands: readonly (readonly (string | number)[])[]): Promise<Delivered>[] {
    // node-redis queues the commands of one tick and writes them together on its next turn, in order.
    // The epoch is read as the reply is handled: a reconnect in between would have counted a 'ready'.
    if (this.sentinel) {
      // A Sentinel client spreads commands over its pool: one leased connection carries them all.
      const lease = this.sentinel.acquire();
      const replies = commands.map((command) =>
        lease
          .then((leased) => leased.sendCommand(false, strings(command)))
          .then((value) => ({ value, via: this.epoch })),
      );
      Promise.allSettled(replies).then(() =>
        lease.then(
          (leased) => leased.release(),
          () => {},
        ),
      );
      return replies;
    }
    return commands.map((command) =>
      this.send(key, strings(command)).then((value) => ({ value, via: this.epoch })),
    );
  }

  command(args: readonly (string | number)[], key?: string): Promise<unknown> {
    return this.send(key, strings(args));
  }

  async masters(timeout: number): Promise<RedisConnection[]> {
    const cluster = this.clustered;
    if (!cluster) return [this];
    if (this.state === 'connecting') await readyWithin(this, timeout);
    const clients = await Promise.all(cluster.masters.map((node) => cluster.nodeClient(node)));
    return clients.map((client) => nodeConnection(client));
  }

  async subscriber(): Promise<Subscriber> {
    if (!this.clustered) {
      // A Sentinel client's duplicate follows the master as the client does, and subscribes again there.
      return NodeRedisSubscriber.open((this.client as NodeRedisClient).duplicate(), true);
    }
    const cluster = this.clustered as NodeRedisCluster;
    // One node's connection, not the Cluster's own Pub/Sub client: that one moves to another node on
    // its own and says nothing, so a push sent meanwhile would be missed unnoticed. This one does not
    // reconnect; when it ends, the wake listener moves to another node and the waiters re-check.
    const live = cluster.masters.filter((node) => node.client?.isReady);
    const nodes = live.length > 0 ? live : cluster.masters;
    if (nodes.length === 0) throw new Error('no Cluster node is known');
    const node = await cluster.nodeClient(nodes[Math.floor(Math.random() * nodes.length)]);
    const socket = { ...(node.options?.socket ?? {}), reconnectStrategy: false };
    return NodeRedisSubscriber.open(node.duplicate({ socket }), false);
  }
}

/** A Cluster node's own client, as a connection of its own (one per client, however often asked). */
const nodeConnections = new WeakMap<object, NodeRedisConnection>();
function nodeConnection(client: NodeRedisClient): NodeRedisConnection {
  let connection = nodeConnections.get(client);
  if (!connection) {
    connection = new NodeRedisConnection(client);
    nodeConnections.set(client, connection);
  }
  return connection;
}

class NodeRedisSubscriber implements Subscriber {
  private resubscribed: (() => void) | undefined;
  private ended: (() => void) | undefined;
  private gone = false;

  private constructor(
    private readonly connection: NodeRedisClient,
    reconnects: boolean,
  ) {
    // Errors are reported through waiters' own commands; here they must only not crash the process
    // (node-redis throws an 'error' nobody listens to).
    connection.on('error', () => {
      if (!connection.isOpen) this.end();
    });
    connection.on('end', () => this.end());
    connection.on('terminated', () => this.end());
    let first = true;
    connection.on('ready', () => {
      if (first) {
        first = false;
        return;
      }
      // node-redis subscribes again before it reports the connection ready: pushes flow again.
      if (reconnects) this.resubscribed?.();
    });
  }

  /** The subscriber on `connection`, connecting; a failed first attempt rejects on subscribe. */
  static open(connection: NodeRedisClient, reconnects: boolean): NodeRedisSubscriber {
    const subscriber = new NodeRedisSubscriber(connection, reconnects);
    subscriber.connected = connection.connect().then(
      () => {},
      (error: unknown) => {
        subscriber.end();
        throw error;
      },
    );
    subscriber.connected.catch(() => {});
    return subscriber;
  }

  private connected: Promise<void> = Promise.resolve();

  private end(): void {
    if (this.gone) return;
    this.gone = true;
    this.ended?.();
  }

  get ready(): boolean {
    return this.connection.isReady === true;
  }

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    await this.connected;
    await this.connection.subscribe(channel, (message) => onMessage(message));
  }

  onResubscribed(listener: () => void): void {
    this.resubscribed = listener;
  }

  onEnd(listener: () => void): void {
    this.ended = listener;
    if (this.gone) listener();
  }

  async close(timeout: number): Promise<void> {
    const connection = this.connection;
    if (!connection.isReady) {
      this.drop();
      return;
    }
    // close() (quit() before redis 5) lets pending replies arrive first; a frozen server never answers.
    const closing = connection.close ? connection.close() : Promise.resolve(connection.quit?.());
    const closed = await answeredWithin(closing, timeout);
    if (!closed) this.drop();
  }

  drop(): void {
    const connection = this.connection;
    try {
      if (connection.destroy) connection.destroy();
      else connection.disconnect?.().catch(() => {});
    } catch {
      // Already closed.
    }
  }
}
