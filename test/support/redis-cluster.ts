// A throwaway Redis Cluster for tests: three masters (no replicas) started through the harness, so they
// share its clean-up, joined with `redis-cli --cluster create`. Never near the Redis on 6379.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, type ClusterOptions } from 'ioredis';
import { type RedisServer, startRedis } from './redis-server';

export interface RedisCluster {
  readonly nodes: readonly RedisServer[];
  /** A new ioredis Cluster client; disconnected by dispose(). */
  client(options?: ClusterOptions): Cluster;
  /** Port of the master serving `key`'s slot. */
  portOf(key: string): Promise<number>;
  dispose(): Promise<void>;
}

/** The cluster bus listens on port + 10000, so a node's port must leave room for it. */
const MAX_NODE_PORT = 55_535;

export async function startCluster(masters = 3): Promise<RedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'nestjs-redis-lock-cluster-'));
  const nodes: RedisServer[] = [];
  const clients = new Set<Cluster>();
  const dispose = async (): Promise<void> => {
    await Promise.all([...clients].map((c) => c.quit().catch(() => c.disconnect())));
    clients.clear();
    await Promise.all(nodes.map((node) => node.dispose()));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; nodes.length < masters; i++) {
      if (i >= masters * 10) throw new Error('could not find ports for the cluster nodes');
      const node = await startRedis({
        args: [
          ...['--cluster-enabled', 'yes', '--cluster-node-timeout', '5000'],
          ...['--cluster-config-file', join(dir, `nodes-${i}.conf`)],
        ],
      }).catch(() => undefined); // the bus port (port + 10000) was taken: try another port
      if (!node) continue;
      if (node.port > MAX_NODE_PORT) await node.dispose();
      else nodes.push(node);
    }
    const created = spawnSync(
      'redis-cli',
      ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-yes'],
      { encoding: 'utf8', timeout: 30_000 },
    );
    if (created.status !== 0) {
      throw new Error(`redis-cli --cluster create failed: ${created.stderr || created.stdout}`);
    }
    // Every node must agree the cluster is up before clients start routing by slot.
    const deadline = Date.now() + 15_000;
    for (const node of nodes) {
      const admin = node.client();
      try {
        while (!String(await admin.cluster('INFO')).includes('cluster_state:ok')) {
          if (Date.now() > deadline) throw new Error(`cluster node ${node.port} never reached state ok`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      } finally {
        admin.disconnect();
      }
    }
  } catch (error) {
    await dispose();
    throw error;
  }
  const seeds = nodes.map((n) => ({ host: '127.0.0.1', port: n.port }));
  return {
    nodes,
    client(options) {
      const cluster = new Cluster(seeds, options);
      cluster.on('error', () => {});
      clients.add(cluster);
      return cluster;
    },
    async portOf(key) {
      const admin = nodes[0].client();
      try {
        const slot = Number(await admin.cluster('KEYSLOT', key));
        const ranges = (await admin.cluster('SLOTS')) as unknown as Array<[number, number, [string, number]]>;
        const owner = ranges.find(([from, to]) => slot >= from && slot <= to);
        if (!owner) throw new Error(`no master serves slot ${slot}`);
        return owner[2][1];
      } finally {
        admin.disconnect();
      }
    },
    dispose,
  };
}
