import { LockError } from './lock.error';
import { quote } from './log-text';

/**
 * Why a held lease was lost, for code that reacts differently (alert on `key-missing`, which under
 * `maxmemory` means eviction; retry on `renewal-failed`):
 * - `key-missing`: a renewal found the lock's key gone from Redis: it expired (the process was frozen
 *   past its ttl), was evicted (`maxmemory` with an evicting policy), or was deleted;
 * - `taken-over`: a renewal found another caller owning the lock;
 * - `renewal-failed`: Redis could not be reached or did not answer before the lease's validity ran out;
 * - `ttl-elapsed`: the lease was not renewed (`renew: false`) and its ttl ran out before release;
 * - `grant-unconfirmed`: a grant handed over by the previous holder could not be confirmed within its
 *   claim window;
 * - `service-closed`: the lock service closed while the work was still running;
 * - `not-replicated`: with the `replicas` option, fewer replicas than asked acknowledged a renewal in
 *   time, so a failover could lose the lease (`cause` is the LockNotReplicatedError);
 * - `max-hold`: the lease was held for its `maxHold`, so renewal stopped. The lock is still held in
 *   Redis until its ttl runs out (or it is released): the work has that long to stop.
 */
export type LockLossReason =
  | 'key-missing'
  | 'taken-over'
  | 'renewal-failed'
  | 'ttl-elapsed'
  | 'grant-unconfirmed'
  | 'service-closed'
  | 'not-replicated'
  | 'max-hold';

/**
 * A held lease stopped being valid before it was released: its key expired, was evicted or deleted,
 * another caller took it over, or Redis could not confirm an extension before the lease's validity ran
 * out. Delivered as `lease.signal.reason`; work still running must stop. `reason` says which.
 */
export class LockLostError extends LockError {
  /** Why the lease was lost (see LockLossReason). */
  readonly reason: LockLossReason;

  constructor(key: string, reason: LockLossReason, detail: string, cause?: unknown) {
    // At maxHold the lock is still held, for a while: the work is told to stop, not that it overlapped.
    const consequence =
      reason === 'max-hold' ? 'Stop the work now' : 'Work done under it is no longer exclusive';
    super('LOCK_LOST', `Lock ${quote(key)} was lost: ${detail}. ${consequence}.`, {
      key,
      cause,
    });
    this.reason = reason;
  }
}
