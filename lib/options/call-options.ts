/**
 * The options of one call (`acquire`, `tryAcquire`, `using`, and every call a `@Locked` declaration
 * makes), each declared once below with its check and its built-in default, and the one resolver that
 * serves a call, a service's `defaults` and a declaration: a layer of given values over the layer
 * beneath (built-ins under `defaults`, `defaults` under a call; a declaration is checked on its own at
 * class definition, and against the service at start-up), then the rules between ttl, minHold and
 * maxHold. Everything here runs before any command is sent.
 */
import { LockUsageError } from '../errors/lock-usage.error';
import { type LockMode, resolveMode, resolvePermits } from '../lock-kind';
import { describeValue as describe, hasLoneSurrogate } from './describe-value';
import {
  checkKnownKeys,
  milliseconds,
  optionalBoolean,
  plainObject,
  read,
  waitMilliseconds,
} from './option-checks';

/** Options of one `acquire`, `tryAcquire` or `using` call. Unset fields fall back to the service defaults. */
export interface AcquireOptions {
  /**
   * Lease time to live in ms (an integer from 10): how long the lock outlives a holder that stops
   * renewing. Short leases are fine: with `renew` they are extended every ttl/3. Default 30 000.
   */
  ttl?: number;
  /**
   * Who extends the lease: `true`, this library, every ttl/3 while it is held; `false`, you
   * (`lease.extend()`) or nobody, and then the lease ends at its ttl (LockLostError reason
   * `ttl-elapsed`). Either way `maxHold` caps the hold. Default true inside `using` and `@Locked`, false
   * for `acquire`.
   */
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
   * End the hold once the lease has been held this long, in ms (at least the ttl and minHold; Infinity
   * for no cap), however it was extended: no renewal is sent after it, and `extend()` throws
   * LockNotHeldError. A holder that hangs (a call to a dead partner with no timeout) then loses the lock
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
   * When the caller needs its work done by: a Date, or ms since the epoch (`Date.now() + 2_000`). The
   * wait ends early enough that, if served, the usual hold of this key (as this service has seen it)
   * still ends in time, and a grant read after that (a stalled process) is passed on, never started; a
   * deadline already past fails at once, without a command. Either way the call
   * rejects with LockTimeoutError, `deadline` set (a refusal for overload: `retryAfterMs` set too). It
   * shortens `waitTimeout`, never lengthens it. In an HTTP request, `@Locked` takes it from the request
   * itself (docs/nest.md, "Deadlines"). Default: none.
   */
  deadline?: number | Date;
  /**
   * What metrics, spans and events call this lock (their `lock.name`): a few fixed labels (`'order'`),
   * never the key itself, whose values would make a metric series each. Default `'unnamed'`; `@Locked`
   * gives its key template.
   */
  label?: string;
}

/** The options of `tryAcquire`: those of `acquire` but `waitTimeout` (it never waits; 0 is accepted). */
export type TryAcquireOptions = Omit<AcquireOptions, 'waitTimeout'> & { waitTimeout?: 0 };

/**
 * Shortest lease accepted, in ms. Below it a lease would be spent before its first renewal could make
 * a round trip, and its safety margin (ttl/10) would round to nothing.
 */
export const MIN_TTL = 10;
export const DEFAULT_TTL = 30_000;

/** A maxHold in ms: an integer up to what a timer holds, or Infinity for no cap. */
function maxHoldMilliseconds(value: unknown, path: string): number {
  if (value === Number.POSITIVE_INFINITY) return value;
  return milliseconds(path, value, MIN_TTL, ', or Infinity for no cap');
}

/** tryAcquire's waitTimeout: only 0 applies to a call that never waits; anything else is refused, not ignored. */
function noWait(value: unknown): 0 {
  if (value === 0) return 0;
  throw new LockUsageError(
    `tryAcquire never waits, so waitTimeout does not apply to it (got ${describe(value)}). To wait, call acquire(key, { waitTimeout: ${typeof value === 'number' ? value : 'ms'} }); otherwise leave it out.`,
  );
}

/** Longest `label`: a label for dashboards, not a key. */
const MAX_LABEL_LENGTH = 256;

