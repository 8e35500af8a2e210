/**
 * One subscriber connection per LockService, on one channel named after the service's instance id.
 * Every waiter of the process is woken through it, whatever its key: the number of connections does
 * not grow with waiters or keys. Opened lazily, on the first call that has to wait.
 */
import type { Cluster, Redis } from 'ioredis';
import type { WakeMessage } from '../store/lock-store';
import { isCluster, type RedisClient, successors } from './lock-scripts';

/**
 * Decodes a push from the scripts: a grant ('g' token fence server-us, then its followers' tokens, whose
 * fences follow its own) or a note to the queue head ('h' token hold-ms).
 */
export function parseWakeMessage(raw: string): WakeMessage | undefined {
  const [kind, token, a, b, ...next] = raw.split(' ');
  if (kind === 'g' && token && a && b) {
    const fence = Number(a);
    return { kind: 'grant', token, fence, serverMs: Number(b) / 1000, next: successors(next, fence + 1) };
  }
  if (kind === 'h' && token && a) return { kind: 'head', token, holdMs: Number(a) };
  return undefined;
}

/** How long closing waits for Redis to answer QUIT on the wake connection before dropping it. */
const QUIT_TIMEOUT = 1_000;
/** Pauses between attempts to subscribe on another Cluster node while none answers, ms. */
const RETRY_DELAYS = [50, 200, 1_000];
/** The pause before the next attempt after `failures` failed ones in a row (at least one). */
const retryDelay = (failures: number): number =>
  RETRY_DELAYS[Math.min(Math.max(failures, 1), RETRY_DELAYS.length) - 1];

/**
 * A connection to one node of the Cluster, picked at random among those the client is talking to (so
 * known to be up), else among all it knows. Pub/Sub messages reach every node, so any node will do. It
 * does not reconnect: a node that went away may not come back, so its 'end' is the signal to move.
 */
function nodeConnection(cluster: Cluster): Redis {
  const known = cluster.nodes('all');
  const live = known.filter((node) => node.status === 'ready');
  const nodes = live.length > 0 ? live : known;
  if (nodes.length === 0) throw new Error('no Cluster node is known');
  const node = nodes[Math.floor(Math.random() * nodes.length)];
  return node.duplicate({ lazyConnect: false, readOnly: false, retryStrategy: () => null });
}

export class WakeListener {
  private subscriber: RedisClient | undefined;
  private subscribed: Promise<void> | undefined;
  private live = false;
  private closed = false;

  constructor(
    private readonly client: RedisClient,
    private readonly channel: string,
    private readonly onMessage: (message: WakeMessage) => void,
    /** Called when the subscription comes back after a disconnect: pushes may have been missed. */
    private readonly onResubscribed: () => void,
  ) {}

  /** True once the subscription is live; a waiter may only join a queue after that. */
  get ready(): boolean {
    return this.live && this.subscriber?.status === 'ready';
  }

  /** Subscribes (once); resolves when pushes to this instance will be delivered. */
  ensureSubscribed(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('wake listener closed'));
    this.subscribed ??= this.subscribe(this.open(), false);
    return this.subscribed;
  }

  /**
   * Subscribes on `subscriber`, which has just become the current connection. A reset() or a
   * replacement may drop it while it subscribes: its outcome then changes nothing here. `again` marks
   * a Cluster connection replacing one that ended: waiters re-check once it is subscribed, and if it
   * fails, its own 'end' moves on to another node.
   */
  private subscribe(subscriber: RedisClient, again: boolean): Promise<void> {
    return subscriber.subscribe(this.channel).then(
      () => {
        if (this.subscriber !== subscriber) throw new Error('wake subscription dropped');
        this.live = true;
        if (again) this.onResubscribed();
      },
      (error: unknown) => {
        if (this.subscriber === subscriber && !again) {
          // Allow a later call to try again rather than caching the failure.
          this.subscribed = undefined;
          this.subscriber = undefined;
        }
        subscriber.disconnect();
        throw error;
      },
    );
  }

  /**
   * Opens the subscriber connection and becomes its only listener. `failures`: how many Cluster
   * connections in a row have failed before this one.
   */
  private open(failures = 0): RedisClient {
    const cluster = isCluster(this.client);
    const subscriber = cluster ? nodeConnection(this.client) : this.client.duplicate();
    this.subscriber = subscriber;
    this.live = false;
    // Errors are reported through waiters' own commands, so here they must only not become uncaught
    // 'error' events.
    subscriber.on('error', () => {});
    subscriber.on('message', (channel: string, raw: string) => {
      if (channel !== this.channel) return;
      const message = parseWakeMessage(raw);
      if (message) this.onMessage(message);
    });
    if (cluster) {
      // ioredis' own Cluster subscriber moves to another node on its own and says nothing, so a push
      // sent meanwhile would be missed unnoticed. A connection to one node is used instead, and when
      // it ends another node takes over and the waiters re-check.
      subscriber.once('end', () => this.replace(subscriber, this.live ? 0 : failures + 1));
      return subscriber;
    }
    let first = true;
    subscriber.on('ready', () => {
      if (first) {
        first = false;
        return;
      }
      // ioredis resubscribes on reconnect; subscribing again is idempotent and, being ordered after
      // that, resolves only once pushes flow again, which is when waiters should re-check.
      subscriber.subscribe(this.channel).then(
        () => this.onResubscribed(),
        () => {},
      );
    });
    return subscriber;
  }

  /**
   * The Cluster connection carrying the subscription ended: subscribe on another node, then have the
   * waiters re-check. At once after a connection that worked; after a pause when `failures` in a row.
   */
  private replace(ended: RedisClient, failures: number): void {
    if (this.closed || this.subscriber !== ended) return; // closed or reset on purpose
    this.live = false;
    const retry = (): void => {
      if (this.closed || this.subscriber !== ended) return;
      let next: RedisClient;
      try {
        next = this.open(failures);
      } catch {
        // No node is known at the moment.
        setTimeout(retry, retryDelay(failures + 1)).unref();
        return;
      }
      const subscribed = this.subscribe(next, true);
      subscribed.catch(() => {}); // callers of ensureSubscribed see it; the retry is next's 'end'
      this.subscribed = subscribed;
    };
    if (failures === 0) retry();
    else setTimeout(retry, retryDelay(failures)).unref();
  }

  /**
   * Drops the subscription, keeping the listener usable: the next call that has to wait subscribes
   * afresh. For when the command connection ended: a subscription left open would tell Redis that this
   * service's queued tokens still listen, so a grant to one would wait out a claim window instead of
   * being skipped at once.
   */
  reset(): void {
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    this.subscribed = undefined;
    this.live = false;
    subscriber?.disconnect();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.live = false;
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    if (!subscriber) return;
    // quit() waits for pending replies; if the server is gone it would wait for the reconnect loop,
    // and a frozen server never answers it: give QUIT a bounded time, then drop the socket.
    if (subscriber.status !== 'ready') {
      subscriber.disconnect();
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    const quit = subscriber.quit().then(
      () => true,
      () => false,
    );
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), QUIT_TIMEOUT);
    });
    const quitted = await Promise.race([quit, timedOut]);
    clearTimeout(timer);
    if (!quitted) subscriber.disconnect();
  }
}
