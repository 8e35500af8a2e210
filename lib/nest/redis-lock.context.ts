/**
 * What one module configuration owns: its LockService and the store under it. It opens the Redis
 * connection when given `url` or `redis` (and closes it on shutdown), uses a given `client` or `backend`
 * as is (and never closes it), and on application shutdown lets running locked calls finish for the
 * grace period before releasing every lease, so no renewal timer or lock outlives the application.
 */
import { Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { isRedisClient, type OwnedConnection, type RedisClient } from '../clients';
import { LockOptionsError } from '../errors/lock-options.error';
import { LockService } from '../lock.service';
import { describeValue } from '../options/describe-value';
import { snapshotOptions } from '../options/option-checks';
import { checkOnWarning, checkOptionNames, SERVICE_OPTION_NAMES } from '../options/service-options';
import { isLockBackend, type LockBackend } from '../store/lock-store';
import { MemoryLockBackend } from '../store/memory-store';
import { DEFAULT_RETRY_AFTER } from './lock-http.errors';
import { openOwned } from './owned-connections';
import type { LockWarning, RedisLockModuleOptions } from './redis-lock-options.interface';

const DEFAULT_GRACE_PERIOD = 5_000;
/** Largest delay a Node timer can hold (about 24.8 days). */
const MAX_GRACE_PERIOD = 2 ** 31 - 1;
/** A day: a longer Retry-After for a busy lock or a Redis outage is a mistake, not a policy. */
const MAX_RETRY_AFTER = 86_400;
/** Everything forRoot / the options factory may return. */
const MODULE_OPTION_NAMES = [
  'client',
  'url',
  'redis',
  'backend',
  'urls',
  'clients',
  'gracePeriod',
  'retryAfterSeconds',
  'scope',
  ...SERVICE_OPTION_NAMES,
];
/** Options renamed before 1.0, with what to write instead: refused with that, never ignored. */
const RENAMED: Readonly<Record<string, string>> = {
  shutdownGracePeriod: 'it is now gracePeriod, the name close() uses',
  logEvents:
    "it is now telemetry: { logger }, with the logger to write to (such as new Logger('Locks') from @nestjs/common)",
};
/** Extras shape the module itself: they go beside the options, never inside what a factory returns. */
const EXTRAS = ['isGlobal', 'name', 'httpErrors'];

/** Which module a configuration belongs to: the name its messages give, and where its locks live. */
export interface ContextKind {
  /** The class name users write (`RedisLockModule` or `RedisLockTestingModule`). */
  readonly label: string;
  /** Locks in memory (the testing module): connection options are accepted and ignored. */
  readonly memory: boolean;
}

const REDIS_KIND: ContextKind = { label: 'RedisLockModule', memory: false };

/** The value a test gave getLockBackendToken() (`token`), in place of the store the options name. */
export interface BackendReplacement {
  readonly backend: unknown;
  readonly token: string;
}

export class RedisLockContext implements OnModuleInit, OnApplicationShutdown {
  readonly service: LockService;
  readonly retryAfterSeconds: number;
  /** The module's `scope`: @Locked keys prefixed with their `Class.method:` by default. */
  readonly scope: boolean;
  /** Where warnings go: the Nest logger, then the application's `onWarning` if it gave one. */
  readonly warn: (warning: LockWarning) => void;
  private readonly gracePeriod: number;

  private constructor(
    store: RedisClient | readonly RedisClient[] | LockBackend,
    /** The connections this configuration opened itself, closed on shutdown. */
    private readonly owned: readonly OwnedConnection[],
    options: RedisLockModuleOptions,
    name: string | undefined,
  ) {
    const {
      client: _c,
      url: _u,
      redis: _r,
      backend: _b,
      urls: _us,
      clients: _cs,
      gracePeriod,
      retryAfterSeconds,
      scope,
      onWarning,
      ...serviceOptions
    } = options;
    if (scope !== undefined && typeof scope !== 'boolean') {
      throw new LockOptionsError(
        `scope must be true (prefix every @Locked key with its Class.method) or false, got ${describeValue(scope)}.`,
      );
    }
    this.scope = scope ?? false;
    this.gracePeriod = boundedInteger(
      'gracePeriod',
      gracePeriod ?? DEFAULT_GRACE_PERIOD,
      MAX_GRACE_PERIOD,
      'ms',
    );
    this.retryAfterSeconds = boundedInteger(
      'retryAfterSeconds',
      retryAfterSeconds ?? DEFAULT_RETRY_AFTER,
      MAX_RETRY_AFTER,
      'seconds',
    );
    const appHandler = checkOnWarning(onWarning) as ((warning: LockWarning) => void) | undefined;
    // Risks of the lock's Redis (eviction, no persistence, replicas; once per server and kind) and doubtful
    // @Locked keys (once per method, at start-up) go to the application's log, and to the application's
    // own handler too if it gave one.
    const logger = loggerFor(name);
    this.warn = (warning) => {
      logger.warn(warning.message);
      try {
        appHandler?.(warning);
      } catch {
        // Documented: what the handler throws is ignored, as LockService does for server risks.
      }
    };
    this.service = new LockService(store, { ...serviceOptions, onWarning: this.warn });
  }

  /**
   * Validates the options and connects (when the module owns the connection). Throws LockOptionsError.
   * `kind.memory`: the testing module's configuration, on a MemoryLockBackend (the given `backend` or a
   * new one); connection options are then accepted and ignored, so one options object serves both modules.
   */
  static create(
    raw: RedisLockModuleOptions,
    name?: string,
    kind: ContextKind = REDIS_KIND,
    replacement?: BackendReplacement,
  ): RedisLockContext {
    const { memory } = kind;
    const label = `${kind.label}${name ? ` "${name}"` : ''}`;
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
      throw new LockOptionsError(
        `${label} options must be an object${memory ? '' : ' with client, url, redis or backend'}, got ` +
          `${describeValue(raw)}.`,
      );
    }
    const options = snapshotOptions(raw, `the ${label} options`) as RedisLockModuleOptions;
    for (const extra of EXTRAS) {
      if (extra in options) {
        throw new LockOptionsError(
          `${label}: "${extra}" is not a connection or lock option; give it beside useFactory/useClass/` +
            'useExisting in forRootAsync({ ... }) (or in forRoot({ ... })), not in the options they return.',
        );
      }
    }
    for (const [old, now] of Object.entries(RENAMED)) {
      if (Object.hasOwn(options, old)) throw new LockOptionsError(`${label}: "${old}" was renamed: ${now}.`);
    }
    checkOptionNames(options, MODULE_OPTION_NAMES, `the ${label} options`);
    if (replacement) {
      // getLockBackendToken() replaced in a test: that backend, whatever the options name. Connection
      // options are ignored (the constructor never reads them), so nothing is opened; the lock options
      // go through the same validation.
      if (!isLockBackend(replacement.backend)) {
        throw new LockOptionsError(
          `${label}: "${replacement.token}" was replaced with ${describeValue(replacement.backend)}; give a lock ` +
            'backend, as in .overrideProvider(getLockBackendToken()).useValue(new MemoryLockBackend()).',
        );
      }
      return new RedisLockContext(replacement.backend, [], inMemory(options), name);
    }
    const { url, redis, backend } = options;
    if (backend !== undefined && !isLockBackend(backend)) {
      throw new LockOptionsError(
        `${label}: backend must be a lock backend such as new MemoryLockBackend(), got ${describeValue(backend)}.`,
      );
    }
    if (memory) {
      if (backend !== undefined && !(backend instanceof MemoryLockBackend)) {
        throw new LockOptionsError(
          `${label}: backend must be a MemoryLockBackend (the testing module keeps its locks in memory), ` +
            `got ${describeValue(backend)}.`,
        );
      }
      return new RedisLockContext(backend ?? new MemoryLockBackend(), [], inMemory(options), name);
    }
    const connections = ['client', 'url', 'redis', 'backend', 'urls', 'clients'] as const;
    const given = connections.filter((k) => options[k] !== undefined);
    const withOptions =
      given.length === 2 && redis !== undefined && (url !== undefined || options.urls !== undefined);
    if (given.length === 0 || (given.length > 1 && !withOptions)) {
      throw new LockOptionsError(
        `${label} needs exactly one connection: \`client\` (an ioredis ` +
          'Redis or Cluster, or a node-redis client or Cluster), `url`, `redis` (ioredis options; may accompany `url` or `urls`), `backend` (such as ' +
          'new MemoryLockBackend()), or for a quorum of independent masters (Redlock) `urls` or `clients` ' +
          '(3, 5 or 7). Got ' +
          (given.length ? given.join(' and ') : 'none') +
          '.',
      );
    }
    if (backend !== undefined) return new RedisLockContext(backend, [], options, name);
    if (options.clients !== undefined) {
      if (!Array.isArray(options.clients)) {
        throw new LockOptionsError(
          `${label}: clients must be an array of 3, 5 or 7 clients of independent Redis masters, got ` +
            `${describeValue(options.clients)}.`,
        );
      }
      return new RedisLockContext(options.clients, [], options, name);
    }
    if (options.client !== undefined) {
      if (!isRedisClient(options.client)) {
        throw new LockOptionsError(
          `${label}: client must be an ioredis Redis or Cluster (new Redis(...)) or a node-redis client or ` +
            `Cluster (createClient(), connected), got ` +
            `${describeValue(options.client)}. To let the module connect, pass url or redis instead.`,
        );
      }
      return new RedisLockContext(options.client, [], options, name);
    }
    if (redis !== undefined && (redis === null || typeof redis !== 'object' || Array.isArray(redis))) {
      throw new LockOptionsError(
        `${label}: redis must be an object of ioredis options such as { host, port }, got ${describeValue(redis)}.`,
      );
    }
    if (url !== undefined) checkUrl(url, label);
    const urls = options.urls === undefined ? undefined : checkUrls(options.urls, label);
    const hint = underTestRunner() ? TEST_HINT : '';
    const owned = openOwned(urls ?? [url], redis as Record<string, unknown>, label, loggerFor(name), hint);
    const clients = owned.map((connection) => connection.client as RedisClient);
    try {
      return new RedisLockContext(urls ? clients : clients[0], owned, options, name);
    } catch (error) {
      for (const connection of owned) connection.drop();
      throw error;
    }
  }

  onModuleInit(): void {
    // Redis being down at start-up must not stop the application: lock calls fail fast with
    // RedisUnavailableError and the health indicator reports it until the connection comes up.
    for (const connection of this.owned) connection.connect();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.service.close({ gracePeriod: this.gracePeriod });
    await Promise.all(this.owned.map((connection) => connection.close()));
  }
}

