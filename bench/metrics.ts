/**
 * What the benchmark reports, per scenario and library, and how the rounds of one library are combined:
 * counts are summed (throughput = all grants in all windows / all window time), samples are pooled,
 * per-worker fairness takes the worst round.
 */
import type { LibName } from './ipc';
import type { OpenLoopWindow, RequestOutcome } from './open-loop';
import { addCounts, cdf, type RunAnalysis, type Summary, summarize } from './stats';

export interface RoundOutcome {
  analysis?: RunAnalysis;
  /** INFO commandstats delta over the measurement window, harness' own commands left out. */
  executed?: Record<string, number>;
  /** The same over the whole run. */
  executedTotal?: Record<string, number>;
  /** CPU the redis-server used in the measurement window, µs. */
  redisCpuUs?: number;
  /** Sum of the counters the critical sections incremented. */
  counted?: number;
  /** Scenario 6: units by which the balances differ from the replayed transfers, and the drift of their
   * sum (see transfer.ts checkBalances); `lost` then replaces critical sections minus `counted`. */
  lost?: number;
  sumDrift?: number;
  /** Open loop: what became of every request, and the window it is judged in. */
  requests?: { outcomes: RequestOutcome[]; window: OpenLoopWindow };
  loadavg: number;
  error?: string;
}

export interface LoadMetrics {
  scenario: number;
  lib: LibName;
  workers: number;
  rounds: { throughput: number; minGrants: number; maxGrants: number; loadavg1m: number; error?: string }[];
  /** Acquisitions per second in the measurement windows. */
  throughput: number;
  /** Microseconds per acquire + release (meaningful uncontended). */
  usPerAcquisition: number;
  /** F = workers / throughput: the mean time around the queue, in ms. */
  fairShareMs: number;
  wait: Summary;
  waitCdf: { q: number; v: number }[];
  /** Worst round: fewest and most grants of one worker, and their ratio. */
  grantsMin: number;
  grantsMax: number;
  grantsRatio: number;
  acquisitions: number;
  failures: number;
  failureRate: number;
  failureKinds: Record<string, number>;
  releaseErrors: Record<string, number>;
  uncaught: number;
  uncaughtSamples: string[];
  /** Commands the library's connections sent in the measurement windows, per acquisition granted in them
   * (critical section excluded; failed attempts' commands included). */
  sentPerAcquisition: number;
  sentBreakdown: Record<string, number>;
  /** Commands Redis executed in the windows (script internals included), per acquisition granted in them,
   * critical section excluded. */
  executedPerAcquisition: number;
  executedBreakdown: Record<string, number>;
  /** Whole runs (start-up of connections, warm-up and drain included), per acquisition. */
  sentPerAcquisitionWholeRun: number;
  /** CPU per acquisition in the windows, µs (critical section's own work included, the same for all):
   * all worker processes, and the redis-server. On 2 cores this is what caps throughput in scenario 4. */
  clientCpuUsPerAcquisition: number;
  redisCpuUsPerAcquisition: number;
  /** Critical sections whose increment was lost (counter sum below the number of critical sections);
   * scenario 6: units by which the balances differ from the transfers made. */
  lostUpdates: number;
  /** Scenario 6: sum of the balances minus what they started with, over all rounds (must be 0); else null. */
  sumDrift: number | null;
  overlaps: number;
  handoff: Summary | null;
  /** Share of the hand-offs that went to a waiter in the releasing process, and the hand-off latency of
   * those and of the ones that crossed to another process. */
  handoffSameShare: number;
  handoffSame: Summary | null;
  handoffCross: Summary | null;
  /** grant → release() called: the critical section's time as its process ran it; apart, the holds that
   * began with a hand-off within one process and those that began with one from another process. */
  hold: Summary | null;
  holdAfterSame: Summary | null;
  holdAfterCross: Summary | null;
  /** A run with a slow process (scenario 9): the healthy processes' figures apart from the slow one's. */
  groups?: { healthy: GroupMetrics; slow: GroupMetrics };
  handoffPush: Summary | null;
  handoffWake: Summary | null;
  connectionsPerProcess: number;
  errors: string[];
}

/** Some of a run's processes. */
export interface GroupMetrics {
  processes: number[];
  /** Their grants in the windows per second. */
  throughput: number;
  wait: Summary;
}

