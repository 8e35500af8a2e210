/**
 * Fenced writes, in the order the resource executed them (its MONITOR stream): per lock, accepted
 * fences never go back, each accepted fence is its writer's grant fence, and what each worker's
 * FencedStore reported (written, or refused for a newer fence) agrees with that order.
 */
import type { History } from '../history';
import { type CheckResult, Findings } from './check';

export interface FencedStats {
  fencedViolations: number;
  fencedAcceptedReported: number;
  fencedRefused: number;
}

export function checkFencedWrites(history: History): CheckResult<FencedStats> {
  const found = new Findings();
  let fencedViolations = 0;
  const lastAccepted = new Map<string, { op: string; fence: number }>();
  for (const w of history.fencedAccepts) {
    const last = lastAccepted.get(w.key);
    const grantFence = history.ops.get(w.op)?.fence;
    if (grantFence !== undefined && grantFence !== w.fence) {
      fencedViolations++;
      found.add("fenced: accepted fence differs from the writer's grant", { ...w, grantFence });
    }
    if (last && (w.fence < last.fence || (w.fence === last.fence && w.op !== last.op))) {
      fencedViolations++;
      found.add('fenced: stale token accepted', { key: w.key, accepted: w, after: last });
    }
    lastAccepted.set(w.key, w);
  }
  // ...and the workers' FencedStore results agree with that order.
  const acceptedOps = new Set(history.fencedAccepts.map((w) => w.op));
  let fencedRefused = 0;
  let fencedAcceptedReported = 0;
  for (const r of history.ops.values()) {
    if (!r.fenced) continue;
    if (r.fenced.written) {
      fencedAcceptedReported++;
      if (r.fenced.newest !== r.fence || !acceptedOps.has(r.op)) {
        fencedViolations++;
        found.add('fenced: FencedStore result disagrees with the resource', {
          op: r.op,
          fence: r.fence,
          result: r.fenced,
        });
      }
    } else {
      fencedRefused++;
      if (!(r.fenced.newest > (r.fence as number)) || acceptedOps.has(r.op)) {
        fencedViolations++;
        found.add('fenced: a refusal without a newer fence', { op: r.op, fence: r.fence, result: r.fenced });
      }
    }
  }
  return { stats: { fencedViolations, fencedAcceptedReported, fencedRefused }, violations: found.violations };
}
