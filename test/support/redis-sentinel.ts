// A throwaway Redis Sentinel group for tests: one master, its replicas and three sentinels, all started
// through the redis-server harness (free ports, killed when the test process ends). The master can be
// SIGKILLed to provoke a failover, and each replica's replication link can go through a ChaosProxy, so a
// test can freeze replication and leave a write on the master alone.
//
// Like redis-server.ts, this module does not import '@jest/globals', so that scripts run with tsx can use
// it; only useSentinelGroup() needs jest.
//
// Timings on loopback (2 cores), with the defaults (downAfterMs 500, failoverTimeoutMs 2 000): a group
// starts in ~1.2 s, most of it the sentinels' first links to each other (Sentinel retries a link once a
// second). A failover, from the SIGKILL of the master until every sentinel names the promoted replica
// and it answers ROLE master, takes 1.7 to 1.85 s (8 runs, median 1.8 s); with downAfterMs 200, 1.4 to
// 1.5 s. It is Sentinel's own pacing: down-after, the quorum (sentinels ask each other about the master),
// the election, and the INFO refresh (once a second during a failover) that confirms the promotion.
//
// ioredis Sentinel clients (client() below) need nothing beyond `sentinels` and `name` to follow a master
// that dies: the connection closes, each reconnection asks a sentinel for the master, and until the
// sentinels switch they name the dead master, the connection is refused and ioredis tries again. Two
// defaults matter during those ~2 s:
// - retryStrategy: the default delay grows by 50 ms an attempt up to 2 s, so the client finds the new
//   master up to a few hundred ms late (more with slower failovers). client() retries every 50 ms.
// - maxRetriesPerRequest (default 20): commands queued while reconnecting are failed with
//   MaxRetriesPerRequestError every 21 attempts, ~1 s at 50 ms, before the failover ends. Pass
//   `maxRetriesPerRequest: null` to a client whose commands must ride through the failover. The lock
//   library does not depend on it: it fails its calls fast while the client is not connected.
// `failoverDetector` is not needed for a SIGKILL; it matters when the old master stays reachable (a
// partition, or SENTINEL FAILOVER), where a client connected to it would otherwise stay there.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis, { type RedisOptions } from 'ioredis';
import { ChaosProxy } from '../../chaos/proxy';
import { sleep } from './event-loop';
import { terminate } from './processes';
import { adminOn, freePort, launch, type RedisServer, StartError, startRedis } from './redis-server';

export interface SentinelProcess {
  readonly port: number;
  /** SIGKILL, then wait for the process to exit. */
  kill(): Promise<void>;
}

export interface Address {
  host: string;
  port: number;
}

export interface SentinelOptions {
  sentinels: Address[];
  name: string;
}

export interface SentinelGroup {
  readonly masterName: string;
  /** The original master. After a failover it is no master any more (SIGKILLed, it stays down). */
  readonly master: RedisServer;
  /** Started with --replicaof the master (through a ChaosProxy with `replicationProxy`). */
  readonly replicas: readonly RedisServer[];
  readonly sentinels: readonly SentinelProcess[];
  /** ioredis options for a Sentinel client of this group. */
  sentinelOptions(): SentinelOptions;
  /** A new ioredis Sentinel client (errors swallowed, disconnected by dispose()). */
  client(options?: RedisOptions): Redis;
  /** The master the first sentinel that answers reports (SENTINEL get-master-addr-by-name). */
  currentMaster(): Promise<Address>;
  /**
   * Resolves once every sentinel that answers reports a master other than `from`, and that server says
   * ROLE master; rejects after `timeoutMs` (default 15 000).
   */
  waitForFailover(from: { port: number }, timeoutMs?: number): Promise<Address>;
  /**
   * The proxy on replica `i`'s replication link (only with `replicationProxy`): freeze() stalls
   * replication, so writes on the master do not reach that replica until thaw().
   */
  replicationProxy(i?: number): ChaosProxy;
  /** Disconnects the clients, kills every process, closes the proxies and removes the temp dir. */
  dispose(): Promise<void>;
}

