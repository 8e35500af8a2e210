/**
 * The options of a LockService, each declared once below with its check and default, and their
 * resolution (the Nest module checks its own in lib/nest/redis-lock.context.ts and passes these on).
 * Also the arguments of close() and checkServers(). Everything here runs before any command is sent.
 */

import { LockUsageError } from '../errors/lock-usage.error';
import type { ServerRisk } from '../protocol/server-info';
import type { LockLogger, TelemetryOptions } from '../telemetry/telemetry-options';
import {
  type CallDefaults,
  DEFAULT_OPTION_NAMES,
  type LockDefaults,
  resolveCallDefaults,
} from './call-options';
import { describeValue as describe, hasLoneSurrogate } from './describe-value';
import {
  checkKnownKeys,
  integerIn,
  MAX_MS,
  milliseconds,
  optionalBoolean,
  plainObject,
  read,
} from './option-checks';

/** Options of a LockService. */
export interface LockServiceOptions {
  /** Prefix of every Redis key and channel the lock uses. Default `lock:`. */
  prefix?: string;
  /**
   * A readable name for this service, at the start of its tokens (`<name>@<random>:...`), so that
   * `inspect`, `list` and the lock board say which instance holds or waits: letters, digits, `-`, `_`
   * and `.`, at most 40 (a host name, a pod name). Default: a random id only.
   */
  instanceName?: string;
  /** Defaults for each call. */
  defaults?: LockDefaults;
  /**
   * The longest a lock handed to a waiter stays reserved for it until it confirms, in ms. A waiter that
   * died or gave up after being granted delays the next one by at most this much, and never by more
   * than its own ttl: each grant's window is the smaller of this and the granted waiter's ttl, so it
   * never limits which ttl a call may use. Default 2 000.
   */
  claimWindow?: number;
  /** Longest wait for a reply to one command before the call fails with RedisUnavailableError, in ms. Default 5 000. */
  commandTimeout?: number;
  /**
   * Protection under overload (docs/nest.md, "Under overload"). `true` (default): a call is turned away
   * at once, unqueued (LockShedError), when more are in line for its key than its wait could see through
   * at the pace the line moves; and while a key's line stands (every call served from it for a while
   * waited longer than 15 places at its pace), a call that serves a request or has a deadline waits at
   * most half that. `false`: every call joins and waits its whole wait.
   */
  shed?: boolean;
  /**
   * With several independent Redis masters (Redlock) only: the least wait for one node's reply, in ms,
   * well below the ttl, so a stopped node costs a grant little of its validity. A node whose replies
   * have been slower is waited for longer, up to 4 times this. Default 100.
   */
  nodeTimeout?: number;
  /**
   * Called once per server and kind of risk when the Redis the locks live on can evict them (`maxmemory`
   * with an evicting policy), lose them on a restart (no AOF) or a failover (replicas), or is a replica;
   * checked with INFO when each connection becomes ready and by `checkServers()`. Without it nothing is
   * checked at start-up. The Nest module logs these through the Nest logger. It must not throw (what it
   * throws is ignored).
   */
  onWarning?: (warning: ServerRisk) => void;
  /**
   * With a master and replicas (Sentinel, a managed primary with a standby): replicas that must
   * acknowledge each grant, confirmed hand-off and renewal before it counts (WAIT, on the same
   * connection and round trip). Replication is asynchronous otherwise, and a failover can promote a
   * replica that never saw a grant, letting a second holder in. One Redis server or a Sentinel-managed
   * master only (not a Cluster, a quorum or memory). Off by default.
   */
  replicas?: ReplicaOptions;
  /**
   * Where events and log lines go (`onEvent` receives every lock event; `logger` writes a line per
   * refusal and lost lease). Metrics and spans go to the OpenTelemetry SDK the application registered,
   * if any. See docs/observability.md.
   */
  telemetry?: TelemetryOptions;
}

