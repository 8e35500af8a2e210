import { LockError } from './lock.error';

/** Why a call with a `deadline` stopped waiting before its waitTimeout. */
export interface DeadlineShortfall {
  /** ms from the start of the wait to the deadline (0 or less: it had passed). */
  readonly leftMs: number;
  /** The hold of this key kept back before the deadline: how long this service has seen it take, in ms. */
  readonly holdMs: number;
}

/**
 * The lock was not granted within `waitTimeout` (or at once, for a try-once call that had to throw), or
 * in time for the call's `deadline`.
 */
export class LockTimeoutError extends LockError {
  /** How long the caller waited, in milliseconds. */
  readonly waitedMs: number;
  /** Set when the call's deadline, not its waitTimeout, ended the wait. */
  readonly deadline: DeadlineShortfall | undefined;

  constructor(key: string, waitedMs: number, deadline?: DeadlineShortfall, text?: string) {
    super('LOCK_TIMEOUT', text ?? message(key, waitedMs, deadline), { key });
    this.waitedMs = waitedMs;
    this.deadline = deadline;
  }
}

function message(key: string, waitedMs: number, deadline: DeadlineShortfall | undefined): string {
  if (!deadline) {
    return (
      `Lock "${key}" was not granted within ${waitedMs} ms: another holder kept it. ` +
      'Raise waitTimeout, shorten the critical section, or use tryAcquire to skip instead of waiting.'
    );
  }
  const { leftMs, holdMs } = deadline;
  if (leftMs <= 0) {
    return (
      `Lock "${key}" was not asked for: the call's deadline had passed ${-leftMs} ms before it. ` +
      'Nothing was sent to Redis; answer the caller now, or give it a later deadline.'
    );
  }
  return (
    `Lock "${key}" was not granted in time for the call's deadline: ${leftMs} ms were left, and a hold ` +
    `of this key takes about ${holdMs} ms here, so it stopped waiting after ${waitedMs} ms. The result ` +
    'would have come too late: answer the caller now, or give it a later deadline.'
  );
}