function checkLockLabel(value: unknown): string {
  if (
    typeof value !== 'string' ||
    value === '' ||
    value.length > MAX_LABEL_LENGTH ||
    hasLoneSurrogate(value)
  ) {
    throw new LockUsageError(
      `label must be a non-empty string of at most ${MAX_LABEL_LENGTH} characters (a fixed label such as ` +
        `'order', not the key), got ${describe(value)}.`,
    );
  }
  return value;
}

/** A deadline, as ms since the epoch (Date.now()'s clock). */
function deadlineTime(value: unknown): number {
  const at = value instanceof Date ? value.getTime() : value;
  if (typeof at === 'number' && Number.isFinite(at)) return at;
  throw new LockUsageError(
    `deadline must be a Date or a time in ms since the epoch (Date.now() + 2_000 for two seconds from ` +
      `now), got ${describe(value)}.`,
  );
}

function abortSignal(value: unknown): AbortSignal {
  if (value instanceof AbortSignal) return value;
  throw new LockUsageError(
    `signal must be an AbortSignal (e.g. new AbortController().signal), got ${describe(value)}.`,
  );
}

/**
 * How one call option is read: whether null means unset (the numbers, as JSON config writes them), how a
 * given value is checked (`path` names it in messages), its built-in default, whether a service may set it
 * for all its calls (`defaults`), and whether a `@Locked` declaration passes it on to each call it makes
 * (`declared`). Its name, type and meaning are AcquireOptions'.
 */
interface CallOption {
  readonly nullIsUnset: boolean;
  readonly check: (value: unknown, path: string) => unknown;
  readonly default: unknown;
  readonly defaults: boolean;
  readonly declared: boolean;
}

/** Every call option, once (the table must name each option of AcquireOptions, and no other). */
const CALL_OPTIONS = {
  ttl: {
    nullIsUnset: true,
    check: (v: unknown, path: string) => milliseconds(path, v, MIN_TTL),
    default: DEFAULT_TTL,
    defaults: true,
    declared: true,
  },
  waitTimeout: {
    nullIsUnset: true,
    check: (v: unknown, path: string) => waitMilliseconds(path, v),
    default: 10_000,
    defaults: true,
    declared: true,
  },
  // Unset, it depends on the call: renewed by `using` and `@Locked`, not by `acquire`.
  renew: {
    nullIsUnset: false,
    check: (v: unknown, path: string) => optionalBoolean(path, v) as boolean,
    default: undefined,
    defaults: false,
    declared: true,
  },
  // A hold kept past its work belongs to one job (a cron's tick), never to every call of a service.
  minHold: {
    nullIsUnset: true,
    check: (v: unknown, path: string) => milliseconds(path, v, 0),
    default: 0,
    defaults: false,
    declared: true,
  },
  maxHold: {
    nullIsUnset: true,
    check: maxHoldMilliseconds,
    default: Number.POSITIVE_INFINITY,
    defaults: true,
    declared: true,
  },
  permits: {
    nullIsUnset: false,
    check: (v: unknown) => resolvePermits(v),
    default: 1,
    defaults: false,
    declared: true,
  },
  mode: {
    nullIsUnset: false,
    check: (v: unknown) => resolveMode(v),
    default: undefined,
    defaults: false,
    declared: true,
  },
  signal: { nullIsUnset: false, check: abortSignal, default: undefined, defaults: false, declared: false },
  // A deadline belongs to one call (its request's): a service or a declaration has none to give.
  deadline: { nullIsUnset: true, check: deadlineTime, default: undefined, defaults: false, declared: false },
  label: {
    nullIsUnset: false,
    check: (v: unknown) => checkLockLabel(v),
    default: undefined,
    defaults: false,
    declared: false,
  },
} as const satisfies Record<keyof AcquireOptions, CallOption>;

type CallOptionName = keyof typeof CALL_OPTIONS;
type Checked<N extends CallOptionName> = ReturnType<(typeof CALL_OPTIONS)[N]['check']>;
/** The values of one layer, each as its check returned it (undefined: not set in that layer). */
type Layer = { -readonly [N in CallOptionName]?: Checked<N> };

type NamesWhere<F extends 'defaults' | 'declared'> = {
  [N in CallOptionName]: (typeof CALL_OPTIONS)[N][F] extends true ? N : never;
}[CallOptionName];
/** The options a lock declaration (@Locked) passes on to every call it makes. */
export type DeclaredOptionName = NamesWhere<'declared'>;
type DefaultOptionName = NamesWhere<'defaults'>;