/** The hand-off floor of the machine (see ProbeSpec): no lock library involved. */
export interface FloorMetrics {
  gapMs: number;
  /** PUBLISH script sent → message read by the other process. */
  push: Summary;
  /** The same script's reply, read by the sender. */
  reply: Summary;
  lost: number;
  errors: string[];
}

export interface ManyMetrics {
  scenario: 5;
  lib: LibName;
  variant: 'one-key' | 'many-keys';
  waiters: number;
  keys: number;
  connections: number;
  heapPerWaiter: number;
  harnessHeapPerWaiter: number;
  netHeapPerWaiter: number;
  queued: number | null;
  idleCommandsPerWaiterPerS: number;
  sentPerWaiter: number;
  /** CPU per waiter (each granted once), µs: the waiters' process from their first call to the end of
   * the drain, and redis-server over the whole run (the holder's few commands included). */
  clientCpuUsPerWaiter: number;
  redisCpuUsPerWaiter: number;
  drainMs: number;
  afterRelease: Summary;
  granted: number;
  failures: number;
  failureKinds: Record<string, number>;
  uncaught: number;
  errors: string[];
}

function perUnit(counts: Record<string, number>, units: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(counts).sort((a, b) => b[1] - a[1])) out[k] = units ? v / units : 0;
  return out;
}

const total = (counts: Record<string, number>): number => Object.values(counts).reduce((a, b) => a + b, 0);

