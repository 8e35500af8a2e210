// The client library the lock runs on in this test run: ioredis, or node-redis when LOCK_TEST_CLIENT is
// `node-redis` (jest's `node-redis` project sets it, and the workers a test starts inherit it). The
// property suites make their lock clients here, so the same suites prove both clients.
import { Cluster, Redis } from 'ioredis';
import { createClient, createCluster } from 'redis';
import type { RedisClient } from '../../lib/core';
import { type ClientLibrary, lockLibrary } from './client-library';

export { type ClientLibrary, lockLibrary };

/** A client the lock can use, and how the test closes it (the lock never does). */
export interface LockClient {
  client: RedisClient;
  close(): void;
}

/**
 * A client to `url` for the lock, connecting already, of `library` (default: the run's). Errors are
 * swallowed as the suites expect outages: the lock reports them through its own calls.
 */
export function lockClient(url: string, library: ClientLibrary = lockLibrary()): LockClient {
  if (library === 'ioredis') {
    const client = new Redis(url, { disconnectTimeout: 100 });
    client.on('error', () => {});
    return { client, close: () => client.disconnect() };
  }
  const client = createClient({ url });
  client.on('error', () => {});
  client.connect().catch(() => {});
  return { client, close: () => destroy(client) };
}

/** A Cluster client over `ports` on 127.0.0.1, of `library` (default: the run's). */
export function lockClusterClient(
  ports: readonly number[],
  library: ClientLibrary = lockLibrary(),
): LockClient {
  const nodes = ports.map((port) => ({ host: '127.0.0.1', port }));
  if (library === 'ioredis') {
    const client = new Cluster(nodes);
    client.on('error', () => {});
    return { client, close: () => client.disconnect() };
  }
  const client = createCluster({
    rootNodes: nodes.map(({ host, port }) => ({ url: `redis://${host}:${port}` })),
    // As docs/node-redis.md advises: look for the new topology half a second after a node stops
    // answering (node-redis' default: 5 s), and retry a node at least every half second (default: 2 s;
    // the look happens on a retry), so that calls move to a promoted replica soon.
    topologyRefreshOnReconnectionAttemptStrategy: 500,
    defaults: { socket: { reconnectStrategy: (retries: number) => Math.min(2 ** retries * 50, 500) } },
  });
  client.on('error', () => {});
  client.connect().catch(() => {});
  return { client, close: () => destroy(client) };
}

function destroy(client: { destroy(): unknown }): void {
  try {
    const done = client.destroy();
    if (done instanceof Promise) done.catch(() => {});
  } catch {
    // Closed already.
  }
}
