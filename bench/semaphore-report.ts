/**
 * The semaphore benchmark's figures (bench/semaphore.ts): what one run measured, the median over the
 * runs of each library, the table printed and the targets (reported, never gated, but the correctness
 * checks: at most `permits` holders at once, no failed acquisition of this library, no run lost).
 */
import { kinds, num, table } from './format';
import type { Target } from './report';
import { ACQ_STRIDE, type SemaphoreLib, type SemaphoreResult } from './semaphore-worker';
import { addCounts, median, summarize } from './stats';

export const OURS_SEM: SemaphoreLib = 'nestjs-redis-lock';
export const PEER_SEM: SemaphoreLib = 'redis-semaphore';

/** A worker is starved with no grant in the window, or fewer than this share of the mean. */
export const STARVED_SHARE = 0.25;

/** What a run, and a library over its runs, is reported by. */
interface SemaphoreFigures
  extends Pick<SemaphoreResult, 'maxHolders' | 'failures' | 'failureKinds' | 'releaseErrors' | 'unfinished'> {
  lib: SemaphoreLib;
  /** Grants in the measurement window, per second. */
  throughput: number;
  /** acquire called → holding, ms, for the calls made in the window that succeeded. */
  waitP50: number;
  waitP99: number;
  waitMax: number;
  /** Fewest and most grants in the window of one worker. */
  grantsMin: number;
  grantsMax: number;
  /** Workers with no grant in the window or fewer than STARVED_SHARE of the mean. */
  starved: number;
  /** INFO commandstats calls in the window (harness' own and the holders' counter left out), per grant. */
  executedPerAcquisition: number;
  /** Commands the library's connections sent in the window (counter left out), per grant. */
  sentPerAcquisition: number;
  /** redis-server CPU (INFO cpu) and worker processes' CPU in the window, µs per grant. */
  redisCpuUsPerAcquisition: number;
  clientCpuUsPerAcquisition: number;
}

/** What one run (one library, one round) measured; `sent` and `uncaught` of all its processes. */
export interface SemaphoreRun extends SemaphoreFigures, Pick<SemaphoreResult, 'sent' | 'uncaught'> {
  round: number;
  windowMs: number;
  grants: number;
  /** How many calls the wait percentiles are of. */
  waits: number;
  /** Grants in the window of each worker (all processes, in order). */
  perWorker: number[];
  /** The INFO commandstats calls behind executedPerAcquisition, by command. */
  executed: Record<string, number>;
  loadavg1m: number;
}

export function analyzeSemaphoreRun(
  lib: SemaphoreLib,
  round: number,
  results: SemaphoreResult[],
  workersPerProcess: number,
  window: { from: number; to: number },
  executedRaw: Record<string, number>,
  redisCpuUs: number,
  loadavg1m: number,
): SemaphoreRun {
  const inWindow = (t: number) => t >= window.from && t < window.to;
  const perWorker = new Array<number>(results.length * workersPerProcess).fill(0);
  const waits: number[] = [];
  let grants = 0;
  let counterOps = 0;
  let clientCpuUs = 0;
  const sent: Record<string, number> = {};
  const failureKinds: Record<string, number> = {};
  const releaseErrors: Record<string, number> = {};
  for (const result of results) {
    const a = result.acquisitions;
    for (let i = 0; i < a.length; i += ACQ_STRIDE) {
      const [worker, call, grant] = [a[i], a[i + 1], a[i + 2]];
      if (inWindow(grant)) {
        grants++;
        perWorker[result.process * workersPerProcess + worker]++;
      }
      if (inWindow(call)) waits.push(grant - call);
    }
    counterOps += result.counterOps;
    clientCpuUs += result.cpuUs;
    addCounts(sent, result.sent);
    addCounts(failureKinds, result.failureKinds);
    addCounts(releaseErrors, result.releaseErrors);
  }
  // The holders' counter is the harness' own: its INCR/DECR in the window come off the executed count.
  const executed = { ...executedRaw };
  let executedTotal = -counterOps;
  for (const calls of Object.values(executed)) executedTotal += calls;
  let sentTotal = 0;
  for (const calls of Object.values(sent)) sentTotal += calls;
  const mean = perWorker.reduce((s, n) => s + n, 0) / perWorker.length;
  const wait = summarize(waits);
  return {
    lib,
    round,
    windowMs: window.to - window.from,
    throughput: (grants * 1000) / (window.to - window.from),
    grants,
    waitP50: wait.p50,
    waitP99: wait.p99,
    waitMax: wait.max,
    waits: wait.n,
    perWorker,
    grantsMin: Math.min(...perWorker),
    grantsMax: Math.max(...perWorker),
    starved: perWorker.filter((n) => n === 0 || n < STARVED_SHARE * mean).length,
    executed,
    executedPerAcquisition: executedTotal / grants,
    sentPerAcquisition: sentTotal / grants,
    sent,
    redisCpuUsPerAcquisition: redisCpuUs / grants,
    clientCpuUsPerAcquisition: clientCpuUs / grants,
    maxHolders: Math.max(...results.map((r) => r.maxHolders)),
    failures: results.reduce((s, r) => s + r.failures, 0),
    failureKinds,
    releaseErrors,
    uncaught: results.flatMap((r) => r.uncaught),
    unfinished: results.reduce((s, r) => s + r.unfinished, 0),
    loadavg1m,
  };
}

