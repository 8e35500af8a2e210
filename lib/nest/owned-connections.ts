/**
 * The connections the module opens itself (from `url`, `urls` or `redis`) and closes on shutdown, on
 * whichever client library the application installed: ioredis when it is there (and always for
 * `redis`, which are ioredis options), else node-redis (`redis`). Both are optional peer dependencies,
 * so neither is imported until a connection is opened.
 */
import { createRequire } from 'node:module';
import type { Logger } from '@nestjs/common';
import type { Redis, RedisOptions } from 'ioredis';
import { LockOptionsError } from '../errors/lock-options.error';
import { describeValue } from '../options/describe-value';
import { watchesSentinels } from '../protocol/sentinel-follower';

/** A connection the module opened: connected in onModuleInit, closed on shutdown. */
export interface OwnedConnection {
  readonly client: object;
  /** Starts connecting; a failure is logged and retried by the client, never thrown. */
  connect(): void;
  /** Closes it, resolving once its socket is closed; never waits on Redis for long. */
  close(): Promise<void>;
  /** Drops it at once (the module failed to start). */
  drop(): void;
}

type Library = 'ioredis' | 'redis';

/**
 * `require` where it exists (the published CommonJS build); from the working directory in an ES module
 * host such as a test runner, which resolves the application's own packages.
 */
const load: NodeJS.Require =
  typeof require === 'function' ? require : createRequire(`${process.cwd()}/package.json`);

function tryLoad(library: Library): unknown {
  try {
    return load(library);
  } catch (error) {
    if ((error as { code?: string }).code === 'MODULE_NOT_FOUND') return undefined;
    throw error;
  }
}

/**
 * The connections for `urls` (`undefined`: from `redis` alone). Connected in onModuleInit, not here:
 * if the application fails to start, nothing is left open.
 */
export function openOwned(
  urls: ReadonlyArray<string | undefined>,
  redis: Record<string, unknown> | undefined,
  label: string,
  logger: Logger,
  hint: string,
): OwnedConnection[] {
  const ioredis = tryLoad('ioredis') as { Redis: typeof Redis } | undefined;
  if (ioredis) return openIoredis(ioredis.Redis, urls, redis, label, logger, hint);
  if (redis !== undefined) {
    throw new LockOptionsError(
      `${label}: redis takes ioredis options, and ioredis is not installed. Install it (npm i ioredis), ` +
        'or pass url, or your own connected client as client (node-redis createClient() works).',
    );
  }
  const nodeRedis = tryLoad('redis') as { createClient: NodeRedisFactory } | undefined;
  if (nodeRedis) return urls.map((url) => openNodeRedis(nodeRedis.createClient, url as string, logger, hint));
  throw new LockOptionsError(
    `${label}: no Redis client library is installed. Install ioredis (npm i ioredis) or node-redis ` +
      '(npm i redis).',
  );
}

/** ioredis' disconnectTimeout for connections the module opens (see openIoredis). */
const OWNED_DISCONNECT_TIMEOUT = 300;
/** How long QUIT may wait for its reply before the socket is dropped (a frozen server never answers). */
const QUIT_TIMEOUT = 1_000;
/** How long to wait for the socket to close after dropping it (ioredis destroys it after 2 s by default). */
const DISCONNECT_TIMEOUT = 3_000;

/**
 * ioredis keeps a timer of disconnectTimeout (2 s by default) alive after a disconnect while the socket
 * is still connecting; a module that closes its own connection should not hold the process that long.
 * Yours wins if you set it.
 */
function openIoredis(
  RedisClass: typeof Redis,
  urls: ReadonlyArray<string | undefined>,
  redis: Record<string, unknown> | undefined,
  label: string,
  logger: Logger,
  hint: string,
): OwnedConnection[] {
  const redisOptions = {
    disconnectTimeout: OWNED_DISCONNECT_TIMEOUT,
    ...(redis as RedisOptions),
    lazyConnect: true,
  };
  const clients: Redis[] = [];
  try {
    for (const url of urls)
      clients.push(url === undefined ? new RedisClass(redisOptions) : new RedisClass(url, redisOptions));
  } catch (error) {
    for (const client of clients) client.disconnect();
    throw new LockOptionsError(
      `${label}: ioredis refused the connection options (${error instanceof Error ? error.message : describeValue(error)}).`,
      error,
    );
  }
  return clients.map((client) => {
    watchIoredis(client, logger, hint);
    return {
      client,
      connect: () => {
        if (client.status === 'wait') client.connect().catch(() => {});
      },
      close: () => closeIoredis(client),
      drop: () => client.disconnect(),
    };
  });
}

/**
 * Closes an ioredis connection and resolves once its socket is really closed, so nothing of ours is
 * left open after shutdown; never waits on Redis for longer than the bounds above. A Sentinel client
 * with failoverDetector also holds a connection to each sentinel, which QUIT leaves open and only
 * disconnect() closes.
 */
