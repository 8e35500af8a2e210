// Throwaway redis-server processes for tests: free ports, no persistence, and a handle to stop, kill,
// restart, freeze (SIGSTOP) and thaw them. Every process is killed when the test process ends, even when a
// test fails, and the Redis on 6379 (someone else's) is never used. Without redis-server, the suites that
// need only one server run against REDIS_URL instead (externalServer below; jest.config.mjs).
//
// This module does not import '@jest/globals' (which throws outside jest), so that workers and scripts
// run with tsx can start servers too; only useRedis() needs jest, through the globals jest injects.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import Redis, { type RedisOptions } from 'ioredis';
import { sleep } from './event-loop';
import { killOnExit, processWide, terminate } from './processes';

export interface RedisServer {
  readonly port: number;
  /** redis://127.0.0.1:<port> */
  readonly url: string;
  /**
   * A new ioredis client to this server (connecting at once unless `options` say otherwise). Its 'error'
   * events are swallowed, since tests provoke outages on purpose; it is disconnected by dispose/stopAll.
   */
  client(options?: RedisOptions): Redis;
  /** SIGTERM (SIGKILL if still running after 5 s), then wait for the process to exit. */
  stop(): Promise<void>;
  /** SIGKILL, then wait for the process to exit. */
  kill(): Promise<void>;
  /** Starts again on the same port, stopping first if running; waits until ready. The dataset is empty. */
  restart(): Promise<void>;
  /** SIGSTOP: the server keeps its connections but answers nothing until resume(). */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
  /** INFO commandstats: command name (lowercase, e.g. 'evalsha', 'config|resetstat') to calls. */
  commandStats(): Promise<Map<string, number>>;
  /** CONFIG RESETSTAT. */
  resetStats(): Promise<void>;
  /** Every key matching `pattern` (SCAN, so never blocking the server), sorted. */
  keys(pattern?: string): Promise<string[]>;
  /** PTTL of a key: ms to live, -1 without expiry, -2 if missing. */
  ttlOf(key: string): Promise<number>;
  /**
   * Runs `work` on a fresh connection closed right after (no ready check, no retries, 5 s timeouts),
   * so it never skews the tests' clients; rejects if the server is down or does not answer.
   */
  admin<T>(work: (redis: Redis) => Promise<T>): Promise<T>;
  /** Disconnects this server's clients and kills it for good (restart() is then refused). */
  dispose(): Promise<void>;
}

/** Someone else's Redis listens there: never start on it, never connect to it. */
const FORBIDDEN_PORT = 6379;
const READY_LINE = 'Ready to accept connections';
const START_TIMEOUT_MS = 10_000;
/** How much of a server's output is kept for error messages. */
const OUTPUT_LIMIT = 16_384;
/** Admin connections must not hang a test forever if the server is paused or gone. */
const ADMIN_TIMEOUT_MS = 5_000;

/** Servers not yet disposed, in this process (shared by the test files a jest worker runs). */
const servers = processWide('redis-servers', () => new Set<RedisServer>());

/**
 * The redis-server binary: the one on PATH, or LOCK_TEST_REDIS_SERVER's (scripts/redis-check.sh runs
 * suites on a recent Redis built apart).
 */
const REDIS_SERVER = process.env.LOCK_TEST_REDIS_SERVER || 'redis-server';

let installed = false;
function assertRedisInstalled(): void {
  if (installed) return;
  const probe = spawnSync(REDIS_SERVER, ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error(
      'redis-server was not found on PATH; the tests start their own Redis servers on free ports. Install ' +
        'it (`apt-get install redis-server` on Debian/Ubuntu, `brew install redis` on macOS) and run the tests ' +
        'again, or set REDIS_URL to run only the suites that need one server (jest.config.mjs).',
    );
  }
  installed = true;
}

/** Rejects extra arguments that would break the harness instead of letting a start time out. */
function checkArgs(args: readonly string[]): void {
  for (const [i, arg] of args.entries()) {
    if (arg === '--port' || arg === '--bind') {
      throw new Error(`startRedis: ${arg} is chosen by the harness and cannot be given in args`);
    }
    if (arg === '--loglevel' && (args[i + 1] === 'warning' || args[i + 1] === 'nothing')) {
      // Readiness is detected from the "Ready to accept connections" line, logged at the notice level.
      throw new Error(`startRedis: --loglevel ${args[i + 1]} would hide the line that signals readiness`);
    }
  }
}

/** A port that was free a moment ago on 127.0.0.1 (another process may still take it: callers retry). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new Error(`unexpected address for a TCP server: ${String(address)}`));
      });
    });
  });
}

export class StartError extends Error {
  constructor(
    message: string,
    /** The port was taken: worth trying again (another port, or the same one a bit later). */
    readonly portInUse: boolean,
  ) {
    super(message);
  }
}

/** What differs when launch() starts a Sentinel: a config file (it must come first) and its own ready line. */
export interface LaunchMode {
  configFile?: string;
  readyLine?: string;
}