/**
 * The options of a configuration whose locks are in memory: acknowledgement by replicas is about a
 * Redis deployment, as the connection options are, so it is ignored too.
 */
function inMemory(options: RedisLockModuleOptions): RedisLockModuleOptions {
  const { replicas: _replicas, ...rest } = options;
  return rest;
}

/** `urls` of a quorum the module connects to: an array of redis:// URLs (the count is LockService's to check). */
function checkUrls(urls: unknown, label: string): string[] {
  if (!Array.isArray(urls)) {
    throw new LockOptionsError(
      `${label}: urls must be an array of 3, 5 or 7 redis:// URLs of independent Redis masters, got ` +
        `${describeValue(urls)}.`,
    );
  }
  for (const [i, url] of urls.entries()) checkUrl(url, `${label} (urls[${i}])`);
  return urls as string[];
}

/** The logger of one configuration: `RedisLock`, or `RedisLock:<name>` for a named one. */
function loggerFor(name: string | undefined): Logger {
  return new Logger(name ? `RedisLock:${name}` : 'RedisLock');
}

/** Jest, Vitest or NODE_ENV=test: where a missing Redis is most often a missing override. */
function underTestRunner(): boolean {
  const env = process.env;
  return env.JEST_WORKER_ID !== undefined || env.VITEST !== undefined || env.NODE_ENV === 'test';
}

