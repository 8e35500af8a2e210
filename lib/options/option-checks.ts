/**
 * The checks every options object goes through: read once (a throwing getter becomes a typed error),
 * no unknown keys, and numbers of milliseconds in range. Shared by the service's, the calls' and the
 * replicas' options.
 */

import { LockUsageError } from '../errors/lock-usage.error';
import { describeValue as describe } from './describe-value';

/** Largest delay a Node timer can hold (about 24.8 days). */
export const MAX_MS = 2 ** 31 - 1;

/** Reads `object[name]`, turning a throwing getter (or Proxy trap) into a LockUsageError naming it. */
export function read(object: Record<string, unknown>, name: string, path: string): unknown {
  try {
    return object[name];
  } catch (error) {
    throw new LockUsageError(
      `Reading the option ${path} threw (${error instanceof Error ? error.message.slice(0, 100) : describe(error)}); ` +
        'pass plain values, not getters that throw.',
      { cause: error },
    );
  }
}

/**
 * A plain copy of an options object's own enumerable properties, read once: a throwing getter or Proxy
 * trap becomes a LockUsageError naming the option, and later reads cannot change what was validated.
 */
export function snapshotOptions(value: object, what: string): Record<string, unknown> {
  let keys: string[];
  try {
    keys = Object.keys(value);
  } catch (error) {
    throw new LockUsageError(`Listing the keys of ${what} threw; pass a plain object.`, { cause: error });
  }
  const copy: Record<string, unknown> = {};
  // Symbol keys are no options a user writes: a test's hooks (SHED_RULE), passed on as they are.
  for (const key of Object.getOwnPropertySymbols(value)) {
    (copy as Record<symbol, unknown>)[key] = (value as Record<symbol, unknown>)[key];
  }
  for (const key of keys) {
    // defineProperty, so that an own "__proto__" key (from JSON.parse) stays a key to be refused.
    const field = read(value as Record<string, unknown>, key, key);
    Object.defineProperty(copy, key, { value: field, enumerable: true, writable: true, configurable: true });
  }
  return copy;
}

/** The own keys of an options object; throws LockUsageError naming the first one not in `known`. */
export function checkKnownKeys(object: object, known: readonly string[], what: string): void {
  let keys: string[];
  try {
    keys = Object.keys(object);
  } catch (error) {
    throw new LockUsageError(`Listing the keys of ${what} threw; pass a plain object.`, { cause: error });
  }
  for (const key of keys) {
    if (known.includes(key)) continue;
    const near = known.find((k) => k.toLowerCase() === key.toLowerCase());
    throw new LockUsageError(
      `Unknown option "${key.length > 40 ? `${key.slice(0, 40)}…` : key}" in ${what}` +
        (near ? `: did you mean "${near}"?` : ` (known: ${known.join(', ')}).`),
    );
  }
}

/** `also`: what else the option accepts, said in the message (as for waitTimeout's Infinity). */
export function milliseconds(name: string, value: unknown, min: number, also = ''): number {
  return integerIn(name, value, min, MAX_MS, 'milliseconds', also);
}

/** An integer from `min` to `max` (`unit`: what it counts, for the message), else LockUsageError. */
export function integerIn(
  name: string,
  value: unknown,
  min: number,
  max: number,
  unit: string,
  also = '',
): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new LockUsageError(
      `${name} must be an integer number of ${unit} between ${min} and ${max}${also}, got ${describe(value)}.`,
    );
  }
  return value;
}

/** A wait in ms: an integer from 0 up to what a timer holds, or Infinity for no limit. */
export function waitMilliseconds(name: string, value: unknown): number {
  if (value === Number.POSITIVE_INFINITY) return value;
  return milliseconds(name, value, 0, ', or Infinity to wait without limit');
}

export function optionalBoolean(name: string, value: unknown): boolean | undefined {
  if (value === undefined || typeof value === 'boolean') return value;
  throw new LockUsageError(`${name} must be true or false, got ${describe(value)}.`);
}

export function plainObject(name: string, value: unknown): Record<string, unknown> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new LockUsageError(`${name} must be an object, got ${describe(value)}.`);
  }
  return value as Record<string, unknown>;
}