/** Spawns redis-server on `port` and resolves once it accepts connections (its ready line is logged). */
export function launch(port: number, args: readonly string[], mode: LaunchMode = {}): Promise<ChildProcess> {
  const readyLine = mode.readyLine ?? READY_LINE;
  const child = spawn(
    REDIS_SERVER,
    [
      ...(mode.configFile === undefined ? [] : [mode.configFile]),
      ...['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      ...['--protected-mode', 'no'],
      // A replica's full sync starts at once, not after the 5 s Redis waits by default for more replicas
      // to share it (a Sentinel, started from its own file, takes no such option).
      ...(mode.configFile === undefined ? ['--repl-diskless-sync-delay', '0'] : []),
      // Not 'warning': Redis logs the ready line at the notice level. The output is piped, not shown,
      // except in error messages, where the extra detail helps.
      ...['--loglevel', 'notice'],
      ...args,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  // The last OUTPUT_LIMIT characters of its stdout and stderr, for error messages.
  let output = '';
  const append = (chunk: Buffer): void => {
    output = (output + chunk.toString()).slice(-OUTPUT_LIMIT);
  };
  // Both pipes are read for the whole life of the process, so that it never blocks on a full pipe.
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  // 'error' also covers a failed kill(); without a permanent listener it would crash the test process.
  child.on('error', (error) => {
    output = `${output}\n[harness] ${error.message}`.slice(-OUTPUT_LIMIT);
  });
  // No pid: it failed to spawn, and the 'error' event below reports why.
  if (child.pid !== undefined) killOnExit(child);

  return new Promise<ChildProcess>((resolve, reject) => {
    const fail = (error: StartError): void => {
      cleanup();
      child.kill('SIGKILL');
      reject(error);
    };
    const onData = (): void => {
      if (!output.includes(readyLine)) return;
      cleanup();
      resolve(child);
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
      const portInUse = /Address already in use/i.test(output);
      fail(
        new StartError(
          `redis-server on port ${port} exited (code ${code}, signal ${signal}) before it was ready. ` +
            `Its output:\n${output}`,
          portInUse,
        ),
      );
    };
    const onError = (error: Error): void => {
      fail(new StartError(`could not run redis-server: ${error.message}`, false));
    };
    const timer = setTimeout(() => {
      fail(
        new StartError(
          `redis-server on port ${port} was not ready within ${START_TIMEOUT_MS} ms ` +
            `(no "${readyLine}" line). Its output:\n${output}`,
          false,
        ),
      );
    }, START_TIMEOUT_MS);
    const cleanup = (): void => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.off('exit', onExit);
      child.off('error', onError);
    };
    child.stdout?.on('data', onData);
    child.once('exit', onExit);
    child.once('error', onError);
  });
}

/** Starts a redis-server on a free port (never 6379), without persistence, and waits until it is ready. */
export async function startRedis(options: { args?: string[] } = {}): Promise<RedisServer> {
  assertRedisInstalled();
  const args = [...(options.args ?? [])];
  checkArgs(args);
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    if (port === FORBIDDEN_PORT) continue;
    try {
      const server = createHandle(port, args, await launch(port, args));
      servers.add(server);
      return server;
    } catch (error) {
      // Another process took the port between the probe and redis-server's bind: try another one.
      if (!(error instanceof StartError && error.portInUse) || attempt >= 5) throw error;
    }
  }
}

/**
 * Runs `work` on a fresh connection to 127.0.0.1:`port` that is closed right after, so it never skews
 * the tests' clients (a server's, or a sentinel's).
 */
export async function adminOn<T>(port: number, work: (redis: Redis) => Promise<T>): Promise<T> {
  if (port === FORBIDDEN_PORT) throw new Error('port 6379 belongs to someone else: never connected to');
  const redis = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    // No INFO on connect (it would show in commandstats) and no retries: fail fast and clearly.
    enableReadyCheck: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: ADMIN_TIMEOUT_MS,
    commandTimeout: ADMIN_TIMEOUT_MS,
  });
  redis.on('error', () => {});
  try {
    await redis.connect();
    return await work(redis);
  } finally {
    redis.disconnect();
  }
}