const TEST_HINT =
  '. In a test without Redis, run the locks in memory: ' +
  '.overrideProvider(getLockBackendToken()).useValue(new MemoryLockBackend()) (both from ' +
  "'nestjs-redis-lock/testing')";

function boundedInteger(name: string, value: unknown, max: number, unit: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max) {
    throw new LockOptionsError(
      `${name} must be an integer number of ${unit} between 0 and ${max}, got ${describeValue(value)}.`,
    );
  }
  return value;
}

/** A redis:// or rediss:// URL with a host: an unset host (`redis://${HOST}`) would mean localhost:6379. */
function checkUrl(url: unknown, label: string): void {
  const fail = (why: string): never => {
    throw new LockOptionsError(
      `${label}: url must be a redis:// or rediss:// URL such as redis://user:pass@host:6379/0; ${why}, ` +
        `got ${describeValue(url)}.`,
    );
  };
  if (typeof url !== 'string') fail('it is not a string');
  const text = url as string;
  if (text.length > 4096) fail('it is longer than 4096 characters');
  if (!/^rediss?:\/\//i.test(text)) fail('the scheme is not redis:// or rediss://');
  let hostname = '';
  try {
    hostname = new URL(text).hostname;
  } catch {
    fail('it does not parse as a URL');
  }
  if (hostname === '') fail('it has no host');
}
