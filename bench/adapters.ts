/**
 * One shape for every library compared: acquire a key (or several at once, scenario 6), release what was
 * acquired. Each adapter uses the library the way its documentation does, with its defaults unless the
 * name says otherwise:
 *
 * - nestjs-redis-lock: `new LockService(client)`, `acquire(key)` (ttl 30 s, waitTimeout 10 s, no renewal),
 *   `lease.release()`; several keys: `acquire([a, b])`, one lease over both (the library sorts them and
 *   queues on each in turn);
 * - nestjs-redis-lock-node-redis: the same on a node-redis client (`createClient()`, connected) to the
 *   same server, instead of ioredis;
 * - redlock: `new Redlock([client])` (retryCount 10, retryDelay 200 ms, retryJitter 100 ms),
 *   `acquire([key], 30_000)`, `lock.release()`; several keys: `acquire([a, b], 30_000)`, one script that
 *   sets all of them or none, retried as configured;
 * - redlock-retry-inf: the same with `retryCount: -1` (retries until it gets the lock);
 * - redlock-10ms: tuned as a user would for short critical sections: `retryDelay: 10`, `retryJitter: 5`,
 *   retrying until it gets the lock, or for as long as the call's wait bound where one is given;
 * - redis-semaphore: `new Mutex(client, key)` per acquisition (lockTimeout 10 s, acquireTimeout 10 s,
 *   retryInterval 10 ms), `acquire()`, `release()`; several keys: it has no multi-key mutex (its
 *   MultiSemaphore takes several permits of ONE key), so one Mutex per key, acquired in sorted order (no
 *   deadlock), the ones taken released if a later one times out, all released together at the end;
 * - raw-floor: `SET key token PX 30000 NX` and a Lua compare-and-delete, on the same connection; it
 *   cannot wait, so it is only used uncontended.
 *
 * A wait bound (`acquire(key, waitMs, deadline)`, the open-loop runs) goes where the library takes one:
 * this library's `waitTimeout` and `deadline` (from the request's arrival), redis-semaphore's `acquireTimeout`, redlock-10ms's `retryCount` (waitMs / 10).
 * redlock keeps its defaults (10 retries about 200 ms apart: it gives up after 2-3 s by itself).
 *
 * Over several masters (scenario 7) each library takes the clients of all of them: this library
 * `new LockService([5 clients])` (nodeTimeout 100 ms), redlock `new Redlock([5 clients], ...)`, and
 * redis-semaphore its `RedlockMutex([5 clients], key)` (same defaults as its Mutex).
 */
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import type { Redis } from 'ioredis';
import { createClient } from 'redis';
import { Mutex, RedlockMutex } from 'redis-semaphore';
import Redlock from 'redlock';
import type * as Library from '../lib';
import { type CommandCounts, instrumentNodeRedis } from './instrument';
import type { LibName } from './ipc';

// The built package (npm run build), as users run it: not the TypeScript sources through tsx, whose
// transpiled output differs (helpers for function names, source maps) and would be measured instead.
// BENCH_DIST points at another build of it (`tsc -p tsconfig.build.json --outDir DIR`), e.g. to leave a
// dist/ that something else is using alone.
const { LockService }: typeof Library = require(
  process.env.BENCH_DIST ? resolve(process.env.BENCH_DIST) : '../dist',
);

export interface Held {
  release(): Promise<unknown>;
  /** This library's lease token, to match the grant's push with the acquisition. */
  readonly token?: string;
}

export interface LockAdapter {
  /**
   * `waitMs`: give up waiting after about this long, where the library can bound its wait. `deadline`
   * (ms since the epoch): when the caller gives up, for a library that takes one (this library only).
   */
  acquire(key: string, waitMs?: number, deadline?: number): Promise<Held>;
  /** All the keys or none, held until the one release (scenario 6). */
  acquireAll(keys: readonly string[]): Promise<Held>;
  /** Waiters queued in Redis for these keys, if the library keeps a queue (this library only). */
  queued?(keys: readonly string[]): Promise<number>;
  close(): Promise<void>;
}

const LEASE_MS = 30_000;
/** redlock-10ms's retry delay. */
const REDLOCK_TUNED_DELAY_MS = 10;

const FLOOR_RELEASE =
  "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

