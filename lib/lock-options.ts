/**
 * Options of the lock service and of each call, their defaults, and their validation. Everything here
 * runs before any command is sent, so a bad value never leaves partial state in Redis.
 */

import { describeValue, hasLoneSurrogate } from './describe-value';
import { LockKeyError } from './errors/lock-key.error';
import { LockOptionsError } from './errors/lock-options.error';
import { checkMaxHold, checkMinHold, maxHoldMilliseconds } from './hold-options';
import { type LockMode, resolveMode, resolvePermits } from './lock-kind';
import {
  checkKnownKeys,
  MAX_MS,
  milliseconds,
  optionalBoolean,
  plainObject,
  read,
  waitMilliseconds,
} from './option-checks';
import type { ServerRisk } from './store/server-watch';
import { checkLockName, checkTelemetryOptions } from './telemetry/lock-telemetry';
import type { TelemetryOptions } from './telemetry/telemetry-options';

/** Options of one `acquire`, `tryAcquire` or `using` call. Unset fields fall back to the service defaults. */
export interface AcquireOptions {
  /**
   * Lease time to live in ms (an integer from 10): how long the lock outlives a holder that stops
   * renewing. Short leases are fine: with `renew` they are extended every ttl/3. Default 30 000.
   */
  ttl?: number;
  /** Extend the lease every ttl/3 while it is held. Default true inside `using`, false for `acquire`. */
  renew?: boolean;
  /** How long to wait for the lock, in ms; 0 tries once, `Infinity` waits without limit. Default 10 000. */
  waitTimeout?: number;
  /**
   * Hold the lock at least this long after its grant, in ms (0 to ttl). A release that comes sooner
   * leaves the lock held, without renewal, until `minHold` has passed; then the queue is served as
   * usual. For a scheduled job on several instances: a job that ends at once still keeps the others'
   * ticks, fired a few ms later, from running it again. Default 0.
   */
  minHold?: number;
  /**
   * Stop renewing once the lease has been held this long, in ms (at least the ttl and minHold; Infinity
   * for no cap). A holder that hangs (a call to a dead partner with no timeout) then loses the lock
   * instead of keeping it for as long as its process lives: at maxHold its `signal` aborts with
   * LockLostError reason `max-hold`, and the lock expires in Redis within one ttl unless released first,
   * when the next waiter is served. Default: none (Infinity).
   */
  maxHold?: number;
  /**
   * How many callers may hold the key at once, across every instance (an integer from 1 to 10 000).
   * Above 1 the key is a fair semaphore: waiters are served in arrival order, each holder has its own
   * lease and fence. Every caller of one key must give the same number. Default 1, the mutex.
   */
  permits?: number;
  /**
   * A read-write lock: `'read'` shares the key with other readers, `'write'` holds it alone. Waiters are
   * served in arrival order, so a writer in line is served before every reader that came after it.
   * Every caller of a key that is read this way gives a mode. Default: none, a plain mutex.
   */
  mode?: LockMode;
  /** Stops waiting when aborted (the call rejects with LockAbortedError). */
  signal?: AbortSignal;
  /**
   * The lock's name in metrics, spans and events (`lock.name`): a few fixed names (`'order'`), never the
   * key itself, whose values would make a metric series each. Default `'unnamed'`; `@Locked` gives its
   * key template.
   */
  name?: string;
}

/** The options of `tryAcquire`: those of `acquire` but `waitTimeout` (it never waits; 0 is accepted). */
export type TryAcquireOptions = Omit<AcquireOptions, 'waitTimeout'> & { waitTimeout?: 0 };

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
   * LockNotReplicatedError, and `wait` keeps the caller in line (at the back) until its waitTimeout, when
   * it rejects with that error. `tryAcquire` and waitTimeout 0 always fail. A renewal not acknowledged
   * aborts the lease's signal either way (LockLostError, reason `not-replicated`).
   */
  onTimeout?: 'fail' | 'wait';
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
  onTimeout: 'fail' | 'wait';
  aof: boolean;
}

