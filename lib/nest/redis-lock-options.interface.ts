/** Options of RedisLockModule and of @Locked. */
import type { RedisClient } from '../clients';
import type { AcquireOptions, DeclaredOptionName } from '../options/call-options';
import type { LockServiceOptions } from '../options/service-options';
import type { LockBackend } from '../store/lock-store';
import type { ServerRisk } from '../store/server-watch';
import type { KeyResolver, LockKeyTemplate } from './key-template';
import type { RequestsOption } from './request-scope';

/**
 * What @Locked keys are prefixed with: `true` their method's `Class.method:`, a name `name:`, `false`
 * nothing. The module's `scope` and a decorator's take the same values; the decorator's wins.
 */
export type KeyScope = boolean | string;

/**
 * Where Redis is, plus the LockService options (`prefix`, `defaults`, `claimWindow`, ...): give `client`,
 * or `url` and/or `redis`.
 */
export interface RedisLockModuleOptions extends LockServiceOptions {
  /**
   * What LockService takes as its first argument, which the module uses and never closes: an existing
   * client (an ioredis `Redis` or `Cluster`, or a node-redis client or Cluster, connected), an array of
   * clients of 3, 5 or 7 independent masters (a quorum, Redlock: a lock is held on a majority of them),
   * or a lock backend instead of Redis, such as `new MemoryLockBackend()` (locks then hold only among
   * the services opened on it, in this process).
   */
  client?: RedisClient | readonly RedisClient[] | LockBackend;
  /**
   * A Redis URL (`redis://user:pass@host:6379/0`), or an array of 3, 5 or 7 URLs of independent masters
   * for a quorum; the module opens the connections and closes them on shutdown.
   */
  url?: string | readonly string[];
  /**
   * ioredis options (its `RedisOptions`, such as `{ host, port, password }`); the module opens the
   * connection with ioredis and closes it on shutdown. With `url`, options for each of its connections.
   * (With only node-redis installed, give `url`, or your own client.)
   */
  redis?: { [option: string]: unknown };
  /**
   * On application shutdown, how long running @Locked calls (and `using` functions) may take to finish
   * before their leases are released anyway, in ms. Default 5 000.
   */
  gracePeriod?: number;
  /**
   * Prefix the key of every @Locked method whose decorator sets no `scope` of its own: `true` with its
   * `Class.method:` (as murlock does), a string with itself and `:`. Default false: keys are global, so
   * two methods (or two services) that protect one resource share its lock by naming the same key.
   */
  scope?: KeyScope;
  /**
   * Risks of the lock's Redis (as LockService's `onWarning`) and, at start-up, @Locked keys that are
   * probably not what was meant (`code` 'constant-key' or 'key-function-parameters'). Each is also
   * logged through the Nest logger. It must not throw (what it throws is ignored).
   */
  onWarning?: (warning: LockWarning) => void;
  /**
   * Whether the locked calls made for an HTTP request, at any depth, follow it. `true` (default): a call
   * stops waiting when the client closes the connection before the response is written (LockAbortedError,
   * answered 499; a lock granted after that runs nothing), and ends its wait in time for the deadline the
   * client or a proxy sent (`grpc-timeout`, `x-envoy-expected-rq-timeout-ms`, `x-request-deadline`), else
   * for the patience its route's clients showed. `{ budget }`: that, and every request is to be answered
   * within `budget` ms of its arrival. `false`: nothing is taken from a request. docs/nest.md, "Deadlines".
   */
  requests?: RequestsOption;
}

/** Set at `forRoot` / `forRootAsync` level, beside the options (they shape the module itself). */
export interface RedisLockModuleExtras {
  /**
   * Name of this configuration, for several in one app (e.g. two Redis servers). A named one is injected
   * with `@InjectLockService(name)` and used with `@Locked(key, { service: name })`. Default: unnamed.
   */
  name?: string;
  /**
   * Map lock errors to HTTP responses (LockTimeoutError → 409 Conflict, or 503 when refused for overload;
   * RedisUnavailableError → 503), all with `Retry-After`. Outside HTTP the typed error propagates.
   * Default true.
   */
  httpErrors?: boolean;
}

/**
 * Options of @Locked (and @LockedRoute): the call options a declaration passes on to each call (`ttl`,
 * `waitTimeout`, `renew`, `minHold`, `maxHold`, `permits`, `mode`, documented on AcquireOptions; unset
 * ones fall back to the module's `defaults`), and those only a declaration has.
 */
export interface LockedOptions extends Pick<AcquireOptions, DeclaredOptionName> {
  /**
   * What happens when the lock is not granted in time: 'throw' (default) rejects with LockTimeoutError;
   * 'skip' returns undefined without running the method (for a job that must run on one instance only).
   */
  onTimeout?: 'throw' | 'skip';
  /** The named configuration (`forRoot({ name })`) whose LockService runs this lock. Default: unnamed. */
  service?: string;
  /**
   * Prefix this method's key: `true` with `Class.method:`, a string with itself and `:` (`'billing'` →
   * `billing:order:1`), `false` with nothing (also when the module's `scope` is on). Default: the
   * module's `scope`, which is off.
   */
  scope?: KeyScope;
  /**
   * The key is constant on purpose (one lock for every call): silences the start-up warning for a key
   * that reads like an argument (`'reports.daily'` on a method that takes parameters).
   */
  constantKey?: boolean;
}

/** A @Locked declaration, compiled when the decorator runs. */
export interface LockedSpec {
  /** `Class.method`, for messages. */
  readonly where: string;
  readonly template: LockKeyTemplate;
  /** `lock.name` in metrics, spans and events: the template (`Class.method` for a key function). */
  readonly label: string;
  readonly key: KeyResolver;
  /** The decorated method itself (not the wrapper), for the start-up checks of its parameters. */
  readonly method: (...args: never[]) => unknown;
  readonly options: Readonly<LockedOptions>;
  /** The method declares an Observable result: the wrapper then returns an Observable too. */
  readonly observable: boolean;
}

export type LockedKeyWarningCode = 'constant-key' | 'key-function-parameters' | 'shared-key';

/** A @Locked declaration whose key is probably not what was meant, with the sentence a log line shows. */
export interface LockedKeyWarning {
  code: LockedKeyWarningCode;
  /** `Class.method` of the declaration. */
  method: string;
  message: string;
}

/** What `onWarning` receives: a risk of the lock's Redis, or (from the Nest module) a key warning. */
export type LockWarning = ServerRisk | LockedKeyWarning;
