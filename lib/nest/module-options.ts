/**
 * The options of one module configuration, checked once: where Redis is (`client`, `url`, `redis`),
 * what only the module does (`gracePeriod`, `scope`, `onWarning`, `requests`), and the rest
 * passed on to LockService, which checks its own.
 * Nothing is opened here: lib/nest/redis-lock.context.ts opens what this says to.
 */
import { isRedisClient, type RedisClient } from '../clients';
import { LockUsageError } from '../errors/lock-usage.error';
import { describeValue } from '../options/describe-value';
import { milliseconds, snapshotOptions } from '../options/option-checks';
import {
  checkOnWarning,
  checkOptionNames,
  DEFAULT_GRACE_PERIOD,
  SERVICE_OPTION_NAMES,
} from '../options/service-options';
import { isLockBackend, type LockBackend } from '../store/lock-store';
import { MemoryLockBackend } from '../store/memory-store';
import { checkScope } from './key-scope';
import type { KeyScope, LockWarning } from './redis-lock-options.interface';
import { checkRequests, DEFAULT_REQUEST_SETTINGS, type RequestSettings } from './request-scope';

/** The module's own options, each with its check and default; the rest are LockService's. */
const MODULE_OPTIONS = {
  gracePeriod: { check: (v: unknown) => milliseconds('gracePeriod', v, 0), default: DEFAULT_GRACE_PERIOD },
  scope: { check: (v: unknown) => checkScope(v, 'scope'), default: false as KeyScope },
  onWarning: {
    check: (v: unknown) => checkOnWarning(v) as ((warning: LockWarning) => void) | undefined,
    default: undefined,
  },
  requests: { check: checkRequests, default: DEFAULT_REQUEST_SETTINGS as RequestSettings | undefined },
} as const;

/** The three ways to say where Redis is. */
const CONNECTION_OPTIONS = ['client', 'url', 'redis'] as const;
// onWarning is both the module's (its own start-up checks) and the service's: listed once.
const MODULE_OPTION_NAMES = [
  ...new Set([...CONNECTION_OPTIONS, ...Object.keys(MODULE_OPTIONS), ...SERVICE_OPTION_NAMES]),
];

/** Extras shape the module itself: they go beside the options, never inside what a factory returns. */
export const EXTRAS = ['name', 'httpErrors'];

/**
 * forRoot's options read once, before Nest's builder copies them: a throwing getter or Proxy would escape
 * it as a plain Error, and its copy by assignment drops an own "__proto__" key, which is refused here as
 * any unknown key is when the module starts (where the rest are checked).
 */
export function snapshotRootOptions(raw: object, label: string): Record<string, unknown> {
  const options = snapshotOptions(raw, `the ${label} options`);
  if (Object.hasOwn(options, '__proto__')) {
    const own = Object.defineProperty({}, '__proto__', { value: undefined, enumerable: true });
    checkOptionNames(own, [...MODULE_OPTION_NAMES, ...EXTRAS], `the ${label} options`);
  }
  return options;
}

/** Where the locks live: a store given as is (never closed), or connections the module opens (and closes). */
export type ModuleConnection =
  | { readonly given: RedisClient | readonly RedisClient[] | LockBackend }
  | {
      /** One entry per connection (a quorum has several); undefined: from `redis` alone. */
      readonly urls: ReadonlyArray<string | undefined>;
      readonly quorum: boolean;
      readonly redis: Record<string, unknown> | undefined;
    };

type ModuleOptionName = keyof typeof MODULE_OPTIONS;

/** The module's own options, each as its check returns it, or its default; and the rest, as given. */
export type ResolvedModuleOptions = {
  readonly [N in ModuleOptionName]: ReturnType<(typeof MODULE_OPTIONS)[N]['check']>;
} & {
  readonly connection: ModuleConnection;
  /** What LockService checks itself. */
  readonly service: Record<string, unknown>;
};

/**
 * Checks one configuration's options. `memory`: the testing module's, whose locks are in memory: a
 * `client` that is a MemoryLockBackend is used, other connection options are accepted and ignored (so one
 * options object serves both modules), and so is `replicas`, which is about a Redis deployment.
 * `replaced`: a backend a test gave getLockBackendToken(), used whatever the options name.
 */
