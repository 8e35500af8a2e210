// The store conformance suite against the Redis store, on a redis-server of its own. Several processes
// and outages are covered by test/api (fifo, mutual-exclusion, redis-unavailable, redis-restart, ...).

import { lockService } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';
import { describeListingConformance } from './listing-conformance';
import { describeConformance } from './lock-conformance';
import { describeMultiKeyConformance } from './multi-key-conformance';
import { describeReadWriteConformance } from './read-write-conformance';
import { describeSemaphoreConformance } from './semaphore-conformance';

const server = useRedis();

describeConformance('redis', (options) => lockService(server(), options));
describeMultiKeyConformance('redis', (options) => lockService(server(), options));
describeSemaphoreConformance('redis', (options) => lockService(server(), options));
describeReadWriteConformance('redis', (options) => lockService(server(), options));
describeListingConformance('redis', (options) => lockService(server(), options), {
  semaphores: true,
  lines: true,
});
