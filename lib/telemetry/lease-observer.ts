/**
 * What telemetry hears of a lease's life, declared here so that the leases call down into telemetry and
 * telemetry never reaches up into the engine that makes them.
 */
import type { LockLostError } from '../errors/lock-lost.error';
import type { Lease } from '../lease';

/** The part of a lease a report names. */
export type ObservedLease = Pick<Lease, 'token' | 'fence' | 'keys'>;

/** Told of a lease's life: made (one per key of a call), renewed, and ended (released, or lost). */
export interface LeaseObserver {
  attached(): void;
  renewed(lease: ObservedLease): void;
  ended(lease: ObservedLease, lost: LockLostError | undefined): void;
}
