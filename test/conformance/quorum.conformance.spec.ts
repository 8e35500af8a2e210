// The store conformance suite against the quorum store (Redlock over 5 independent redis-servers). What
// it does not give is skipped by name: its nodes keep no queue, so there is no order between services
// (docs/guarantees.md bounds it), and so no reservations either. Node faults are test/quorum/.
import { useQuorum } from '../quorum/quorum-fixtures';
import { describeConformance } from './lock-conformance';
import { describeMultiKeyConformance } from './multi-key-conformance';

const quorum = useQuorum();
const service = (options?: Parameters<ReturnType<typeof quorum>['service']>[0]) => quorum().service(options);

const noQueue =
  'the nodes keep no queue: each release wakes one waiter per process, and the first to reach a majority wins';

describeConformance('quorum', service, {
  'FIFO between services': noQueue,
});
describeMultiKeyConformance('quorum', service, {
  'FIFO between services': noQueue,
  'reservations on later keys': 'with no queue on the nodes there is no place to keep',
});