export interface SentinelGroupOptions {
  /** Default 1. */
  replicas?: number;
  /** Default 3 (the quorum is a majority of them). */
  sentinels?: number;
  /** Each replica replicates through a ChaosProxy (see replicationProxy()). Default false. */
  replicationProxy?: boolean;
  /** Sentinel down-after-milliseconds. Default 500. */
  downAfterMs?: number;
  /**
   * Sentinel failover-timeout. Default 2 000; 60 000 with `replicationProxy`, since a sentinel re-points
   * a replica whose master address is not the master's own (the proxy's) once failover-timeout has
   * passed (`+fix-slave-config`), and replication would then bypass the proxy.
   */
  failoverTimeoutMs?: number;
}

const MASTER_NAME = 'locks';
/** Someone else's Redis listens there: never start on it, never connect to it. */
const FORBIDDEN_PORT = 6379;
const START_TIMEOUT_MS = 20_000;
const POLL_MS = 20;

/** Polls `probe` until it returns a value other than undefined; rejects with `what` after `timeoutMs`. */
export async function poll<T>(
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
  what: string,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      const detail = last instanceof Error ? ` (last error: ${last.message})` : '';
      throw new Error(`${what} not reached within ${timeoutMs} ms${detail}`);
    }
    await sleep(POLL_MS);
  }
}

/** SENTINEL replies list entries as flat [field, value, ...] arrays. */
export function entries(reply: unknown): Record<string, string>[] {
  if (!Array.isArray(reply)) return [];
  return reply.map((flat: string[]) => {
    const entry: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) entry[flat[i]] = flat[i + 1];
    return entry;
  });
}

const masterOf = (sentinelPort: number): Promise<Address> =>
  adminOn(sentinelPort, async (redis) => {
    const [host, port] = (await redis.call('SENTINEL', 'get-master-addr-by-name', MASTER_NAME)) as [
      string,
      string,
    ];
    return { host, port: Number(port) };
  });

/** Whether a sentinel knows the master, every replica (as reachable) and every other sentinel. */
async function sentinelReady(
  sentinelPort: number,
  masterPort: number,
  replicaPorts: readonly number[],
  otherSentinels: number,
): Promise<true | undefined> {
  return adminOn(sentinelPort, async (redis) => {
    const master = (await redis.call('SENTINEL', 'get-master-addr-by-name', MASTER_NAME)) as string[] | null;
    if (Number(master?.[1]) !== masterPort) return undefined;
    const healthy = entries(await redis.call('SENTINEL', 'replicas', MASTER_NAME)).filter(
      (replica) => !/s_down|o_down|disconnected/.test(replica.flags ?? ''),
    );
    if (!replicaPorts.every((port) => healthy.some((replica) => Number(replica.port) === port)))
      return undefined;
    const sentinels = entries(await redis.call('SENTINEL', 'sentinels', MASTER_NAME)).filter(
      (sentinel) => !/s_down|disconnected/.test(sentinel.flags ?? ''),
    );
    return sentinels.length >= otherSentinels ? true : undefined;
  });
}

/** Whether `server`'s replication link to its master is up (its initial sync is done). */
const linkUp = (server: RedisServer): Promise<true | undefined> =>
  server.admin(async (redis) =>
    (await redis.info('replication')).includes('master_link_status:up') ? true : undefined,
  );

interface SentinelSpec {
  id: string;
  port: number;
}

/**
 * A sentinel's config file. Sentinel rewrites it, so each sentinel has its own, in the group's temp dir.
 * The other sentinels and the replicas are listed up front (as Sentinel itself records them): found
 * through the hello messages, published every 2 s, the group would start a second later.
 */
function sentinelConfig(
  self: SentinelSpec,
  all: readonly SentinelSpec[],
  master: number,
  replicas: readonly number[],
  options: Required<Pick<SentinelGroupOptions, 'downAfterMs' | 'failoverTimeoutMs'>>,
  dir: string,
): string {
  const quorum = Math.floor(all.length / 2) + 1;
  return [
    `dir "${dir}"`,
    `sentinel myid ${self.id}`,
    `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${master} ${quorum}`,
    `sentinel down-after-milliseconds ${MASTER_NAME} ${options.downAfterMs}`,
    `sentinel failover-timeout ${MASTER_NAME} ${options.failoverTimeoutMs}`,
    `sentinel parallel-syncs ${MASTER_NAME} 1`,
    ...replicas.map((port) => `sentinel known-replica ${MASTER_NAME} 127.0.0.1 ${port}`),
    ...all
      .filter((other) => other !== self)
      .map((other) => `sentinel known-sentinel ${MASTER_NAME} 127.0.0.1 ${other.port} ${other.id}`),
    '',
  ].join('\n');
}