export function resolveModuleOptions(
  raw: unknown,
  label: string,
  memory: boolean,
  replaced?: LockBackend,
): ResolvedModuleOptions {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new LockUsageError(
      `${label} options must be an object${memory ? '' : ' with client, url or redis'}, got ${describeValue(raw)}.`,
    );
  }
  const options = snapshotOptions(raw, `the ${label} options`);
  for (const extra of EXTRAS) {
    if (extra in options) {
      throw new LockUsageError(
        `${label}: "${extra}" is not a connection or lock option; give it beside useFactory/useClass/` +
          'useExisting in forRootAsync({ ... }) (or in forRoot({ ... })), not in the options they return.',
      );
    }
  }
  checkOptionNames(options, MODULE_OPTION_NAMES, `the ${label} options`);
  // What is neither a connection nor the module's own goes to LockService, symbol keys (a test's hooks) too.
  const { client, url, redis, ...service } = options;
  const own: Record<string, unknown> = {};
  for (const name of Object.keys(MODULE_OPTIONS) as ModuleOptionName[]) {
    const given = service[name];
    own[name] = given === undefined ? MODULE_OPTIONS[name].default : MODULE_OPTIONS[name].check(given);
    delete service[name];
  }
  if (memory || replaced !== undefined) delete service.replicas;
  return {
    ...(own as { [N in ModuleOptionName]: ReturnType<(typeof MODULE_OPTIONS)[N]['check']> }),
    connection: replaced
      ? { given: replaced }
      : memory
        ? { given: memoryBackend(client, label) }
        : connection(client, url, redis, label),
    service,
  };
}

/** The testing module's backend: the MemoryLockBackend given as `client`, or a new one. */
function memoryBackend(client: unknown, label: string): LockBackend {
  if (client instanceof MemoryLockBackend) return client;
  if (isLockBackend(client)) {
    throw new LockUsageError(
      `${label}: client must be a MemoryLockBackend (the testing module keeps its locks in memory), or a ` +
        `Redis client, which is ignored; got ${describeValue(client)}.`,
    );
  }
  return new MemoryLockBackend();
}

function connection(client: unknown, url: unknown, redis: unknown, label: string): ModuleConnection {
  const given = CONNECTION_OPTIONS.filter((_, i) => [client, url, redis][i] !== undefined);
  if (given.length === 0 || (client !== undefined && given.length > 1)) {
    throw new LockUsageError(
      `${label} needs one connection: \`client\` (an ioredis Redis or Cluster, a node-redis client or ` +
        'Cluster, an array of 3, 5 or 7 clients of independent masters for a quorum, or a lock backend such ' +
        'as new MemoryLockBackend()), or `url` (a redis:// URL, or an array of 3, 5 or 7 for a quorum) ' +
        'and/or `redis` (ioredis options). Got ' +
        (given.length ? given.join(' and ') : 'none') +
        '.',
    );
  }
  if (client !== undefined) return { given: checkClient(client, label) };
  if (redis !== undefined && (redis === null || typeof redis !== 'object' || Array.isArray(redis))) {
    throw new LockUsageError(
      `${label}: redis must be an object of ioredis options such as { host, port }, got ${describeValue(redis)}.`,
    );
  }
  const options = redis as Record<string, unknown> | undefined;
  // No ioredis option is called that, and copied into the client's settings it would set their prototype.
  if (options && Object.hasOwn(options, '__proto__')) {
    throw new LockUsageError(
      `${label}: redis has an own "__proto__" key, which is no ioredis option; remove it.`,
    );
  }
  if (!Array.isArray(url)) {
    if (url !== undefined) checkUrl(url, label);
    return { urls: [url as string | undefined], quorum: false, redis: options };
  }
  for (const [i, one] of url.entries()) checkUrl(one, `${label} (url[${i}])`);
  return { urls: url as string[], quorum: true, redis: options };
}

function checkClient(client: unknown, label: string): RedisClient | readonly RedisClient[] | LockBackend {
  if (isRedisClient(client) || isLockBackend(client)) return client;
  // The count and the kind of each is LockService's to check, as for its own first argument.
  if (Array.isArray(client)) return client as RedisClient[];
  throw new LockUsageError(
    `${label}: client must be an ioredis Redis or Cluster (new Redis(...)), a node-redis client or ` +
      'Cluster (createClient(), connected), an array of 3, 5 or 7 such clients of independent masters, or ' +
      `a lock backend such as new MemoryLockBackend(); got ${describeValue(client)}. To let the module ` +
      'connect, pass url or redis instead.',
  );
}

/** A redis:// or rediss:// URL with a host: an unset host (`redis://${HOST}`) would mean localhost:6379. */
function checkUrl(url: unknown, label: string): void {
  const fail = (why: string): never => {
    throw new LockUsageError(
      `${label}: url must be a redis:// or rediss:// URL such as redis://user:pass@host:6379/0 (or an ` +
        `array of 3, 5 or 7 for a quorum); ${why}, got ${describeValue(url)}.`,
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
