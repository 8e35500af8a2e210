import { LockError } from './lock.error';

/**
 * A call that holds keys asked for another key that sorts before one it holds, in a call chain that
 * takes several keys at once. Taking keys only in canonical (sorted) order is what keeps multi-key locks
 * free of deadlock; this request could wait for a caller that waits for it. Nothing was taken.
 */
export class LockOrderError extends LockError {
  /** The keys the call chain already held. */
  readonly held: readonly string[];

  constructor(key: string, held: readonly string[]) {
    const shown = held.length > 5 ? `${held.slice(0, 5).join('", "')}", …` : `${held.join('", "')}"`;
    super(
      'LOCK_ORDER',
      `Lock "${key}" sorts before "${shown} already held by this call chain: taking it now could deadlock ` +
        'with a caller that takes them in order. Take every key in one call (acquire([...]), using([...]) or ' +
        '@Locked([...])), or take this key first.',
      { key },
    );
    this.held = Object.freeze([...held]);
  }
}