export const DEFAULT_TTL = 30_000;
export const DEFAULT_WAIT_TIMEOUT = 10_000;
export const DEFAULT_CLAIM_WINDOW = 2_000;
export const DEFAULT_PREFIX = 'lock:';
export const DEFAULT_FENCE_RETENTION = 3_600_000;
export const DEFAULT_COMMAND_TIMEOUT = 5_000;
export const DEFAULT_NODE_TIMEOUT = 100;

/** Longest key accepted, in UTF-16 code units: keys are names, not payloads. */
export const MAX_KEY_LENGTH = 1024;
/**
 * Most keys one lease may hold. They are taken one after another, a round trip each, and each renews on
 * its own: a thousand is already seconds of Redis work per grant, more is a design to revisit.
 */
export const MAX_KEYS = 1000;
const MIN_CLAIM_WINDOW = 10;
/**
 * Shortest lease accepted, in ms. Below it a lease would be spent before its first renewal could make
 * a round trip, and its safety margin (ttl/10) would round to nothing.
 */
export const MIN_TTL = 10;

export interface ResolvedServiceOptions {
  prefix: string;
  instanceName: string | undefined;
  ttl: number;
  waitTimeout: number;
  renew: boolean | undefined;
  minHold: number;
  /** Infinity when unset. */
  maxHold: number;
  claimWindow: number;
  fenceRetention: number;
  commandTimeout: number;
  nodeTimeout: number;
  onWarning: ((warning: ServerRisk) => void) | undefined;
  replicas: ResolvedReplicas | undefined;
  telemetry: TelemetryOptions | undefined;
}

export interface ResolvedAcquireOptions {
  ttl: number;
  waitTimeout: number;
  renew: boolean;
  minHold: number;
  /** Infinity when unset. */
  maxHold: number;
  signal: AbortSignal | undefined;
  name: string | undefined;
  /** How many callers may hold the key at once: 1 for a mutex. */
  permits: number;
  /** A read-write lock's mode, or undefined for a mutex or semaphore. */
  mode: LockMode | undefined;
}

export { describeValue, hasLoneSurrogate } from './describe-value';

const describe = describeValue;

export { MAX_MS, snapshotOptions } from './option-checks';

/** The `onWarning` option: undefined or a function (the Nest module checks it before wrapping it). */
export function checkOnWarning(value: unknown): ((warning: ServerRisk) => void) | undefined {
  if (value === undefined || typeof value === 'function') return value as (warning: ServerRisk) => void;
  throw new LockOptionsError(
    `onWarning must be a function such as (warning) => logger.warn(warning.message), got ${describe(value)}.`,
  );
}

/**
 * The claim window of a waiter with this ttl: the configured window is an upper bound, and a grant
 * never stays reserved longer than the lease it would become, so a dead waiter with a short lease
 * stalls the queue for at most its own ttl (docs/protocol.md, "Claim window").
 */
export function claimWindowFor(ttl: number, claimWindow: number): number {
  return Math.min(ttl, claimWindow);
}

/** The options a LockService knows (the module adds its connection options to these). */
export const SERVICE_OPTION_NAMES: readonly string[] = [
  'prefix',
  'instanceName',
  'defaults',
  'claimWindow',
  'fenceRetention',
  'commandTimeout',
  'nodeTimeout',
  'onWarning',
  'replicas',
  'telemetry',
];
const DEFAULT_NAMES: readonly string[] = ['ttl', 'waitTimeout', 'renew', 'minHold', 'maxHold'];

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

/**
 * Refuses option names outside `known`, with a hint for a per-call default (ttl, waitTimeout, renew, minHold) put
 * at the top level instead of in `defaults`. Throws LockOptionsError.
 */
