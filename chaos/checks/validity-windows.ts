/**
 * Mutual exclusion, from the holders' side: the client-side validity windows of successive holders of
 * one lock must not overlap. A window ends when its holder stopped believing it held the lock (release
 * called, signal aborted, process killed) or when the lease's own validity ended, whichever came first.
 * For a holder killed before its end report, the end is only known to lie between its last report and
 * the kill, so a grant in there is "undetermined". Overlaps across a Redis restart are expected (the
 * restart erased the lock) and counted apart. A grant whose validity had already ended when its work
 * began must be explained by a pause of its process.
 */
import { grantsByKey, type History, type OpRec, pausedOverlap, type Restart, windowOf } from '../history';
import { type CheckContext, type CheckResult, Findings } from './check';

export interface WindowStats {
  overlaps: unknown[];
  restartOverlaps: unknown[];
  undetermined: unknown[];
  /** Grants made while the previous holder still believed it held the lock (within its validity). */
  beliefOverruns: number;
  /** Holders whose validity had ended before their work began: frozen after the grant was taken. */
  frozenGrants: unknown[];
  closest: { gapMs: number; pair?: unknown };
  unknownWindows: number;
}

/** Whether `first`'s grant came from a Redis instance killed before `second`'s grant was made. */
function acrossRestart(restarts: readonly Restart[], first: OpRec, second: OpRec): boolean {
  // A fence is the server clock in µs at the grant (on the same machine, so the same wall clock).
  return restarts.some(
    (x) => (first.fence as number) / 1000 <= x.wall1 + 1 && (second.fence as number) / 1000 >= x.wall0 - 1,
  );
}

function timeline(r: OpRec, origin: number): Record<string, unknown> {
  const rel = (t: number | undefined): number | undefined =>
    t === undefined ? undefined : Number((t - origin).toFixed(3));
  return {
    op: r.op,
    fence: r.fence,
    t0: rel(r.t0),
    grant: rel(r.tGrant),
    validUntilGrant: rel(r.validUntilGrant),
    validUntilLast: rel(r.validUntilLast),
    validUntilEnd: rel(r.end?.validUntilEnd),
    workEnd: rel(r.end?.tWorkEnd),
    lostAt: rel(r.end?.lostAt),
    lostReason: r.end?.lostReason,
    end: rel(r.end?.tEnd),
    killedAt: rel(r.killedAt),
    heldAtLeastUntil: rel(r.heldAtLeastUntil),
    outcome: r.end?.outcome,
  };
}

export function checkValidityWindows(history: History, ctx: CheckContext): CheckResult<WindowStats> {
  const found = new Findings();
  const { now } = ctx;
  const stats: WindowStats = {
    overlaps: [],
    restartOverlaps: [],
    undetermined: [],
    beliefOverruns: 0,
    frozenGrants: [],
    closest: { gapMs: Infinity },
    unknownWindows: 0,
  };
  for (const [key, list] of grantsByKey(history)) {
    let prev: OpRec | undefined;
    let prevEnd = -Infinity;
    let prevLow: OpRec | undefined;
    let prevEndLow = -Infinity;
    let prevBelief = -Infinity;
    for (const r of list) {
      const tGrant = r.tGrant as number;
      const w = windowOf(r, now);
      if (!w.known) stats.unknownWindows++;
      if (w.validity <= w.start) {
        // An empty window overlaps nothing: the grant was taken, then the process stopped before its
        // work began and resumed past the lease's validity (the limit fencing exists for). It must
        // be explained by a pause of that process; otherwise the library handed out a dead lease.
        const gap = tGrant - w.validity;
        const paused = pausedOverlap(history.pauses, r.pid, w.validity, tGrant, now);
        const entry = {
          key,
          op: r.op,
          fence: r.fence,
          pastValidityMs: Number(gap.toFixed(3)),
          pausedMs: Math.round(paused),
        };
        stats.frozenGrants.push(entry);
        // using() checks validity right before the work starts, so only a pause fits in between
        // (a scheduling delay of the process aside).
        if (gap - paused > ctx.slackMs / 10) {
          found.add(
            'a lease whose validity had ended reached its holder without a pause of its process',
            entry,
          );
        }
        if (tGrant < prevBelief) stats.beliefOverruns++;
        prevBelief = Math.max(prevBelief, w.belief);
        continue;
      }
      if (prev) {
        const p = tGrant < prevEndLow ? (prevLow as OpRec) : prev;
        const gap = tGrant - (p === prev ? prevEnd : prevEndLow);
        const restarted = acrossRestart(history.restarts, p, r);
        const describe = () => ({
          key,
          overlapMs: Number((-gap).toFixed(3)),
          first: timeline(p, p.tGrant as number),
          second: timeline(r, p.tGrant as number),
        });
        if (!restarted && gap < stats.closest.gapMs) stats.closest = { gapMs: gap, pair: describe() };
        if (tGrant < prevBelief) stats.beliefOverruns++;
        if (tGrant < prevEndLow) {
          if (restarted) stats.restartOverlaps.push(describe());
          else {
            stats.overlaps.push(describe());
            found.add('mutual exclusion: two holders with overlapping validity', describe());
          }
        } else if (tGrant < prevEnd) {
          // Only a killed holder's window can end between its low and high bounds.
          if (restarted) stats.restartOverlaps.push(describe());
          else stats.undetermined.push(describe());
        }
      }
      if (w.validity > prevEnd) {
        prevEnd = w.validity;
        prev = r;
      }
      if (w.validityLow > prevEndLow) {
        prevEndLow = w.validityLow;
        prevLow = r;
      }
      prevBelief = Math.max(prevBelief, w.belief);
    }
  }
  return { stats, violations: found.violations };
}
