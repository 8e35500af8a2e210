/**
 * Reentrancy: which leases the current async call chain holds (an AsyncLocalStorage scope set by each
 * `using`), so a nested call on a key the chain holds reuses its lease instead of queueing behind
 * itself, and a chain that holds several keys takes new ones in canonical order only. It also knows the
 * `using` functions still running, which close() gives their grace period.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Lease } from '../lease';
import { checkReentry } from '../lock-kind';
import type { EngineCall } from './call';
import { settledWithin } from './clock';
import type { HeldLease, OwnedLease } from './held-lease';
import { checkOrder } from './key-sequence';
import type { LockEngine } from './lock-engine';
import { MultiLease } from './multi-lease';
import { ReentrantLease } from './reentrant-lease';

interface LeaseScope {
  readonly byKey: ReadonlyMap<string, HeldLease>;
  readonly innermost: OwnedLease;
  /** Some lease of the chain holds several keys: new keys must then come in canonical order. */
  readonly multi: boolean;
}

export class CallChain {
  /** Leases held by the current async call chain, by lock key. */
  private readonly scope = new AsyncLocalStorage<LeaseScope>();
  /** Calls of `using` whose function is still running: close() lets them finish first. */
  private readonly running = new Set<Promise<unknown>>();

  constructor(private readonly engine: LockEngine) {}

  /**
   * One key: the lease the chain holds on it (if the call asks for the same kind of lock: no upgrade),
   * or a new one taken by the engine. Not async: a waiting call holds no suspended frames, only its
   * Waiter, so a thousand waiters stay small.
   */
  obtain(key: string, call: EngineCall): Promise<Lease | null> {
    try {
      // Reentry is checked before closing: a call running out its grace period may nest another
      // call on the lock it already holds.
      const scope = this.scope.getStore();
      const outer = scope?.byKey.get(key);
      if (outer?.isHeld) {
        checkReentry(key, outer, call.options);
        return Promise.resolve(new ReentrantLease(outer));
      }
      if (scope?.multi) checkOrder([key], scope.byKey);
      return this.engine.takeOne(key, call);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Several keys, all or none: the keys the chain already holds are reused, the others taken in
   * canonical order under one token, and the whole is one lease.
   */
  async obtainAll(keys: readonly string[], call: EngineCall): Promise<Lease | null> {
    const scope = this.scope.getStore();
    const byKey = new Map<string, HeldLease>();
    for (const key of keys) {
      const outer = scope?.byKey.get(key);
      if (outer?.isHeld) byKey.set(key, outer);
    }
    const fresh = keys.filter((key) => !byKey.has(key));
    const together = (owned: HeldLease[]): OwnedLease =>
      keys.length === 1
        ? (byKey.get(keys[0]) as HeldLease)
        : new MultiLease(
            keys.map((key) => byKey.get(key) as HeldLease),
            owned,
          );
    if (fresh.length === 0) return new ReentrantLease(together([]));
    if (scope) checkOrder(fresh, scope.byKey);
    const owned = await this.engine.takeAll(fresh, call);
    if (owned === null) return null;
    for (const lease of owned) byKey.set(lease.key, lease);
    return together(owned);
  }

  /** Runs `fn` with `held` added to the chain's scope, as one of the running calls. */
  async run<T>(held: OwnedLease, fn: () => T | Promise<T>): Promise<T> {
    const outer = this.scope.getStore();
    const byKey = new Map(outer?.byKey);
    for (const part of held.parts) byKey.set(part.key, part);
    const multi = outer?.multi === true || held.parts.length > 1;
    const scope = { byKey, innermost: held, multi };
    const run = this.scope.run(scope, async () => fn());
    this.running.add(run);
    try {
      return await run;
    } finally {
      this.running.delete(run);
      // While enabled, an AsyncLocalStorage makes Node 20 run a hook for every promise the process
      // creates, locked or not (tens of µs per HTTP request). With no `using` running there is no
      // scope to carry: turn it off until the next `using` turns it back on (run() does that).
      if (this.running.size === 0) this.scope.disable();
    }
  }

  /** The lease the chain holds for `key`, else the innermost one; undefined outside any `using`. */
  current(key?: string): Lease | undefined {
    const scope = this.scope.getStore();
    if (!scope) return undefined;
    const held = key === undefined ? scope.innermost : scope.byKey.get(key);
    return held?.isHeld ? new ReentrantLease(held) : undefined;
  }

  /** Waits until every running `using` function has settled, or `grace` ms have passed. */
  async settle(grace: number): Promise<void> {
    if (grace > 0 && this.running.size > 0) await settledWithin([...this.running], grace);
  }
}