const namesWhere = <F extends 'defaults' | 'declared'>(flag: F) =>
  (Object.keys(CALL_OPTIONS) as CallOptionName[]).filter(
    (name) => CALL_OPTIONS[name][flag],
  ) as NamesWhere<F>[];

/** The options a service's `defaults` may set. */
export const DEFAULT_OPTION_NAMES: readonly DefaultOptionName[] = namesWhere('defaults');
/**
 * The options a lock declaration (@Locked) passes on to every call it makes, as they are: one list, so
 * that the decorator accepts, the start-up check validates and the interceptor passes the same ones.
 */
export const DECLARED_OPTION_NAMES: readonly DeclaredOptionName[] = namesWhere('declared');
const CALL_OPTION_NAMES = Object.keys(CALL_OPTIONS) as CallOptionName[];

/** The defaults a service applies to calls that leave an option unset (its `defaults`). */
export type LockDefaults = Pick<AcquireOptions, DefaultOptionName>;

/** A service's `defaults`, resolved: the built-in default of every option a service may set. */
export type CallDefaults = { readonly [N in DefaultOptionName]: Checked<N> };

/**
 * One call's options, resolved: each as its check returns it, or its default. Those without a default
 * are undefined when unset; `renew` is always decided (by the kind of call when neither sets it).
 */
export type ResolvedAcquireOptions = {
  [N in CallOptionName]: (typeof CALL_OPTIONS)[N]['default'] extends undefined
    ? Checked<N> | undefined
    : Checked<N>;
} & { renew: boolean };

/**
 * Reads and checks the options of `known` in `given`, each once (a getter cannot change what was
 * validated), refusing names outside `known`; `path` names each in messages.
 */
function readLayer(
  given: unknown,
  known: readonly string[],
  what: string,
  path: (name: string) => string,
  waitCheck: (value: unknown, path: string) => number = CALL_OPTIONS.waitTimeout.check,
): Layer {
  const o = plainObject(what, given);
  // A misspelt option (timeout for waitTimeout) would otherwise be ignored without a word.
  if (given !== undefined) checkKnownKeys(o, known, what);
  const layer: Record<string, unknown> = {};
  for (const name of known as CallOptionName[]) {
    const value = read(o, name, path(name));
    if (value === undefined || (value === null && CALL_OPTIONS[name].nullIsUnset)) continue;
    layer[name] =
      name === 'waitTimeout' ? waitCheck(value, path(name)) : CALL_OPTIONS[name].check(value, path(name));
  }
  return layer as Layer;
}

/**
 * The rules between ttl, minHold and maxHold, on the values known (a declaration checked on its own
 * knows only its own); `names` says where each came from. minHold must fit in the lease: a lock kept
 * after its work ended is not renewed. maxHold caps renewal, so it must leave the lease its first ttl
 * and its minHold: below either, the cap would cut short a lease that nothing else would.
 */
function checkHold(
  { ttl, minHold, maxHold }: Layer,
  names: { ttl: string; minHold: string; maxHold: string },
): void {
  if (minHold !== undefined && ttl !== undefined && minHold > ttl) {
    throw new LockUsageError(
      `${names.minHold} (${minHold} ms) must not be longer than ${names.ttl} (${ttl} ms): the lock is not ` +
        'renewed once its work has ended, so it cannot be held longer than its ttl. Lower minHold or raise ttl.',
    );
  }
  if (maxHold !== undefined && minHold !== undefined && maxHold < minHold) {
    throw new LockUsageError(
      `${names.maxHold} (${maxHold} ms) must not be shorter than ${names.minHold} (${minHold} ms): the lock is ` +
        'kept at least minHold, so it cannot be given up sooner. Raise maxHold or lower minHold.',
    );
  }
  if (maxHold !== undefined && ttl !== undefined && maxHold < ttl) {
    throw new LockUsageError(
      `${names.maxHold} (${maxHold} ms) must not be shorter than ${names.ttl} (${ttl} ms): maxHold caps renewal, ` +
        'and a lease already lasts its ttl without any. Raise maxHold to at least the ttl, or lower the ttl.',
    );
  }
}

