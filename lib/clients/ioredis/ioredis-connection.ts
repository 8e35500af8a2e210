/**
 * The lock's connection (lib/protocol/connection.ts) on an ioredis `Redis` or `Cluster`. Scripts are
 * registered with `defineCommand`, so a call is one EVALSHA and ioredis itself falls back to EVAL on
 * NOSCRIPT. The types come from ioredis; the code never imports it (the client is the application's).
 */
import type { Cluster, Redis } from 'ioredis';
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
import { findsMasterThroughSentinel, SentinelFollower, watchesSentinels } from './sentinel-follower';

type IoredisClient = Redis | Cluster;

/** ioredis' statuses, as the lock sees them. */
const STATES: Record<string, ConnectionState> = {
  wait: 'idle',
  connecting: 'connecting',
  connect: 'connecting',
  ready: 'ready',
  reconnecting: 'down',
  close: 'down',
  end: 'ended',
  disconnecting: 'ended',
};

/** ioredis' events behind the lock's. */
const EVENTS: Record<ConnectionEvent, string> = { ready: 'ready', down: 'close', end: 'end' };

/** `host:port` of an ioredis client, as its options name it. */
function serverName(client: IoredisClient): string {
  const options = (client as { options?: { host?: string; port?: number; path?: string } }).options;
  if (options?.path) return options.path;
  return `${options?.host ?? 'localhost'}:${options?.port ?? 6379}`;
}

type Fn = (...args: (string | number)[]) => Promise<unknown>;

export class IoredisConnection implements RedisConnection {
  readonly library = 'ioredis';
  readonly cluster: boolean;
  readonly name: string;
  /** The connection attempt calls are waiting on, while the client is still connecting. */
  private connecting: Promise<void> | undefined;
  /** Moves a Sentinel client to a new master on the sentinels' word, while any store follows it. */
  private follower: SentinelFollower | undefined;
  private followers = 0;

  constructor(readonly client: IoredisClient) {
    this.cluster = (client as { isCluster?: boolean }).isCluster === true;
    this.name = serverName(client);
  }

  get status(): string {
    return this.client.status;
  }

  get state(): ConnectionState {
    return STATES[this.client.status] ?? 'down';
  }

  on(event: ConnectionEvent, listener: () => void): () => void {
    const name = EVENTS[event];
    this.client.on(name, listener);
    return () => this.client.off(name, listener);
  }

  attempt(): Promise<void> {
    if (this.connecting) return this.connecting;
    const client = this.client;
    const attempt = new Promise<void>((resolve, reject) => {
      const settle = (failed: boolean): void => {
        client.off('ready', onReady);
        client.off('close', onFailed);
        client.off('end', onFailed);
        this.connecting = undefined;
        if (failed) reject(new Error(`connection is ${client.status}`));
        else resolve();
      };
      const onReady = (): void => settle(false);
      const onFailed = (): void => settle(true);
      client.once('ready', onReady);
      client.once('close', onFailed);
      client.once('end', onFailed);
    });
    attempt.catch(() => {}); // every caller handles the failure; none may leave it unhandled
    this.connecting = attempt;
    // A lazyConnect client has not started connecting: start it, as sending a command would have.
    if (client.status === 'wait') client.connect().catch(() => {});
    return attempt;
  }

  script(script: Script): ScriptCall {
    // Names carry the script's hash, so two versions of this library can share one client.
    const command = `redisLock_${script.name}_${script.sha.slice(0, 10)}`;
    const commands = this.client as unknown as Record<string, Fn | undefined>;
    if (typeof commands[command] !== 'function') {
      this.client.defineCommand(command, { numberOfKeys: script.keys, lua: script.lua });
    }
    const fn = commands[command] as Fn;
    const client = this.client;
    return (args) => fn.apply(client, args as (string | number)[]);
  }

  inOrder(_key: string, commands: readonly (readonly (string | number)[])[]): Promise<Delivered>[] {
    // ioredis writes each command to the socket as it is called, so calls made in one go stay together
    // and in order. The callback runs in the microtasks that follow the parsing of the reply, before the
    // socket's close can be handled and a new one made, so the current stream is the one that delivered it.
    const client = this.client as Redis;
    return commands.map(([name, ...args]) =>
      client
        .call(String(name), ...args)
        .then((value) => ({ value, via: (client as { stream?: unknown }).stream })),
    );
  }

  command(args: readonly (string | number)[]): Promise<unknown> {
    const [name, ...rest] = args;
    return (this.client as Redis).call(String(name), ...rest);
  }

