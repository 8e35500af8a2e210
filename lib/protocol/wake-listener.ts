/**
 * One subscriber connection per LockService, on one channel named after the service's instance id.
 * Every waiter of the process is woken through it, whatever its key: the number of connections does
 * not grow with waiters or keys. Opened lazily, on the first call that has to wait.
 */
import type { WakeMessage } from '../store/lock-store';
import type { RedisConnection, Subscriber } from './connection';
import { successors } from './lock-scripts';

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

export class WakeListener {
  private subscriber: Subscriber | undefined;
  /** The subscriber being opened, until it is the current one (or dropped). */
  private opening: Promise<Subscriber> | undefined;
  private subscribed: Promise<void> | undefined;
  private live = false;
  private closed = false;

  constructor(
    private readonly connection: RedisConnection,
    private readonly channel: string,
    private readonly onMessage: (message: WakeMessage) => void,
    /** Called when the subscription comes back after a disconnect: pushes may have been missed. */
    private readonly onResubscribed: () => void,
  ) {}

  /** True once the subscription is live; a waiter may only join a queue after that. */
  get ready(): boolean {
    return this.live && this.subscriber?.ready === true;
  }

  /** Subscribes (once); resolves when pushes to this instance will be delivered. */
  ensureSubscribed(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('wake listener closed'));
    this.subscribed ??= this.start(0, false);
    return this.subscribed;
  }

  /**
   * Opens a subscriber connection and subscribes on it. A reset() or a replacement may drop it while it
   * subscribes: its outcome then changes nothing here. `again` marks a Cluster connection replacing one
   * that ended: waiters re-check once it is subscribed, and if it fails, its own end moves on to another
   * node. `failures`: how many Cluster connections in a row have failed before this one.
   */
  private async start(failures: number, again: boolean): Promise<void> {
    const opening = this.connection.subscriber();
    this.opening = opening;
    let subscriber: Subscriber;
    try {
      subscriber = await opening;
    } catch (error) {
      if (this.opening === opening && !again) this.forget();
      throw error;
    }
    if (this.opening !== opening || this.closed) {
      subscriber.drop();
      throw new Error('wake subscription dropped');
    }
    this.opening = undefined;
    this.open(subscriber, failures);
    try {
      await subscriber.subscribe(this.channel, (raw) => {
        const message = parseWakeMessage(raw);
        if (message) this.onMessage(message);
      });
    } catch (error) {
      // Allow a later call to try again rather than caching the failure.
      if (this.subscriber === subscriber && !again) this.forget();
      subscriber.drop();
      throw error;
    }
    if (this.subscriber !== subscriber) throw new Error('wake subscription dropped');
    this.live = true;
    if (again) this.onResubscribed();
  }

  private forget(): void {
    this.subscribed = undefined;
    this.subscriber = undefined;
    this.opening = undefined;
  }

  /** Makes `subscriber` the current connection and follows it. */
  private open(subscriber: Subscriber, failures: number): void {
    this.subscriber = subscriber;
    this.live = false;
    if (this.connection.cluster) {
      // A Cluster node's connection does not reconnect: when it ends, another node takes over and the
      // waiters re-check.
      subscriber.onEnd(() => this.replace(subscriber, this.live ? 0 : failures + 1));
      return;
    }
    // The client subscribes again on reconnect; then waiters re-check, pushes having been missed.
    subscriber.onResubscribed(() => {
      if (this.subscriber === subscriber) this.onResubscribed();
    });
  }

  /**
   * The Cluster connection carrying the subscription ended: subscribe on another node, then have the
   * waiters re-check. At once after a connection that worked; after a pause when `failures` in a row.
   */
  private replace(ended: Subscriber, failures: number): void {
    if (this.closed || this.subscriber !== ended) return; // closed or reset on purpose
    this.live = false;
    const retry = (): void => {
      if (this.closed || this.subscriber !== ended) return;
      const subscribed = this.start(failures, true);
      subscribed.catch(() => {
        // No node is known at the moment, or the new one failed before it was followed: try again.
        if (this.subscriber === ended) setTimeout(retry, retryDelay(failures + 1)).unref();
      });
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
    this.forget();
    this.live = false;
    subscriber?.drop();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.live = false;
    const subscriber = this.subscriber;
    this.forget();
    await subscriber?.close(QUIT_TIMEOUT);
  }
}
