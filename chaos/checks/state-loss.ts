/**
 * The losses of a lock's state that explain two holders at once (validity-windows.ts), more than a
 * semaphore's permits, or a read-write lock's writer beside another holder (shared-holders.ts): a
 * restart without persistence, the deletion of the key that says who holds the lock, or its eviction,
 * each only inside the span where it could have let the second grant happen. validity-windows.ts says which loss counts on which topology, and why.
 */
import type { Eviction, Fault } from '../faults/kinds';
import type { History, OpRec, Restart } from '../history';
import type { CheckContext } from './check';

/** A fault that erased the lock's state on a node: the restart, deletion or eviction behind an overlap. */
export type StateLoss = Pick<Restart, 'faultId' | 'node'> & { cause: LossCause };
export type LossCause = 'restart' | 'deletion' | 'eviction';

/** One server: the restart that killed the instance `first`'s grant came from before `second`'s grant. */
function acrossRestart(restarts: readonly Restart[], first: OpRec, second: OpRec): StateLoss | undefined {
  // A fence is the server clock in µs at the grant (on the same machine, so the same wall clock).
  const x = restarts.find(
    (x) => (first.fence as number) / 1000 <= x.wall1 + 1 && (second.fence as number) / 1000 >= x.wall0 - 1,
  );
  return x && { faultId: x.faultId, node: x.node, cause: 'restart' };
}

/**
 * A quorum: an early restart of any node killed inside `first`'s validity window and before `second`'s
 * grant (inside `first`'s window, since the two overlap). The window opens when the attempt that granted
 * `first` began: its validity is counted from there, ttl less a drift allowance, so validUntil - ttl is
 * at most that allowance earlier. A restart before it (while `first` only waited) erased nothing `first`
 * held; when the validity is unknown, the call's start stands in.
 */
function earlyRestartBetween(
  restarts: readonly Restart[],
  first: OpRec,
  second: OpRec,
  ttl: number,
): StateLoss | undefined {
  const opened = windowOpened(first, ttl);
  const x = restarts.find((x) => x.early && x.t0 > opened && x.t0 < (second.tGrant as number));
  return x && { faultId: x.faultId, node: x.node, cause: 'restart' };
}

/** When `first`'s validity window opened (see earlyRestartBetween). */
const windowOpened = (first: OpRec, ttl: number): number =>
  first.validUntilGrant === undefined ? first.t0 : first.validUntilGrant - ttl;

/** A quorum: the deletion of `key`'s owner key on some node, in the same span as earlyRestartBetween. */
function keyDeletedBetween(
  faults: readonly Fault[],
  key: string,
  first: OpRec,
  second: OpRec,
  ttl: number,
): StateLoss | undefined {
  const opened = windowOpened(first, ttl);
  const fault = faults.find(
    (f) =>
      f.kind === 'delete-lock-keys' &&
      f.keys?.includes(key) &&
      f.t0 > opened &&
      f.t0 < (second.tGrant as number),
  );
  return fault && { faultId: fault.id, node: String(fault.detail.node), cause: 'deletion' };
}

/**
 * The eviction of `key`'s `part` (the key that says who holds it) on some node (the one server), in the same span as
 * earlyRestartBetween. An eviction is only known to lie between its `after` and `by` times (see
 * Eviction), so it explains the overlap when that interval meets the span: one that surely came before
 * the window opened, or surely after the second grant, explains nothing.
 */
function evictedBetween(
  faults: readonly Fault[],
  key: string,
  part: Eviction['part'],
  first: OpRec,
  second: OpRec,
  ttl: number,
): StateLoss | undefined {
  const opened = windowOpened(first, ttl);
  const inSpan = (e: Eviction): boolean =>
    e.part === part && e.lock === key && e.by > opened && e.after < (second.tGrant as number);
  const fault = faults.find((f) => f.kind === 'memory-pressure' && f.evictions?.some(inSpan));
  return fault && { faultId: fault.id, node: String(fault.detail.node), cause: 'eviction' };
}

/**
 * What explains two overlapping holders `a` and `b` of `key`, if anything. `part`: the key whose loss
 * frees the lock (a mutex's owner key, a semaphore's or read-write lock's holders set).
 */
export function stateLossExplainer(
  history: History,
  ctx: CheckContext,
  part: Eviction['part'],
): (key: string, a: OpRec, b: OpRec) => StateLoss | undefined {
  return (key, a, b) => {
    // In the order Redis granted them (by fence), not the order the holders learnt of it: a grant pushed
    // to a waiter can reach it after a later grant reached another (its owner key evicted meanwhile).
    const [first, second] = (a.fence as number) <= (b.fence as number) ? [a, b] : [b, a];
    return (
      (ctx.nodes > 1
        ? (earlyRestartBetween(history.restarts, first, second, ctx.ttl) ??
          keyDeletedBetween(history.faults, key, first, second, ctx.ttl))
        : acrossRestart(history.restarts, first, second)) ??
      evictedBetween(history.faults, key, part, first, second, ctx.ttl)
    );
  };
}