  async masters(timeout: number): Promise<RedisConnection[]> {
    if (!this.cluster) return [this];
    const cluster = this.client as Cluster;
    if (this.state === 'connecting' || this.state === 'idle') await readyWithin(this, timeout);
    // Locks live on masters only (a key's owner is written on the master of its slot).
    return cluster.nodes('master').map((node) => new IoredisConnection(node));
  }

  /**
   * Follows the sentinels' announcements for a Sentinel client, with its wake-up duplicates, until every
   * store that asked has stopped. Not when the application turned ioredis' own failoverDetector on.
   */
  followFailovers(): () => void {
    const client = this.client as Redis;
    if (this.cluster || !findsMasterThroughSentinel(client) || watchesSentinels(client)) return () => {};
    if (!this.follower) {
      this.follower = new SentinelFollower(client);
      this.follower.add(client);
    }
    this.followers++;
    let stopped = false;
    return () => {
      if (stopped) return;
      stopped = true;
      if (--this.followers > 0) return;
      this.follower?.close();
      this.follower = undefined;
    };
  }

  async subscriber(): Promise<Subscriber> {
    if (!this.cluster) {
      // ioredis would subscribe again on reconnect without handling the reply: a connection dropped
      // before SUBSCRIBE is answered would leave an unhandled rejection. IoredisSubscriber does it.
      const duplicate = (this.client as Redis).duplicate({ autoResubscribe: false });
      return new IoredisSubscriber(duplicate, true, this.follower?.add(duplicate));
    }
    return new IoredisSubscriber(nodeConnection(this.client as Cluster), false);
  }
}

/**
 * A connection to one node of the Cluster, picked at random among those the client is talking to (so
 * known to be up), else among all it knows. Pub/Sub messages reach every node, so any node will do. It
 * does not reconnect: a node that went away may not come back, so its 'end' is the signal to move.
 * (ioredis' own Cluster subscriber moves to another node on its own and says nothing, so a push sent
 * meanwhile would be missed unnoticed.)
 */
function nodeConnection(cluster: Cluster): Redis {
  const known = cluster.nodes('all');
  const live = known.filter((node) => node.status === 'ready');
  const nodes = live.length > 0 ? live : known;
  if (nodes.length === 0) throw new Error('no Cluster node is known');
  const node = nodes[Math.floor(Math.random() * nodes.length)];
  return node.duplicate({ lazyConnect: false, readOnly: false, retryStrategy: () => null });
}

class IoredisSubscriber implements Subscriber {
  private resubscribed: (() => void) | undefined;

  constructor(
    private readonly connection: Redis,
    reconnects: boolean,
    /** Stops moving it on the sentinels' word (a Sentinel client's duplicate). */
    private readonly unfollow?: () => void,
  ) {
    // Errors are reported through waiters' own commands, so here they must only not become uncaught
    // 'error' events.
    connection.on('error', () => {});
    connection.once('end', () => unfollow?.());
    if (!reconnects) return;
    let first = connection.status !== 'ready';
    connection.on('ready', () => {
      if (first) {
        first = false;
        return;
      }
      // Subscribed again here (the duplicate does not do it itself): pushes flow once this resolves,
      // which is when waiters should re-check.
      if (this.channel === undefined) return;
      connection.subscribe(this.channel).then(
        () => this.resubscribed?.(),
        () => {},
      );
    });
  }

  get ready(): boolean {
    return this.connection.status === 'ready';
  }

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    this.connection.on('message', (from: string, message: string) => {
      if (from === channel) onMessage(message);
    });
    this.channel = channel;
    await this.connection.subscribe(channel);
  }

  private channel: string | undefined;

  onResubscribed(listener: () => void): void {
    this.resubscribed = listener;
  }

  onEnd(listener: () => void): void {
    this.connection.once('end', listener);
  }

  async close(timeout: number): Promise<void> {
    const connection = this.connection;
    this.unfollow?.();
    // quit() waits for pending replies; if the server is gone it would wait for the reconnect loop,
    // and a frozen server never answers it: give QUIT a bounded time, then drop the socket.
    if (connection.status !== 'ready') {
      connection.disconnect();
      return;
    }
    const quitted = await answeredWithin(connection.quit(), timeout);
    // The duplicate inherits the client's failoverDetector, and with it connections to the sentinels
    // that QUIT does not close. Dropped as soon as QUIT is answered, while the socket is still open: its
    // close then clears the timer ioredis arms on disconnect(), which would otherwise run its course.
    if (!quitted || watchesSentinels(connection)) connection.disconnect();
  }

  drop(): void {
    this.unfollow?.();
    this.connection.disconnect();
  }
}
