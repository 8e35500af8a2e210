/**
 * Lock keys: what a key may be (a non-empty, well-formed string of at most MAX_KEY_LENGTH, without the
 * braces of its hash tag) and how one call's keys are put in canonical order. Checked before anything
 * is sent, for every call and every key a `@Locked` template resolves to.
 */
import { keyError } from '../errors/lock-usage.error';
import { describeValue as describe, hasLoneSurrogate } from './describe-value';

/** Longest key accepted, in UTF-16 code units: keys are names, not payloads. */
export const MAX_KEY_LENGTH = 1024;
/**
 * Most keys one lease may hold. They are taken one after another, a round trip each, and each renews on
 * its own: a thousand is already seconds of Redis work per grant, more is a design to revisit.
 */
export const MAX_KEYS = 1000;

/**
 * The keys of one call, in canonical order: a string is one key; an array is several (sorted by UTF-16
 * code units, duplicates collapsed), so every caller takes shared keys in the same order. Throws
 * LockUsageError (LOCK_INVALID_KEY) naming the bad element.
 */
export function validateKeys(input: unknown): string[] {
  if (!Array.isArray(input)) return [validateKey(input)];
  if (input.length === 0) {
    throw keyError('The array of lock keys is empty: give at least one key, as in ["account:1"].');
  }
  if (input.length > MAX_KEYS) {
    throw keyError(
      `A lease can hold at most ${MAX_KEYS} keys, got ${input.length}. Lock a coarser resource instead.`,
    );
  }
  const keys = new Set<string>();
  for (let i = 0; i < input.length; i++) {
    try {
      keys.add(validateKey(input[i]));
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      throw keyError(`Key [${i}] of the array: ${why}`, { cause: error });
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
    throw keyError(
      `A lock key must be a string, got ${describe(key)}. Build it from the resource's id, as in \`order:\${id}\`.`,
    );
  }
  if (key.length === 0) {
    throw keyError('A lock key must not be empty: name the resource, as in "order:42".');
  }
  if (key.length > MAX_KEY_LENGTH) {
    throw keyError(
      `A lock key must be at most ${MAX_KEY_LENGTH} characters, got ${key.length}. Hash long inputs first.`,
    );
  }
  if (/[{}]/.test(key)) {
    throw keyError(
      `Lock key ${describe(key)} contains a brace; braces would break the {key} hash tag. Remove them.`,
      { key },
    );
  }
  if (hasLoneSurrogate(key)) {
    throw keyError(
      'A lock key must be well-formed Unicode (it contains a lone surrogate, so two different keys would ' +
        'name the same Redis key). Fix the input, or hash or base64-encode it.',
    );
  }
  return key;
}
