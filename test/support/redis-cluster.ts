// A throwaway Redis Cluster for tests: three masters (and, if asked, replicas) started through the
// harness, so they share its clean-up, joined with `redis-cli --cluster create`. Never near the Redis on
// 6379.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, type ClusterOptions, type Redis } from 'ioredis';
import { sleep } from './event-loop';
import { type RedisServer, startRedis } from './redis-server';

export interface RedisCluster {
  readonly nodes: readonly RedisServer[];
  /** A new ioredis Cluster client; disconnected by dispose(). */
  client(options?: ClusterOptions): Cluster;
  /** Port of the master serving `key`'s slot. */
  portOf(key: string): Promise<number>;
  /** The master serving `key`'s slot, and its replicas. */
  nodesOf(key: string): Promise<{ master: RedisServer; replicas: RedisServer[] }>;
  /** Waits until every node says the cluster is ok and every replica has all of its master's writes. */
  settled(timeoutMs?: number): Promise<void>;
  dispose(): Promise<void>;
}

/** The cluster bus listens on port + 10000, so a node's port must leave room for it. */
const MAX_NODE_PORT = 55_535;

export interface ClusterShape {
  masters?: number;
  /** Replicas per master. */
  replicas?: number;
  /** cluster-node-timeout, ms: how long a master may be unreachable before its replica takes over. */
  nodeTimeout?: number;
}

export async function startCluster(shape: ClusterShape = {}): Promise<RedisCluster> {
  const { masters = 3, replicas = 0, nodeTimeout = 5_000 } = shape;
  const size = masters * (1 + replicas);
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
    for (let i = 0; nodes.length < size; i++) {
      if (i >= size * 10) throw new Error('could not find ports for the cluster nodes');
      const node = await startRedis({
        args: [
          ...['--cluster-enabled', 'yes', '--cluster-node-timeout', String(nodeTimeout)],
          ...['--cluster-config-file', join(dir, `nodes-${i}.conf`)],
          // A replica's initial sync writes an RDB file into the working directory: keep it in ours.
          ...['--dir', dir, '--dbfilename', `dump-${i}.rdb`],
          // A node lists a replica in CLUSTER SLOTS (where clients find it, and settled() waits for it)
          // only once the replica's offset is above 0; with no writes, the first thing to move it is the
          // master's ping to its replicas, every 10 s by default.
          ...['--repl-ping-replica-period', '1'],
        ],
      }).catch(() => undefined); // the bus port (port + 10000) was taken: try another port
      if (!node) continue;
      if (node.port > MAX_NODE_PORT) await node.dispose();
      else nodes.push(node);
    }
    const created = spawnSync(
      'redis-cli',
      [
        ...['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`)],
        ...['--cluster-replicas', String(replicas), '--cluster-yes'],
      ],
      { encoding: 'utf8', timeout: 30_000 },
    );
    if (created.status !== 0) {
      throw new Error(`redis-cli --cluster create failed: ${created.stderr || created.stdout}`);
    }
    // Every node must know every other, linked, with each slot's replicas in place, before clients
    // route by slot or rely on messages crossing the cluster bus.
    await settled(nodes, 20_000, 1 + replicas);
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
      return (await slotPorts(nodes, key))[0];
    },
    async nodesOf(key) {
      const [master, ...replicaPorts] = await slotPorts(nodes, key);
      const byPort = (port: number): RedisServer => {
        const node = nodes.find((n) => n.port === port);
        if (!node) throw new Error(`no node of this cluster listens on ${port}`);
        return node;
      };
      return { master: byPort(master), replicas: replicaPorts.map(byPort) };
    },
    settled: (timeoutMs = 20_000) => settled(nodes, timeoutMs),
    dispose,
  };
}

/** Ports serving `key`'s slot, master first, as a live node sees it (nodes that are down are skipped). */
async function slotPorts(nodes: readonly RedisServer[], key: string): Promise<number[]> {
  let lastError: unknown;
  for (const node of nodes) {
    try {
      return await node.admin(async (admin) => {
        const slot = Number(await admin.cluster('KEYSLOT', key));
        const ranges = (await admin.cluster('SLOTS')) as unknown as Array<
          [number, number, ...Array<[string, number]>]
        >;
        const owner = ranges.find(([from, to]) => slot >= from && slot <= to);
        if (!owner) throw new Error(`no master serves slot ${slot}`);
        return owner.slice(2).map((entry) => (entry as [string, number])[1]);
      });
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

/**
 * Resolves once every reachable node reports cluster_state:ok and every replica's link is up with all
 * of its master's writes (offsets equal). Nodes that are down are left out. With `perSlot`, also once
 * every node knows all nodes over connected links and lists that many nodes (master and replicas) for
 * every slot: the state right after creation.
 */
async function settled(nodes: readonly RedisServer[], timeoutMs: number, perSlot?: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const complete = async (admin: Redis): Promise<boolean> => {
    const links = String(await admin.cluster('NODES'))
      .trim()
      .split('\n');
    if (links.length !== nodes.length) return false;
    if (links.some((line) => /handshake|noaddr|fail/.test(line) || !line.includes(' connected')))
      return false;
    const ranges = (await admin.cluster('SLOTS')) as unknown as unknown[][];
    return ranges.every((range) => range.length - 2 === perSlot);
  };
  const check = (node: RedisServer): Promise<boolean | undefined> =>
    node
      .admin(async (admin) => {
        if (!String(await admin.cluster('INFO')).includes('cluster_state:ok')) return false;
        if (perSlot !== undefined && !(await complete(admin))) return false;
        const info = await admin.info('replication');
        const field = (name: string): string | undefined =>
          new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim();
        if (field('role') !== 'slave') return true;
        if (field('master_link_status') !== 'up') return false;
        const master = nodes.find((n) => n.port === Number(field('master_port')));
        if (!master) return false;
        const masterOffset = await master.admin(
          async (redis) => /^master_repl_offset:(\d+)/m.exec(await redis.info('replication'))?.[1],
        );
        return masterOffset === field('slave_repl_offset');
      })
      .catch(() => undefined); // down: not part of the cluster any more
  for (;;) {
    const states = await Promise.all(nodes.map(check));
    if (states.every((state) => state !== false)) return;
    if (Date.now() > deadline) {
      const waiting = nodes.filter((_, i) => states[i] === false).map((n) => n.port);
      throw new Error(`cluster nodes ${waiting.join(', ')} did not settle within ${timeoutMs} ms`);
    }
    await sleep(50);
  }
}
