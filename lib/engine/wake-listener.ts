/**
 * One subscriber connection per LockService, on one channel named after the service's instance id.
 * Every waiter of the process is woken through it, whatever its key: the number of connections does
 * not grow with waiters or keys. Opened lazily, on the first call that has to wait.
 */
import type { RedisClient } from '../protocol/lock-scripts';

/** A decoded push from the scripts: a grant ('g') or a note to the queue head ('h'). */
export type WakeMessage =
  | { kind: 'grant'; token: string; fence: number; serverMs: number }
  | { kind: 'head'; token: string; holdMs: number };

export function parseWakeMessage(raw: string): WakeMessage | undefined {
  const [kind, token, a, b] = raw.split(' ');
  if (kind === 'g' && token && a && b) {
    return { kind: 'grant', token, fence: Number(a), serverMs: Number(b) / 1000 };
  }
  if (kind === 'h' && token && a) return { kind: 'head', token, holdMs: Number(a) };
  return undefined;
}

/** How long closing waits for Redis to answer QUIT on the wake connection before dropping it. */
const QUIT_TIMEOUT = 1_000;

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
    if (!this.subscribed) {
      const subscriber = this.client.duplicate();
      this.subscriber = subscriber;
      // The subscriber reconnects and resubscribes by itself; errors are reported through waiters'
      // own commands, so here they must only not become uncaught 'error' events.
      subscriber.on('error', () => {});
      subscriber.on('message', (channel: string, raw: string) => {
        if (channel !== this.channel) return;
        const message = parseWakeMessage(raw);
        if (message) this.onMessage(message);
      });
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
      // A reset() may drop this subscriber while it subscribes: its outcome then changes nothing here.
      this.subscribed = subscriber.subscribe(this.channel).then(
        () => {
          if (this.subscriber !== subscriber) throw new Error('wake subscription dropped');
          this.live = true;
        },
        (error: unknown) => {
          // Allow a later call to try again rather than caching the failure.
          if (this.subscriber === subscriber) {
            this.subscribed = undefined;
            this.subscriber = undefined;
          }
          subscriber.disconnect();
          throw error;
        },
      );
    }
    return this.subscribed;
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