export function combineRounds(
  scenario: number,
  lib: LibName,
  workers: number,
  outcomes: RoundOutcome[],
  /** The process that was slowed down, if one was: its figures are reported apart. */
  slowProcess?: number,
): LoadMetrics {
  let grants = 0;
  let windowMs = 0;
  let acquisitions = 0;
  let failures = 0;
  let lost = 0;
  let sumDrift: number | null = null;
  let overlaps = 0;
  let connections = 0;
  let processes = 0;
  let clientCpuUs = 0;
  let redisCpuUs = 0;
  const waits: number[] = [];
  const handoffs: number[] = [];
  const same: number[] = [];
  const cross: number[] = [];
  const holds: number[] = [];
  const holdsAfterSame: number[] = [];
  const holdsAfterCross: number[] = [];
  const group = { healthy: { grants: 0, waits: [] as number[] }, slow: { grants: 0, waits: [] as number[] } };
  let processCount = 0;
  const pushes: number[] = [];
  const wakes: number[] = [];
  const sent: Record<string, number> = {};
  const sentTotal: Record<string, number> = {};
  const executed: Record<string, number> = {};
  const failureKinds: Record<string, number> = {};
  const releaseErrors: Record<string, number> = {};
  const uncaught: string[] = [];
  const errors: string[] = [];
  const rounds: LoadMetrics['rounds'] = [];
  let grantsMin = Number.POSITIVE_INFINITY;
  let grantsMax = 0;
  let grantsRatio = 0;
  for (const outcome of outcomes) {
    const a = outcome.analysis;
    if (!a || outcome.error) {
      errors.push(outcome.error ?? 'no result');
      rounds.push({
        throughput: 0,
        minGrants: 0,
        maxGrants: 0,
        loadavg1m: outcome.loadavg,
        error: outcome.error,
      });
      continue;
    }
    grants += a.grantsInWindow;
    windowMs += a.windowMs;
    acquisitions += a.successes;
    failures += a.failures;
    // Without a replay (scenarios 1-4), every critical section must show in the counters' sum.
    lost += outcome.lost ?? a.criticalSections - (outcome.counted ?? 0);
    if (outcome.sumDrift !== undefined) sumDrift = (sumDrift ?? 0) + Math.abs(outcome.sumDrift);
    overlaps += a.overlaps;
    connections += a.connections;
    processes += a.processes;
    clientCpuUs += a.clientCpuUs;
    redisCpuUs += outcome.redisCpuUs ?? 0;
    for (const w of a.waits) waits.push(w);
    for (const h of a.handoffs) handoffs.push(h);
    for (const h of a.handoffsSame) same.push(h);
    for (const h of a.handoffsCross) cross.push(h);
    for (const h of a.holds) holds.push(h);
    for (const h of a.holdsAfterSame) holdsAfterSame.push(h);
    for (const h of a.holdsAfterCross) holdsAfterCross.push(h);
    processCount = a.processes;
    for (let p = 0; p < a.processes; p++) {
      const into = p === slowProcess ? group.slow : group.healthy;
      into.grants += a.grantsByProcess[p];
      for (const w of a.waitsByProcess[p]) into.waits.push(w);
    }
    for (const h of a.handoffPush) pushes.push(h);
    for (const h of a.handoffWake) wakes.push(h);
    addCounts(sent, a.sent);
    addCounts(sentTotal, a.sentTotal);
    const ex = { ...(outcome.executed ?? {}) };
    // The critical section's GET and SET are counted at the client; take them out of Redis' totals.
    if (ex.get !== undefined) ex.get -= a.dataGets;
    if (ex.set !== undefined) ex.set -= a.dataSets;
    for (const k of Object.keys(ex)) if (ex[k] <= 0) delete ex[k];
    addCounts(executed, ex);
    addCounts(failureKinds, a.failureKinds);
    addCounts(releaseErrors, a.releaseErrors);
    uncaught.push(...a.uncaught);
    const min = Math.min(...a.perWorker);
    const max = Math.max(...a.perWorker);
    grantsMin = Math.min(grantsMin, min);
    grantsMax = Math.max(grantsMax, max);
    grantsRatio = Math.max(grantsRatio, min > 0 ? max / min : Number.POSITIVE_INFINITY);
    rounds.push({
      throughput: a.windowMs ? (a.grantsInWindow * 1000) / a.windowMs : 0,
      minGrants: min,
      maxGrants: max,
      loadavg1m: outcome.loadavg,
    });
  }
  const throughput = windowMs ? (grants * 1000) / windowMs : 0;
  const groupOf = (g: { grants: number; waits: number[] }, processes: number[]): GroupMetrics => ({
    processes,
    throughput: windowMs ? (g.grants * 1000) / windowMs : 0,
    wait: summarize(g.waits),
  });
  const all = Array.from({ length: processCount }, (_, p) => p);
  const groups =
    slowProcess === undefined
      ? undefined
      : {
          healthy: groupOf(
            group.healthy,
            all.filter((p) => p !== slowProcess),
          ),
          slow: groupOf(group.slow, [slowProcess]),
        };
  return {
    scenario,
    lib,
    workers,
    rounds,
    throughput,
    usPerAcquisition: throughput ? 1e6 / throughput : Number.NaN,
    fairShareMs: throughput ? (workers * 1000) / throughput : Number.NaN,
    wait: summarize(waits),
    waitCdf: cdf(waits),
    grantsMin: Number.isFinite(grantsMin) ? grantsMin : 0,
    grantsMax,
    grantsRatio,
    acquisitions,
    failures,
    failureRate: acquisitions + failures ? failures / (acquisitions + failures) : 0,
    failureKinds,
    releaseErrors,
    uncaught: uncaught.length,
    uncaughtSamples: [...new Set(uncaught)].slice(0, 5),
    // No grant in the windows while commands were sent (a peer stuck retrying): infinitely many per grant.
    sentPerAcquisition: grants
      ? total(sent) / grants
      : total(sent) > 0
        ? Number.POSITIVE_INFINITY
        : Number.NaN,
    sentBreakdown: perUnit(sent, grants),
    executedPerAcquisition: grants ? total(executed) / grants : Number.NaN,
    executedBreakdown: perUnit(executed, grants),
    sentPerAcquisitionWholeRun: acquisitions ? total(sentTotal) / acquisitions : Number.NaN,
    clientCpuUsPerAcquisition: grants ? clientCpuUs / grants : Number.NaN,
    redisCpuUsPerAcquisition: grants ? redisCpuUs / grants : Number.NaN,
    lostUpdates: lost,
    sumDrift,
    overlaps,
    handoff: handoffs.length ? summarize(handoffs) : null,
    handoffSameShare: handoffs.length ? same.length / handoffs.length : Number.NaN,
    handoffSame: same.length ? summarize(same) : null,
    handoffCross: cross.length ? summarize(cross) : null,
    hold: holds.length ? summarize(holds) : null,
    holdAfterSame: holdsAfterSame.length ? summarize(holdsAfterSame) : null,
    holdAfterCross: holdsAfterCross.length ? summarize(holdsAfterCross) : null,
    groups,
    handoffPush: pushes.length ? summarize(pushes) : null,
    handoffWake: wakes.length ? summarize(wakes) : null,
    connectionsPerProcess: processes ? connections / processes : 0,
    errors,
  };
}