export function checkOptionNames(o: object, known: readonly string[], what: string): void {
  for (const name of DEFAULT_NAMES) {
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
  const defaults = plainObject('defaults', read(o, 'defaults', 'defaults'));
  checkKnownKeys(defaults, DEFAULT_NAMES, 'defaults');
  const given = (name: string): unknown => read(o, name, name);
  const byDefault = (name: string): unknown => read(defaults, name, `defaults.${name}`);
  const rawPrefix = given('prefix');
  const prefix = rawPrefix === undefined ? DEFAULT_PREFIX : rawPrefix;
  if (typeof prefix !== 'string' || prefix.length > 256 || /[{}]/.test(prefix) || hasLoneSurrogate(prefix)) {
    throw new LockOptionsError(
      'prefix must be a string of at most 256 characters, without braces or lone surrogates, got ' +
        `${describe(prefix)}. Use something like "lock:" or "myapp:lock:".`,
    );
  }
  const instanceName = given('instanceName');
  if (
    instanceName !== undefined &&
    (typeof instanceName !== 'string' || !/^[\w.-]{1,40}$/.test(instanceName))
  ) {
    throw new LockOptionsError(
      `instanceName must be 1 to 40 letters, digits, "-", "_" or ".", got ${describe(instanceName)}. ` +
        'Use a host or pod name, such as "orders-7f9c".',
    );
  }
  const claimWindow = milliseconds(
    'claimWindow',
    given('claimWindow') ?? DEFAULT_CLAIM_WINDOW,
    MIN_CLAIM_WINDOW,
  );
  const ttl = milliseconds('defaults.ttl', byDefault('ttl') ?? DEFAULT_TTL, MIN_TTL);
  const minHold = milliseconds('defaults.minHold', byDefault('minHold') ?? 0, 0);
  checkMinHold(minHold, ttl, 'defaults.minHold', 'defaults.ttl');
  const maxHold = maxHoldMilliseconds(
    'defaults.maxHold',
    byDefault('maxHold') ?? Number.POSITIVE_INFINITY,
    MIN_TTL,
  );
  checkMaxHold(
    maxHold,
    { maxHold: 'defaults.maxHold', ttl: 'defaults.ttl', minHold: 'defaults.minHold' },
    ttl,
    minHold,
  );
  return {
    prefix,
    instanceName,
    ttl,
    minHold,
    maxHold,
    claimWindow,
    waitTimeout: waitMilliseconds('defaults.waitTimeout', byDefault('waitTimeout') ?? DEFAULT_WAIT_TIMEOUT),
    renew: optionalBoolean('defaults.renew', byDefault('renew')),
    fenceRetention: milliseconds('fenceRetention', given('fenceRetention') ?? DEFAULT_FENCE_RETENTION, 1),
    commandTimeout: milliseconds('commandTimeout', given('commandTimeout') ?? DEFAULT_COMMAND_TIMEOUT, 1),
    nodeTimeout: nodeTimeoutBelow(ttl, given('nodeTimeout')),
    onWarning: checkOnWarning(given('onWarning')),
    replicas: resolveReplicas(given('replicas'), ttl),
    telemetry: checkTelemetryOptions(given('telemetry')),
  };
}

const REPLICA_NAMES: readonly string[] = ['count', 'timeout', 'onTimeout', 'aof'];
/** More replicas than this is a typo: WAIT would time out on every grant. */
const MAX_REPLICAS = 100;

function resolveReplicas(value: unknown, ttl: number): ResolvedReplicas | undefined {
  if (value === undefined) return undefined;
  const o = plainObject('replicas', value);
  checkKnownKeys(o, REPLICA_NAMES, 'replicas');
  const count = read(o, 'count', 'replicas.count');
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > MAX_REPLICAS) {
    throw new LockOptionsError(
      `replicas.count must be an integer from 1 to ${MAX_REPLICAS} (how many replicas must acknowledge each ` +
        `grant), got ${describe(count)}.`,
    );
  }
  const timeout = milliseconds('replicas.timeout', read(o, 'timeout', 'replicas.timeout'), 1);
  if (timeout * 3 > ttl) {
    throw new LockOptionsError(
      `replicas.timeout (${timeout} ms) must be at most a third of defaults.ttl (${ttl} ms): the wait for ` +
        'replicas comes out of the lease. Lower replicas.timeout or raise defaults.ttl.',
    );
  }
  const onTimeout = read(o, 'onTimeout', 'replicas.onTimeout') ?? 'fail';
  if (onTimeout !== 'fail' && onTimeout !== 'wait') {
    throw new LockOptionsError(
      `replicas.onTimeout must be "fail" (reject the call) or "wait" (go back in line), got ${describe(onTimeout)}.`,
    );
  }
  const aof = optionalBoolean('replicas.aof', read(o, 'aof', 'replicas.aof')) ?? false;
  return { count, timeout, onTimeout, aof };
}

