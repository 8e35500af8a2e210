/**
 * What a worker reads off a lease and off a failed call, the same way for every workload: the lease's
 * validity on the shared clock, when and why it was lost, and the typed outcome of a call.
 */
import { type Lease, LockError, LockLostError } from '../../lib';
import { perfToHr } from '../common';

/** The lease's own end of validity (HeldLease keeps it in a private field), on the shared clock. */
export function validUntil(lease: Lease): number | undefined {
  const raw = (lease as unknown as { validUntil?: unknown }).validUntil;
  return typeof raw === 'number' ? perfToHr(raw) : undefined;
}

/** The `reason` a LockLostError names (`'key-missing'`: a renewal found the owner key gone, ...). */
export function lossCode(error: unknown): string | undefined {
  return error instanceof LockLostError ? error.reason : undefined;
}

/** When a holder learnt its lease was lost, and why. */
export interface LossFacts {
  lostAt?: number;
  lostReason?: string;
  lostCode?: string;
}

/** Fills in `into` when the lease's signal aborts. */
export function watchLoss(lease: Lease, into: LossFacts, now: () => number): void {
  lease.signal.addEventListener('abort', () => {
    into.lostAt = now();
    const reason = lease.signal.reason as Error | undefined;
    into.lostReason = reason?.message.replace(/^Lock ".*" was lost: /, '').replace(/\. Work done.*$/, '');
    into.lostCode = lossCode(reason);
  });
}

/** A failed call as the run records it: its LockError code ('UNTYPED' for anything else), its message. */
export function failureOf(error: unknown): { outcome: string; message: string; lostCode?: string } {
  const outcome = error instanceof LockError ? error.code : 'UNTYPED';
  return {
    outcome,
    message: error instanceof Error ? error.message : String(error),
    lostCode: outcome === 'LOCK_LOST' ? lossCode(error) : undefined,
  };
}