/** A service's `defaults` over the built-in ones. Throws LockUsageError. */
export function resolveCallDefaults(given: unknown): CallDefaults {
  const own = readLayer(given, DEFAULT_OPTION_NAMES, 'defaults', (name) => `defaults.${name}`);
  const defaults: Record<string, unknown> = {};
  for (const name of DEFAULT_OPTION_NAMES) defaults[name] = own[name] ?? CALL_OPTIONS[name].default;
  checkHold(defaults as Layer, { ttl: 'defaults.ttl', minHold: 'minHold', maxHold: 'defaults.maxHold' });
  return defaults as CallDefaults;
}

/**
 * One call's options over the service's `defaults`. `renewByDefault`: whether this kind of call renews
 * when neither sets `renew`. `tryNow`: a call that never waits (tryAcquire), to which a waitTimeout other
 * than 0 cannot apply: it is refused rather than ignored.
 */
export function resolveAcquireOptions(
  defaults: CallDefaults,
  options: unknown,
  renewByDefault: boolean,
  tryNow = false,
): ResolvedAcquireOptions {
  if (options !== undefined) return resolveGiven(defaults, options, renewByDefault, tryNow);
  // A call with no options of its own (the most common) reads only the defaults: resolved once.
  let byKind = RESOLVED_DEFAULTS.get(defaults);
  if (!byKind) {
    byKind = [];
    RESOLVED_DEFAULTS.set(defaults, byKind);
  }
  const kind = (renewByDefault ? 1 : 0) + (tryNow ? 2 : 0);
  byKind[kind] ??= Object.freeze(resolveGiven(defaults, undefined, renewByDefault, tryNow));
  return byKind[kind];
}

/** The options of calls that gave none, per service's defaults and kind of call. */
const RESOLVED_DEFAULTS = new WeakMap<CallDefaults, ResolvedAcquireOptions[]>();

function resolveGiven(
  defaults: CallDefaults,
  options: unknown,
  renewByDefault: boolean,
  tryNow: boolean,
): ResolvedAcquireOptions {
  const path = (name: string) => name;
  const own = readLayer(options, CALL_OPTION_NAMES, 'lock options', path, tryNow ? noWait : undefined);
  const under = defaults as Layer;
  const value = <N extends CallOptionName>(name: N) =>
    (own[name] ?? under[name] ?? CALL_OPTIONS[name].default) as ResolvedAcquireOptions[N];
  // One literal, which the compiler holds to the table: every resolved call has one shape, with its
  // fields inside the object, where the engine reads them on every step of a call.
  const resolved: ResolvedAcquireOptions = {
    ttl: value('ttl'),
    waitTimeout: value('waitTimeout'),
    renew: own.renew ?? renewByDefault,
    minHold: value('minHold'),
    maxHold: value('maxHold'),
    permits: value('permits'),
    mode: value('mode'),
    signal: value('signal'),
    deadline: value('deadline'),
    label: value('label'),
  };
  const from = (name: 'ttl' | 'maxHold') => (own[name] === undefined ? `${name} (from defaults)` : name);
  checkHold(resolved, { ttl: from('ttl'), minHold: 'minHold', maxHold: from('maxHold') });
  return resolved;
}

/**
 * Checks a declaration's options on their own, before any service is known (decorators run at class
 * definition): each value, and the rules between those it gives. The rest comes from the module's
 * defaults, checked against them at start-up (LockService.checkOptions).
 */
export function checkDeclaredOptions(options: object): void {
  const declared: Record<string, unknown> = {};
  for (const name of DECLARED_OPTION_NAMES)
    declared[name] = read(options as Record<string, unknown>, name, name);
  checkHold(
    readLayer(declared, DECLARED_OPTION_NAMES, 'lock options', (name) => name),
    {
      ttl: 'ttl',
      minHold: 'minHold',
      maxHold: 'maxHold',
    },
  );
}

/** The options of `declared` that every call of a lock declaration passes on (DECLARED_OPTION_NAMES). */
export function declaredOptions(declared: AcquireOptions): Pick<AcquireOptions, DeclaredOptionName> {
  const passed: Record<string, unknown> = {};
  for (const name of DECLARED_OPTION_NAMES) passed[name] = declared[name];
  return passed;
}
