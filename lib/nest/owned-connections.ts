/**
 * Which client library the module opens its own connections on (from `url` or `redis`), and how
 * their outages reach the application's log. ioredis when it is installed (and always for `redis`,
 * which are ioredis options), else node-redis. Opening, closing and loading either library is
 * lib/clients/'s; the connections are connected in onModuleInit and closed on shutdown.
 */
import type { Logger } from '@nestjs/common';
import { installedLibrary, type OutageReporter, type OwnedConnection } from '../clients';
import { LockUsageError } from '../errors/lock-usage.error';

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
  const outages = () => reportOnce(logger, hint);
  const ioredis = installedLibrary('ioredis');
  if (ioredis) return ioredis.open({ urls, options: redis, label, outages });
  if (redis !== undefined) {
    throw new LockUsageError(
      `${label}: redis takes ioredis options, and ioredis is not installed. Install it (npm i ioredis), ` +
        'or pass url, or your own connected client as client (node-redis createClient() works).',
    );
  }
  const nodeRedis = installedLibrary('node-redis');
  if (nodeRedis) return nodeRedis.open({ urls, options: undefined, label, outages });
  throw new LockUsageError(
    `${label}: no Redis client library is installed. Install ioredis (npm i ioredis) or node-redis ` +
      '(npm i redis).',
  );
}

/**
 * An owned connection reports each outage once (not on every reconnect attempt) in the app's log: its
 * first error, and its end.
 */
function reportOnce(logger: Logger, hint: string): OutageReporter {
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
