/**
 * What one module configuration owns: its LockService and the store under it. It opens the Redis
 * connections that `url` or `redis` name (and closes them on shutdown), uses a given `client` as is (and
 * never closes it), and on application shutdown lets running locked calls finish for the grace period
 * before releasing every lease, so no renewal timer or lock outlives the application. Its options are
 * checked in lib/nest/module-options.ts.
 */
import { Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { OwnedConnection, RedisClient } from '../clients';
import { LockUsageError } from '../errors/lock-usage.error';
import { LockService } from '../lock.service';
import { describeValue } from '../options/describe-value';
import { isLockBackend, type LockBackend } from '../store/lock-store';
import { type ResolvedModuleOptions, resolveModuleOptions } from './module-options';
import { openOwned } from './owned-connections';
import type { KeyScope, LockWarning, RedisLockModuleOptions } from './redis-lock-options.interface';
import type { RequestSettings } from './request-scope';

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
  /** The module's `scope`: what @Locked keys are prefixed with unless their decorator says otherwise. */
  readonly scope: KeyScope;
  /** The module's `requests`: what the locked calls made for an HTTP request take from it (undefined: nothing). */
  readonly requests: RequestSettings | undefined;
  /** Where warnings go: the Nest logger, then the application's `onWarning` if it gave one. */
  readonly warn: (warning: LockWarning) => void;
  private readonly gracePeriod: number;

  private constructor(
    store: RedisClient | readonly RedisClient[] | LockBackend,
    /** The connections this configuration opened itself, closed on shutdown. */
    private readonly owned: readonly OwnedConnection[],
    options: ResolvedModuleOptions,
    name: string | undefined,
  ) {
    this.scope = options.scope;
    this.requests = options.requests;
    this.gracePeriod = options.gracePeriod;
    const appHandler = options.onWarning;
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
    this.service = new LockService(store, { ...options.service, onWarning: this.warn });
  }

  /**
   * Validates the options and opens the connections the module owns (connected in onModuleInit). Throws
   * LockUsageError. `kind.memory`: the testing module's configuration, on a MemoryLockBackend.
   */
  static create(
    raw: RedisLockModuleOptions,
    name?: string,
    kind: ContextKind = REDIS_KIND,
    replacement?: BackendReplacement,
  ): RedisLockContext {
    const label = `${kind.label}${name ? ` "${name}"` : ''}`;
    // getLockBackendToken() replaced in a test: that backend, whatever the options name, and nothing opened.
    if (replacement && !isLockBackend(replacement.backend)) {
      throw new LockUsageError(
        `${label}: "${replacement.token}" was replaced with ${describeValue(replacement.backend)}; give a lock ` +
          'backend, as in .overrideProvider(getLockBackendToken()).useValue(new MemoryLockBackend()).',
      );
    }
    const options = resolveModuleOptions(raw, label, kind.memory, replacement?.backend as LockBackend);
    const { connection } = options;
    if ('given' in connection) return new RedisLockContext(connection.given, [], options, name);
    const hint = underTestRunner() ? TEST_HINT : '';
    const owned = openOwned(connection.urls, connection.redis, label, loggerFor(name), hint);
    const clients = owned.map((one) => one.client as RedisClient);
    try {
      return new RedisLockContext(connection.quorum ? clients : clients[0], owned, options, name);
    } catch (error) {
      for (const one of owned) one.drop();
      throw error;
    }
  }

  onModuleInit(): void {
    // Redis being down at start-up must not stop the application: lock calls fail fast with
    // RedisUnavailableError and the health indicator reports it until the connection comes up.
    for (const connection of this.owned) connection.connect();
  }

  /**
   * The application will not start (a start-up check of this configuration refused it): what this
   * configuration opened is let go now, as no shutdown hook will run, so that a process that catches
   * its bootstrap error can end.
   */
  abandon(): void {
    this.service.close().catch(() => {});
    for (const connection of this.owned) connection.drop();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.service.close({ gracePeriod: this.gracePeriod });
    await Promise.all(this.owned.map((connection) => connection.close()));
  }
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
