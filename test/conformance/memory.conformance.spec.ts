// The store conformance suite against the in-memory store: every service of a test shares one backend,
// as several instances of an app share one Redis. No redis-server is involved.
import { afterEach, beforeEach } from '@jest/globals';
import { LockService, MemoryLockBackend } from '../../lib/core';
import { describeListingConformance } from './listing-conformance';
import { describeConformance, type ServiceFactory } from './lock-conformance';
import { describeMultiKeyConformance } from './multi-key-conformance';
import { describeReadWriteConformance } from './read-write-conformance';
import { describeSemaphoreConformance } from './semaphore-conformance';

let backend: MemoryLockBackend;
let services: LockService[] = [];

beforeEach(() => {
  backend = new MemoryLockBackend();
});

afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.close()));
  services = [];
});

const service: ServiceFactory = (options) => {
  const opened = new LockService(backend, options);
  services.push(opened);
  return opened;
};

describeMultiKeyConformance('memory', service);

describeConformance('memory', service, {
  'exclusion across processes': 'its locks live in one process',
  'surviving a store outage': 'it is in the process: it goes down with it',
});
describeSemaphoreConformance('memory', service);
describeReadWriteConformance('memory', service);
describeListingConformance('memory', service, { semaphores: true, lines: true });
