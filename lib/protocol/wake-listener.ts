/**
 * One subscriber connection per LockService, on one channel named after the service's instance id.
 * Every waiter of the process is woken through it, whatever its key: the number of connections does
 * not grow with waiters or keys. Opened lazily, on the first call that has to wait.
 *
 * Waiters do not wait for it to open: a call joins its line at once, and its join marks this channel as
 * one that will listen (prelude.lua, listening_later), so a push that reaches nobody meanwhile keeps its
 * place instead of skipping it. Once the subscription is live, the mark is read and removed: if a push
 * was missed, every waiter re-checks.
 */

import type { RedisConnection, Subscriber } from './connection';
import { successors } from './lock-scripts';
import type { WakeMessage } from './replies';

/**
 * Decodes a push from the scripts: a grant ('g' token fence server-us, then its followers' tokens, whose
 * fences follow its own; 'G' when a call of the waiter's own service made it, so it keeps the claim
 * window and needs no confirmation) or a note to the queue head ('h' token hold-ms).
 */
export function parseWakeMessage(raw: string): WakeMessage | undefined {
  const [kind, token, a, b, ...next] = raw.split(' ');
  if ((kind === 'g' || kind === 'G') && token && a && b) {
    const fence = Number(a);
    const serverMs = Number(b) / 1000;
    return { kind: 'grant', token, fence, serverMs, next: successors(next, fence + 1), pushed: kind === 'g' };
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
  /** While early waiters wait for the subscription: keeps their mark alive, and retries a failed one. */
  private keeping: NodeJS.Timeout | undefined;

  constructor(
    private readonly connection: RedisConnection,
    private readonly channel: string,
    private readonly onMessage: (message: WakeMessage) => void,
    /** Called when pushes may have been missed (after a disconnect, or while it opened): waiters re-check. */
    private readonly onResubscribed: () => void,
    /** How long a mark keeps the places of waiters that joined before the subscription was live, ms. */
    private readonly markFor: number,
  ) {}

  /**
   * For a waiter joining now: how long its join should mark this channel as listening later (ms), or
   * undefined when no mark is needed (the subscription is live; or a Cluster, where receiver counts are
   * not trusted and nobody is skipped for having none).
   */
  listenLater(): number | undefined {
    return this.ready || this.connection.cluster ? undefined : this.markFor;
  }

  /** A waiter joined the line before the subscription was live: open it, and keep the waiter's place. */
  joinedEarly(): void {
    if (this.ready || this.closed) return;
    // A mark outlives its service's last early join by one claim window: a service that died then holds
    // the line no longer than that. One that is alive keeps it alive until it listens.
    this.keeping ??= setInterval(() => this.keepWaiting(), Math.max(1, this.markFor / 2)).unref();
    this.ensureSubscribed().catch(() => {});
  }

  /** A waiter joined while the subscription was not live (and it is not yet): pushes may have been missed. */
  private get early(): boolean {
    return this.keeping !== undefined;
  }

  /** Renews the early waiters' mark (or sets it again if it expired) and retries a failed subscription. */
  private keepWaiting(): void {
    if (this.closed || this.ready) {
      this.stopKeeping();
      return;
    }
    if (!this.subscribed) this.ensureSubscribed().catch(() => {});
    if (this.connection.cluster) return;
    const { channel, markFor } = this;
    this.connection
      .command(['PEXPIRE', channel, markFor], channel)
      .then((renewed) => {
        // Expired: pushes may have been missed since, which "1" says.
        if (Number(renewed) === 0 && this.early) {
          return this.connection.command(['SET', channel, '1', 'PX', markFor, 'NX'], channel);
        }
      })
      .catch(() => {});
  }

  private stopKeeping(): void {
    clearInterval(this.keeping);
    this.keeping = undefined;
  }

  /** True once the subscription is live: a push to this instance is delivered. */
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
    this.listening(again);
  }

  /**
   * The subscription is live (`again`: after a disconnect, when waiters re-check anyway). If waiters
   * joined meanwhile, reads and removes their mark: the pushes that reached nobody (none: nothing to
   * re-check; gone: it expired, so something may have been missed). A Cluster keeps no count: its
   * waiters re-check.
   */
  private listening(again: boolean): void {
    if (!this.early) {
      if (again) this.onResubscribed();
      return;
    }
    this.stopKeeping();
    if (this.connection.cluster) {
      this.onResubscribed();
      return;
    }
    this.connection.command(['GETDEL', this.channel], this.channel).then(
      (missed) => {
        if (again || String(missed) !== '0') this.onResubscribed();
      },
      () => this.onResubscribed(),
    );
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
      if (this.subscriber === subscriber) this.listening(true);
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
    this.stopKeeping();
    subscriber?.drop();
  }

  async close(): Promise<void> {
    // Waiters that joined before it was live leave with the service: nothing will listen for them.
    if (this.early && !this.connection.cluster) {
      this.connection.command(['DEL', this.channel], this.channel).catch(() => {});
    }
    this.stopKeeping();
    this.closed = true;
    this.live = false;
    const subscriber = this.subscriber;
    this.forget();
    await subscriber?.close(QUIT_TIMEOUT);
  }
}