/** The `replicas` option: acknowledgement of grants and renewals by replicas (docs/guarantees.md). */
export interface ReplicaOptions {
  /** Replicas that must acknowledge (WAIT numreplicas), an integer from 1. */
  count: number;
  /** How long to wait for them, in ms (an integer from 1, at most a third of defaults.ttl). */
  timeout: number;
  /**
   * A grant not acknowledged in time is released; then `fail` (default) rejects the call with
   * LockNotReplicatedError, and `requeue` puts the caller back in line (at the back) until its
   * waitTimeout, when it rejects with that error. `tryAcquire` and waitTimeout 0 always fail. A renewal
   * not acknowledged aborts the lease's signal either way (LockLostError, reason `not-replicated`).
   */
  unacknowledged?: 'fail' | 'requeue';
  /**
   * Wait for the writes to be fsynced to the append-only file as well (WAITAOF, Redis 7.2 or later), on
   * the master and on `count` replicas, rather than only received by the replicas. Default false.
   */
  aof?: boolean;
}

/** `replicas`, validated. */
export interface ResolvedReplicas {
  count: number;
  timeout: number;
  unacknowledged: 'fail' | 'requeue';
  aof: boolean;
}

export const DEFAULT_PREFIX = 'lock:';
export const DEFAULT_COMMAND_TIMEOUT = 5_000;
const DEFAULT_NODE_TIMEOUT = 100;
/** More replicas than this is a typo: WAIT would time out on every grant. */
const MAX_REPLICAS = 100;

function checkPrefix(prefix: unknown): string {
  if (typeof prefix !== 'string' || prefix.length > 256 || /[{}]/.test(prefix) || hasLoneSurrogate(prefix)) {
    throw new LockUsageError(
      'prefix must be a string of at most 256 characters, without braces or lone surrogates, got ' +
        `${describe(prefix)}. Use something like "lock:" or "myapp:lock:".`,
    );
  }
  return prefix;
}

function checkInstanceName(name: unknown): string {
  if (typeof name !== 'string' || !/^[\w.-]{1,40}$/.test(name)) {
    throw new LockUsageError(
      `instanceName must be 1 to 40 letters, digits, "-", "_" or ".", got ${describe(name)}. ` +
        'Use a host or pod name, such as "orders-7f9c".',
    );
  }
  return name;
}

/** The `telemetry` option, checked: an object of providers with the methods used, and a function. */
function checkTelemetryOptions(value: unknown): TelemetryOptions | undefined {
  if (value === undefined) return undefined;
  const fail = (why: string): never => {
    throw new LockUsageError(`telemetry ${why}`);
  };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    fail('must be an object such as { onEvent, logger }.');
  }
  const options = value as Record<string, unknown>;
  checkKnownKeys(options, ['onEvent', 'logger'], 'telemetry');
  const { onEvent, logger } = options;
  if (onEvent !== undefined && typeof onEvent !== 'function')
    fail('.onEvent must be a function of the event.');
  const log = logger as Partial<LockLogger> | null | undefined;
  if (logger !== undefined && (typeof log?.warn !== 'function' || typeof log?.error !== 'function')) {
    fail(".logger must have warn and error methods: a Nest Logger (new Logger('Locks')), console, or pino.");
  }
  return { ...(options as TelemetryOptions) };
}

/** The `onWarning` option: a function (the Nest module checks it before wrapping it). */
export function checkOnWarning(value: unknown): ((warning: ServerRisk) => void) | undefined {
  if (value === undefined || typeof value === 'function') return value as (warning: ServerRisk) => void;
  throw new LockUsageError(
    `onWarning must be a function such as (warning) => logger.warn(warning.message), got ${describe(value)}.`,
  );
}

