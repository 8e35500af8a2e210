/**
 * Errors as callers see them: every failed call ended with a typed LockError (never an untyped one),
 * no worker saw an unhandled rejection or exception (reported as they happened, and counted again when
 * each worker closed), and no resource write failed for a reason of the harness' own.
 */
import type { History } from '../history';
import { type CheckResult, Findings } from './check';

export interface ErrorStats {
  outcomes: Record<string, number>;
  lostReasons: Record<string, number>;
  /** LOCK_LOST calls by their LockLostError `reason` ('none given' where the library gave none). */
  lostCodes: Record<string, number>;
}

export function checkErrors(history: History): CheckResult<ErrorStats> {
  const found = new Findings();
  const outcomes: Record<string, number> = {};
  const lostReasons: Record<string, number> = {};
  const lostCodes: Record<string, number> = {};
  for (const r of history.ops.values()) {
    if (!r.end) continue;
    outcomes[r.end.outcome] = (outcomes[r.end.outcome] ?? 0) + 1;
    if (r.end.lostReason) lostReasons[r.end.lostReason] = (lostReasons[r.end.lostReason] ?? 0) + 1;
    if (r.end.outcome === 'LOCK_LOST') {
      const code = r.end.lostCode ?? 'none given';
      lostCodes[code] = (lostCodes[code] ?? 0) + 1;
    }
    if (r.end.outcome === 'UNTYPED')
      found.add('an untyped error reached the caller', { op: r.op, message: r.end.message });
    if (r.end.harnessError)
      found.add('harness: resource write failed', { op: r.op, error: r.end.harnessError });
  }
  if (history.unhandled.length > 0)
    found.add('unhandled rejection / exception in a worker', history.unhandled.slice(0, 10));
  for (const { slot, unhandled } of history.closes) {
    if (unhandled !== undefined && unhandled > 0)
      found.add('unhandled rejections counted at close', { slot });
  }
  return { stats: { outcomes, lostReasons, lostCodes }, violations: found.violations };
}
