/**
 * Whether the run could have seen a violation at all. A GC pause is "effective" when it froze a holder
 * inside its work (after the twin's read, before its write) while another process took the lock over:
 * the unfenced twin must then show a lost update, or the checkers are blind. Quick mode must land at
 * least one such pause, so every CI run shows the checkers catching what they name (a run without the
 * mutex workload has no twin: its pauses are only counted).
 */
import type { Fault } from '../faults/kinds';
import type { History } from '../history';
import { type CheckContext, type CheckResult, Findings } from './check';

export interface Effect {
  effective: boolean;
  victimFenced?: string;
  victim?: Record<string, unknown>;
}

/** Whether a gc-pause landed inside its victim's work while another process took the lock over. */
export function effectiveness(history: History, f: Fault): Effect {
  if (f.kind !== 'gc-pause' || f.skipped) return { effective: false };
  const victim = history.ops.get(f.detail.op as string);
  const rel = (t: number | undefined): number | undefined =>
    t === undefined ? undefined : Math.round(t - f.t0);
  const trace = victim && {
    grant: rel(victim.tGrant),
    read: rel(victim.tRead),
    workMs: victim.workMs,
    skipped: rel(victim.skipped),
    fencedSent: rel(victim.fenced?.tSent),
    twin: rel(victim.twin?.t),
    lostAt: rel(victim.end?.lostAt),
    lostReason: victim.end?.lostReason,
    validUntil: rel(victim.end?.validUntilEnd),
    outcome: victim.end?.outcome,
  };
  if (!victim?.tRead || victim.tRead > f.t0 || !victim.twin || victim.twin.t < f.t0)
    return { effective: false, victim: trace };
  const twinT = victim.twin.t;
  const overtaken = [...history.ops.values()].some(
    (o) =>
      o.key === victim.key &&
      o.slot !== victim.slot &&
      o.tRead !== undefined &&
      o.tRead > f.t0 &&
      o.tRead < twinT,
  );
  const victimFenced = victim.fenced
    ? victim.fenced.written
      ? 'accepted (newer holder had not written yet)'
      : 'refused (stale)'
    : 'none';
  return { effective: overtaken, victimFenced, victim: trace };
}

export interface SensitivityStats {
  effectivePauses: number;
  pauses: unknown[];
}

/** `unfencedViolations`: what the lost-updates checker counted on the same history. */
export function checkSensitivity(
  history: History,
  ctx: CheckContext,
  unfencedViolations: number,
): CheckResult<SensitivityStats> {
  const found = new Findings();
  let effectivePauses = 0;
  const pauses: unknown[] = [];
  for (const f of history.faults) {
    if (f.kind !== 'gc-pause' || f.skipped) continue;
    const e = effectiveness(history, f);
    if (e.effective) effectivePauses++;
    pauses.push({
      id: f.id,
      ...f.detail,
      effective: e.effective,
      victimFencedWrite: e.victimFenced,
      victim: e.victim,
    });
  }
  if (effectivePauses > 0 && unfencedViolations === 0) {
    found.add(
      'checker blind: a holder was paused mid-work and overtaken, yet the unfenced twin shows no violation',
      pauses,
    );
  }
  if (ctx.quick && effectivePauses === 0 && ctx.mutex !== false) {
    found.add(
      "quick mode: no GC pause landed inside a holder's work, so the checker was not shown to see violations",
      pauses,
    );
  }
  return { stats: { effectivePauses, pauses }, violations: found.violations };
}