function checkReplicas(value: unknown): ResolvedReplicas {
  const o = plainObject('replicas', value);
  checkKnownKeys(o, ['count', 'timeout', 'unacknowledged', 'aof'], 'replicas');
  const count = integerIn('replicas.count', read(o, 'count', 'replicas.count'), 1, MAX_REPLICAS, 'replicas');
  const timeout = milliseconds('replicas.timeout', read(o, 'timeout', 'replicas.timeout'), 1);
  const unacknowledged = read(o, 'unacknowledged', 'replicas.unacknowledged') ?? 'fail';
  if (unacknowledged !== 'fail' && unacknowledged !== 'requeue') {
    throw new LockUsageError(
      'replicas.unacknowledged must be "fail" (reject the call) or "requeue" (go back in line), got ' +
        `${describe(unacknowledged)}.`,
    );
  }
  const aof = optionalBoolean('replicas.aof', read(o, 'aof', 'replicas.aof')) ?? false;
  return { count, timeout, unacknowledged, aof };
}

/**
 * Every service option, once: its check (given the value set) and its default (undefined: unset); its
 * name, type and meaning are LockServiceOptions'. `defaults`' and `nodeTimeout`'s defaults, and the rules
 * against the ttl, need the resolved `defaults`: see resolveServiceOptions.
 */
const SERVICE_OPTIONS = {
  prefix: { check: checkPrefix, default: DEFAULT_PREFIX },
  instanceName: { check: checkInstanceName, default: undefined },
  defaults: { check: resolveCallDefaults, default: undefined },
  claimWindow: { check: (v: unknown) => milliseconds('claimWindow', v, 10), default: 2_000 },
  commandTimeout: {
    check: (v: unknown) => milliseconds('commandTimeout', v, 1),
    default: DEFAULT_COMMAND_TIMEOUT,
  },
  nodeTimeout: { check: (v: unknown) => milliseconds('nodeTimeout', v, 1), default: undefined },
  shed: { check: checkShed, default: true },
  onWarning: { check: checkOnWarning, default: undefined },
  replicas: { check: checkReplicas, default: undefined },
  telemetry: { check: checkTelemetryOptions, default: undefined },
} as const satisfies Record<
  keyof LockServiceOptions,
  { check: (value: unknown) => unknown; default: unknown }
>;

function checkShed(value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  throw new LockUsageError(
    `shed must be true (turn away what its wait could not see through; the default) or false (every call ` +
      `waits its whole wait), got ${describe(value)}.`,
  );
}

/**
 * Where a test or a benchmark sets the overload rule itself, to make it trip on cue or to price one part
 * of it: a fixed standing-line rule, one paced by other places, or the door alone ('door'). Not an option:
 * the default is what is documented and measured.
 */
export const SHED_RULE: unique symbol = Symbol.for('nestjs-redis-lock.shed-rule');

/** A fixed standing-line rule (ms), or one scaled to each key's pace: a target of `places` at that pace. */
export type StandingRule = { target: number; interval: number } | { places: number };

/** What the engine's admission follows: `shed`, or a rule set under SHED_RULE. */
export type ShedPolicy = boolean | 'door' | StandingRule;

type ServiceOptionName = keyof typeof SERVICE_OPTIONS;

/** The options a LockService knows (the module adds its own to these). */
export const SERVICE_OPTION_NAMES = Object.keys(SERVICE_OPTIONS) as readonly ServiceOptionName[];

/** The service's options, each as its check returns it, or its default. */
export type ResolvedServiceOptions = Omit<
  {
    readonly [N in ServiceOptionName]:
      | ReturnType<(typeof SERVICE_OPTIONS)[N]['check']>
      | (typeof SERVICE_OPTIONS)[N]['default'];
  },
  'defaults' | 'nodeTimeout' | 'shed'
> & {
  /** What a call that leaves an option unset gets. */
  readonly defaults: CallDefaults;
  readonly nodeTimeout: number;
  readonly shed: ShedPolicy;
};

/**
 * Refuses option names outside `known`, with a hint for a per-call default (ttl, waitTimeout, renew,
 * minHold, maxHold) put at the top level instead of in `defaults`. Throws LockUsageError.
 */
