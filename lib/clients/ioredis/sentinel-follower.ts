/**
 * Moves ioredis Sentinel clients to a new master as soon as the sentinels announce it (+switch-master).
 *
 * Without it, a client stays on a master the sentinels replaced for as long as that master still
 * answers (a failover asked for, or one after the sentinels lost sight of a live master), until they
 * demote it some seconds later; with `replicas`, every grant is refused meanwhile. ioredis' own
 * `failoverDetector` moves the client too, but it disconnects whatever the client is doing: an
 * announcement that arrives while the client is reconnecting (right after the master it was on died)
 * makes that connection attempt fail, and ioredis then ends the client for good. Here a client is only
 * ever moved while it is connected, and only when it is not on the announced master already.
 */
import type { Redis, RedisOptions } from 'ioredis';

type Address = { host: string; port: number };
type NatMap = Record<string, Partial<Address>> | ((key: string) => Partial<Address> | null | undefined);

/** A client that became ready this long after an announcement is checked against it too, ms. */
const RECENT = 10_000;
/** The pause between attempts to reach a sentinel that does not answer, ms. */
const SENTINEL_RETRY = 1_000;

/** Whether `client` was given sentinels to ask for its master. */
function hasSentinels(client: Redis): boolean {
  const sentinels = (client.options as RedisOptions | undefined)?.sentinels;
  return Array.isArray(sentinels) && sentinels.length > 0;
}

/** Whether `client` is an ioredis client that finds its master through Sentinel. */
export function findsMasterThroughSentinel(client: Redis): boolean {
  return hasSentinels(client) && typeof client.options.name === 'string';
}

/**
 * Whether `client` is an ioredis Sentinel client with `failoverDetector`. Such a client also holds one
 * connection to each sentinel, subscribed to +switch-master, that quit() leaves open (it only ends the
 * connection to the master) and that reconnects on its own: only disconnect() closes them, through the
 * Sentinel connector. Left open, they keep the process running.
 */
export function watchesSentinels(client: Redis): boolean {
  return hasSentinels(client) && client.options.failoverDetector === true;
}

/** `::ffff:127.0.0.1` and `127.0.0.1` are the same peer. */
const plainIp = (address: string | undefined): string | undefined => address?.replace(/^::ffff:/, '');

export class SentinelFollower {
  private readonly watchers: Redis[] = [];
  private readonly clients = new Map<Redis, () => void>();
  private announced: { to: Address; at: number } | undefined;

  constructor(private readonly source: Redis) {
    const options = source.options as RedisOptions;
    for (const sentinel of options.sentinels ?? []) {
      // A plain connection to the sentinel, of the client's own ioredis (a duplicate: no import, and no
      // second copy of the library), with the credentials and TLS ioredis uses to ask for the master.
      const watcher = source.duplicate({
        sentinels: undefined,
        name: undefined,
        natMap: undefined,
        failoverDetector: false,
        db: 0,
        keyPrefix: undefined,
        readOnly: false,
        lazyConnect: false,
        enableOfflineQueue: true,
        autoResubscribe: true,
        enableAutoPipelining: false,
        host: sentinel.host ?? 'localhost',
        port: sentinel.port ?? 26379,
        family: sentinel.family,
        username: options.sentinelUsername,
        password: options.sentinelPassword,
        tls: options.enableTLSForSentinelMode ? options.sentinelTLS : undefined,
        connectionName: options.connectionName ? `${options.connectionName}:sentinel-watch` : undefined,
        retryStrategy: () => SENTINEL_RETRY,
        maxRetriesPerRequest: null,
      });
      watcher.on('error', () => {}); // a sentinel down is retried; the lock's own calls report outages
      watcher.on('message', (channel: string, message: string) => {
        if (channel === '+switch-master') this.onSwitch(message);
      });
      watcher.subscribe('+switch-master').catch(() => {});
      this.watchers.push(watcher);
    }
  }

  /** Follows `client` (the source or a duplicate of it) until the returned function is called. */
  add(client: Redis): () => void {
    const onReady = (): void => {
      // Connected after the sentinels announced a master, maybe through a sentinel that had not heard
      // yet: moved if it is on another server, as far as can be told (never on a guess, which could
      // reconnect it on every ready).
      const announced = this.announced;
      if (
        announced &&
        performance.now() - announced.at < RECENT &&
        placement(client, announced.to) === 'elsewhere'
      ) {
        client.disconnect(true);
      }
    };
    client.on('ready', onReady);
    const stop = (): void => {
      client.off('ready', onReady);
      this.clients.delete(client);
    };
    this.clients.set(client, stop);
    return stop;
  }

  close(): void {
    for (const stop of [...this.clients.values()]) stop();
    for (const watcher of this.watchers.splice(0)) watcher.disconnect();
  }

  private onSwitch(message: string): void {
    // "<master name> <old ip> <old port> <new ip> <new port>"
    const [name, , , ip, port] = message.split(' ');
    if (name !== (this.source.options as RedisOptions).name || !ip || !port) return;
    const to = this.mapped({ host: ip, port: Number(port) });
    this.announced = { to, at: performance.now() };
    // Each sentinel announces the switch: a client already on the new master stays. One whose place
    // cannot be told (natMap to host names) reconnects, at most once per sentinel's announcement.
    for (const client of this.clients.keys()) {
      if (client.status === 'ready' && placement(client, to) !== 'on') client.disconnect(true);
    }
  }

  /** The address the client connects to for `address`, through its natMap, as ioredis does. */
  private mapped(address: Address): Address {
    const natMap = (this.source.options as { natMap?: NatMap }).natMap;
    const key = `${address.host}:${address.port}`;
    const mapped = typeof natMap === 'function' ? natMap(key) : natMap?.[key];
    return { host: mapped?.host ?? address.host, port: mapped?.port ?? address.port };
  }
}

/**
 * Whether a client is connected to `to`. A client that moves (disconnect(true)) asks the sentinels again
 * on reconnecting, and they name the new master; only a connected client is ever moved: one that is
 * connecting would have its attempt failed (see above), and the attempt asks the sentinels anyway.
 */
function placement(client: Redis, to: Address): 'on' | 'elsewhere' | 'unknown' {
  const stream = (client as unknown as { stream?: { remoteAddress?: string; remotePort?: number } }).stream;
  if (!stream?.remoteAddress || !isIp(to.host)) return 'unknown';
  return stream.remotePort === to.port && plainIp(stream.remoteAddress) === plainIp(to.host)
    ? 'on'
    : 'elsewhere';
}

/** A host name cannot be compared with the socket's peer address; an IP can. */
function isIp(host: string): boolean {
  return /^[\d.]+$/.test(host) || host.includes(':');
}
