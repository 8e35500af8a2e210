import { LockOptionsError } from './lock-options.error';

/** A kind of lock, as LockModeError names it: a mutex, a semaphore's permits, a read-write lock. */
export type LockKindName = 'mutex' | 'read-write' | number;

const kindText = (kind: LockKindName): string =>
  kind === 'mutex' || kind === 1
    ? 'a mutex'
    : kind === 'read-write'
      ? "a read-write lock (mode 'read' or 'write')"
      : `a semaphore with permits ${kind}`;

/**
 * A read-write lock used as something else: a key read or written with `mode` where it is held or waited
 * for as a mutex or semaphore, or the reverse (`reason: 'kind'`); or a reader asking to write the key in
 * the same call chain (`reason: 'upgrade'`), which would wait for its own read to end. Nothing changed.
 */
export class LockModeError extends LockOptionsError {
  constructor(
    override readonly key: string,
    readonly reason: 'kind' | 'upgrade',
    readonly found: LockKindName | 'read',
    readonly asked: LockKindName | 'write',
  ) {
    super(
      reason === 'upgrade'
        ? `"${key}" is held for reading by this call chain, which now asks to write it: an upgrade would ` +
            "wait for its own read to end. Take it with mode: 'write' from the start (a writer may also read), " +
            'or release the read first.'
        : `"${key}" is ${kindText(found as LockKindName)} where it is held or waited for, and this call asks ` +
            `for ${kindText(asked as LockKindName)}: every caller of one key must use the same kind of lock. ` +
            (found === 'read-write' || asked === 'read-write'
              ? "Give every caller of a read-write lock a mode (its writers mode: 'write'), "
              : 'Use the same permits everywhere, ') +
            'or give the two kinds of lock different keys.',
    );
  }
}
