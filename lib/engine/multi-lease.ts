/**
 * One lease over several keys: the single-key leases it was granted, key by key in canonical order,
 * seen as one. Each part renews itself; the lease is held while every part is, and its signal aborts
 * with the first part's LockLostError (which names the key). Parts taken by an enclosing call (a nested
 * request that adds keys to ones already held) are covered but not released by this lease.
 */
import './dispose-symbol';
import type { LockLostError } from '../errors/lock-lost.error';
import type { HeldLease, OwnedLease } from './held-lease';

export class MultiLease implements OwnedLease {
  readonly key: string;
  readonly keys: readonly string[];
  readonly token: string;
  readonly fence: number;
  readonly fences: Readonly<Record<string, number>>;
  readonly tokens: Readonly<Record<string, string>>;
  private combined: AbortSignal | undefined;

  /**
   * @param parts every key's lease, in canonical order
   * @param owned the parts this lease took itself (and releases); the others belong to an outer call
   */
  constructor(
    readonly parts: readonly HeldLease[],
    private readonly owned: readonly HeldLease[],
  ) {
    this.keys = Object.freeze(parts.map((part) => part.key));
    this.key = this.keys[0];
    this.token = (owned[0] ?? parts[0]).token;
    this.fence = Math.max(...parts.map((part) => part.fence));
    this.fences = Object.freeze(Object.fromEntries(parts.map((part) => [part.key, part.fence])));
    this.tokens = Object.freeze(Object.fromEntries(parts.map((part) => [part.key, part.token])));
  }

  get signal(): AbortSignal {
    // AbortSignal.any keeps the reason of the first part to abort: its LockLostError names the key.
    this.combined ??= AbortSignal.any(this.parts.map((part) => part.signal));
    return this.combined;
  }

  get isHeld(): boolean {
    // Every part is read (not `every`), so each one that ran out declares itself lost now.
    return this.parts.map((part) => part.isHeld).every(Boolean);
  }

  get lossReason(): LockLostError | undefined {
    return this.parts.find((part) => part.lossReason)?.lossReason;
  }

  /** Extends every key; rejects with the first failure (that key's lease is then lost). */
  extend(ttl?: number): Promise<void> {
    return eachPart(this.parts, (part) => part.extend(ttl));
  }

  /**
   * Releases the keys this lease took, last key first, each handed to its next waiter; every one is
   * attempted, then the first failure (a key no longer held) is thrown.
   */
  release(): Promise<void> {
    return eachPart([...this.owned].reverse(), (part) => part.release());
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }
}

/**
 * Most calls of one lease in flight at once. A thousand keys' releases sent together would queue behind
 * each other on each connection (on every node of a quorum), and each call's timeout would count that
 * queueing: on a loaded machine the last ones then fail although Redis is fine.
 */
const IN_FLIGHT = 64;

/**
 * Calls `call` for every part, at most IN_FLIGHT at a time, in the parts' order; waits for every call to
 * settle (none is left running), then rejects with the failure of the first part that failed.
 */
async function eachPart(
  parts: readonly HeldLease[],
  call: (part: HeldLease) => Promise<void>,
): Promise<void> {
  const failures: Array<{ reason: unknown } | undefined> = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < parts.length) {
      const index = next++;
      try {
        await call(parts[index]);
      } catch (reason) {
        failures[index] = { reason };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, parts.length) }, worker));
  const failed = failures.find((failure) => failure !== undefined);
  if (failed) throw failed.reason;
}