/** The per-node timeout of a quorum: whole ms, below the default ttl (a grant must outlast one round). */
function nodeTimeoutBelow(ttl: number, value: unknown): number {
  const nodeTimeout = milliseconds(
    'nodeTimeout',
    value ?? Math.min(DEFAULT_NODE_TIMEOUT, Math.floor(ttl / 3)),
    1,
  );
  if (nodeTimeout * 3 > ttl) {
    throw new LockOptionsError(
      `nodeTimeout (${nodeTimeout} ms) must be at most a third of defaults.ttl (${ttl} ms): a grant takes two ` +
        'rounds to the nodes and must still be valid after them. Lower nodeTimeout or raise defaults.ttl.',
    );
  }
  return nodeTimeout;
}

/**
 * The options a lock declaration (@Locked) passes on to every call it makes, as they are: one list, so
 * that the decorator accepts, the start-up check validates and the interceptor passes the same ones.
 */
export const DECLARED_OPTION_NAMES = [
  'ttl',
  'waitTimeout',
  'renew',
  'minHold',
  'maxHold',
  'permits',
  'mode',
] as const;

/** The options of `declared` that every call of a lock declaration passes on (DECLARED_OPTION_NAMES). */
export function declaredOptions(declared: AcquireOptions): AcquireOptions {
  const { ttl, waitTimeout, renew, minHold, maxHold, permits, mode } = declared;
  return { ttl, waitTimeout, renew, minHold, maxHold, permits, mode };
}

/** Validates one call's options against the service's. Throws LockOptionsError. */
const CALL_OPTION_NAMES = [...DECLARED_OPTION_NAMES, 'signal', 'name'] as const;

/**
 * `tryNow`: the options of a call that never waits (tryAcquire): a waitTimeout other than 0 cannot
 * apply to it, and is refused rather than ignored.
 */
export function resolveAcquireOptions(
  service: ResolvedServiceOptions,
  options: unknown,
  renewByDefault: boolean,
  tryNow = false,
): ResolvedAcquireOptions {
  const o = plainObject('lock options', options);
  // A misspelt option (timeout for waitTimeout) would otherwise be ignored without a word.
  if (options !== undefined) checkKnownKeys(o, CALL_OPTION_NAMES, 'lock options');
  const given = (name: string): unknown => read(o, name, name);
  // Each option is read once: a getter cannot change what was validated.
  const ownTtl = given('ttl') ?? undefined;
  const ttl = milliseconds('ttl', ownTtl ?? service.ttl, MIN_TTL);
  const ownMinHold = given('minHold') ?? undefined;
  const minHold = ownMinHold === undefined ? service.minHold : milliseconds('minHold', ownMinHold, 0);
  checkMinHold(
    minHold,
    ttl,
    ownMinHold === undefined ? 'minHold (from defaults)' : 'minHold',
    ownTtl === undefined ? 'ttl (from defaults)' : 'ttl',
  );
  const ownMaxHold = given('maxHold') ?? undefined;
  const maxHold =
    ownMaxHold === undefined ? service.maxHold : maxHoldMilliseconds('maxHold', ownMaxHold, MIN_TTL);
  checkMaxHold(
    maxHold,
    {
      maxHold: ownMaxHold === undefined ? 'maxHold (from defaults)' : 'maxHold',
      ttl: ownTtl === undefined ? 'ttl (from defaults)' : 'ttl',
      minHold: ownMinHold === undefined ? 'minHold (from defaults)' : 'minHold',
    },
    ttl,
    minHold,
  );
  const signal = given('signal');
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new LockOptionsError(
      `signal must be an AbortSignal (e.g. new AbortController().signal), got ${describe(signal)}.`,
    );
  }
  const ownWait = given('waitTimeout');
  if (tryNow && ownWait !== undefined && ownWait !== 0) {
    throw new LockOptionsError(
      `tryAcquire never waits, so waitTimeout does not apply to it (got ${describe(ownWait)}). To wait, call acquire(key, { waitTimeout: ${typeof ownWait === 'number' ? ownWait : 'ms'} }); otherwise leave it out.`,
    );
  }
  return {
    ttl,
    waitTimeout: waitMilliseconds('waitTimeout', ownWait ?? service.waitTimeout),
    renew: optionalBoolean('renew', given('renew')) ?? service.renew ?? renewByDefault,
    minHold,
    maxHold,
    signal,
    name: checkLockName(given('name')),
    permits: resolvePermits(given('permits')),
    mode: resolveMode(given('mode')),
  };
}

