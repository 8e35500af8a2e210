// Jest runs in ESM mode (ts-jest with useESM) because NestJS 12 ships ES modules only.
// Tests start their own redis-server processes, so suites run in a few workers at most (see maxWorkers).
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';

/**
 * The suites that need nothing but one Redis server: no pauses, restarts or second servers, no
 * server-wide counts (INFO, CLIENT LIST, every key). Without redis-server on PATH they run against the
 * server REDIS_URL names, one at a time, and the others are left out (scripts/check-redis.mjs says so).
 * That server is never paused, restarted or flushed; the suites leave only keys that expire.
 */
export const SINGLE_SERVER_SUITES = [
  'test/api/dead-waiter.spec.ts',
  'test/api/fifo.spec.ts',
  'test/api/first-wait.spec.ts',
  'test/api/holder-crash.spec.ts',
  'test/api/mutual-exclusion.spec.ts',
  'test/fencing/fenced-writes.spec.ts',
  'test/nest/locked-exclusion.spec.ts',
  'test/nest/locked-results.spec.ts',
  'test/nest/smoke.spec.ts',
];

/** The suites that need no Redis at all (the package's exports and layering, the engine's unit tier and the testing module on the in-memory store, the fault suite's checkers). */
export const NO_REDIS_SUITES = [
  'test/public-api.spec.ts',
  'test/structure.spec.ts',
  // The whole unit tier, read from its folder: a list by hand fell behind it.
  ...readdirSync(new URL('./test/unit', import.meta.url))
    .filter((file) => file.endsWith('.spec.ts'))
    .map((spec) => `test/unit/${spec}`),
  'test/testing/readme-example.spec.ts',
  'test/testing/testing-module.spec.ts',
  'test/testing/whole-app.spec.ts',
  ...[
    'errors',
    'fault-effects',
    'fence-order',
    'fenced-writes',
    'hangs',
    'key-hygiene',
    'lost-updates',
    'memory-pressure',
    'read-write',
    'semaphore',
    'sensitivity',
    'validity-windows',
  ].map((checker) => `test/chaos/${checker}.spec.ts`),
];

const probe = spawnSync('redis-server', ['--version']);
/** Whether redis-server runs from PATH (scripts/check-redis.mjs reads it too). */
export const REDIS_SERVER_INSTALLED = !probe.error && probe.status === 0;
const external = !REDIS_SERVER_INSTALLED && process.env.REDIS_URL ? process.env.REDIS_URL : '';
// Read by test/support/redis-server.ts, in this process and in the workers jest starts.
if (external) process.env.REDIS_LOCK_TEST_URL = external;

/**
 * The suites that run a second time with the lock on node-redis (the `node-redis` project): the store's
 * conformance and its properties across processes (exclusion, FIFO, crash recovery, renewal, fences,
 * reconnect, Cluster and its failover, replicas, the quorum), the fenced store and the Nest module.
 * Their lock clients come from test/support/lock-clients.ts.
 */
export const NODE_REDIS_SUITES = [
  'test/conformance/redis.conformance.spec.ts',
  'test/api/mutual-exclusion.spec.ts',
  'test/api/fifo.spec.ts',
  'test/api/first-wait.spec.ts',
  'test/api/holder-crash.spec.ts',
  'test/api/dead-waiter.spec.ts',
  'test/api/renewal.spec.ts',
  'test/api/fencing.spec.ts',
  'test/api/redis-restart.spec.ts',
  'test/api/cluster.spec.ts',
  'test/api/cluster-failover.spec.ts',
  'test/api/node-redis.spec.ts',
  'test/replication/replicas.spec.ts',
  'test/quorum/quorum-basics.spec.ts',
  'test/quorum/quorum-exclusion.spec.ts',
  'test/fencing/fenced-writes.spec.ts',
  'test/nest/node-redis-module.spec.ts',
];

/**
 * The suites that run a third time on node-redis 4, which murlock 4 uses (the `node-redis-4` project,
 * `redis` mapped to the `redis-4` package): the store's conformance, the first wait and the Nest module.
 * Their clients are made in this process; a worker they start loads the `redis` package itself.
 */
