/**
 * Mutual exclusion, from the holders' side: the client-side validity windows of successive holders of
 * one lock must not overlap. A window ends when its holder stopped believing it held the lock (release
 * called, signal aborted, process killed) or when the lease's own validity ended, whichever came first.
 * For a holder killed before its end report, the end is only known to lie between its last report and
 * the kill, so a grant in there is "undetermined". A grant whose validity had already ended when its work
 * began must be explained by a pause of its process.
 *
 * Overlaps a loss of the lock's state explains (state-loss.ts) are counted apart (with the fault), never
 * as violations:
 * - one server: the first holder's grant came from the instance that was killed before the second grant
 *   (the restart erased the lock);
 * - a quorum (Redlock): a node lost the lock's state inside the first holder's validity window and before
 *   the second grant: it was restarted early (before the longest ttl had passed), or that lock's key was
 *   deleted on it. The first holder may hold only a bare majority, one node of which then votes for the
 *   second (docs/guarantees.md, "a node that loses its state"). A restart after the longest ttl explains
 *   nothing, nor does any other fault;
 * - either: the server (a node) evicted that lock's owner key under memory pressure, in the same span
 *   (inside the first holder's window, before the second grant). On one server the lock is then free.
 * "First" and "second" are in the order the grants were made (their fences), which a pushed grant that
 * reached its waiter late can reverse on the holders' clocks.
 * A Sentinel failover explains nothing: it is recorded as a fault, never as a restart, since with every
 * grant acknowledged by the replica (the `replicas` option) the promoted replica has them all.
 */
import { grantsByKey, type History, type OpRec, pausedOverlap, windowOf } from '../history';
import { type CheckContext, type CheckResult, Findings } from './check';
import { type LossCause, type StateLoss, stateLossExplainer } from './state-loss';

export interface WindowStats {
  overlaps: unknown[];
  /** Overlaps a loss of state explains (see above), each naming the fault. */
  restartOverlaps: unknown[];
  /** How many overlaps each fault explains, by `#<fault id> <node>`. */
  excusedByFault: Record<string, number>;
  /** How many overlaps each kind of state loss explains. */
  excusedByCause: Partial<Record<LossCause, number>>;
  undetermined: unknown[];
  /** Grants made while the previous holder still believed it held the lock (within its validity). */
  beliefOverruns: number;
  /** Holders whose validity had ended before their work began: frozen after the grant was taken. */
  frozenGrants: unknown[];
  closest: { gapMs: number; pair?: unknown };
  unknownWindows: number;
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
    excusedByFault: {},
    excusedByCause: {},
  };
  const explain = stateLossExplainer(history, ctx, 'owner');
  const excuse = (x: StateLoss, overlap: Record<string, unknown>): void => {
    const label = `#${x.faultId} ${x.node}`;
    stats.restartOverlaps.push({ ...overlap, restart: label, cause: x.cause });
    stats.excusedByFault[label] = (stats.excusedByFault[label] ?? 0) + 1;
    stats.excusedByCause[x.cause] = (stats.excusedByCause[x.cause] ?? 0) + 1;
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
        const restarted = explain(key, p, r);
        const describe = () => ({
          key,
          overlapMs: Number((-gap).toFixed(3)),
          first: timeline(p, p.tGrant as number),
          second: timeline(r, p.tGrant as number),
        });
        if (!restarted && gap < stats.closest.gapMs) stats.closest = { gapMs: gap, pair: describe() };
        if (tGrant < prevBelief) stats.beliefOverruns++;
        if (tGrant < prevEndLow) {
          if (restarted) excuse(restarted, describe());
          else {
            stats.overlaps.push(describe());
            found.add('mutual exclusion: two holders with overlapping validity', describe());
          }
        } else if (tGrant < prevEnd) {
          // Only a killed holder's window can end between its low and high bounds.
          if (restarted) excuse(restarted, describe());
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