/** `clients`: one Redis, or every master of a quorum (the first also serves the critical section). */
export function createAdapter(lib: LibName, clients: readonly Redis[], counts?: CommandCounts): LockAdapter {
  const client = clients[0];
  const quorum = clients.length > 1;
  switch (lib) {
    case 'nestjs-redis-lock':
    case 'nestjs-redis-lock-baseline': {
      // The baseline: the build --baseline named (BENCH_BASELINE), with the same adapter.
      const Service: typeof LockService =
        lib === 'nestjs-redis-lock'
          ? LockService
          : require(resolve(process.env.BENCH_BASELINE ?? '')).LockService;
      const locks = new Service(quorum ? [...clients] : client);
      for (const c of clients) counts?.nameDefinedScripts(c);
      return {
        // Plain functions, not async ones: no extra frame per waiter on the heap (scenario 5 measures it).
        acquire: (key, waitMs, deadline) =>
          waitMs === undefined ? locks.acquire(key) : locks.acquire(key, { waitTimeout: waitMs, deadline }),
        acquireAll: (keys) => locks.acquire(keys),
        async queued(keys) {
          let sum = 0;
          for (const key of keys) sum += (await locks.inspect(key)).queueLength;
          return sum;
        },
        close: () => locks.close(),
      };
    }
    case 'nestjs-redis-lock-node-redis': {
      if (quorum) throw new Error('nestjs-redis-lock-node-redis: one server only');
      const { host, port } = client.options;
      const nodeRedis = createClient({ socket: { host, port } });
      nodeRedis.on('error', () => {});
      if (counts) instrumentNodeRedis(nodeRedis, counts);
      // Connecting now: the first acquire waits for it (the harness measures only after a warm-up).
      nodeRedis.connect().catch(() => {});
      const locks = new LockService(nodeRedis);
      return {
        acquire: (key, waitMs, deadline) =>
          waitMs === undefined ? locks.acquire(key) : locks.acquire(key, { waitTimeout: waitMs, deadline }),
        acquireAll: (keys) => locks.acquire(keys),
        close: async () => {
          await locks.close();
          nodeRedis.destroy();
        },
      };
    }
    case 'redlock':
    case 'redlock-retry-inf':
    case 'redlock-10ms': {
      const settings =
        lib === 'redlock'
          ? {}
          : lib === 'redlock-10ms'
            ? { retryCount: -1, retryDelay: REDLOCK_TUNED_DELAY_MS, retryJitter: 5 }
            : { retryCount: -1 };
      const redlock = new Redlock([...clients], settings);
      // Only the tuned one is bounded per call: the others are measured as configured.
      const bound = (waitMs?: number) =>
        lib === 'redlock-10ms' && waitMs !== undefined
          ? { retryCount: Math.ceil(waitMs / REDLOCK_TUNED_DELAY_MS) }
          : undefined;
      const { acquireScript, extendScript, releaseScript } = redlock.scripts;
      counts?.nameScript(acquireScript.hash, 'acquire');
      counts?.nameScript(extendScript.hash, 'extend');
      counts?.nameScript(releaseScript.hash, 'release');
      return {
        acquire: (key, waitMs) =>
          redlock.acquire([key], LEASE_MS, bound(waitMs)).then((lock) => ({ release: () => lock.release() })),
        acquireAll: (keys) =>
          redlock.acquire([...keys], LEASE_MS).then((lock) => ({ release: () => lock.release() })),
        close: async () => {},
      };
    }
    case 'redis-semaphore':
      if (quorum) {
        return {
          acquire: (key) => {
            const mutex = new RedlockMutex([...clients], key);
            return mutex.acquire().then(() => ({ release: () => mutex.release() }));
          },
          acquireAll: () => Promise.reject(new Error('redis-semaphore: RedlockMutex takes one key')),
          close: async () => {},
        };
      }
      return {
        acquire: (key, waitMs) => {
          const mutex = new Mutex(client, key, waitMs === undefined ? undefined : { acquireTimeout: waitMs });
          return mutex.acquire().then(() => ({ release: () => mutex.release() }));
        },
        acquireAll: (keys) => acquireSorted(client, keys),
        close: async () => {},
      };
    case 'raw-floor': {
      if (quorum) throw new Error('raw floor: one server only');
      client.defineCommand('floorRelease', { numberOfKeys: 1, lua: FLOOR_RELEASE });
      counts?.nameDefinedScripts(client);
      const release = (client as unknown as { floorRelease(key: string, token: string): Promise<number> })
        .floorRelease;
      const prefix = randomBytes(6).toString('base64url');
      let n = 0;
      return {
        async acquire(key) {
          const token = `${prefix}:${++n}`;
          if ((await client.set(key, token, 'PX', LEASE_MS, 'NX')) !== 'OK') {
            throw new Error('raw floor: the key is taken (the floor never waits)');
          }
          return { release: () => release.call(client, key, token) };
        },
        acquireAll: () => Promise.reject(new Error('raw floor: single keys only')),
        close: async () => {},
      };
    }
  }
}

/**
 * redis-semaphore over several keys, as users write it: one Mutex per key, taken in sorted order (every
 * caller the same order, so no two wait on each other); if one times out, those already taken are let go.
 * Released together (not one after the other), the most favourable way for this library.
 */
async function acquireSorted(client: Redis, keys: readonly string[]): Promise<Held> {
  const taken: Mutex[] = [];
  try {
    for (const key of [...keys].sort()) {
      const mutex = new Mutex(client, key);
      await mutex.acquire();
      taken.push(mutex);
    }
  } catch (error) {
    await Promise.allSettled(taken.map((mutex) => mutex.release()));
    throw error;
  }
  return { release: () => Promise.all(taken.map((mutex) => mutex.release())) };
}