export const NODE_REDIS_4_SUITES = [
  'test/conformance/redis.conformance.spec.ts',
  'test/api/first-wait.spec.ts',
  'test/nest/node-redis-module.spec.ts',
];

/**
 * The suites whose bounds are about time (the engine, the stores' conformance, the quorum): `npm run
 * test:busy` runs them beside one busy loop per core. CI runs every suite once, these there and the rest
 * through `npm test` with LOCK_TEST_SKIP_BUSY=1, which leaves them out.
 */
export const BUSY_SUITES = ['test/api', 'test/conformance', 'test/quorum'];
const skipBusy = process.env.LOCK_TEST_SKIP_BUSY === '1';
const busyIgnored = skipBusy ? BUSY_SUITES.map((dir) => `<rootDir>/${dir}/`) : [];

const common = {
  rootDir: '.',
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {
    '^nestjs-redis-lock$': '<rootDir>/lib/index.ts',
    '^nestjs-redis-lock/testing$': '<rootDir>/lib/testing/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: '<rootDir>/tsconfig.spec.json' }],
  },
  setupFiles: ['<rootDir>/test/support/client-library.setup.ts'],
  setupFilesAfterEnv: ['<rootDir>/test/support/fail-on-unhandled.ts'],
};

const suites = (list) => list.map((suite) => `<rootDir>/${suite}`);

export default {
  // Three workers on two cores: the suites spend much of their time waiting on Redis, on child processes
  // and on the timers of the properties they check, so a third worker fills the idle time. Measured on
  // 2 cores: the calm suites 116 s with 2 workers, 83 s with 3 or 4; the timing-sensitive suites beside
  // two busy loops 201-219 s with 2, 144 s with 3, but at load 7 (scripts/test-busy.mjs keeps 2 there).
  // One against a REDIS_URL server, which the suites share.
  maxWorkers: external ? 1 : 3,
  // Bundles test/workers once per run, for spawnWorker().
  globalSetup: '<rootDir>/test/support/worker-bundles.mjs',
  globalTeardown: '<rootDir>/test/support/worker-bundles.teardown.mjs',
  testTimeout: 60_000,
  // CI names the file: its log ends with every failed test, whichever jest run it was in.
  reporters: process.env.LOCK_TEST_FAILURE_LOG
    ? ['default', '<rootDir>/test/support/failure-log-reporter.mjs']
    : ['default'],
  projects: [
    {
      ...common,
      displayName: 'ioredis',
      globals: { LOCK_TEST_CLIENT: 'ioredis' },
      // The node-redis suites of their own run in the node-redis project only.
      testPathIgnorePatterns: ['/node_modules/', '/node-redis[^/]*\\.spec\\.ts$', ...busyIgnored],
      testMatch: external
        ? suites([...SINGLE_SERVER_SUITES, ...NO_REDIS_SUITES])
        : ['<rootDir>/test/**/*.spec.ts'],
    },
    {
      ...common,
      displayName: 'node-redis',
      globals: { LOCK_TEST_CLIENT: 'node-redis' },
      testPathIgnorePatterns: ['/node_modules/', ...busyIgnored],
      testMatch: suites(
        external
          ? NODE_REDIS_SUITES.filter((suite) => SINGLE_SERVER_SUITES.includes(suite))
          : NODE_REDIS_SUITES,
      ),
    },
    // Not against a REDIS_URL server: none of its suites is a single-server one.
    ...(external
      ? []
      : [
          {
            ...common,
            displayName: 'node-redis-4',
            globals: { LOCK_TEST_CLIENT: 'node-redis', LOCK_TEST_NODE_REDIS: '4' },
            moduleNameMapper: { ...common.moduleNameMapper, '^redis$': '<rootDir>/node_modules/redis-4' },
            testPathIgnorePatterns: ['/node_modules/', ...busyIgnored],
            testMatch: suites(NODE_REDIS_4_SUITES),
          },
        ]),
  ],
};
