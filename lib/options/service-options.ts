/**
 * The options of a LockService, each declared once below with its check and default, and their
 * resolution (the Nest module checks its own in lib/nest/redis-lock.context.ts and passes these on).
 * Also the arguments of close() and checkServers(). Everything here runs before any command is sent.
 */
import { LockOptionsError } from '../errors/lock-options.error';
import type { ServerRisk } from '../protocol/server-info';
import type {
  LockLogger,
  MeterProviderLike,
  TelemetryOptions,
  TracerProviderLike,
} from '../telemetry/telemetry-options';
import { type CallDefaults, DEFAULT_OPTION_NAMES, resolveCallDefaults } from './call-options';
import { describeValue as describe, hasLoneSurrogate } from './describe-value';
import { checkKnownKeys, MAX_MS, milliseconds, optionalBoolean, plainObject, read } from './option-checks';

/** The defaults a service applies to calls that leave an option unset. */
export interface LockDefaults {
  ttl?: number;
  waitTimeout?: number;
  renew?: boolean;
  minHold?: number;
  maxHold?: number;
}

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
  /**
   * How long a lock's fencing counter is kept after its last grant, in ms. Fencing tokens stay
   * increasing beyond it too (they never fall below the Redis server clock in µs). Default 3 600 000.
   */
  fenceRetention?: number;
  /** Longest wait for a reply to one command before the call fails with RedisUnavailableError, in ms. Default 5 000. */
  commandTimeout?: number;
  /**
   * Turn a call away at once, unqueued, when more are in line for its key than its wait could see
   * through at the pace this service has seen that line move (LockShedError), and while a key's line
   * stands (every call served from it in an interval waited longer than a target), cut a new call's wait
   * to half the target until an interval serves nearly all the calls that came; only a call that serves
   * someone (a request's, or one with a deadline) is cut.
   * `true` (the default): the target is 15 places at that key's pace (at least 20 ms), the interval 10
   * targets; `{ places }`: that many places instead of 15. `{ target, interval }`: a fixed target and
   * interval in ms (interval default 100). `'door'`: the door alone, no standing-line rule. `false`:
   * every call joins and waits its whole wait.
   */
  shed?: boolean | 'door' | { places: number } | { target: number; interval?: number };
  /**
   * With several independent Redis masters (Redlock) only: the longest wait for one node's reply, in ms,
   * well below the ttl, so a slow or stopped node costs a grant little of its validity. Default 100.
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
   * Where metrics, spans and events go. With `@opentelemetry/api` installed the service reports through
   * the global providers unless given its own (`meterProvider`, `tracerProvider`); `onEvent` receives
   * every lock event. See Observability in the README.
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
    throw new LockOptionsError(
      'prefix must be a string of at most 256 characters, without braces or lone surrogates, got ' +
        `${describe(prefix)}. Use something like "lock:" or "myapp:lock:".`,
    );
  }
  return prefix;
}

function checkInstanceName(name: unknown): string {
  if (typeof name !== 'string' || !/^[\w.-]{1,40}$/.test(name)) {
    throw new LockOptionsError(
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
    throw new LockOptionsError(`telemetry ${why}`);
  };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    fail('must be an object such as { meterProvider, tracerProvider, onEvent, logger }.');
  }
  const options = value as Record<string, unknown>;
  checkKnownKeys(options, ['meterProvider', 'tracerProvider', 'onEvent', 'logger'], 'telemetry');
  const { meterProvider, tracerProvider, onEvent, logger } = options;
  if (meterProvider !== undefined && typeof (meterProvider as MeterProviderLike)?.getMeter !== 'function') {
    fail(".meterProvider must be an OpenTelemetry MeterProvider (with getMeter), such as the SDK's.");
  }
  if (
    tracerProvider !== undefined &&
    typeof (tracerProvider as TracerProviderLike)?.getTracer !== 'function'
  ) {
    fail(".tracerProvider must be an OpenTelemetry TracerProvider (with getTracer), such as the SDK's.");
  }
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
  throw new LockOptionsError(
    `onWarning must be a function such as (warning) => logger.warn(warning.message), got ${describe(value)}.`,
  );
}

function checkReplicas(value: unknown): ResolvedReplicas {
  const o = plainObject('replicas', value);
  checkKnownKeys(o, ['count', 'timeout', 'unacknowledged', 'aof'], 'replicas');
  const count = read(o, 'count', 'replicas.count');
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > MAX_REPLICAS) {
    throw new LockOptionsError(
      `replicas.count must be an integer from 1 to ${MAX_REPLICAS} (how many replicas must acknowledge each ` +
        `grant), got ${describe(count)}.`,
    );
  }
  const timeout = milliseconds('replicas.timeout', read(o, 'timeout', 'replicas.timeout'), 1);
  const unacknowledged = read(o, 'unacknowledged', 'replicas.unacknowledged') ?? 'fail';
  if (unacknowledged !== 'fail' && unacknowledged !== 'requeue') {
    throw new LockOptionsError(
      'replicas.unacknowledged must be "fail" (reject the call) or "requeue" (go back in line), got ' +
        `${describe(unacknowledged)}.`,
    );
  }
  const aof = optionalBoolean('replicas.aof', read(o, 'aof', 'replicas.aof')) ?? false;
  return { count, timeout, unacknowledged, aof };
}

/**
 * Every service option, once: its check (given the value set) and its default (undefined: unset).
 * `nodeTimeout`'s default and the rules against the ttl need the resolved `defaults`: see
 * resolveServiceOptions.
 */
