/**
 * The fences of a lock several callers hold at once (a semaphore's, a read-write lock's): no two grants
 * of one key share a fence, and a grant made after another was already known to its holder (its call
 * began after that holder's grant) carries a higher fence. Only that order is judged: holders of one
 * key overlap, and a grant pushed to a waiter may reach it after a later one reached another, so the
 * order in which holders learnt of their grants says nothing otherwise. Fences survive restarts and
 * evictions (at least the server clock in µs), so nothing is excused.
 */
import { grantsByKey, type History, type OpRec } from '../history';
import { type CheckResult, Findings } from './check';
import { SHARED_LABEL, type SharedKind } from './shared-kinds';

export interface SharedFenceStats {
  fenceViolations: number;
}

/** Judges the keys of one kind: `semaphore` or `rw`. */
export function checkSharedFences(history: History, kind: SharedKind): CheckResult<SharedFenceStats> {
  const found = new Findings();
  const label = SHARED_LABEL[kind];
  let fenceViolations = 0;
  for (const [key, list] of grantsByKey(history, kind)) {
    const byFence = new Map<number, string>();
    for (const r of list) {
      const fence = r.fence as number;
      const other = byFence.get(fence);
      if (other !== undefined) {
        fenceViolations++;
        found.add(`${label} fencing: two grants of one key with the same fence`, {
          key,
          fence,
          ops: [other, r.op],
        });
      } else byFence.set(fence, r.op);
    }
    // `list` is in the order the holders learnt of their grants: walking the calls by start time, every
    // grant known before a call began is behind the pointer, and its fence must be below the call's.
    const byStart = [...list].sort((a, b) => a.t0 - b.t0);
    let known = 0;
    let highest: OpRec | undefined;
    for (const b of byStart) {
      while (known < list.length && (list[known].tGrant as number) < b.t0) {
        const a = list[known++];
        if (!highest || (a.fence as number) > (highest.fence as number)) highest = a;
      }
      if (highest && (b.fence as number) <= (highest.fence as number)) {
        fenceViolations++;
        found.add(`${label} fencing: a grant asked for after another got a fence not above it`, {
          key,
          earlier: highest.op,
          fence: highest.fence,
          later: b.op,
          laterFence: b.fence,
        });
      }
    }
  }
  return { stats: { fenceViolations }, violations: found.violations };
}
