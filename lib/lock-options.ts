/**
 * Options of the lock service and of each call, their defaults, and their validation. Everything here
 * runs before any command is sent, so a bad value never leaves partial state in Redis.
 */
import { LockKeyError } from './errors/lock-key.error';
import { LockOptionsError } from './errors/lock-options.error';

/** Options of one `acquire`, `tryAcquire` or `using` call. Unset fields fall back to the service defaults. */
export interface AcquireOptions {
  /** Lease time to live in ms: how long the lock outlives a holder that stops renewing. Default 30 000. */
  ttl?: number;
  /** Extend the lease every ttl/3 while it is held. Default true inside `using`, false for `acquire`. */
  renew?: boolean;
  /** How long to wait for the lock, in ms; 0 tries once. Default 10 000. */
  waitTimeout?: number;
  /** Stops waiting when aborted (the call rejects with LockAbortedError). */
  signal?: AbortSignal;
}

/** The defaults a service applies to calls that leave an option unset. */
export interface LockDefaults {
  ttl?: number;
  waitTimeout?: number;
  renew?: boolean;
}

/** Options of a LockService. */
export interface LockServiceOptions {
  /** Prefix of every Redis key and channel the lock uses. Default `lock:`. */
  prefix?: string;
  /** Defaults for each call. */
  defaults?: LockDefaults;
  /**
   * How long a lock handed to a waiter stays reserved for it until it confirms, in ms. A waiter that
   * died or gave up after being granted delays the next one by at most this much. Default 2 000.
   */
  claimWindow?: number;
  /**
   * How long a lock's fencing counter is kept after its last grant, in ms. Fencing tokens stay
   * increasing beyond it too (they never fall below the Redis server clock in µs). Default 3 600 000.
   */
  fenceRetention?: number;
  /** Longest wait for a reply to one command before the call fails with RedisUnavailableError, in ms. Default 5 000. */
  commandTimeout?: number;
}

export const DEFAULT_TTL = 30_000;
export const DEFAULT_WAIT_TIMEOUT = 10_000;
export const DEFAULT_CLAIM_WINDOW = 2_000;
export const DEFAULT_PREFIX = 'lock:';
export const DEFAULT_FENCE_RETENTION = 3_600_000;
export const DEFAULT_COMMAND_TIMEOUT = 5_000;

/** Longest key accepted, in UTF-16 code units: keys are names, not payloads. */
export const MAX_KEY_LENGTH = 1024;
/** Largest delay a Node timer can hold (about 24.8 days). */
const MAX_MS = 2 ** 31 - 1;
const MIN_CLAIM_WINDOW = 10;

export interface ResolvedServiceOptions {
  prefix: string;
  ttl: number;
  waitTimeout: number;
  renew: boolean | undefined;
  claimWindow: number;
  fenceRetention: number;
  commandTimeout: number;
}

export interface ResolvedAcquireOptions {
  ttl: number;
  waitTimeout: number;
  renew: boolean;
  signal: AbortSignal | undefined;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'symbol' || typeof value === 'function') return typeof value;
  try {
    return String(value);
  } catch {
    return typeof value;
  }
}

function milliseconds(name: string, value: unknown, min: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > MAX_MS) {
    throw new LockOptionsError(
      `${name} must be an integer number of milliseconds between ${min} and ${MAX_MS}, got ${describe(value)}.`,
    );
  }
  return value;
}

function optionalBoolean(name: string, value: unknown): boolean | undefined {
  if (value === undefined || typeof value === 'boolean') return value;
  throw new LockOptionsError(`${name} must be true or false, got ${describe(value)}.`);
}

function plainObject(name: string, value: unknown): Record<string, unknown> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new LockOptionsError(`${name} must be an object, got ${describe(value)}.`);
  }
  return value as Record<string, unknown>;
}

function checkTtlCoversClaim(ttl: number, claimWindow: number): void {
  if (ttl < claimWindow) {
    throw new LockOptionsError(
      `ttl (${ttl} ms) must not be shorter than the claim window (${claimWindow} ms): a granted waiter ` +
        'could not confirm its grant. Raise ttl or lower claimWindow.',
    );
  }
}

/** Validates service options and fills in defaults. Throws LockOptionsError. */
export function resolveServiceOptions(options: unknown): ResolvedServiceOptions {
  const o = plainObject('LockService options', options);
  const defaults = plainObject('defaults', o.defaults);
  const prefix = o.prefix === undefined ? DEFAULT_PREFIX : o.prefix;
  if (typeof prefix !== 'string' || prefix.length > 256 || /[{}]/.test(prefix) || hasLoneSurrogate(prefix)) {
    throw new LockOptionsError(
      `prefix must be a string of at most 256 characters without braces, got ${describe(prefix)}.`,
    );
  }
  const claimWindow = milliseconds('claimWindow', o.claimWindow ?? DEFAULT_CLAIM_WINDOW, MIN_CLAIM_WINDOW);
  const ttl = milliseconds('defaults.ttl', defaults.ttl ?? DEFAULT_TTL, 1);
  checkTtlCoversClaim(ttl, claimWindow);
  return {
    prefix,
    ttl,
    claimWindow,
    waitTimeout: milliseconds('defaults.waitTimeout', defaults.waitTimeout ?? DEFAULT_WAIT_TIMEOUT, 0),
    renew: optionalBoolean('defaults.renew', defaults.renew),
    fenceRetention: milliseconds('fenceRetention', o.fenceRetention ?? DEFAULT_FENCE_RETENTION, 1),
    commandTimeout: milliseconds('commandTimeout', o.commandTimeout ?? DEFAULT_COMMAND_TIMEOUT, 1),
  };
}

/** Validates one call's options against the service's. Throws LockOptionsError. */
export function resolveAcquireOptions(
  service: ResolvedServiceOptions,
  options: unknown,
  renewByDefault: boolean,
): ResolvedAcquireOptions {
  const o = plainObject('lock options', options);
  const ttl = milliseconds('ttl', o.ttl ?? service.ttl, 1);
  checkTtlCoversClaim(ttl, service.claimWindow);
  const signal = o.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new LockOptionsError(`signal must be an AbortSignal, got ${describe(signal)}.`);
  }
  return {
    ttl,
    waitTimeout: milliseconds('waitTimeout', o.waitTimeout ?? service.waitTimeout, 0),
    renew: optionalBoolean('renew', o.renew) ?? service.renew ?? renewByDefault,
    signal,
  };
}

/**
 * Checks the types and ranges of call options on their own, before any service is known (decorators
 * run at class definition). The checks against a service's settings come later (LockService.checkOptions).
 */
export function checkCallOptions(options: AcquireOptions): void {
  if (options.ttl !== undefined) milliseconds('ttl', options.ttl, 1);
  if (options.waitTimeout !== undefined) milliseconds('waitTimeout', options.waitTimeout, 0);
  optionalBoolean('renew', options.renew);
}

function hasLoneSurrogate(value: string): boolean {
  return /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(value);
}

/**
 * Checks a lock key. Braces are refused because the key is wrapped in a `{…}` hash tag (every key of
 * one lock must share a Cluster slot); lone surrogates because two different strings would then name
 * the same Redis key.
 */
export function validateKey(key: unknown): string {
  if (typeof key !== 'string') {
    throw new LockKeyError(`A lock key must be a string, got ${typeof key}.`);
  }
  if (key.length === 0) throw new LockKeyError('A lock key must not be empty.');
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
    throw new LockKeyError('A lock key must be well-formed Unicode (it contains a lone surrogate).');
  }
  return key;
}
