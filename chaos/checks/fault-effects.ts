/**
 * What the faults did (reported, never a violation): each kind's count, how long each stalled the locks
 * it hit (from injection and from healing to the next grant), what holders got across Redis restarts,
 * and which faults were under way when calls failed, by error code.
 */
import { grantsByKey, type History } from '../history';
import type { CheckContext, CheckResult } from './check';

export interface FaultEffectStats {
  faultCounts: Record<string, { injected: number; skipped: number }>;
  stalls: Record<string, { fromInjectMaxMs: number; fromHealMaxMs: number }>;
  longestStall: { ms: number; kind: string; key: string; faultId: number };
  /** The longest stretch in which no call got any lock, whatever the cause, and when it began. */
  longestWithoutGrant: { ms: number; fromS: number };
  restartOutcomes: Record<string, number>;
  errorContext: Record<string, Record<string, number>>;
}

export function checkFaultEffects(history: History, ctx: CheckContext): CheckResult<FaultEffectStats> {
  const all = [...history.ops.values()];
  const granted = all.filter((r) => r.tGrant !== undefined);
  // What the library did to holders across each Redis restart.
  const restartOutcomes: Record<string, number> = {};
  for (const x of history.restarts) {
    for (const r of granted) {
      const end = r.end?.tEnd ?? r.killedAt ?? ctx.now;
      // Granted by the instance that was killed, and still running when it died.
      if ((r.fence as number) / 1000 <= x.wall1 && end > x.t0) {
        const label = `${r.end?.outcome ?? 'killed'}${r.end?.lostReason ? `: ${r.end.lostReason}` : ''}`;
        restartOutcomes[label] = (restartOutcomes[label] ?? 0) + 1;
      }
    }
  }

  // Which faults were under way (or just healed, within a ttl) when calls failed, by error code.
  const faults = history.faults;
  const errorContext: Record<string, Record<string, number>> = {};
  for (const r of all) {
    const end = r.end;
    if (!end || end.outcome === 'ok') continue;
    const during = faults.filter((f) => !f.skipped && f.t0 <= end.tEnd && f.t1 + ctx.ttl >= r.t0);
    const label = during.length > 0 ? [...new Set(during.map((f) => f.kind))].join('+') : 'no fault';
    errorContext[end.outcome] ??= {};
    errorContext[end.outcome][label] = (errorContext[end.outcome][label] ?? 0) + 1;
  }

  // Counts, and stalls: fault -> next grant on the keys it hit.
  const faultCounts: Record<string, { injected: number; skipped: number }> = {};
  const stalls: Record<string, { fromInjectMaxMs: number; fromHealMaxMs: number }> = {};
  let longestStall = { ms: 0, kind: '', key: '', faultId: 0 };
  const grantTimes = new Map(
    [...grantsByKey(history, 'all')].map(([k, list]) => [k, list.map((r) => r.tGrant as number)]),
  );
  const nextGrant = (key: string, t: number): number | undefined => grantTimes.get(key)?.find((g) => g >= t);
  for (const f of faults) {
    faultCounts[f.kind] ??= { injected: 0, skipped: 0 };
    const c = faultCounts[f.kind];
    if (f.skipped) {
      c.skipped++;
      continue;
    }
    c.injected++;
    stalls[f.kind] ??= { fromInjectMaxMs: 0, fromHealMaxMs: 0 };
    const s = stalls[f.kind];
    for (const key of f.keys ?? ctx.keys) {
      const g0 = nextGrant(key, f.t0);
      const g1 = nextGrant(key, f.t1);
      if (g0 !== undefined) {
        s.fromInjectMaxMs = Math.max(s.fromInjectMaxMs, Math.round(g0 - f.t0));
        if (g0 - f.t0 > longestStall.ms)
          longestStall = { ms: Math.round(g0 - f.t0), kind: f.kind, key, faultId: f.id };
      }
      if (g1 !== undefined) s.fromHealMaxMs = Math.max(s.fromHealMaxMs, Math.round(g1 - f.t1));
    }
  }
  // The longest time no call got a lock: what a failover that leaves clients on the wrong server costs.
  const grants = granted.map((r) => r.tGrant as number).sort((a, b) => a - b);
  // Its start in seconds from the first call, as the report's timeline counts.
  const origin = all.reduce((first, r) => Math.min(first, r.t0), Number.POSITIVE_INFINITY);
  let longestWithoutGrant = { ms: 0, fromS: 0 };
  for (let i = 1; i < grants.length; i++) {
    const gap = grants[i] - grants[i - 1];
    if (gap > longestWithoutGrant.ms) {
      longestWithoutGrant = {
        ms: Math.round(gap),
        fromS: Number(((grants[i - 1] - origin) / 1000).toFixed(1)),
      };
    }
  }
  return {
    stats: { faultCounts, stalls, longestStall, longestWithoutGrant, restartOutcomes, errorContext },
    violations: [],
  };
}
