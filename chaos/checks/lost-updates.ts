/**
 * Lost updates of the unfenced twin: a plain GET ... SET counter per lock, written by the same holders
 * as the fenced value. A SET whose value is not above the current one (in the resource's own order)
 * overwrote a newer write; two writers reporting the same value lost one update. Under holder pauses
 * this must happen: it is how the run shows that its checkers can see a violation (see sensitivity.ts).
 * So this checker reports, it never fails the run by itself.
 */
import type { History } from '../history';
import type { CheckResult } from './check';

export interface LostUpdateStats {
  unfencedViolations: number;
  unfencedExamples: unknown[];
  lostUpdatesReported: number;
}

export function checkLostUpdates(history: History): CheckResult<LostUpdateStats> {
  let unfencedViolations = 0;
  const unfencedExamples: unknown[] = [];
  const current = new Map<string, { seq: number; op: string }>();
  for (const w of history.twinSets) {
    const cur = current.get(w.key);
    if (cur && w.seq <= cur.seq) {
      unfencedViolations++;
      if (unfencedExamples.length < 5)
        unfencedExamples.push({ key: w.key, staleWriter: w.op, wrote: w.seq, overwrote: cur });
    }
    current.set(w.key, w);
  }
  // Cross-check from the workers' own reports: two writers of one counter value = a lost update.
  let lostUpdatesReported = 0;
  const seen = new Set<string>();
  for (const r of history.ops.values()) {
    if (!r.twin) continue;
    const id = `${r.key}#${r.twin.seq}`;
    if (seen.has(id)) lostUpdatesReported++;
    seen.add(id);
  }
  return { stats: { unfencedViolations, unfencedExamples, lostUpdatesReported }, violations: [] };
}
