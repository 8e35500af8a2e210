// One Redis Cluster per test file, started before its tests and disposed after them, with the lock
// services made on it closed first.
import { afterAll, beforeAll } from '@jest/globals';
import { LockService, type LockServiceOptions } from '../../lib';
import { type ClusterShape, type RedisCluster, startCluster } from './redis-cluster';

export function useCluster(shape?: ClusterShape): {
  cluster: () => RedisCluster;
  /** A LockService on a new Cluster client; closed after the file's tests. */
  service: (options?: LockServiceOptions) => LockService;
} {
  let cluster: RedisCluster | undefined;
  const services: LockService[] = [];
  beforeAll(async () => {
    cluster = await startCluster(shape);
  }, 90_000);
  afterAll(async () => {
    await Promise.all(services.map((service) => service.close().catch(() => {})));
    await cluster?.dispose();
  });
  const current = (): RedisCluster => {
    if (!cluster) throw new Error('the cluster is not started: call useCluster() at the top of the file');
    return cluster;
  };
  return {
    cluster: current,
    service(options) {
      const locks = new LockService(current().client(), options);
      services.push(locks);
      return locks;
    },
  };
}
