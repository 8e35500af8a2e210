/**
 * Scoped @Locked keys: `scope: true` prefixes a method's key with its `Class.method:`, `scope: 'name'`
 * with `name:`, as murlock namespaces every key. Keys are global by default on purpose: two services
 * that protect one resource must be able to name the same lock.
 */

import { LockUsageError } from '../errors/lock-usage.error';
import { describeValue, hasLoneSurrogate } from '../options/describe-value';
import type { KeyScope, LockedOptions, LockedSpec } from './redis-lock-options.interface';

/** Longest `scope` name: a prefix, not a key of its own. */
const MAX_SCOPE_LENGTH = 256;

/** A `scope` (`path` names it in the message). Throws LockUsageError. */
export function checkScope(scope: unknown, path: string): KeyScope {
  if (typeof scope === 'boolean') return scope;
  if (
    typeof scope !== 'string' ||
    scope === '' ||
    scope.length > MAX_SCOPE_LENGTH ||
    /[{}]/.test(scope) ||
    hasLoneSurrogate(scope)
  ) {
    throw new LockUsageError(
      `${path} must be true (prefix Class.method), false, or a name of 1 to ` +
        `${MAX_SCOPE_LENGTH} characters without braces, got ${describeValue(scope)}.`,
    );
  }
  return scope;
}

/** Checks the decorator's `scope` and `constantKey`; the message names the method (`where`). */
export function checkKeyOptions(options: LockedOptions, where: string, hasPlaceholders: boolean): void {
  const { scope, constantKey } = options;
  if (scope !== undefined) checkScope(scope, `@Locked() on ${where}: scope`);
  if (constantKey !== undefined && typeof constantKey !== 'boolean') {
    throw new LockUsageError(
      `@Locked() on ${where}: constantKey must be true or false, got ${describeValue(constantKey)}.`,
    );
  }
  if (constantKey === true && hasPlaceholders) {
    throw new LockUsageError(
      `@Locked() on ${where}: constantKey: true says the key is constant, but it is resolved from the ` +
        'arguments; remove constantKey.',
    );
  }
}

/** The prefix a spec's keys get under a module whose `scope` is `moduleScope`; '' for none. */
export function scopePrefix(spec: LockedSpec, moduleScope: KeyScope): string {
  const scope = spec.options.scope ?? moduleScope;
  if (scope === false) return '';
  return `${scope === true ? spec.where : scope}:`;
}

/** `key` (or each of several) with `prefix` in front. */
export function prefixed<K extends string | string[]>(key: K, prefix: string): K {
  if (prefix === '') return key;
  return (typeof key === 'string' ? prefix + key : key.map((k) => prefix + k)) as K;
}