export function checkOptionNames(o: object, known: readonly string[], what: string): void {
  for (const name of DEFAULT_OPTION_NAMES) {
    if (Object.hasOwn(o, name) && !known.includes(name)) {
      throw new LockUsageError(
        `Unknown option "${name}" in ${what}: per-call defaults go in defaults, as in { defaults: { ${name}: ... } }.`,
      );
    }
  }
  checkKnownKeys(o, known, what);
}

/**
 * Validates service options and fills in defaults. Throws LockUsageError, naming an unknown key (a
 * typo such as `claimwindow` would otherwise be ignored silently).
 */
export function resolveServiceOptions(options: unknown): ResolvedServiceOptions {
  const o = plainObject('LockService options', options);
  checkOptionNames(o, SERVICE_OPTION_NAMES, 'the lock options');
  const given: Record<string, unknown> = {};
  for (const name of SERVICE_OPTION_NAMES) {
    const value = read(o, name, name);
    given[name] = value === undefined ? SERVICE_OPTIONS[name].default : SERVICE_OPTIONS[name].check(value);
  }
  const defaults = (given.defaults as CallDefaults | undefined) ?? resolveCallDefaults(undefined);
  const resolved = {
    ...(given as Omit<ResolvedServiceOptions, 'defaults' | 'nodeTimeout' | 'shed'>),
    defaults,
    nodeTimeout:
      (given.nodeTimeout as number | undefined) ??
      Math.min(DEFAULT_NODE_TIMEOUT, Math.floor(defaults.ttl / 3)),
    shed: (o[SHED_RULE as unknown as string] as ShedPolicy | undefined) ?? (given.shed as boolean),
  };
  const { nodeTimeout, replicas } = resolved;
  const { ttl } = defaults;
  // Both waits come out of a lease: a grant must still be valid after them.
  const atMostAThird = (name: string, ms: number, why: string) => {
    if (ms * 3 <= ttl) return;
    throw new LockUsageError(
      `${name} (${ms} ms) must be at most a third of defaults.ttl (${ttl} ms): ${why}. Lower ${name} or ` +
        'raise defaults.ttl.',
    );
  };
  atMostAThird(
    'nodeTimeout',
    nodeTimeout,
    'a grant takes two rounds to the nodes and must still be valid after them',
  );
  if (replicas)
    atMostAThird('replicas.timeout', replicas.timeout, 'the wait for replicas comes out of the lease');
  return resolved;
}

/**
 * The claim window of a waiter with this ttl: the configured window is an upper bound, and a grant
 * never stays reserved longer than the lease it would become, so a dead waiter with a short lease
 * stalls the queue for at most its own ttl (docs/protocol.md, "Claim window").
 */
export function claimWindowFor(ttl: number, claimWindow: number): number {
  return Math.min(ttl, claimWindow);
}

/**
 * How long a closing service lets its running `using` calls finish before their leases are released
 * anyway, ms: the same for `close()` and for the Nest module's shutdown.
 */
export const DEFAULT_GRACE_PERIOD = 5_000;

/** The `gracePeriod` of `close()`: a non-negative integer of ms that a Node timer can hold. */
export function resolveGracePeriod(options: unknown): number {
  if (options === undefined || options === null) return DEFAULT_GRACE_PERIOD;
  if (typeof options !== 'object') {
    throw new LockUsageError(`close() options must be an object, got ${describe(options)}.`);
  }
  const grace =
    read(options as Record<string, unknown>, 'gracePeriod', 'gracePeriod') ?? DEFAULT_GRACE_PERIOD;
  return integerIn('gracePeriod', grace, 0, MAX_MS, 'milliseconds');
}

/** The `timeout` of `checkServers()`: undefined (the service's commandTimeout) or whole ms from 1. */
export function resolveCheckTimeout(options: unknown): number | undefined {
  if (options === undefined || options === null) return undefined;
  if (typeof options !== 'object') {
    throw new LockUsageError(`checkServers() options must be an object, got ${describe(options)}.`);
  }
  const timeout = read(options as Record<string, unknown>, 'timeout', 'timeout');
  return timeout === undefined ? undefined : milliseconds('checkServers() timeout', timeout, 1);
}
