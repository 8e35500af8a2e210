/**
 * Times out script calls without a timer per call. Deadlines come in call order (every call gets the
 * same timeout, or one that changes slowly and never puts a deadline before an earlier one's): a FIFO of
 * the calls in flight and one timer for the oldest are enough. Replies on one connection come back in
 * order, so a call that settles is nearly always at the head, and the queue stays as long as the number
 * of calls in flight.
 *
 * The timer is unref'd and left running when the queue empties (it then stops by itself): a steady
 * stream of calls sets it about once per timeout instead of once per call, and an idle service holds
 * nothing that keeps the process alive. A call in flight keeps it alive through its socket.
 */
import { performance } from 'node:perf_hooks';

const now = (): number => performance.now();

export interface Deadline {
  readonly at: number;
  /** Set while the call is pending; cleared when it settles or expires. */
  expire: (() => void) | undefined;
}

/** Queues longer than this are compacted once most of them has settled. */
const COMPACT_AFTER = 1_024;

export class CallDeadlines {
  private readonly queue: Deadline[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | undefined;

  /** The latest deadline given: a timeout that shrinks never puts a call's deadline before an earlier one's. */
  private last = 0;

  /** `timeout`, ms: fixed, or read for each call (a quorum node's follows its replies: reply-pace.ts). */
  constructor(private readonly timeout: number | (() => number)) {}

  /** Starts one call's clock: `expire` runs once, unless `settle` is called within the timeout. */
  start(expire: () => void): Deadline {
    const time = now();
    const timeout = typeof this.timeout === 'number' ? this.timeout : this.timeout();
    // Deadlines stay in call order, so the queue's head is always the first due.
    this.last = Math.max(time + timeout, this.last);
    const deadline: Deadline = { at: this.last, expire };
    this.queue.push(deadline);
    if (this.timer === undefined) this.arm(deadline.at - time);
    return deadline;
  }

  /** Whether the call may still go on (neither settled nor expired). */
  pending(deadline: Deadline): boolean {
    return deadline.expire !== undefined;
  }

  /** The call settled: it will not expire. False if it had expired (or settled) already. */
  settle(deadline: Deadline): boolean {
    if (deadline.expire === undefined) return false;
    deadline.expire = undefined;
    this.dropSettled();
    return true;
  }

  private dropSettled(): void {
    const { queue } = this;
    while (this.head < queue.length && queue[this.head].expire === undefined) this.head++;
    if (this.head === queue.length) {
      queue.length = 0;
      this.head = 0;
    } else if (this.head > COMPACT_AFTER && this.head * 2 > queue.length) {
      queue.splice(0, this.head);
      this.head = 0;
    }
  }

  private readonly sweep = (): void => {
    this.timer = undefined;
    // A timer can fire a fraction of a millisecond early: a call expires only once its time is up.
    const time = now();
    const { queue } = this;
    while (this.head < queue.length) {
      const deadline = queue[this.head];
      const expire = deadline.expire;
      if (expire !== undefined) {
        if (deadline.at > time) break;
        deadline.expire = undefined;
        expire();
      }
      this.head++;
    }
    this.dropSettled();
    if (this.head < queue.length) this.arm(queue[this.head].at - time);
  };

  private arm(delay: number): void {
    this.timer = setTimeout(this.afterIo, Math.max(1, Math.ceil(delay)));
    this.timer.unref();
  }

  /**
   * Timers run before the event loop reads its sockets: after a stall (a busy machine that did not
   * schedule this process, a long synchronous task), replies that arrived in time still sit unread when
   * the timer fires. The sweep runs once they have been read (setImmediate runs after the poll phase),
   * so a timeout means the server did not answer, not that this process did not look.
   */
  private readonly afterIo = (): void => {
    setImmediate(this.sweep).unref();
  };
}
