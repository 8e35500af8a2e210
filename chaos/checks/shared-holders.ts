/**
 * The bound of a lock several callers hold at once (shared-kinds.ts), from the holders' side: at no
 * instant do more than `permits` client-side validity windows of a semaphore's key overlap, and a
 * read-write lock's writer's window overlaps no other holder's of its key (readers' overlap each other
 * freely). Windows are those of validity-windows.ts (grant to the end of belief, cut at the lease's
 * validity; an abandoned lease's lasts until its validity ended). Since a count only grows when a
 * window opens, it is enough to count at each grant the windows still open that conflict with it: for
 * a read-write lock, every one at a writer's grant, the writers' at a reader's.
 *
 * A holder killed before its end report has a window known only between two bounds (validity-windows.ts):
 * an excess only with its upper bound is "undetermined", not a violation. An excess is excused when the
 * state the extra grants came from was lost (state-loss.ts): for each holder still counted, whether a
 * restart, or an eviction of the key's holders set (`:s`, which says who holds it), came between its
 * grant and the new one; an excess no larger than the holders so erased is counted apart, with the
 * fault, never as a violation. The key's hash going does not free it (the set alone counts the
 * holders), so its eviction excuses nothing. A Sentinel failover excuses nothing either.
 *
 * A holder frozen between its grant and its work has an empty window, as in validity-windows.ts, and a
 * lease that reached its holder past its validity must be explained by a pause of its process.
 * `beliefPeak` counts the holders that still believed they held, frozen ones included: past the bound,
 * it shows a pause landed where the validity check is what keeps it.
 */
import { grantsByKey, type History, type OpRec, pausedOverlap, windowOf } from '../history';
import { type CheckContext, type CheckResult, Findings } from './check';
import { type SharedKind, type SharedRule, sharedRule } from './shared-kinds';
import { type StateLoss, stateLossExplainer } from './state-loss';

export interface SharedHolderStats {
  /** Grants over every key of the kind; those in write mode (a read-write lock's); those abandoned. */
  grants: number;
  writes: number;
  abandoned: number;
  /** The most validity windows of one key open at once, excused excesses left out. */
  peakHolders: number;
  /** The most holders of one key believing they held at once (frozen ones included). */
  beliefPeak: number;
  /** Grants past the bound with no loss of state to explain them. */
  overBound: unknown[];
  /** Grants past the bound that a loss of state explains, each naming the fault. */
  excused: unknown[];
  excusedByCause: Record<string, number>;
  /** Grants past the bound only if a killed holder's window lasted to its upper bound. */
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

type Explain = (key: string, a: OpRec, b: OpRec) => StateLoss | undefined;

/** Judges the keys of one kind: `semaphore` or `rw`. */
export function checkSharedHolders(
  history: History,
  ctx: CheckContext,
  kind: SharedKind,
): CheckResult<SharedHolderStats> {
  const found = new Findings();
  const stats: SharedHolderStats = {
    grants: 0,
    writes: 0,
    abandoned: 0,
    peakHolders: 0,
    beliefPeak: 0,
    overBound: [],
    excused: [],
    excusedByCause: {},
    undetermined: [],
    frozenGrants: 0,
  };
  const explain = stateLossExplainer(history, ctx, 'holders');
  for (const [key, list] of grantsByKey(history, kind)) {
    const rule = sharedRule(kind, list);
    let open: Open[] = [];
    for (const r of list) {
      stats.grants++;
      if (r.mode === 'write') stats.writes++;
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
          found.add(`${rule.label}: a lease whose validity had ended reached its holder without a pause`, {
            key,
            op: r.op,
            mode: r.mode,
            fence: r.fence,
            pastValidityMs: Number(gap.toFixed(3)),
            pausedMs: Math.round(paused),
          });
      } else
        stats.peakHolders = Math.max(stats.peakHolders, judge(key, rule, r, open, explain, stats, found));
      open.push({ r, high: w.validity, low: w.validityLow, belief: w.belief });
    }
  }
  return { stats, violations: found.violations };
}

/**
 * Counts the windows open at `r`'s grant that conflict with it: surely (lower bounds) and possibly
 * (upper bounds). Returns how many windows were open then, `r`'s included and excused excesses left out.
 */
function judge(
  key: string,
  rule: SharedRule,
  r: OpRec,
  open: readonly Open[],
  explain: Explain,
  stats: SharedHolderStats,
  found: Findings,
): number {
  const tGrant = r.tGrant as number;
  const { limit } = rule;
  const openAll = open.filter((o) => o.high > tGrant);
  const surelyAll = openAll.filter((o) => o.low > tGrant).length;
  const possibly = openAll.filter((o) => rule.conflicts(r, o.r));
  const surely = possibly.filter((o) => o.low > tGrant);
  if (possibly.length < limit) return openAll.length + 1;
  const losses = possibly.map((o) => ({ o, loss: explain(key, o.r, r) }));
  const erased = (among: readonly Open[]): number =>
    losses.filter(({ o, loss }) => loss && among.includes(o)).length;
  const describe = () => ({
    key,
    ...rule.detail,
    op: r.op,
    mode: r.mode,
    fence: r.fence,
    holders: possibly.map((o) => ({
      op: o.r.op,
      mode: o.r.mode,
      fence: o.r.fence,
      sinceMs: Math.round(tGrant - (o.r.tGrant as number)),
      leftMs: Math.round(o.high - tGrant),
      killed: o.r.killedAt !== undefined,
    })),
  });
  const surelyOver = surely.length + 1 - limit;
  if (surelyOver > erased(surely)) {
    stats.overBound.push(describe());
    found.add(`${rule.label}: ${rule.bound}`, describe());
    return surelyAll + 1 - erased(surely);
  }
  const loss = losses.find(({ loss }) => loss)?.loss;
  if (possibly.length + 1 - limit > erased(possibly)) stats.undetermined.push(describe());
  else if (loss) {
    const label = `#${loss.faultId} ${loss.node}`;
    stats.excused.push({ ...describe(), loss: label, cause: loss.cause });
    stats.excusedByCause[loss.cause] = (stats.excusedByCause[loss.cause] ?? 0) + 1;
  }
  return surelyAll + 1 - Math.max(0, surelyOver);
}
