/**
 * What one module configuration owns: its LockService and the Redis connection under it. It opens the
 * connection when given `url` or `redis` (and closes it on shutdown), uses a given `client` as is (and
 * never closes it), and on application shutdown lets running locked calls finish for the grace period
 * before releasing every lease, so no renewal timer or lock outlives the application.
 */
import { Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { Redis } from 'ioredis';
import { LockOptionsError } from '../errors/lock-options.error';
import { LockService } from '../lock.service';
import type { RedisClient } from '../protocol/lock-scripts';
import type { RedisLockModuleOptions } from './redis-lock-options.interface';

const DEFAULT_GRACE_PERIOD = 5_000;
const DEFAULT_RETRY_AFTER = 1;

export class RedisLockContext implements OnModuleInit, OnApplicationShutdown {
  readonly service: LockService;
  readonly retryAfterSeconds: number;
  private readonly gracePeriod: number;

  private constructor(
    private readonly client: RedisClient,
    private readonly owned: boolean,
    options: RedisLockModuleOptions,
  ) {
    const {
      client: _c,
      url: _u,
      redis: _r,
      shutdownGracePeriod,
      retryAfterSeconds,
      ...serviceOptions
    } = options;
    this.gracePeriod = nonNegativeInteger('shutdownGracePeriod', shutdownGracePeriod ?? DEFAULT_GRACE_PERIOD);
    this.retryAfterSeconds = nonNegativeInteger(
      'retryAfterSeconds',
      retryAfterSeconds ?? DEFAULT_RETRY_AFTER,
    );
    this.service = new LockService(client, serviceOptions);
  }

  /** Validates the options and connects (when the module owns the connection). Throws LockOptionsError. */
  static create(options: RedisLockModuleOptions, name?: string): RedisLockContext {
    if (options === null || typeof options !== 'object') {
      throw new LockOptionsError('RedisLockModule options must be an object with client, url or redis.');
    }
    const given = (['client', 'url', 'redis'] as const).filter((k) => options[k] !== undefined);
    const url = options.url;
    if (
      given.length === 0 ||
      (given.length > 1 && !(given.length === 2 && url !== undefined && options.redis))
    ) {
      throw new LockOptionsError(
        `RedisLockModule${name ? ` "${name}"` : ''} needs exactly one connection: \`client\` (an ioredis ` +
          'Redis or Cluster), `url`, or `redis` (ioredis options; may accompany `url`). Got ' +
          (given.length ? given.join(' and ') : 'none') +
          '.',
      );
    }
    if (options.client !== undefined) return new RedisLockContext(options.client, false, options);
    if (url !== undefined && (typeof url !== 'string' || !/^rediss?:\/\//.test(url))) {
      throw new LockOptionsError(`url must be a redis:// or rediss:// URL, got ${JSON.stringify(url)}.`);
    }
    // Connected in onModuleInit, not here: if the application fails to start, nothing is left open.
    const redisOptions = { ...options.redis, lazyConnect: true };
    const client = url === undefined ? new Redis(redisOptions) : new Redis(url, redisOptions);
    watchErrors(client, name);
    try {
      return new RedisLockContext(client, true, options);
    } catch (error) {
      client.disconnect();
      throw error;
    }
  }

  onModuleInit(): void {
    // Redis being down at start-up must not stop the application: lock calls fail fast with
    // RedisUnavailableError and the health indicator reports it until the connection comes up.
    if (this.owned && this.client.status === 'wait') this.client.connect().catch(() => {});
  }

  async onApplicationShutdown(): Promise<void> {
    await this.service.close({ gracePeriod: this.gracePeriod });
    if (!this.owned) return;
    const client = this.client;
    if (client.status === 'end') return;
    // Resolve once the socket is really closed, so nothing of ours is left open after shutdown.
    const ended = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 1_000);
      client.once('end', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    // quit() waits for pending replies; with Redis gone it would wait on the reconnect loop instead.
    if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
    else client.disconnect();
    await ended;
  }
}

/** An owned connection reports its outages once each (not on every reconnect attempt) in the app's log. */
function watchErrors(client: Redis, name: string | undefined): void {
  const logger = new Logger(name ? `RedisLock:${name}` : 'RedisLock');
  let reported = false;
  client.on('error', (error: Error) => {
    if (reported) return;
    reported = true;
    logger.error(`Redis connection error: ${error.message} (reconnecting; lock calls fail fast meanwhile)`);
  });
  client.on('ready', () => {
    if (reported) logger.log('Redis connection is back');
    reported = false;
  });
}

function nonNegativeInteger(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new LockOptionsError(`${name} must be a non-negative integer, got ${String(value)}.`);
  }
  return value;
}
