/**
 * The ioredis connections the Nest module opens itself (from `url` or `redis`, which are
 * ioredis options) and closes on shutdown: made lazily, so nothing is left open if the application
 * fails to start, and closed within bounds, so nothing of ours holds the process after shutdown.
 */
import type { Redis, RedisOptions } from 'ioredis';
import { LockUsageError } from '../../errors/lock-usage.error';
import { describeValue } from '../../options/describe-value';
import { settled } from '../bounded-waits';
import type { OutageReporter, OwnedConnection, OwnedRequest } from '../client-library';
import { watchesSentinels } from './sentinel-follower';

/** ioredis' disconnectTimeout for connections the module opens (see openIoredis). */
const OWNED_DISCONNECT_TIMEOUT = 300;
/** How long QUIT may wait for its reply before the socket is dropped (a frozen server never answers). */
const QUIT_TIMEOUT = 1_000;
/** How long to wait for the socket to close after dropping it (ioredis destroys it after 2 s by default). */
const DISCONNECT_TIMEOUT = 3_000;

/**
 * The connections of `request`, made with the application's ioredis. ioredis keeps a timer of
 * disconnectTimeout (2 s by default) alive after a disconnect while the socket is still connecting; a
 * module that closes its own connection should not hold the process that long. Yours wins if you set it.
 */
export function openIoredis(loaded: unknown, request: OwnedRequest): OwnedConnection[] {
  const RedisClass = (loaded as { Redis: typeof Redis }).Redis;
  const redisOptions = {
    disconnectTimeout: OWNED_DISCONNECT_TIMEOUT,
    ...(request.options as RedisOptions),
    lazyConnect: true,
  };
  const clients: Redis[] = [];
  try {
    for (const url of request.urls)
      clients.push(url === undefined ? new RedisClass(redisOptions) : new RedisClass(url, redisOptions));
  } catch (error) {
    for (const client of clients) client.disconnect();
    throw new LockUsageError(
      `${request.label}: ioredis refused the connection options (${error instanceof Error ? error.message : describeValue(error)}).`,
      { cause: error },
    );
  }
  return clients.map((client) => {
    watchIoredis(client, request.outages());
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
 * Reports an owned connection's outages: an error, or a connection that closes again before Redis
 * answered as ready (a port where something else listens, a TLS mismatch), which ioredis retries
 * without any error of its own.
 */
function watchIoredis(client: Redis, outage: OutageReporter): void {
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
