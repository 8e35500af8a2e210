/**
 * A fault run's result: the JSON written to chaos/results/ (configuration, timings, operations, faults,
 * every check's figures, the violations, and the calls) and the summary printed at the end.
 */
import type { Verdicts } from './checks';
import type { MemoryPressureStats } from './checks/memory-pressure';
import type { RunSettings } from './config';
import type { Fault } from './faults/kinds';
import type { History, Violation } from './history';
import { printShared, type SharedFigures, sharedFigures } from './shared-figures';

export interface RunFacts {
  now: number;
  started: number;
  tReady: number;
  tNemesis: number;
  tNemesisEnd: number;
  drainMs: number;
  probeMax: number;
  hygiene: Record<string, unknown>;
  workerRestarts: number;
  crashes: unknown[];
  /** Workers that had not exited by themselves 5 s after their close, and were SIGKILLed. */
  workersKilledAtClose: number;
  workerLeftovers: unknown[];
  proxy: unknown;
  notes: string[];
}

export function buildResult(
  settings: RunSettings,
  history: History,
  verdicts: Verdicts,
  violations: Violation[],
  facts: RunFacts,
): Record<string, unknown> {
  const { quick, seed, cfg, reproduce, topology } = settings;
  const { now } = facts;
  const all = [...history.ops.values()];
  const faults: Fault[] = history.faults;
  const { fenced, lostUpdates, windows, hangs, effects, sensitivity, memoryPressure } = verdicts;
  return {
    seed,
    mode: quick ? 'quick' : 'full',
    topology,
    sentinelDownAfterMs: topology === 'sentinel' ? settings.sentinelDownAfterMs : undefined,
    reproduce,
    ok: violations.length === 0,
    config: cfg,
    timings: {
      totalS: Number(((now - facts.started) / 1000).toFixed(1)),
      startupS: Number(((facts.tReady - facts.started) / 1000).toFixed(1)),
      nemesisS: Number(((facts.tNemesisEnd - facts.tNemesis) / 1000).toFixed(1)),
      drainMs: Math.round(facts.drainMs),
      probeMaxMs: Math.round(facts.probeMax),
    },
    operations: {
      calls: all.length,
      granted: all.filter((r) => r.tGrant !== undefined).length,
      outcomes: verdicts.errors.outcomes,
      lostReasons: verdicts.errors.lostReasons,
      lostByReason: verdicts.errors.lostCodes,
      fencedAccepted: history.fencedAccepts.length,
      fencedAcceptedReported: fenced.fencedAcceptedReported,
      fencedRefusedStale: fenced.fencedRefused,
      writesSkippedAfterLoss: all.filter((r) => r.skipped !== undefined).length, // sent anyway (see worker)
      twinWrites: history.twinSets.length,
      workerRestarts: facts.workerRestarts,
    },
    faults: { counts: effects.faultCounts, total: faults.filter((f) => !f.skipped).length, list: faults },
    failovers: failoversOf(faults),
    checks: {
      fencedViolations: fenced.fencedViolations,
      fenceOrderViolations: verdicts.fenceOrderViolations,
      unfencedViolations: lostUpdates.unfencedViolations,
      unfencedExamples: lostUpdates.unfencedExamples,
      lostUpdatesReported: lostUpdates.lostUpdatesReported,
      effectivePauses: sensitivity.effectivePauses,
      pauses: sensitivity.pauses,
      overlaps: windows.overlaps.length,
      overlapsAcrossRestart: windows.restartOverlaps.length,
      overlapsByRestartFault: windows.excusedByFault,
      overlapsByCause: windows.excusedByCause,
      undeterminedKilledHolder: windows.undetermined.length,
      undetermined: windows.undetermined.slice(0, 20),
      restartOverlaps: windows.restartOverlaps.slice(0, 20),
      holdersBelievingPastValidity: windows.beliefOverruns,
      frozenGrants: windows.frozenGrants.length,
      frozenGrantExamples: windows.frozenGrants.slice(0, 5),
      closestHandoffMs: Number.isFinite(windows.closest.gapMs)
        ? Number(windows.closest.gapMs.toFixed(3))
        : null,
      closestHandoff: windows.closest.pair,
      unknownWindows: windows.unknownWindows,
      slowestCallMs: Math.round(hangs.slowestCall),
      callBoundMs: hangs.callBound,
      calmHandoffMaxMs: Math.round(hangs.calmHandoffMax),
      handoffBoundMs: hangs.handoffBound,
      longestStall: effects.longestStall,
      longestWithoutGrant: effects.longestWithoutGrant,
      stalls: effects.stalls,
      restartOutcomes: effects.restartOutcomes,
      errorContext: effects.errorContext,
      // What the guarantees became under memory pressure: fenced writes are checked run-wide (the
      // fault never touches the resource server), the rest inside the faults' spans.
      memoryPressure: {
        ...memoryPressure,
        fencedViolations: fenced.fencedViolations,
        overlapsExcusedByEviction: windows.excusedByCause.eviction ?? 0,
      },
      semaphore: sharedFigures(
        settings.cfg.semaphore,
        verdicts.semaphore,
        verdicts.hangs.semaphoreHandoffMax,
      ),
      readWrite: sharedFigures(
        settings.cfg.readWrite,
        verdicts.readWrite,
        verdicts.hangs.readWriteHandoffMax,
      ),
      unhandled: history.unhandled.length,
      crashes: facts.crashes,
      workersKilledAtClose: facts.workersKilledAtClose,
      hygiene: facts.hygiene,
      workerLeftovers: facts.workerLeftovers,
    },
    notes: facts.notes,
    violations,
    restarts: history.restarts,
    pauses: history.pauses,
    // Every call in quick mode; the failed ones (first 300) in full mode.
    calls: (quick ? all : all.filter((r) => r.end?.outcome !== 'ok').slice(0, 300)).map((r) => ({
      ...r,
      end: r.end && { ...r.end, message: undefined },
    })),
    proxy: facts.proxy,
  };
}