async function closeIoredis(client: Redis): Promise<void> {
  const sentinels = watchesSentinels(client);
  if (client.status === 'end') {
    // Ended by itself (its retryStrategy gave up): that ended the master's connection only.
    if (sentinels) client.disconnect();
    return;
  }
  if (client.status === 'close' || client.status === 'reconnecting') {
    // Between reconnection attempts there is no socket: disconnect() only cancels the next attempt (and
    // closes the sentinels' connections), and ioredis emits no 'end' for it: nothing to wait for.
    client.disconnect();
    return;
  }
  // A socket still connecting connects before it closes, and ioredis opens the sentinels' connections
  // on that connect, after the disconnect below: they are closed again once the socket has ended.
  const connecting = client.status === 'connecting';
  let ended = false;
  const end = new Promise<void>((resolve) => {
    client.once('end', () => {
      ended = true;
      resolve();
    });
  });
  // QUIT lets pending replies arrive first; only when ready, else it would wait on the reconnect loop.
  // The sentinels' connections are dropped as soon as QUIT is answered, while the socket is still open:
  // its close then clears the timer ioredis arms on disconnect().
  if (client.status === 'ready')
    client.quit().then(
      () => {
        if (sentinels) client.disconnect();
      },
      () => client.disconnect(),
    );
  else client.disconnect();
  await settled(end, QUIT_TIMEOUT);
  if (!ended) {
    // No answer (a frozen server): drop the socket ourselves.
    client.disconnect();
    await settled(end, DISCONNECT_TIMEOUT);
  }
  if (sentinels && connecting) client.disconnect();
}

/**
 * An owned connection reports its outages once each (not on every reconnect attempt) in the app's log:
 * an error, or a connection that closes again before Redis answered as ready (a port where something
 * else listens, a TLS mismatch), which ioredis retries without any error of its own.
 */
function watchIoredis(client: Redis, logger: Logger, hint: string): void {
  const outage = reportOnce(logger, hint);
  client.on('error', (error: Error) => outage.down(error.message));
  let closed = '';
  let ready = false;
  client.on('close', () => {
    closed = ready ? 'the connection was lost' : 'the connection closed before Redis answered';
    ready = false;
  });
  // Only a connection that ioredis will retry: one the module is closing emits no 'reconnecting'.
  client.on('reconnecting', () => outage.down(closed));
  client.on('ready', () => {
    outage.back();
    ready = true;
  });
}

/** Logs the first error of an outage, and its end. */
function reportOnce(logger: Logger, hint: string): { down(why: string): void; back(): void } {
  let reported = false;
  return {
    down(why) {
      if (reported) return;
      reported = true;
      logger.error(`Redis connection error: ${why} (reconnecting; lock calls fail fast meanwhile)${hint}`);
    },
    back() {
      if (reported) logger.log('Redis connection is back');
      reported = false;
    },
  };
}

/** What the module uses of node-redis' `createClient()`. */
type NodeRedisFactory = (options: { url: string }) => NodeRedisOwned;
interface NodeRedisOwned {
  readonly isOpen: boolean;
  connect(): Promise<unknown>;
  close?(): Promise<void>;
  quit?(): Promise<unknown>;
  destroy?(): void;
  disconnect?(): Promise<void>;
  on(event: string, listener: (...args: never[]) => void): unknown;
  once(event: string, listener: () => void): unknown;
}

function openNodeRedis(
  createClient: NodeRedisFactory,
  url: string,
  logger: Logger,
  hint: string,
): OwnedConnection {
  let client: NodeRedisOwned;
  try {
    client = createClient({ url });
  } catch (error) {
    throw new LockOptionsError(
      `node-redis refused the URL (${error instanceof Error ? error.message : describeValue(error)}).`,
      error,
    );
  }
  const outage = reportOnce(logger, hint);
  // node-redis throws an 'error' nobody listens to; it retries by itself (its reconnectStrategy).
  client.on('error', (error: Error) => outage.down(error.message));
  client.on('ready', () => outage.back());
  const drop = (): void => {
    try {
      if (client.destroy) client.destroy();
      else client.disconnect?.().catch(() => {});
    } catch {
      // Already closed.
    }
  };
  return {
    client,
    connect: () => {
      // Redis being down at start-up must not stop the application: node-redis keeps trying.
      if (!client.isOpen) client.connect().catch(() => {});
    },
    async close() {
      if (!client.isOpen) return;
      const end = new Promise<void>((resolve) => client.once('end', resolve));
      const closing = client.close ? client.close() : client.quit?.();
      Promise.resolve(closing).catch(drop);
      await settled(end, QUIT_TIMEOUT);
      drop();
      await settled(end, DISCONNECT_TIMEOUT);
    },
    drop,
  };
}

/** Waits for `promise`, or `ms` at most. */
async function settled(promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
