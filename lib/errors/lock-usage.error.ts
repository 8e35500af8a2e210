import { LockError } from './lock.error';
import { quote, quoteList } from './log-text';

/** What a usage error is about. */
export type LockUsageCode =
  /** An option of a call, of the service, of the module or of `@Locked`. */
  | 'LOCK_INVALID_OPTIONS'
  /** A key, a key template, or a key the call's arguments (a request's) could not build. */
  | 'LOCK_INVALID_KEY'
  /** A `@Locked` key function threw. */
  | 'LOCK_KEY_FUNCTION_FAILED'
  /** A key that sorts before one the call chain holds: taking it now could deadlock. */
  | 'LOCK_ORDER'
  /** A key used as two kinds of lock (mutex, semaphore, read-write), or a read upgraded to a write. */
  | 'LOCK_KIND';

/** The kind of lock a key is: a mutex, a read-write lock, or a semaphore's permits. */
export type LockKindName = 'mutex' | 'read-write' | number;

/** What a usage error says beside its message; `code` defaults to LOCK_INVALID_OPTIONS. */
export interface LockUsageFacts {
  code?: LockUsageCode;
  key?: string;
  cause?: unknown;
  detail?: string;
  held?: readonly string[];
  found?: LockKindName | 'read';
  asked?: LockKindName | 'write';
}

/**
 * The library was called in a way it cannot serve: fix the call as the message says. Found before
 * anything was sent or held, except LOCK_KIND, which Redis (or the memory store) finds. `code` tells the
 * kinds apart. Over HTTP only a key the request could not build is the client's (400); the others are the
 * program's (500).
 */
export class LockUsageError extends LockError {
  declare readonly code: LockUsageCode;
  /**
   * LOCK_INVALID_KEY, for a key built from a call's arguments: what was wrong with them, in words fit for
   * the caller (over HTTP, the 400's message): the placeholder and why, never the class, the method or a
   * value.
   */
  readonly detail?: string;
  /** LOCK_ORDER: the keys the call chain already held. */
  readonly held?: readonly string[];
  /** LOCK_KIND: the kind the key has where it is held or waited for (`'read'`: this chain's own read). */
  readonly found?: LockKindName | 'read';
  /** LOCK_KIND: the kind this call asked for (`'write'`: an upgrade of this chain's read). */
  readonly asked?: LockKindName | 'write';

  constructor(message: string, facts: LockUsageFacts = {}) {
    const { code = 'LOCK_INVALID_OPTIONS', key, cause, detail, held, found, asked } = facts;
    super(code, message, { key, cause });
    if (detail !== undefined) this.detail = detail;
    if (held !== undefined) this.held = Object.freeze([...held]);
    if (found !== undefined) this.found = found;
    if (asked !== undefined) this.asked = asked;
    // A key function's fault is the application's: its own stack is what a log needs.
    if (code === 'LOCK_KEY_FUNCTION_FAILED' && cause instanceof Error && cause.stack) {
      this.stack = `${this.stack}\nCaused by: ${cause.stack}`;
    }
  }
}

/**
 * A key that sorts before one the call chain holds. Taking keys only in canonical (sorted) order is what
 * keeps multi-key locks free of deadlock; this request could wait for a caller that waits for it.
 */
export function orderError(key: string, held: readonly string[]): LockUsageError {
  return new LockUsageError(
    `Lock ${quote(key)} sorts before ${quoteList(held)} already held by this call chain: taking it now could deadlock ` +
      'with a caller that takes them in order. Take every key in one call (acquire([...]), using([...]) or ' +
      '@Locked([...])), or take this key first.',
    { code: 'LOCK_ORDER', key, held },
  );
}

const kindText = (kind: LockKindName): string =>
  kind === 'mutex' || kind === 1
    ? 'a mutex'
    : kind === 'read-write'
      ? "a read-write lock (mode 'read' or 'write')"
      : `a semaphore with permits ${kind}`;

/** A key held or waited for as one kind of lock, asked for as another. */
export function kindError(key: string, found: LockKindName, asked: LockKindName): LockUsageError {
  const numbers = typeof found === 'number' && typeof asked === 'number';
  const advice = numbers
    ? `Use ${found === 1 ? 'no permits (or 1)' : `permits: ${found}`} here too`
    : found === 'read-write' || asked === 'read-write'
      ? "Give every caller of a read-write lock a mode (its writers mode: 'write')"
      : 'Use the same permits everywhere';
  return new LockUsageError(
    `${quote(key)} is ${kindText(found)} where it is held or waited for, and this call asks for ` +
      `${kindText(asked)}: every caller of one key must use the same kind of lock. ${advice}, or give the ` +
      'two kinds of lock different keys.',
    { code: 'LOCK_KIND', key, found, asked },
  );
}

/** A call chain that holds a key for reading asks to write it: it would wait for its own read. */
export function upgradeError(key: string): LockUsageError {
  return new LockUsageError(
    `${quote(key)} is held for reading by this call chain, which now asks to write it: an upgrade would wait ` +
      "for its own read to end. Take it with mode: 'write' from the start (a writer may also read), or " +
      'release the read first.',
    { code: 'LOCK_KIND', key, found: 'read', asked: 'write' },
  );
}

/** The store's refusal of a key of another kind ("LOCKKIND <found> <asked>", "rw" for read-write). */
export function kindRefusal(key: string, message: string): LockUsageError | undefined {
  const match = /^LOCKKIND (\w+) (\w+)/.exec(message);
  if (!match) return undefined;
  const [found, asked] = [match[1], match[2]];
  if (found !== 'rw' && asked !== 'rw') return kindError(key, Number(found), Number(asked));
  // Beside a read-write lock, a semaphore of one permit is named for what it is: a mutex.
  const kind = (text: string): LockKindName =>
    text === 'rw' ? 'read-write' : text === '1' ? 'mutex' : Number(text);
  return kindError(key, kind(found), kind(asked));
}

/**
 * A usage error of code LOCK_INVALID_KEY, as a class of its own only inside the library: Nest chooses an
 * exception filter by class, and the module's renders a key error (a 400) and no other usage error, whose
 * 500 stays Nest's own or the application's filter's. Named as the one public class.
 */
export class InvalidKeyError extends LockUsageError {
  constructor(message: string, facts: Pick<LockUsageFacts, 'key' | 'cause' | 'detail'> = {}) {
    super(message, { ...facts, code: 'LOCK_INVALID_KEY' });
    this.name = 'LockUsageError';
  }
}

/** A key, a key template, or a key a call's arguments could not build (`detail`: for the caller). */
export function keyError(
  message: string,
  facts: Pick<LockUsageFacts, 'key' | 'cause' | 'detail'> = {},
): LockUsageError {
  return new InvalidKeyError(message, facts);
}