/** The Sentinel failovers kill-master caused: how long each took, kill to promotion, and to the rejoin. */
function failoversOf(faults: readonly Fault[]): { count: number; failoverMs: number[]; rejoinMs: number[] } {
  const done = faults.filter((f) => f.kind === 'kill-master' && typeof f.detail.failoverMs === 'number');
  return {
    count: done.length,
    failoverMs: done.map((f) => f.detail.failoverMs as number),
    rejoinMs: done.map((f) => f.detail.rejoinMs as number),
  };
}

interface Summary {
  seed: number;
  config: { agents: number };
  mode: string;
  topology: string;
  sentinelDownAfterMs?: number;
  reproduce: string;
  ok: boolean;
  timings: Record<string, number>;
  operations: Record<string, unknown>;
  faults: { counts: Record<string, { injected: number; skipped: number }>; total: number };
  failovers: ReturnType<typeof failoversOf>;
  notes: string[];
  checks: Record<string, unknown> & {
    longestStall: { ms: number; kind: string; key: string };
    longestWithoutGrant: { ms: number; fromS: number };
    stalls: Record<string, { fromInjectMaxMs: number; fromHealMaxMs: number }>;
    memoryPressure: MemoryPressureStats & { fencedViolations: number; overlapsExcusedByEviction: number };
    semaphore: SharedFigures | null;
    readWrite: SharedFigures | null;
  };
  violations: Violation[];
}

