// Hostile connections: a client that was disconnected (status 'end'), a client pointing at a port where
// nothing listens (fresh, lazy, or already reconnecting), and an ioredis Cluster whose only node is
// unreachable. Every call must fail with RedisUnavailableError within a bound, never wait in ioredis'
// offline queue, and leave nothing behind. The test server only serves the runner's checks (nothing
// may appear in it) and the probe.
import { describe, expect } from '@jest/globals';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { FencedStore, LockService, type LockServiceOptions, RedisUnavailableError } from '../../lib';
import { until } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';
import { type Base, closedPort, hostileTable, type Row } from './hostile-fixtures';

const server = useRedis();

interface Connections extends Base {
  /** A client that connected to the test server and was then disconnected for good. */
  ended(): Promise<Redis>;
  /** A client pointing at a port where nothing listens (status 'connecting', or 'wait' when lazy). */
  nowhere(options?: RedisOptions): Promise<Redis>;
  /** A Cluster whose only startup node is a port where nothing listens. */
  nowhereCluster(): Promise<Cluster>;
  /** A LockService on `client`, closed after the row. */
  service(client: Redis | Cluster, options?: LockServiceOptions): LockService;
}

function setup(base: Base): Connections {
  const track = <T extends Redis | Cluster>(client: T): T => {
    client.on('error', () => {});
    base.defer(() => {
      // disconnect() between reconnection attempts never flushes ioredis' offline queue: a call of a
      // known-bug row would then sit there until its commandTimeout timer (5 s) outlived the suite.
      (client as unknown as { flushQueue(error: Error): void }).flushQueue(new Error('test teardown'));
      client.disconnect();
    });
    return client;
  };
  return {
    ...base,
    async ended() {
      const client = track(base.server.client());
      await client.ping();
      client.disconnect();
      await until(
        async () => client.status,
        (status) => status === 'end',
        2_000,
      );
      return client;
    },
    async nowhere(options) {
      const port = await closedPort();
      // A short disconnectTimeout: ioredis otherwise keeps a 2 s timer per client after disconnect().
      return track(new Redis({ host: '127.0.0.1', port, disconnectTimeout: 100, ...options }));
    },
    async nowhereCluster() {
      const port = await closedPort();
      return track(
        new Cluster([{ host: '127.0.0.1', port }], {
          clusterRetryStrategy: () => 200,
          redisOptions: { disconnectTimeout: 100 },
        }),
      );
    },
    service(client, options) {
      const locks = new LockService(client, options);
      base.defer(() => locks.close());
      return locks;
    },
  };
}

const UNAVAILABLE = { error: RedisUnavailableError, code: 'LOCK_REDIS_UNAVAILABLE' } as const;
const down = (detail: string) =>
  new RegExp(`Redis is unavailable: ${detail}\\. Check the connection and retry`);
/** Fail fast: far below commandTimeout (5 s by default). */
const FAST = 300;

const neverRuns = () => {
  throw new Error('must not run');
};

type Call = [string, (locks: LockService) => Promise<unknown>];
const calls: Call[] = [
  ['acquire', (locks) => locks.acquire('k')],
  ['tryAcquire', (locks) => locks.tryAcquire('k')],
  ['using', (locks) => locks.using('k', neverRuns)],
  ['inspect', (locks) => locks.inspect('k')],
];

