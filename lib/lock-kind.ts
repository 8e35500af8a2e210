/**
 * The kind of lock a call asks for: the mutex (the default), a fair semaphore (`permits` above 1: that
 * many holders at once), or a read-write lock (`mode`: readers share it, a writer holds it alone). One
 * key is one kind of lock (docs/protocol.md, "Semaphores" and "Read-write locks").
 */

import { kindError, type LockKindName, LockUsageError, upgradeError } from './errors/lock-usage.error';
import { describeValue } from './options/describe-value';

/**
 * The most permits a key may have. Each holder is an entry in Redis that every grant and release reads
 * about, and a limit this high is no limit at all: a larger number is a mistake, not a setting.
 */
export const MAX_PERMITS = 10_000;

/** A read-write lock's two modes: `read` shares the key with other readers, `write` holds it alone. */
export type LockMode = 'read' | 'write';

/** Validates `permits`; undefined means 1, the mutex. Throws LockUsageError. */
export function resolvePermits(value: unknown): number {
  if (value === undefined) return 1;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_PERMITS) {
    throw new LockUsageError(
      `permits must be an integer from 1 to ${MAX_PERMITS}: how many callers may hold the key at once ` +
        `(1, the default, is a mutex), got ${describeValue(value)}.`,
    );
  }
  return value;
}

/** Validates `mode`; undefined means no mode, the mutex. Throws LockUsageError. */
export function resolveMode(value: unknown): LockMode | undefined {
  if (value === undefined || value === 'read' || value === 'write') return value;
  throw new LockUsageError(
    `mode must be 'read' (shared with other readers) or 'write' (exclusive), in lower case, got ` +
      `${describeValue(value)}. Leave it out for a plain mutex.`,
  );
}

/**
 * Refuses a kind of lock where there is none: a semaphore or a read-write lock on several keys (a
 * multi-key call holds each key as a mutex) or on a store without them (a quorum of independent
 * masters); and both at once (a read-write lock has no permits).
 */
export function checkKindCall(
  permits: number,
  mode: LockMode | undefined,
  keys: number,
  storeHasThem: boolean,
): void {
  if (permits === 1 && mode === undefined) return;
  const what = mode === undefined ? `permits (${permits})` : `mode '${mode}'`;
  if (mode !== undefined && permits !== 1) {
    throw new LockUsageError(
      `mode and permits (${permits}) do not combine: a read-write lock has any number of readers and one ` +
        'writer. Use mode on a read-write lock, or permits on a semaphore, each on its own key.',
    );
  }
  if (!storeHasThem) {
    throw new LockUsageError(
      `${what} needs locks in one Redis (or Cluster) or in memory: a quorum of independent masters ` +
        `(Redlock) has no ${mode === undefined ? 'semaphores' : 'read-write locks'}. Leave it out, or keep ` +
        'the lock in one Redis.',
    );
  }
  if (keys > 1) {
    throw new LockUsageError(
      `${what} applies to one key, and this call is on ${keys}: a call on several keys holds each of them ` +
        'as a mutex. Take it in a call of its own, on its own key.',
    );
  }
}

/** What a held lease is, for a nested call on its key. */
interface HeldKind {
  readonly permits: number;
  readonly mode: LockMode | undefined;
}

/**
 * A nested call on a key its call chain holds reuses the lease held, if it asks for the same kind of
 * lock: the same permits; a read or a write under a write; a read under a read. A write under a read
 * would wait for that read to end (an upgrade): refused, as is any other kind.
 */
export function checkReentry(key: string, held: HeldKind, asked: HeldKind): void {
  if (held.mode !== undefined && asked.mode !== undefined) {
    if (held.mode === 'read' && asked.mode === 'write') throw upgradeError(key);
    return;
  }
  if (held.mode !== undefined || asked.mode !== undefined) {
    const kind = (k: HeldKind): LockKindName =>
      k.mode !== undefined ? 'read-write' : k.permits === 1 ? 'mutex' : k.permits;
    throw kindError(key, kind(held), kind(asked));
  }
  if (held.permits !== asked.permits) throw kindError(key, held.permits, asked.permits);
}
