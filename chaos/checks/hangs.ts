/**
 * Liveness: every call settles (granted, or a typed error) within waitTimeout + commandTimeout + slack,
 * pauses of its own process not counted; no call is left open; and once the nemesis has stopped, every
 * lock goes to its next waiter within ttl + claim window + slack of being free.
 */
import { grantsByKey, type History, pausedOverlap, windowOf } from '../history';
import { type CheckContext, type CheckResult, Findings } from './check';

export interface HangStats {
  slowestCall: number;
  callBound: number;
  calmHandoffMax: number;
  handoffBound: number;
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
  return { stats: { slowestCall, callBound, calmHandoffMax, handoffBound }, violations: found.violations };
}
