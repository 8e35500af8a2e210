// The store conformance suite against the quorum store (Redlock over 5 independent redis-servers),
// FIFO between services included: each node keeps a line ordered by the arrival every caller sends. What
// it does not give is skipped by name: reservations on later keys of a multi-key call. Node faults are
// test/quorum/.
import type { LockServiceOptions } from '../../lib/core';
import { DEFAULT_TTL } from '../../lib/options/call-options';
import { useQuorum } from '../quorum/quorum-fixtures';
import { describeListingConformance } from './listing-conformance';
import { describeConformance } from './lock-conformance';
import { describeMultiKeyConformance } from './multi-key-conformance';
import { describeNoSemaphores } from './semaphore-conformance';

const quorum = useQuorum();
/**
 * The properties here are not about node latency (test/quorum/ tests nodeTimeout): on a loaded 2-core
 * machine, and with calls over 1 000 keys sent at once to five nodes, a node may take more than the
 * default 100 ms to answer, so each node gets up to a second (at most a third of the ttl, as required).
 */
const service = (options?: LockServiceOptions) =>
  quorum().service({
    nodeTimeout: Math.min(1_000, Math.floor((options?.defaults?.ttl ?? DEFAULT_TTL) / 3)),
    ...options,
  });

describeConformance('quorum', service);
describeMultiKeyConformance('quorum', service, {
  'reservations on later keys':
    'the quorum store keeps no reservations: a later key is queued for when the call reaches it',
});
describeNoSemaphores('quorum', service, /quorum of independent masters \(Redlock\) has no semaphores/);
describeListingConformance('quorum', service, { semaphores: false, lines: false });