/** A library over its runs: medians of the rates, waits and costs; the worst run for fairness and holders. */
export interface SemaphoreMetrics extends SemaphoreFigures {
  runs: number;
  /** Uncaught errors in all the runs. */
  uncaught: number;
  errors: string[];
}

export function combineSemaphoreRuns(
  lib: SemaphoreLib,
  runs: SemaphoreRun[],
  errors: string[],
): SemaphoreMetrics {
  const med = (pick: (r: SemaphoreRun) => number) => median(runs.map(pick));
  const sum = (pick: (r: SemaphoreRun) => Record<string, number>) => {
    const out: Record<string, number> = {};
    for (const r of runs) addCounts(out, pick(r));
    return out;
  };
  return {
    lib,
    runs: runs.length,
    throughput: med((r) => r.throughput),
    waitP50: med((r) => r.waitP50),
    waitP99: med((r) => r.waitP99),
    waitMax: med((r) => r.waitMax),
    grantsMin: runs.length ? Math.min(...runs.map((r) => r.grantsMin)) : Number.NaN,
    grantsMax: runs.length ? Math.max(...runs.map((r) => r.grantsMax)) : Number.NaN,
    starved: runs.length ? Math.max(...runs.map((r) => r.starved)) : Number.NaN,
    executedPerAcquisition: med((r) => r.executedPerAcquisition),
    sentPerAcquisition: med((r) => r.sentPerAcquisition),
    redisCpuUsPerAcquisition: med((r) => r.redisCpuUsPerAcquisition),
    clientCpuUsPerAcquisition: med((r) => r.clientCpuUsPerAcquisition),
    maxHolders: runs.length ? Math.max(...runs.map((r) => r.maxHolders)) : Number.NaN,
    failures: runs.reduce((s, r) => s + r.failures, 0),
    failureKinds: sum((r) => r.failureKinds),
    releaseErrors: sum((r) => r.releaseErrors),
    uncaught: runs.reduce((s, r) => s + r.uncaught.length, 0),
    unfinished: runs.reduce((s, r) => s + r.unfinished, 0),
    errors,
  };
}

const ratio = (a: number, b: number): string => {
  const r = a / b;
  return b > 0 && Number.isFinite(r) ? `${num(r, r >= 100 ? 0 : 2)}×` : '-';
};

/** The figures, one column per library, then ours / peer and the target where it has one. */
export function formatSemaphore(metrics: SemaphoreMetrics[], permits: number): string {
  const ours = metrics.find((m) => m.lib === OURS_SEM);
  const peer = metrics.find((m) => m.lib === PEER_SEM);
  type Row = [string, (m: SemaphoreMetrics) => string, string, string];
  /** A figure with its ratio ours / peer. */
  const figure = (
    label: string,
    pick: (m: SemaphoreMetrics) => number,
    digits?: number,
    target = '',
  ): Row => [label, (m) => num(pick(m), digits), ours && peer ? ratio(pick(ours), pick(peer)) : '-', target];
  const rows: Row[] = [
    figure('acq/s', (m) => m.throughput, 1, '≥ 0.95×'),
    figure('wait p50 ms', (m) => m.waitP50),
    figure('wait p99 ms', (m) => m.waitP99),
    figure('wait max ms', (m) => m.waitMax, undefined, '≤ 0.1×'),
    ['grants/worker min..max', (m) => `${m.grantsMin}..${m.grantsMax}`, '', ''],
    ['starved workers', (m) => String(m.starved), '', '0 (ours)'],
    figure('Redis cmds/acq', (m) => m.executedPerAcquisition, 2, '< 1×'),
    figure('sent cmds/acq', (m) => m.sentPerAcquisition, 2),
    figure('Redis CPU µs/acq', (m) => m.redisCpuUsPerAcquisition, 0),
    figure('node CPU µs/acq', (m) => m.clientCpuUsPerAcquisition, 0),
    ['max holders at once', (m) => String(m.maxHolders), '', `≤ ${permits}`],
    ['failed acquisitions', (m) => String(m.failures), '', '0 (ours)'],
    ['runs', (m) => String(m.runs), '', ''],
  ];
  const body = table(
    ['', ...metrics.map((m) => m.lib), 'ours/peer', 'target'],
    rows.map(([label, cell, r, target]) => [label, ...metrics.map(cell), r, target]),
  );
  const notes = metrics.flatMap((m) => {
    const out: string[] = [];
    if (m.failures) out.push(`failures: ${kinds(m.failureKinds)}`);
    if (Object.keys(m.releaseErrors).length) out.push(`release errors: ${kinds(m.releaseErrors)}`);
    if (m.uncaught) out.push(`${m.uncaught} uncaught errors`);
    if (m.unfinished) out.push(`${m.unfinished} calls still open after the drain`);
    if (m.errors.length) out.push(`RUN ERRORS: ${m.errors.join(' | ')}`);
    return out.length ? [`  ${m.lib}: ${out.join('; ')}`] : [];
  });
  return [body, ...notes].join('\n');
}