const rows: Row<Connections>[] = [
  ...calls.map(
    ([method, call]): Row<Connections> => ({
      name: `${method} on a disconnected client (status 'end')`,
      run: async (ctx) => call(ctx.service(await ctx.ended())),
      ...UNAVAILABLE,
      message: down('connection is end'),
      within: FAST,
    }),
  ),
  ...calls.map(
    ([method, call]): Row<Connections> => ({
      name: `${method} on a client at a closed port, once it failed to connect (reconnecting)`,
      run: async (ctx) => {
        const client = await ctx.nowhere();
        await until(
          async () => client.status,
          (status) => status === 'reconnecting',
          2_000,
        );
        const locks = ctx.service(client);
        const started = performance.now();
        await expect(call(locks)).rejects.toBeInstanceOf(RedisUnavailableError);
        expect(performance.now() - started).toBeLessThan(FAST);
        return call(locks);
      },
      ...UNAVAILABLE,
      message: down('connection is (reconnecting|close)'),
    }),
  ),
  {
    name: 'acquire on a client at a closed port, right after creating it (connecting), commandTimeout 300',
    run: async (ctx) => ctx.service(await ctx.nowhere(), { commandTimeout: 300 }).acquire('k'),
    ...UNAVAILABLE,
    message: down('(no reply within 300 ms|could not connect \\(connection is \\w+\\)|connection is \\w+)'),
    within: 1_000,
  },
  {
    name: 'acquire on a client at a closed port, right after creating it (connecting), fails fast',
    run: async (ctx) => ctx.service(await ctx.nowhere()).acquire('k'),
    ...UNAVAILABLE,
    message: down('.*'),
    within: 1_000,
  },
  {
    name: 'tryAcquire on a lazyConnect client at a closed port (wait), commandTimeout 300',
    run: async (ctx) =>
      ctx.service(await ctx.nowhere({ lazyConnect: true }), { commandTimeout: 300 }).tryAcquire('k'),
    ...UNAVAILABLE,
    message: down('.*'),
    within: 1_000,
  },
  {
    name: 'tryAcquire on a lazyConnect client at a closed port (wait), fails fast',
    run: async (ctx) => ctx.service(await ctx.nowhere({ lazyConnect: true })).tryAcquire('k'),
    ...UNAVAILABLE,
    message: down('.*'),
    within: 1_000,
  },
  {
    name: 'acquire on a Cluster with an unreachable node, commandTimeout 300',
    run: async (ctx) => ctx.service(await ctx.nowhereCluster(), { commandTimeout: 300 }).acquire('k'),
    ...UNAVAILABLE,
    message: down('.*'),
    within: 1_000,
  },
  {
    name: 'using on a Cluster with an unreachable node, once it gave up connecting',
    run: async (ctx) => {
      const cluster = await ctx.nowhereCluster();
      await until(
        async () => cluster.status,
        (status) => status === 'reconnecting' || status === 'close',
        3_000,
      );
      return ctx.service(cluster).using('k', neverRuns);
    },
    ...UNAVAILABLE,
    message: down('connection is (reconnecting|close)'),
    within: 4_000,
  },
  {
    name: 'acquire on a Cluster with an unreachable node, right after creating it, fails fast',
    run: async (ctx) => ctx.service(await ctx.nowhereCluster()).acquire('k'),
    ...UNAVAILABLE,
    message: down('.*'),
    within: 1_000,
  },
  {
    name: 'close() of a service whose client is unreachable resolves at once, a call in flight',
    accept: true,
    run: async (ctx) => {
      const client = await ctx.nowhere();
      const locks = new LockService(client, { commandTimeout: 300 });
      const pending = locks.tryAcquire('k').catch((error: unknown) => error);
      await locks.close();
      // The call in flight still settles, typed (by commandTimeout: see the 'connecting' rows).
      ctx.defer(async () => expect(await pending).toBeInstanceOf(RedisUnavailableError));
    },
    within: FAST,
  },
  // FencedStore shares the client: it must fail as fast.
  ...(
    [
      [
        "set on a disconnected client (status 'end')",
        async (ctx: Connections) => new FencedStore(await ctx.ended()).set('r', 1, 'v'),
        'connection is end',
      ],
      [
        "get on a disconnected client (status 'end')",
        async (ctx: Connections) => new FencedStore(await ctx.ended()).get('r'),
        'connection is end',
      ],
      [
        'set on a client at a closed port, right after creating it (connecting)',
        async (ctx: Connections) => new FencedStore(await ctx.nowhere()).set('r', 1, 'v'),
        'the connection closed before the reply \\(the fenced write to "r" may or may not have been applied\\)',
      ],
      [
        'get on a lazyConnect client at a closed port (wait)',
        async (ctx: Connections) => new FencedStore(await ctx.nowhere({ lazyConnect: true })).get('r'),
        'the connection closed before the reply',
      ],
      [
        'set on a Cluster with an unreachable node, right after creating it',
        async (ctx: Connections) => new FencedStore(await ctx.nowhereCluster()).set('r', 1, 'v'),
        '.*',
      ],
    ] as const
  ).map(
    ([what, run, detail]): Row<Connections> => ({
      name: `FencedStore.${what}`,
      run,
      ...UNAVAILABLE,
      message: down(detail),
      within: 1_000,
    }),
  ),
];

describe('hostile connections fail fast with RedisUnavailableError', () => hostileTable(rows, server, setup));
