/**
 * A semaphore's bound, from the holders' side: at no instant do more than `permits` client-side validity
 * windows of one key overlap. Windows are those of validity-windows.ts (grant to the end of belief, cut
 * at the lease's validity; an abandoned lease's lasts until its validity ended). Since a count only
 * grows when a window opens, it is enough to count at each grant the windows still open.
 *
 * A holder killed before its end report has a window known only between two bounds (validity-windows.ts):
 * a count above `permits` only with its upper bound is "undetermined", not a violation. An excess is
 * excused when the state the extra grants came from was lost (state-loss.ts): for each holder still
 * counted, whether a restart, or an eviction of the key's holders set (`:s`, which counts the permits
 * held), came between its grant and the new one; an excess no larger than the holders so erased is
 * counted apart, with the fault, never as a violation. The key's hash going does not free a permit (the
 * set alone counts them), so its eviction excuses nothing. A Sentinel failover excuses nothing either.
 *
 * A holder frozen between its grant and its work has an empty window, as in validity-windows.ts, and a
 * lease that reached its holder past its validity must be explained by a pause of its process.
 * `beliefPeak` counts the holders that still believed they held, frozen ones included: above `permits`,
 * it shows a pause landed where the validity check is what keeps the bound.
 */
import { grantsByKey, type History, type OpRec, pausedOverlap, windowOf } from '../history';
import { type CheckContext, type CheckResult, Findings } from './check';
import { type StateLoss, stateLossExplainer } from './state-loss';

export interface SemaphoreHolderStats {
  /** Grants, and those whose holder abandoned its lease, over every semaphore key. */
  grants: number;
  abandoned: number;
  /** The most validity windows of one key open at once, excused excesses left out. */
  peakHolders: number;
  /** The most holders of one key believing they held at once (frozen ones included). */
  beliefPeak: number;
  /** Grants past the permits with no loss of state to explain them. */
  overPermits: unknown[];
  /** Grants past the permits that a loss of state explains, each naming the fault. */
  excused: unknown[];
  excusedByCause: Record<string, number>;
  /** Grants past the permits only if a killed holder's window lasted to its upper bound. */
  undetermined: unknown[];
  /** Holders whose validity had ended before their work began. */
  frozenGrants: number;
}

interface Open {
  r: OpRec;
  high: number;
  low: number;
  belief: number;
}

export function checkSemaphoreHolders(
  history: History,
  ctx: CheckContext,
): CheckResult<SemaphoreHolderStats> {
  const found = new Findings();
  const stats: SemaphoreHolderStats = {
    grants: 0,
    abandoned: 0,
    peakHolders: 0,
    beliefPeak: 0,
    overPermits: [],
    excused: [],
    excusedByCause: {},
    undetermined: [],
    frozenGrants: 0,
  };
  const explain = stateLossExplainer(history, ctx, 'holders');
  for (const [key, list] of grantsByKey(history, 'semaphore')) {
    const permits = list[0].permits as number;
    let open: Open[] = [];
    for (const r of list) {
      stats.grants++;
      if (r.end?.abandoned) stats.abandoned++;
      const tGrant = r.tGrant as number;
      const w = windowOf(r, ctx.now);
      open = open.filter((o) => o.high > tGrant || o.belief > tGrant);
      const believing = open.filter((o) => o.belief > tGrant).length + 1;
      stats.beliefPeak = Math.max(stats.beliefPeak, believing);
      if (w.validity <= w.start) {
        stats.frozenGrants++;
        const gap = tGrant - w.validity;
        const paused = pausedOverlap(history.pauses, r.pid, w.validity, tGrant, ctx.now);
        if (gap - paused > ctx.slackMs / 10)
          found.add('semaphore: a lease whose validity had ended reached its holder without a pause', {
            key,
            op: r.op,
            fence: r.fence,
            pastValidityMs: Number(gap.toFixed(3)),
            pausedMs: Math.round(paused),
          });
      } else judge(key, permits, r, open, explain, stats, found);
      open.push({ r, high: w.validity, low: w.validityLow, belief: w.belief });
    }
  }
  return { stats, violations: found.violations };
}

/** Counts the windows open at `r`'s grant: surely (lower bounds) and possibly (upper bounds). */
function judge(
  key: string,
  permits: number,
  r: OpRec,
  open: readonly Open[],
  explain: (key: string, a: OpRec, b: OpRec) => StateLoss | undefined,
  stats: SemaphoreHolderStats,
  found: Findings,
): void {
  const tGrant = r.tGrant as number;
  const possibly = open.filter((o) => o.high > tGrant);
  const surely = possibly.filter((o) => o.low > tGrant);
  if (possibly.length < permits) {
    stats.peakHolders = Math.max(stats.peakHolders, possibly.length + 1);
    return;
  }
  const losses = possibly.map((o) => ({ o, loss: explain(key, o.r, r) }));
  const erased = (among: readonly Open[]): number =>
    losses.filter(({ o, loss }) => loss && among.includes(o)).length;
  const describe = () => ({
    key,
    permits,
    op: r.op,
    fence: r.fence,
    holders: possibly.map((o) => ({
      op: o.r.op,
      fence: o.r.fence,
      sinceMs: Math.round(tGrant - (o.r.tGrant as number)),
      leftMs: Math.round(o.high - tGrant),
      killed: o.r.killedAt !== undefined,
    })),
  });
  const surelyOver = surely.length + 1 - permits;
  if (surelyOver > erased(surely)) {
    stats.peakHolders = Math.max(stats.peakHolders, surely.length + 1 - erased(surely));
    stats.overPermits.push(describe());
    found.add(`semaphore: more than ${permits} holders of one key at once`, describe());
    return;
  }
  const loss = losses.find(({ loss }) => loss)?.loss;
  if (possibly.length + 1 - permits > erased(possibly)) stats.undetermined.push(describe());
  else if (loss) {
    const label = `#${loss.faultId} ${loss.node}`;
    stats.excused.push({ ...describe(), loss: label, cause: loss.cause });
    stats.excusedByCause[loss.cause] = (stats.excusedByCause[loss.cause] ?? 0) + 1;
  }
  stats.peakHolders = Math.max(stats.peakHolders, Math.min(surely.length + 1, permits));
}