/**
 * Starts `count` sentinels on free ports. Each config names the others' ports, so when a port was taken
 * between the probe and the bind, the ones started are killed and all of them start again on new ports.
 */
async function startSentinels(
  count: number,
  dir: string,
  config: (self: SentinelSpec, all: readonly SentinelSpec[]) => string,
): Promise<SentinelProcess[]> {
  for (let attempt = 1; ; attempt++) {
    const specs: SentinelSpec[] = [];
    while (specs.length < count) {
      const port = await freePort();
      if (port !== FORBIDDEN_PORT && !specs.some((spec) => spec.port === port)) {
        specs.push({ id: randomBytes(20).toString('hex'), port });
      }
    }
    const started: SentinelProcess[] = [];
    // '+monitor master' is logged once the config is loaded and the port is listening.
    const configFile = (i: number) => join(dir, `sentinel-${i}.conf`);
    const start = async (i: number): Promise<SentinelProcess> => {
      const child = await launch(specs[i].port, ['--sentinel'], {
        configFile: configFile(i),
        readyLine: '+monitor master',
      });
      return { port: specs[i].port, kill: () => terminate(child, 'SIGKILL') };
    };
    try {
      for (const [i, spec] of specs.entries()) {
        await writeFile(configFile(i), config(spec, specs));
        started.push(await start(i));
      }
      // A Redis 8.0 sentinel was seen never to link to a peer its config names that was not listening yet
      // when it started (Redis 7.0's did, later): each one started before the last starts again, now
      // that all of them listen.
      for (let i = 0; i < started.length - 1; i++) {
        await started[i].kill();
        started[i] = await start(i);
      }
      return started;
    } catch (error) {
      await Promise.all(started.map((sentinel) => sentinel.kill()));
      if (!(error instanceof StartError && error.portInUse) || attempt >= 5) throw error;
    }
  }
}

/** The master and its replicas, each replica's link through a proxy if asked, every sync done. */
async function startServers(
  dir: string,
  options: SentinelGroupOptions,
  servers: RedisServer[],
  proxies: ChaosProxy[],
): Promise<{ master: RedisServer; replicas: RedisServer[] }> {
  // Every server keeps its files in the temp dir. A diskless sync with no delay: the default waits 5 s
  // for more replicas before a full sync starts.
  const serverArgs = (name: string) => [
    ...['--dir', dir, '--dbfilename', `${name}.rdb`, '--repl-diskless-sync-delay', '0'],
  ];
  const master = await startRedis({ args: serverArgs('master') });
  servers.push(master);
  const replicas: RedisServer[] = [];
  for (let i = 0; i < (options.replicas ?? 1); i++) {
    let upstream = master.port;
    if (options.replicationProxy) {
      const proxy = new ChaosProxy(master.port);
      proxies.push(proxy);
      upstream = await proxy.listen();
    }
    // Through the proxy the master sees the replica's connection coming from the proxy, but the replica
    // announces its own listening port (REPLCONF listening-port), which is what the master's INFO, and so
    // the sentinels, report: nothing else to configure.
    const replica = await startRedis({
      args: [...serverArgs(`replica-${i}`), '--replicaof', '127.0.0.1', String(upstream)],
    });
    servers.push(replica);
    replicas.push(replica);
  }
  await Promise.all(
    replicas.map((replica) => poll(() => linkUp(replica), START_TIMEOUT_MS, 'replica link up')),
  );
  return { master, replicas };
}

