/**
 * What memory pressure did to the guarantees (reported, never a violation by itself): how much the
 * faults wrote and how many keys the servers evicted, which lock keys among them; the leases lost while a
 * memory-pressure fault was under way or within ttl + claim window of its heal (a renewal finds the key
 * gone only at its next turn), by the reason their LockLostError gave, and the releases that found the
 * lock no longer theirs (the loss noticed only then); and the unfenced twin's stale
 * writes and repeated values sent in those spans. Another fault may fall inside a span too: the reasons
 * tell the losses apart. Fenced writes and overlaps are judged for the whole run by their own checkers
 * (an eviction excuses an overlap only as narrowly as validity-windows.ts says).
 */
import type { Fault } from '../faults/kinds';
import type { History, OpRec } from '../history';
import type { CheckContext, CheckResult } from './check';
import { repeatedTwinWriters, staleTwinWrites } from './lost-updates';

export interface MemoryPressureStats {
  injected: number;
  skipped: number;
  fillerKb: number;
  /** INFO stats evicted_keys, summed over the faults: filler and lock keys. */
  evictedKeys: number;
  lockKeysEvicted: { owner: number; queue: number; fence: number; holders: number };
  /** LOCK_LOST calls whose lease was lost inside a span (see above). */
  leasesLost: number;
  /** The same, by LockLostError reason (its message where the library gave none). */
  lostByReason: Record<string, number>;
  /** Calls that ended in a span with LOCK_NOT_HELD: the release found the lock no longer theirs. */
  notHeldAtRelease: number;
  unfencedViolations: number;
  lostUpdatesReported: number;
}

export function checkMemoryPressure(history: History, ctx: CheckContext): CheckResult<MemoryPressureStats> {
  const faults = history.faults.filter((f) => f.kind === 'memory-pressure');
  const hit = faults.filter((f) => !f.skipped);
  const stats: MemoryPressureStats = {
    injected: hit.length,
    skipped: faults.length - hit.length,
    fillerKb: 0,
    evictedKeys: 0,
    lockKeysEvicted: { owner: 0, queue: 0, fence: 0, holders: 0 },
    leasesLost: 0,
    lostByReason: {},
    notHeldAtRelease: 0,
    unfencedViolations: 0,
    lostUpdatesReported: 0,
  };
  for (const f of hit) {
    stats.fillerKb += Number((f.detail.filler as { kb?: number } | undefined)?.kb ?? 0);
    stats.evictedKeys += Number(f.detail.evictedKeys ?? 0);
    for (const e of f.evictions ?? []) stats.lockKeysEvicted[e.part]++;
  }
  const inSpan = (t: number | undefined): boolean => t !== undefined && hit.some((f) => within(f, t, ctx));
  for (const r of history.ops.values()) {
    const end = r.end;
    if (end?.outcome === 'LOCK_NOT_HELD' && inSpan(end.tEnd)) stats.notHeldAtRelease++;
    if (end?.outcome !== 'LOCK_LOST' || !inSpan(end.lostAt ?? end.tEnd)) continue;
    stats.leasesLost++;
    const reason = end.lostCode ?? end.lostReason ?? 'unknown';
    stats.lostByReason[reason] = (stats.lostByReason[reason] ?? 0) + 1;
  }
  const twinAt = (op: OpRec | undefined): number | undefined => op?.twin?.t;
  stats.unfencedViolations = staleTwinWrites(history).filter((w) =>
    inSpan(twinAt(history.ops.get(w.staleWriter))),
  ).length;
  stats.lostUpdatesReported = repeatedTwinWriters(history).filter((r) => inSpan(twinAt(r))).length;
  return { stats, violations: [] };
}

/** From the fault's injection to ttl + claim window after its heal. */
function within(f: Fault, t: number, ctx: CheckContext): boolean {
  return t >= f.t0 && t <= f.t1 + ctx.ttl + ctx.claimWindow;
}