function createHandle(port: number, args: readonly string[], first: ChildProcess): RedisServer {
  let current = first;
  let disposed = false;
  const clients = new Set<Redis>();
  const running = (): boolean => current.exitCode === null && current.signalCode === null;

  const admin = <T>(work: (redis: Redis) => Promise<T>): Promise<T> => adminOn(port, work);

  const server: RedisServer = {
    port,
    url: `redis://127.0.0.1:${port}`,
    client(options) {
      // A short disconnectTimeout: ioredis otherwise keeps a 2 s timer per client after disconnect().
      const redis = new Redis({
        lazyConnect: false,
        disconnectTimeout: 100,
        ...options,
        host: '127.0.0.1',
        port,
      });
      // Tests kill and pause servers on purpose: an 'error' event without a listener would crash the run.
      redis.on('error', () => {});
      // Kept even after 'end': a test may connect() it again, and disconnecting twice is harmless.
      clients.add(redis);
      return redis;
    },
    stop: () => terminate(current, 'SIGTERM'),
    kill: () => terminate(current, 'SIGKILL'),
    async restart() {
      if (disposed) throw new Error(`redis-server on port ${port} was disposed`);
      if (running()) await server.stop();
      // The port is normally free at once (Redis binds with SO_REUSEADDR), but a client of another test
      // process may have grabbed it as its local port for a moment: retry for a while before giving up.
      const deadline = Date.now() + START_TIMEOUT_MS;
      for (;;) {
        try {
          current = await launch(port, args);
          return;
        } catch (error) {
          if (!(error instanceof StartError && error.portInUse) || Date.now() > deadline) throw error;
          await sleep(100);
        }
      }
    },
    pause() {
      if (!running()) throw new Error(`redis-server on port ${port} is not running`);
      current.kill('SIGSTOP');
    },
    resume() {
      current.kill('SIGCONT');
    },
    commandStats: () =>
      admin(async (redis) => {
        const stats = new Map<string, number>();
        for (const line of (await redis.info('commandstats')).split('\n')) {
          const match = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
          if (match) stats.set(match[1].toLowerCase(), Number(match[2]));
        }
        return stats;
      }),
    resetStats: () =>
      admin(async (redis) => {
        await redis.config('RESETSTAT');
      }),
    keys: (pattern = '*') =>
      admin(async (redis) => {
        // SCAN may return a key more than once; a Set removes the duplicates.
        const found = new Set<string>();
        let cursor = '0';
        do {
          const [next, batch] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
          cursor = next;
          for (const key of batch) found.add(key);
        } while (cursor !== '0');
        return [...found].sort();
      }),
    ttlOf: (key) => admin((redis) => redis.pttl(key)),
    admin,
    async dispose() {
      disposed = true;
      servers.delete(server);
      const all = [...clients];
      clients.clear();
      await Promise.all([...all.map(disconnect), terminate(current, 'SIGKILL')]);
    },
  };
  return server;
}

/** Disconnects `redis` and resolves once it has closed for good (status 'end'), or after a second anyway. */
async function disconnect(redis: Redis): Promise<void> {
  // Between reconnection attempts there is no socket to close, so ioredis cancels the next attempt
  // without ever emitting 'end': nothing to wait for.
  if (redis.status === 'end' || redis.status === 'reconnecting' || redis.status === 'close') {
    redis.disconnect();
    return;
  }
  const ended = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 1_000);
    redis.once('end', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  redis.disconnect();
  await ended;
}

/**
 * Disconnects every client made through the harness and kills every server started in this process that
 * is still there (paused ones included), whichever test file started it.
 */
export async function stopAll(): Promise<void> {
  await Promise.all([...servers].map((server) => server.dispose()));
}

/**
 * Jest helper: one server for the test file (or describe block), started before its tests and disposed
 * after them. Returns a getter, since the server only exists once beforeAll has run.
 */
export function useRedis(options?: { args?: string[] }): () => RedisServer {
  // jest's injected globals rather than '@jest/globals', which would make this module unusable outside jest.
  if (typeof beforeAll !== 'function' || typeof afterAll !== 'function') {
    throw new Error('useRedis() must be called in a jest test file (beforeAll/afterAll are missing)');
  }
  let server: RedisServer | undefined;
  beforeAll(async () => {
    const external = process.env.REDIS_LOCK_TEST_URL;
    server = external ? externalServer(external) : await startRedis(options);
  });
  afterAll(async () => {
    await server?.dispose();
    server = undefined;
  });
  return () => {
    if (!server) throw new Error('useRedis(): the server only exists inside tests and hooks of its block');
    return server;
  };
}

/**
 * The server REDIS_URL names, when redis-server is not installed (see SINGLE_SERVER_SUITES in
 * jest.config.mjs): clients and per-key reads only. It is someone else's, so everything that would
 * stop, freeze, restart it or read its server-wide state is refused instead of done.
 */
function externalServer(url: string): RedisServer {
  const clients = new Set<Redis>();
  const parsed = new URL(url);
  const refuse = (what: string) => (): never => {
    throw new Error(
      `${what} needs a redis-server of the test's own; REDIS_URL (${parsed.host}) is never touched`,
    );
  };
  const client = (options?: RedisOptions): Redis => {
    const redis = new Redis(url, { disconnectTimeout: 100, ...options });
    redis.on('error', () => {});
    clients.add(redis);
    return redis;
  };
  return {
    port: Number(parsed.port || 6379),
    url,
    client,
    stop: refuse('stop()'),
    kill: refuse('kill()'),
    restart: refuse('restart()'),
    pause: refuse('pause()'),
    resume: refuse('resume()'),
    commandStats: refuse('commandStats()'),
    resetStats: refuse('resetStats()'),
    keys: refuse('keys()'),
    admin: refuse('admin()'),
    async ttlOf(key) {
      const redis = client();
      try {
        return await redis.pttl(key);
      } finally {
        clients.delete(redis);
        await disconnect(redis);
      }
    },
    async dispose() {
      const all = [...clients];
      clients.clear();
      await Promise.all(all.map(disconnect));
    },
  };
}