export async function startSentinelGroup(options: SentinelGroupOptions = {}): Promise<SentinelGroup> {
  const sentinelCount = options.sentinels ?? 3;
  const timing = {
    downAfterMs: options.downAfterMs ?? 500,
    failoverTimeoutMs: options.failoverTimeoutMs ?? (options.replicationProxy ? 60_000 : 2_000),
  };
  const dir = await mkdtemp(join(tmpdir(), 'nestjs-redis-lock-sentinel-'));
  const servers: RedisServer[] = [];
  const proxies: ChaosProxy[] = [];
  const sentinels: SentinelProcess[] = [];
  const clients = new Set<Redis>();

  const dispose = async (): Promise<void> => {
    const all = [...clients];
    clients.clear();
    for (const redis of all) redis.disconnect();
    // Sentinels first, so that none reconfigures a server while it is being stopped.
    await Promise.all(sentinels.map((sentinel) => sentinel.kill()));
    await Promise.all(proxies.map((proxy) => proxy.close()));
    await Promise.all(servers.map((server) => server.dispose()));
    await rm(dir, { recursive: true, force: true });
  };

  let master: RedisServer;
  let replicas: RedisServer[];
  try {
    ({ master, replicas } = await startServers(dir, options, servers, proxies));
    const replicaPorts = replicas.map((replica) => replica.port);
    sentinels.push(
      ...(await startSentinels(sentinelCount, dir, (self, all) =>
        sentinelConfig(self, all, master.port, replicaPorts, timing, dir),
      )),
    );
    // A failover needs each sentinel to see the replicas and a quorum of the others: wait until they do.
    await Promise.all(
      sentinels.map((sentinel) =>
        poll(
          () => sentinelReady(sentinel.port, master.port, replicaPorts, sentinelCount - 1),
          START_TIMEOUT_MS,
          `sentinel ${sentinel.port} seeing the master, the replicas and the other sentinels`,
        ),
      ),
    );
  } catch (error) {
    await dispose();
    throw error;
  }

  const sentinelOptions = (): SentinelOptions => ({
    sentinels: sentinels.map((sentinel) => ({ host: '127.0.0.1', port: sentinel.port })),
    name: MASTER_NAME,
  });
  /** What each sentinel that answers reports as the master. */
  const reports = async (): Promise<Address[]> => {
    const replies = await Promise.allSettled(sentinels.map((sentinel) => masterOf(sentinel.port)));
    return replies.flatMap((reply) => (reply.status === 'fulfilled' ? [reply.value] : []));
  };

  return {
    masterName: MASTER_NAME,
    master,
    replicas,
    sentinels,
    sentinelOptions,
    client(clientOptions) {
      const redis = new Redis({
        // See the top of the file: reconnection attempts at a flat 50 ms, so the client finds the promoted
        // replica as soon as the sentinels name it. A short disconnectTimeout: ioredis otherwise keeps a
        // 2 s timer per client after disconnect().
        retryStrategy: () => 50,
        disconnectTimeout: 100,
        ...clientOptions,
        ...sentinelOptions(),
      });
      redis.on('error', () => {});
      clients.add(redis);
      return redis;
    },
    async currentMaster() {
      const [first] = await reports();
      if (!first) throw new Error('no sentinel answered');
      return first;
    },
    waitForFailover(from, timeoutMs = 15_000) {
      return poll(
        async () => {
          const reported = await reports();
          const [candidate] = reported;
          if (!candidate || candidate.port === from.port) return undefined;
          if (reported.some((address) => address.port !== candidate.port)) return undefined;
          const [role] = (await adminOn(candidate.port, (redis) => redis.role())) as [string];
          return role === 'master' ? candidate : undefined;
        },
        timeoutMs,
        `a failover away from port ${from.port}`,
      );
    },
    replicationProxy(i = 0) {
      const proxy = proxies[i];
      if (!proxy) {
        throw new Error(
          `replica ${i} has no replication proxy (start the group with replicationProxy: true)`,
        );
      }
      return proxy;
    },
    dispose,
  };
}

/**
 * Jest helper: one Sentinel group for the test file (or describe block), started before its tests and
 * disposed after them. Returns a getter, since the group only exists once beforeAll has run.
 */
export function useSentinelGroup(options?: SentinelGroupOptions): () => SentinelGroup {
  if (typeof beforeAll !== 'function' || typeof afterAll !== 'function') {
    throw new Error('useSentinelGroup() must be called in a jest test file (beforeAll/afterAll are missing)');
  }
  let group: SentinelGroup | undefined;
  beforeAll(async () => {
    group = await startSentinelGroup(options);
  }, 60_000);
  afterAll(async () => {
    await group?.dispose();
    group = undefined;
  });
  return () => {
    if (!group)
      throw new Error('useSentinelGroup(): the group only exists inside tests and hooks of its block');
    return group;
  };
}