export function printSummary(result: Record<string, unknown>, file: string): void {
  const r = result as unknown as Summary;
  const o = r.operations;
  const c = r.checks;
  const line = (label: string, value: unknown): void =>
    console.log(`  ${label.padEnd(34)} ${typeof value === 'string' ? value : JSON.stringify(value)}`);
  // The mutex workload's figures, left out of a run without it (a semaphore's have their own section).
  const mutexLine = (label: string, value: unknown): void => {
    if (r.config.agents > 0) line(label, value);
  };
  const downAfter = r.sentinelDownAfterMs === undefined ? '' : `, down-after ${r.sentinelDownAfterMs} ms`;
  console.log(`\nchaos summary (${r.mode} run, topology ${r.topology}${downAfter})`);
  line('time', `${r.timings.totalS} s (nemesis ${r.timings.nemesisS} s, drain ${r.timings.drainMs} ms)`);
  line('calls / granted', `${o.calls} / ${o.granted}`);
  line('outcomes', o.outcomes);
  line('lost reasons', o.lostReasons);
  line('LOCK_LOST by reason', o.lostByReason);
  mutexLine('fenced writes accepted / refused', `${o.fencedAccepted} / ${o.fencedRefusedStale}`);
  mutexLine('writes after the signal aborted', o.writesSkippedAfterLoss);
  mutexLine('twin writes', o.twinWrites);
  line('worker restarts', o.workerRestarts);
  console.log(`  faults (${r.faults.total} injected):`);
  for (const [kind, n] of Object.entries(r.faults.counts)) {
    const s = c.stalls[kind];
    console.log(
      `    ${kind.padEnd(20)} ${String(n.injected).padStart(4)}${n.skipped ? ` (+${n.skipped} skipped)` : ''}` +
        (s ? `   stall max ${s.fromInjectMaxMs} ms from injection, ${s.fromHealMaxMs} ms from heal` : ''),
    );
  }
  mutexLine('FENCED violations (must be 0)', c.fencedViolations);
  mutexLine(
    'unfenced violations (must be > 0)',
    `${c.unfencedViolations} (lost updates reported by workers: ${c.lostUpdatesReported}; effective pauses: ${c.effectivePauses})`,
  );
  mutexLine('overlaps (must be 0)', c.overlaps);
  if (r.topology === 'sentinel') {
    // Nothing is excused: with every grant acknowledged by the replica, a failover loses none.
    mutexLine('overlaps excused', `${c.overlapsAcrossRestart} (none allowed: a failover explains nothing)`);
    const { count, failoverMs, rejoinMs } = r.failovers;
    line(
      'failovers (kill to promotion, ms)',
      count > 0
        ? `${count}: ${failoverMs.join(', ')} (old master back as replica after ${rejoinMs.join(', ')})`
        : 0,
    );
  } else if (r.topology === 'single')
    mutexLine(
      'overlaps after state was lost',
      `${c.overlapsAcrossRestart} ${JSON.stringify(c.overlapsByCause)} (allowed: restart or eviction)`,
    );
  else
    mutexLine(
      'overlaps after a node lost state',
      `${c.overlapsAcrossRestart} ${JSON.stringify(c.overlapsByRestartFault)} ${JSON.stringify(c.overlapsByCause)}` +
        ' (allowed: early restart, key deletion or eviction)',
    );
  const m = c.memoryPressure;
  if (m.injected > 0) {
    console.log(
      `  under memory pressure (${m.injected} faults; spans: injection to heal + ttl + claim window):`,
    );
    line('  filler written / keys evicted', `${m.fillerKb} KB / ${m.evictedKeys}`);
    line('  lock keys evicted', m.lockKeysEvicted);
    line('  leases lost (LOCK_LOST), by reason', `${m.leasesLost} ${JSON.stringify(m.lostByReason)}`);
    line('  releases of a lost lock (NOT_HELD)', m.notHeldAtRelease);
    line('  fenced violations (run-wide)', m.fencedViolations);
    line(
      '  unfenced violations / lost updates',
      `${m.unfencedViolations} / ${m.lostUpdatesReported} (stale twin writes sent in the spans)`,
    );
    line('  overlaps excused by eviction', m.overlapsExcusedByEviction);
  }
  const sem = c.semaphore;
  if (sem) {
    console.log(`  semaphores (${sem.keys.length} keys, ${sem.permits} permits each):`);
    line('  grants (abandoned leases)', `${sem.grants} (${sem.abandoned})`);
    line(`  more than ${sem.permits} holders (must be 0)`, sem.overBound);
    printShared(line, r.topology, sem, c.handoffBoundMs);
  }
  const rw = c.readWrite;
  if (rw) {
    console.log(
      `  read-write locks (${rw.keys.length} keys, ${(rw.writeShare ?? 0) * 100}% of calls write):`,
    );
    line('  reads / writes (abandoned)', `${rw.grants - rw.writes} / ${rw.writes} (${rw.abandoned})`);
    line('  writer not alone (must be 0)', rw.overBound);
    printShared(line, r.topology, rw, c.handoffBoundMs);
  }
  mutexLine('undetermined (holder SIGKILLed)', c.undeterminedKilledHolder);
  mutexLine('holders believing past validity', c.holdersBelievingPastValidity);
  mutexLine('grants past validity (frozen)', c.frozenGrants);
  mutexLine('closest hand-off (validity gap)', `${c.closestHandoffMs} ms`);
  line('restart: what holders got', c.restartOutcomes);
  line('errors by fault under way', c.errorContext);
  line(
    'longest stall after a fault',
    `${c.longestStall.ms} ms (${c.longestStall.kind} on ${c.longestStall.key})`,
  );
  line(
    'longest time without any grant',
    `${c.longestWithoutGrant.ms} ms (from ${c.longestWithoutGrant.fromS} s)`,
  );
  line('slowest call (pauses excluded)', `${c.slowestCallMs} ms (bound ${c.callBoundMs})`);
  mutexLine('max hand-off after nemesis stop', `${c.calmHandoffMaxMs} ms (bound ${c.handoffBoundMs})`);
  line('unhandled rejections', c.unhandled);
  line('workers SIGKILLed at close', `${c.workersKilledAtClose} (must be 0: each exits by itself)`);
  for (const note of r.notes) line('note', note);
  line('key hygiene', c.hygiene);
  console.log(`  result: ${file}`);
  if (r.ok) console.log(`\nPASS (seed ${r.seed})`);
  else {
    console.log(`\nFAIL: ${r.violations.length} violation(s); reproduce with: ${r.reproduce}`);
    for (const v of r.violations.slice(0, 20))
      console.log(`  - ${v.check}: ${JSON.stringify(v.detail).slice(0, 600)}`);
  }
}
