// The store conformance suite against the quorum store (Redlock over 5 independent redis-servers). What
// it does not give is skipped by name: its nodes keep no queue, so there is no order between services
// (docs/guarantees.md bounds it), and so no reservations either. Node faults are test/quorum/.
import { DEFAULT_TTL, type LockServiceOptions } from '../../lib';
import { useQuorum } from '../quorum/quorum-fixtures';
import { describeConformance } from './lock-conformance';
import { describeMultiKeyConformance } from './multi-key-conformance';

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

const noQueue =
  'the nodes keep no queue: each release wakes one waiter per process, and the first to reach a majority wins';

describeConformance('quorum', service, {
  'FIFO between services': noQueue,
});
describeMultiKeyConformance('quorum', service, {
  'FIFO between services': noQueue,
  'reservations on later keys': 'with no queue on the nodes there is no place to keep',
});
