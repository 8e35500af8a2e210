/**
 * Liveness: every call settles (granted, or a typed error) within waitTimeout + commandTimeout + slack,
 * pauses of its own process not counted; no call is left open; and once the nemesis has stopped, every
 * lock goes to its next waiter within ttl + claim window + slack of being free. Calls on a semaphore or
 * a read-write lock are calls like the others; their hand-offs are judged by their own bound
 * (sharedHandoffs).
 */
import { grantsByKey, type History, type OpRec, pausedOverlap, windowOf } from '../history';
import { type CheckContext, type CheckResult, Findings } from './check';
import { SHARED_KINDS, type SharedKind, type SharedRule, sharedRule } from './shared-kinds';

export interface HangStats {
  slowestCall: number;
  callBound: number;
  calmHandoffMax: number;
  handoffBound: number;
  /** The same for a semaphore's permits, and a read-write lock (0 without their workload). */
  semaphoreHandoffMax: number;
  readWriteHandoffMax: number;
}

export function checkHangs(history: History, ctx: CheckContext): CheckResult<HangStats> {
  const found = new Findings();
  const { now } = ctx;
  const all = [...history.ops.values()];
  const callBound = ctx.waitTimeout + ctx.commandTimeout + ctx.slackMs;
  let slowestCall = 0;
  const slowCalls: unknown[] = [];
  for (const r of all) {
    const settled = r.tGrant ?? r.end?.tEnd;
    if (settled === undefined) continue;
    const ms = settled - r.t0 - pausedOverlap(history.pauses, r.pid, r.t0, settled, now);
    slowestCall = Math.max(slowestCall, ms);
    if (ms > callBound) slowCalls.push({ op: r.op, key: r.key, ms: Math.round(ms), outcome: r.end?.outcome });
  }
  if (slowCalls.length > 0)
    found.add(
      `liveness: calls that took longer than waitTimeout + commandTimeout + ${ctx.slackMs} ms`,
      slowCalls.slice(0, 10),
    );
  const hung = all.filter((r) => !r.end && r.killedAt === undefined);
  if (hung.length > 0)
    found.add(
      'liveness: calls that never settled',
      hung.slice(0, 10).map((r) => r.op),
    );

  // Hand-offs after the nemesis stopped: from the moment the lock was free (the previous holder's
  // window ended, or the waiter arrived, or the calm began) to the grant.
  const handoffBound = ctx.ttl + ctx.claimWindow + ctx.slackMs;
  let calmHandoffMax = 0;
  for (const list of grantsByKey(history).values()) {
    for (let i = 0; i < list.length; i++) {
      const r = list[i];
      const tGrant = r.tGrant as number;
      if (tGrant < ctx.tCalm) continue;
      const prev = list[i - 1];
      const freeAt = Math.max(prev ? windowOf(prev, now).belief : -Infinity, r.t0, ctx.tCalm);
      const gap = tGrant - freeAt;
      calmHandoffMax = Math.max(calmHandoffMax, gap);
      if (gap > handoffBound)
        found.add('liveness: slow hand-off after the nemesis stopped', {
          op: r.op,
          key: r.key,
          gapMs: Math.round(gap),
          boundMs: handoffBound,
        });
    }
  }
  const sharedMax: Record<SharedKind, number> = { semaphore: 0, rw: 0 };
  for (const kind of SHARED_KINDS) {
    for (const list of grantsByKey(history, kind).values()) {
      const rule = sharedRule(kind, list);
      for (const { r, gap } of sharedHandoffs(list, rule, ctx)) {
        sharedMax[kind] = Math.max(sharedMax[kind], gap);
        if (gap > handoffBound)
          found.add(`liveness: slow hand-off of a ${rule.handoff} after the nemesis stopped`, {
            op: r.op,
            key: r.key,
            mode: r.mode,
            gapMs: Math.round(gap),
            boundMs: handoffBound,
          });
      }
    }
  }
  return {
    stats: {
      slowestCall,
      callBound,
      calmHandoffMax,
      handoffBound,
      semaphoreHandoffMax: sharedMax.semaphore,
      readWriteHandoffMax: sharedMax.rw,
    },
    violations: found.violations,
  };
}

/**
 * The grants of a semaphore or a read-write lock after the nemesis stopped, each with how long it came
 * after the key was free for it. The grants Redis made before it (lower fences) were ahead of it in
 * line or held the key already, so it was free for it once fewer than the rule's limit of those that
 * conflict with it still held: fewer than `permits` of them for a semaphore; for a read-write lock's
 * writer, none of them, for a reader, none of the writers. (Their holders' belief; a killed holder's
 * lease ends within its ttl, which the bound allows.)
 */
function sharedHandoffs(
  list: readonly OpRec[],
  rule: SharedRule,
  ctx: CheckContext,
): Array<{ r: OpRec; gap: number }> {
  const byFence = [...list].sort((a, b) => (a.fence as number) - (b.fence as number));
  // Holds that ended before the calm cannot delay a grant after it: leave them out of the counting.
  const late = byFence.filter((g) => windowOf(g, ctx.now).belief > ctx.tCalm);
  const out: Array<{ r: OpRec; gap: number }> = [];
  for (const r of byFence) {
    const tGrant = r.tGrant as number;
    if (tGrant < ctx.tCalm) continue;
    const ends = late
      .filter((g) => (g.fence as number) < (r.fence as number) && rule.conflicts(r, g))
      .map((g) => windowOf(g, ctx.now).belief)
      .sort((a, b) => b - a);
    const busyUntil = ends.length >= rule.limit ? ends[rule.limit - 1] : -Infinity;
    out.push({ r, gap: tGrant - Math.max(busyUntil, r.t0, ctx.tCalm) });
  }
  return out;
}