/**
 * Checks the types and ranges of call options on their own, before any service is known (decorators
 * run at class definition). The checks against a service's settings come later (LockService.checkOptions).
 */
export function checkCallOptions(options: AcquireOptions): void {
  const o = options as Record<string, unknown>;
  const ttl = read(o, 'ttl', 'ttl');
  if (ttl !== undefined) milliseconds('ttl', ttl, MIN_TTL);
  const waitTimeout = read(o, 'waitTimeout', 'waitTimeout');
  if (waitTimeout !== undefined) waitMilliseconds('waitTimeout', waitTimeout);
  optionalBoolean('renew', read(o, 'renew', 'renew'));
  const minHold = read(o, 'minHold', 'minHold');
  if (minHold !== undefined) milliseconds('minHold', minHold, 0);
  if (typeof ttl === 'number' && typeof minHold === 'number') checkMinHold(minHold, ttl, 'minHold', 'ttl');
  const maxHold = read(o, 'maxHold', 'maxHold');
  if (maxHold !== undefined) maxHoldMilliseconds('maxHold', maxHold, MIN_TTL);
  if (typeof maxHold === 'number' && (typeof ttl === 'number' || typeof minHold === 'number')) {
    // Only what the declaration itself gives: the rest comes from the module's defaults, checked at start-up.
    const names = { maxHold: 'maxHold', ttl: 'ttl', minHold: 'minHold' };
    checkMaxHold(
      maxHold,
      names,
      typeof ttl === 'number' ? ttl : 0,
      typeof minHold === 'number' ? minHold : 0,
    );
  }
  resolvePermits(read(o, 'permits', 'permits'));
  resolveMode(read(o, 'mode', 'mode'));
}

/**
 * The keys of one call, in canonical order: a string is one key; an array is several (sorted by UTF-16
 * code units, duplicates collapsed), so every caller takes shared keys in the same order. Throws
 * LockKeyError naming the bad element.
 */
export function validateKeys(input: unknown): string[] {
  if (!Array.isArray(input)) return [validateKey(input)];
  if (input.length === 0) {
    throw new LockKeyError('The array of lock keys is empty: give at least one key, as in ["account:1"].');
  }
  if (input.length > MAX_KEYS) {
    throw new LockKeyError(
      `A lease can hold at most ${MAX_KEYS} keys, got ${input.length}. Lock a coarser resource instead.`,
    );
  }
  const keys = new Set<string>();
  for (let i = 0; i < input.length; i++) {
    try {
      keys.add(validateKey(input[i]));
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      throw new LockKeyError(`Key [${i}] of the array: ${why}`, undefined, error);
    }
  }
  return [...keys].sort();
}

/**
 * Checks a lock key. Braces are refused because the key is wrapped in a `{…}` hash tag (every key of
 * one lock must share a Cluster slot); lone surrogates because two different strings would then name
 * the same Redis key.
 */
export function validateKey(key: unknown): string {
  if (typeof key !== 'string') {
    throw new LockKeyError(
      `A lock key must be a string, got ${describe(key)}. Build it from the resource's id, as in \`order:\${id}\`.`,
    );
  }
  if (key.length === 0) {
    throw new LockKeyError('A lock key must not be empty: name the resource, as in "order:42".');
  }
  if (key.length > MAX_KEY_LENGTH) {
    throw new LockKeyError(
      `A lock key must be at most ${MAX_KEY_LENGTH} characters, got ${key.length}. Hash long inputs first.`,
    );
  }
  if (/[{}]/.test(key)) {
    throw new LockKeyError(
      `Lock key ${describe(key)} contains a brace; braces would break the {key} hash tag. Remove them.`,
      key,
    );
  }
  if (hasLoneSurrogate(key)) {
    throw new LockKeyError(
      'A lock key must be well-formed Unicode (it contains a lone surrogate, so two different keys would ' +
        'name the same Redis key). Fix the input, or hash or base64-encode it.',
    );
  }
  return key;
}
