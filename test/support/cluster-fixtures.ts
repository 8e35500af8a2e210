// One Redis Cluster per test file, started before its tests and disposed after them, with the lock
// services made on it closed first.
import { afterAll, beforeAll } from '@jest/globals';
import { LockService, type LockServiceOptions, type RedisClient } from '../../lib/core';
import { lockClusterClient, lockLibrary } from './lock-clients';
import { type ClusterShape, type RedisCluster, startCluster } from './redis-cluster';

export function useCluster(shape?: ClusterShape): {
  cluster: () => RedisCluster;
  /** A LockService on a new Cluster client; closed after the file's tests. */
  service: (options?: LockServiceOptions) => LockService;
} {
  let cluster: RedisCluster | undefined;
  const services: LockService[] = [];
  const clients: Array<() => void> = [];
  beforeAll(async () => {
    cluster = await startCluster(shape);
  }, 90_000);
  afterAll(async () => {
    await Promise.all(services.map((service) => service.close().catch(() => {})));
    for (const close of clients.splice(0)) close();
    await cluster?.dispose();
  });
  const current = (): RedisCluster => {
    if (!cluster) throw new Error('the cluster is not started: call useCluster() at the top of the file');
    return cluster;
  };
  return {
    cluster: current,
    service(options) {
      // The run's client library; the harness's own ioredis client otherwise, which it disposes.
      let client: RedisClient | undefined;
      if (lockLibrary() === 'node-redis') {
        const made = lockClusterClient(current().nodes.map((node) => node.port));
        clients.push(made.close);
        client = made.client;
      }
      const locks = new LockService(client ?? current().client(), options);
      services.push(locks);
      return locks;
    },
  };
}