const SERVICE_OPTIONS = {
  prefix: { check: checkPrefix, default: DEFAULT_PREFIX },
  instanceName: { check: checkInstanceName, default: undefined },
  defaults: { check: resolveCallDefaults, default: undefined },
  claimWindow: { check: (v: unknown) => milliseconds('claimWindow', v, 10), default: 2_000 },
  fenceRetention: { check: (v: unknown) => milliseconds('fenceRetention', v, 1), default: 3_600_000 },
  commandTimeout: {
    check: (v: unknown) => milliseconds('commandTimeout', v, 1),
    default: DEFAULT_COMMAND_TIMEOUT,
  },
  nodeTimeout: { check: (v: unknown) => milliseconds('nodeTimeout', v, 1), default: undefined },
  shed: { check: checkShed, default: true },
  onWarning: { check: checkOnWarning, default: undefined },
  replicas: { check: checkReplicas, default: undefined },
  telemetry: { check: checkTelemetryOptions, default: undefined },
} as const;

function checkShed(value: unknown): ResolvedServiceOptions['shed'] {
  if (value === undefined || typeof value === 'boolean' || value === 'door') return value ?? true;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new LockOptionsError(
      `shed must be true, false, 'door', { places } or { target, interval } (the standing-line rule: its target in places of the key's line, or in ms), got ${describe(value)}.`,
    );
  }
  const bag = value as Record<string, unknown>;
  checkKnownKeys(bag, ['target', 'interval', 'places'], 'shed');
  const places = read(bag, 'places', 'shed.places');
  if (places !== undefined) {
    if (
      read(bag, 'target', 'shed.target') !== undefined ||
      read(bag, 'interval', 'shed.interval') !== undefined
    )
      throw new LockOptionsError(
        'shed takes { places } (a target paced by the key) or { target, interval } (fixed, in ms), not both.',
      );
    if (typeof places !== 'number' || !Number.isInteger(places) || places < 1 || places > 1_000)
      throw new LockOptionsError(`shed.places must be an integer from 1 to 1000, got ${describe(places)}.`);
    return { places };
  }
  return {
    target: milliseconds('shed.target', read(bag, 'target', 'shed.target'), 1),
    interval: milliseconds('shed.interval', read(bag, 'interval', 'shed.interval') ?? 100, 1),
  };
}

/** The options a LockService knows (the module adds its own to these). */
export const SERVICE_OPTION_NAMES: readonly string[] = Object.keys(SERVICE_OPTIONS);

export interface ResolvedServiceOptions {
  prefix: string;
  instanceName: string | undefined;
  /** What a call that leaves an option unset gets. */
  defaults: CallDefaults;
  claimWindow: number;
  fenceRetention: number;
  commandTimeout: number;
  nodeTimeout: number;
  shed: boolean | 'door' | { places: number } | { target: number; interval: number };
  onWarning: ((warning: ServerRisk) => void) | undefined;
  replicas: ResolvedReplicas | undefined;
  telemetry: TelemetryOptions | undefined;
}

