import { type LockKindName, LockModeError } from './lock-mode.error';
import { LockOptionsError } from './lock-options.error';

/**
 * One key used with two numbers of permits: a semaphore of `found` permits (1: a mutex) held or waited
 * for elsewhere, and a call asking for `asked`. Nothing was changed: one key is one kind of lock, never a
 * silent mix of two, so every caller of a key must give the same `permits` (none, or 1, for a mutex).
 */
export class LockPermitsError extends LockOptionsError {
  constructor(
    override readonly key: string,
    readonly found: number,
    readonly asked: number,
  ) {
    const kind = (permits: number): string =>
      permits === 1 ? 'a mutex (permits 1)' : `a semaphore with permits ${permits}`;
    super(
      `"${key}" is ${kind(found)} where it is held or waited for, and this call asks for ${kind(asked)}: ` +
        `every caller of one key must give the same permits. Use ${found === 1 ? 'no permits (or 1)' : `permits: ${found}`} ` +
        'here too, or give the two kinds of lock different keys.',
    );
  }
}

/**
 * The error a store's reply "LOCKKIND <found> <asked>" (a script's refusal: each a number of permits, 1
 * for a mutex, or "rw" for a read-write lock) stands for, or undefined.
 */
export function kindRefusal(key: string, message: string): LockOptionsError | undefined {
  const match = /^LOCKKIND (\w+) (\w+)/.exec(message);
  if (!match) return undefined;
  const kind = (text: string): LockKindName => (text === 'rw' ? 'read-write' : Number(text));
  const [found, asked] = [kind(match[1]), kind(match[2])];
  if (typeof found === 'number' && typeof asked === 'number') return new LockPermitsError(key, found, asked);
  return new LockModeError(key, 'kind', found === 1 ? 'mutex' : found, asked === 1 ? 'mutex' : asked);
}
