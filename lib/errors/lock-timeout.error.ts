import { LockError } from './lock.error';
import { quote } from './log-text';

/** Why a call with a `deadline` stopped waiting before its waitTimeout. */
export interface DeadlineShortfall {
  /** ms from the start of the wait to the deadline (0 or less: it had passed). */
  readonly leftMs: number;
  /** The hold of this key kept back before the deadline: how long this service has seen it take, in ms. */
  readonly holdMs: number;
}

/** A wait refused for overload: the engine ended it, not a holder. A shed at the door sets neither cut. */
export interface OverloadRefusal {
  /** When the line would clear, ms from now. */
  readonly retryAfterMs: number;
  /** Set when the call's deadline cut the wait. */
  readonly deadline?: DeadlineShortfall;
  /** Set when the key's standing line cut the wait: the call's own waitTimeout, ms. */
  readonly waitTimeout?: number;
}

/**
 * The lock was not granted within `waitTimeout` (or at once, for a try-once call that had to throw), or
 * the wait was refused for overload (`retryAfterMs` set): turned away at the door, or cut short by its
 * key's standing line or the call's `deadline`.
 */
export class LockTimeoutError extends LockError {
  /** How long the caller waited, in milliseconds. */
  readonly waitedMs: number;
  /** Set when the call's deadline, not its waitTimeout, ended the wait. */
  readonly deadline: DeadlineShortfall | undefined;
  /**
   * Set for a wait refused for overload: when its line would clear, ms from now (over HTTP, a 503 with it
   * as `Retry-After`). Undefined when the call's own waitTimeout ran out: the lock was held (a 409).
   */
  readonly retryAfterMs: number | undefined;

  constructor(key: string, waitedMs: number, overload?: OverloadRefusal, text?: string) {
    super('LOCK_TIMEOUT', text ?? message(key, waitedMs, overload), { key });
    this.waitedMs = waitedMs;
    this.deadline = overload?.deadline;
    this.retryAfterMs = overload?.retryAfterMs;
  }
}

function message(key: string, waitedMs: number, overload: OverloadRefusal | undefined): string {
  if (!overload) {
    return (
      `Lock ${quote(key)} was not granted within ${waitedMs} ms: another holder kept it. ` +
      'Raise waitTimeout, shorten the critical section, or use tryAcquire to skip instead of waiting.'
    );
  }
  const { retryAfterMs, deadline, waitTimeout } = overload;
  const retry = `Its line should clear in about ${retryAfterMs} ms: retry then`;
  if (!deadline) {
    return (
      `Lock ${quote(key)} was not granted within ${waitedMs} ms: its line is standing (the key gets more calls ` +
      `than it can serve), so this call's wait was cut from its waitTimeout of ${waitTimeout} ms and it was ` +
      `turned away for overload, not kept out by one holder. ${retry}, or take load off this key.`
    );
  }
  const { leftMs, holdMs } = deadline;
  if (leftMs <= 0) {
    return (
      `Lock ${quote(key)} was not asked for: the call's deadline had passed ${-leftMs} ms before it, so it was ` +
      `turned away for overload. Nothing was sent to Redis; answer the caller now. ${retry} with a later deadline.`
    );
  }
  return (
    `Lock ${quote(key)} was not granted in time for the call's deadline: ${leftMs} ms were left, and a hold ` +
    `of this key takes about ${holdMs} ms here, so it stopped waiting after ${waitedMs} ms and was turned ` +
    `away for overload (the result would have come too late). Answer the caller now. ${retry}, or give ` +
    'it a later deadline.'
  );
}