/**
 * Refuses option names outside `known`, with a hint for a per-call default (ttl, waitTimeout, renew,
 * minHold, maxHold) put at the top level instead of in `defaults`. Throws LockOptionsError.
 */
export function checkOptionNames(o: object, known: readonly string[], what: string): void {
  for (const name of DEFAULT_OPTION_NAMES) {
    if (Object.hasOwn(o, name) && !known.includes(name)) {
      throw new LockOptionsError(
        `Unknown option "${name}" in ${what}: per-call defaults go in defaults, as in { defaults: { ${name}: ... } }.`,
      );
    }
  }
  checkKnownKeys(o, known, what);
}

/**
 * Validates service options and fills in defaults. Throws LockOptionsError, naming an unknown key (a
 * typo such as `claimwindow` would otherwise be ignored silently).
 */
export function resolveServiceOptions(options: unknown): ResolvedServiceOptions {
  const o = plainObject('LockService options', options);
  checkOptionNames(o, SERVICE_OPTION_NAMES, 'the lock options');
  const value = <N extends keyof typeof SERVICE_OPTIONS>(name: N) => {
    const given = read(o, name, name);
    const spec = SERVICE_OPTIONS[name];
    return (given === undefined ? spec.default : spec.check(given)) as
      | ReturnType<(typeof SERVICE_OPTIONS)[N]['check']>
      | (typeof SERVICE_OPTIONS)[N]['default'];
  };
  const prefix = value('prefix');
  const instanceName = value('instanceName');
  const defaults = value('defaults') ?? resolveCallDefaults(undefined);
  const claimWindow = value('claimWindow');
  const fenceRetention = value('fenceRetention');
  const commandTimeout = value('commandTimeout');
  const nodeTimeout = value('nodeTimeout') ?? Math.min(DEFAULT_NODE_TIMEOUT, Math.floor(defaults.ttl / 3));
  const shed = value('shed');
  const onWarning = value('onWarning');
  const replicas = value('replicas');
  const telemetry = value('telemetry');
  const { ttl } = defaults;
  // Both waits come out of a lease: a grant must still be valid after them.
  const atMostAThird = (name: string, ms: number, why: string) => {
    if (ms * 3 <= ttl) return;
    throw new LockOptionsError(
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
  return {
    prefix,
    instanceName,
    defaults,
    claimWindow,
    fenceRetention,
    commandTimeout,
    nodeTimeout,
    shed,
    onWarning,
    replicas,
    telemetry,
  };
}

/**
 * The claim window of a waiter with this ttl: the configured window is an upper bound, and a grant
 * never stays reserved longer than the lease it would become, so a dead waiter with a short lease
 * stalls the queue for at most its own ttl (docs/protocol.md, "Claim window").
 */
export function claimWindowFor(ttl: number, claimWindow: number): number {
  return Math.min(ttl, claimWindow);
}

/** The `gracePeriod` of `close()`: a non-negative integer of ms that a Node timer can hold. */
export function resolveGracePeriod(options: unknown): number {
  if (options === undefined || options === null) return 0;
  if (typeof options !== 'object') {
    throw new LockOptionsError(`close() options must be an object, got ${describe(options)}.`);
  }
  const grace = read(options as Record<string, unknown>, 'gracePeriod', 'gracePeriod') ?? 0;
  if (typeof grace !== 'number' || !Number.isInteger(grace) || grace < 0 || grace > MAX_MS) {
    throw new LockOptionsError(
      `gracePeriod must be a non-negative integer of ms up to ${MAX_MS}, got ${describe(grace)}.`,
    );
  }
  return grace;
}

/** The `timeout` of `checkServers()`: undefined (the service's commandTimeout) or whole ms from 1. */
export function resolveCheckTimeout(options: unknown): number | undefined {
  if (options === undefined || options === null) return undefined;
  if (typeof options !== 'object') {
    throw new LockOptionsError(`checkServers() options must be an object, got ${describe(options)}.`);
  }
  const timeout = read(options as Record<string, unknown>, 'timeout', 'timeout');
  return timeout === undefined ? undefined : milliseconds('checkServers() timeout', timeout, 1);
}
