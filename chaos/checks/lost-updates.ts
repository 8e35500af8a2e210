/**
 * Lost updates of the unfenced twin: a plain GET ... SET counter per lock, written by the same holders
 * as the fenced value. A SET whose value is not above the current one (in the resource's own order)
 * overwrote a newer write; two writers reporting the same value lost one update. Under holder pauses
 * this must happen: it is how the run shows that its checkers can see a violation (see sensitivity.ts).
 * So this checker reports, it never fails the run by itself.
 */
import type { History, OpRec } from '../history';
import type { CheckResult } from './check';

export interface LostUpdateStats {
  unfencedViolations: number;
  unfencedExamples: unknown[];
  lostUpdatesReported: number;
}

/** The twin SETs that overwrote a newer value, in the resource's order. */
export function staleTwinWrites(
  history: History,
): Array<{ key: string; staleWriter: string; wrote: number; overwrote: { seq: number; op: string } }> {
  const stale = [];
  const current = new Map<string, { seq: number; op: string }>();
  for (const w of history.twinSets) {
    const cur = current.get(w.key);
    if (cur && w.seq <= cur.seq) stale.push({ key: w.key, staleWriter: w.op, wrote: w.seq, overwrote: cur });
    current.set(w.key, w);
  }
  return stale;
}

/** Cross-check from the workers' own reports: each call that wrote a counter value another had written. */
export function repeatedTwinWriters(history: History): OpRec[] {
  const repeated: OpRec[] = [];
  const seen = new Set<string>();
  for (const r of history.ops.values()) {
    if (!r.twin) continue;
    const id = `${r.key}#${r.twin.seq}`;
    if (seen.has(id)) repeated.push(r);
    seen.add(id);
  }
  return repeated;
}

export function checkLostUpdates(history: History): CheckResult<LostUpdateStats> {
  const stale = staleTwinWrites(history);
  return {
    stats: {
      unfencedViolations: stale.length,
      unfencedExamples: stale.slice(0, 5),
      lostUpdatesReported: repeatedTwinWriters(history).length,
    },
    violations: [],
  };
}