/** One line per run: the spread behind the medians. */
export function formatSemaphoreRuns(runs: SemaphoreRun[]): string {
  return runs
    .map(
      (r) =>
        `  round ${r.round + 1} ${r.lib.padEnd(17)} ${num(r.throughput, 1)} acq/s, wait p50/p99/max ` +
        `${num(r.waitP50)}/${num(r.waitP99)}/${num(r.waitMax)} ms, grants ${r.grantsMin}..${r.grantsMax}, ` +
        `starved ${r.starved}, Redis cmds/acq ${num(r.executedPerAcquisition, 2)}, holders ≤ ${r.maxHolders}, ` +
        `load ${num(r.loadavg1m, 2)}`,
    )
    .join('\n');
}

export function semaphoreTargets(metrics: SemaphoreMetrics[], permits: number): Target[] {
  const targets: Target[] = [];
  const check = (name: string, pass: boolean, detail: string, correctness = false) =>
    targets.push({ scenario: 'semaphore', name, pass, detail, correctness });
  for (const m of metrics) {
    check(`${m.lib}: runs completed`, m.errors.length === 0 && m.runs > 0, `${m.runs} run(s)`, true);
    if (m.runs > 0)
      check(
        `${m.lib}: at most ${permits} holders at once`,
        m.maxHolders <= permits,
        `max ${m.maxHolders}`,
        true,
      );
  }
  const ours = metrics.find((m) => m.lib === OURS_SEM && m.runs > 0);
  const peer = metrics.find((m) => m.lib === PEER_SEM && m.runs > 0);
  if (!ours) return targets;
  check('no failed acquisition (nestjs-redis-lock)', ours.failures === 0, `${ours.failures}`, true);
  check(
    'no starved worker (nestjs-redis-lock)',
    ours.starved === 0,
    `worst run ${ours.starved}; grants per worker ${ours.grantsMin}..${ours.grantsMax}` +
      (peer ? `; ${peer.lib} ${peer.starved} starved, ${peer.grantsMin}..${peer.grantsMax}` : ''),
  );
  if (!peer) return targets;
  check(
    'throughput ≥ 0.95 × redis-semaphore',
    ours.throughput >= 0.95 * peer.throughput,
    `${num(ours.throughput, 1)}/s vs ${num(peer.throughput, 1)}/s = ${ratio(ours.throughput, peer.throughput)}`,
  );
  check(
    'worst wait ≤ 0.1 × redis-semaphore',
    ours.waitMax <= 0.1 * peer.waitMax,
    `${num(ours.waitMax)} ms vs ${num(peer.waitMax)} ms = ${ratio(ours.waitMax, peer.waitMax)}`,
  );
  check(
    'fewer Redis commands per acquisition',
    ours.executedPerAcquisition < peer.executedPerAcquisition,
    `${num(ours.executedPerAcquisition, 2)} vs ${num(peer.executedPerAcquisition, 2)} = ` +
      `${ratio(ours.executedPerAcquisition, peer.executedPerAcquisition)} (sent ${num(ours.sentPerAcquisition, 2)} vs ` +
      `${num(peer.sentPerAcquisition, 2)})`,
  );
  return targets;
}
