/**
 * One call of the service as the engine serves it: the options resolved for it, the terms its lease
 * will be held under, and the telemetry record that observes it, passed explicitly from the service's
 * entry point down to the waiter and the lease (never carried on the caller's options).
 */
import type { DeadlineShortfall } from '../errors/lock-timeout.error';
import type { ResolvedAcquireOptions } from '../options/call-options';
import type { JoinDoor } from '../store/lock-store';
import type { LeaseObserver } from '../telemetry/lease-observer';
import type { CallRecord } from '../telemetry/lock-telemetry';
import type { LeaseTerms } from './held-lease';

export interface EngineCall {
  readonly options: ResolvedAcquireOptions;
  /** What the lease is held under: renewal, minHold, maxHold, and the record as its observer. */
  readonly terms: LeaseTerms;
  /** What reports on the call and its lease, when anything listens. */
  readonly record: CallRecord | undefined;
  /** A try-once call that finds a key busy rejects with LockTimeoutError, rather than resolving null. */
  readonly busyIsTimeout: boolean;
  /** Set when the call's deadline cut its wait short: what its LockTimeoutError says. */
  readonly deadline?: DeadlineShortfall;
  /**
   * Set for a call with a deadline: how long after it began a grant may still be started on, ms (the
   * deadline less the key's usual hold). A grant read later is passed on, whatever ended the wait.
   */
  readonly startWithin?: number;
  /** Set when its key's standing line cut its wait: its own waitTimeout, ms (admission.ts). */
  readonly cutFrom?: number;
  /** Its join's door, set as it joins (Admission.atDoor). */
  readonly door?: JoinDoor;
  /**
   * Somebody waits on the call's result: it serves a request, or carries a deadline. Only such a call's
   * wait is cut while its key's line stands; a job's (a cron's) is its own to spend.
   */
  readonly serving: boolean;
}

/**
 * `serving`: the call serves a request (see EngineCall); a call with a deadline serves someone anyway.
 * `observer`: what hears of its lease, the record unless said otherwise.
 */
export function engineCall(
  options: ResolvedAcquireOptions,
  busyIsTimeout: boolean,
  record: CallRecord | undefined,
  serving = false,
  observer: LeaseObserver | undefined = record,
): EngineCall {
  const { renew, minHold, maxHold } = options;
  return {
    options,
    terms: { renew, minHold, maxHold, observer },
    record,
    busyIsTimeout,
    serving: serving || options.deadline !== undefined,
  };
}

/** The same call with what is left of its wait (a multi-key call's later keys share one waitTimeout). */
export function withWaitLeft(call: EngineCall, waitTimeout: number): EngineCall {
  return { ...call, options: { ...call.options, waitTimeout } };
}
