/**
 * The lock-kind benchmarks' figures (bench/semaphore.ts, bench/read-write.ts): what one run of one
 * variant measured, overall and per side (a semaphore's holders; a read-write load's writes and reads),
 * the median over a variant's runs, the table's shared rows and the correctness targets both gate.
 */

import { kinds, num, table } from './format';
import { ACQ, ACQ_STRIDE, type KindResult } from './kind-worker';
import type { RedisWindow } from './load-run';
import type { Target } from './report';
import { addCounts, median, summarize } from './stats';

/** A worker is starved with no grant in the window, or fewer than this share of the mean. */
export const STARVED_SHARE = 0.25;

/** acquire called → holding, ms, for the calls made in the window that succeeded. */
interface Waits {
  waitP50: number;
  waitP99: number;
  waitMax: number;
}

/** One side's figures: a run's, or over the runs the medians (and the worst run's most at once). */
export interface SideFigures extends Waits {
  name: string;
  /** Grants of this side in the measurement window, per second. */
  throughput: number;
  /** Most holders of this side at once (largest INCR reply of its counter). */
  mostAtOnce: number;
}

/** What a run, and a variant over its runs, is reported by. */
interface KindFigures
  extends Waits,
    Pick<KindResult, 'violations' | 'failures' | 'failureKinds' | 'releaseErrors' | 'unfinished'> {
  variant: string;
  /** Grants in the measurement window, per second. */
  throughput: number;
  sides: SideFigures[];
  /** Fewest and most grants in the window of one worker. */
  grantsMin: number;
  grantsMax: number;
  /** Workers with no grant in the window or fewer than STARVED_SHARE of the mean. */
  starved: number;
  /** INFO commandstats calls in the window (harness' own and the counters' left out), per grant. */
  executedPerAcquisition: number;
  /** Commands the library's connections sent in the window (counters left out), per grant. */
  sentPerAcquisition: number;
  /** redis-server CPU (INFO cpu) and worker processes' CPU in the window, µs per grant. */
  redisCpuUsPerAcquisition: number;
  clientCpuUsPerAcquisition: number;
}

/** What one run (one variant, one round) measured; `sent` and `uncaught` of all its processes. */
export interface KindRun extends KindFigures, Pick<KindResult, 'sent' | 'uncaught'> {
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

const waitsOf = (values: number[]): Waits & { n: number } => {
  const s = summarize(values);
  return { waitP50: s.p50, waitP99: s.p99, waitMax: s.max, n: s.n };
};

export function analyzeKindRun(
  variant: string,
  round: number,
  sideNames: readonly string[],
  results: KindResult[],
  workersPerProcess: number,
  window: { from: number; to: number },
  redis: RedisWindow,
  loadavg1m: number,
): KindRun {
  const windowMs = window.to - window.from;
  const inWindow = (t: number) => t >= window.from && t < window.to;
  const perWorker = new Array<number>(results.length * workersPerProcess).fill(0);
  const waits: number[] = [];
  const sideWaits = sideNames.map((): number[] => []);
  const sideGrants = sideNames.map(() => 0);
  let grants = 0;
  let counterOps = 0;
  let clientCpuUs = 0;
  const sent: Record<string, number> = {};
  const failureKinds: Record<string, number> = {};
  const releaseErrors: Record<string, number> = {};
  for (const result of results) {
    const a = result.acquisitions;
    for (let i = 0; i < a.length; i += ACQ_STRIDE) {
      const [side, call, grant] = [a[i + ACQ.side], a[i + ACQ.call], a[i + ACQ.grant]];
      if (inWindow(grant)) {
        grants++;
        sideGrants[side]++;
        perWorker[result.process * workersPerProcess + a[i + ACQ.worker]]++;
      }
      if (inWindow(call)) {
        waits.push(grant - call);
        sideWaits[side].push(grant - call);
      }
    }
    counterOps += result.counterOps;
    clientCpuUs += result.cpuUs;
    addCounts(sent, result.sent);
    addCounts(failureKinds, result.failureKinds);
    addCounts(releaseErrors, result.releaseErrors);
  }
  // The counters are the harness' own: their commands in the window come off the executed count.
  let executedTotal = -counterOps;
  for (const calls of Object.values(redis.executed)) executedTotal += calls;
  let sentTotal = 0;
  for (const calls of Object.values(sent)) sentTotal += calls;
  const mean = perWorker.reduce((s, n) => s + n, 0) / perWorker.length;
  const { n, ...wait } = waitsOf(waits);
  return {
    variant,
    round,
    windowMs,
    throughput: (grants * 1000) / windowMs,
    grants,
    ...wait,
    waits: n,
    sides: sideNames.map((name, side) => {
      const { n: _, ...waitOfSide } = waitsOf(sideWaits[side]);
      return {
        name,
        throughput: (sideGrants[side] * 1000) / windowMs,
        ...waitOfSide,
        mostAtOnce: Math.max(...results.map((r) => r.mostAtOnce[side])),
      };
    }),
    perWorker,
    grantsMin: Math.min(...perWorker),
    grantsMax: Math.max(...perWorker),
    starved: perWorker.filter((n) => n === 0 || n < STARVED_SHARE * mean).length,
    executed: { ...redis.executed },
    executedPerAcquisition: executedTotal / grants,
    sentPerAcquisition: sentTotal / grants,
    sent,
    redisCpuUsPerAcquisition: redis.redisCpuUs / grants,
    clientCpuUsPerAcquisition: clientCpuUs / grants,
    violations: results.reduce((s, r) => s + r.violations, 0),
    failures: results.reduce((s, r) => s + r.failures, 0),
    failureKinds,
    releaseErrors,
    uncaught: results.flatMap((r) => r.uncaught),
    unfinished: results.reduce((s, r) => s + r.unfinished, 0),
    loadavg1m,
  };
}

/** A variant over its runs: medians of the rates, waits and costs; the worst run for fairness and holders. */
export interface KindMetrics extends KindFigures {
  runs: number;
  /** Uncaught errors in all the runs. */
  uncaught: number;
  errors: string[];
}

export function combineKindRuns(
  variant: string,
  sideNames: readonly string[],
  runs: KindRun[],
  errors: string[],
): KindMetrics {
  const med = (pick: (r: KindRun) => number) => median(runs.map(pick));
  const worst = (pick: (r: KindRun) => number, most = true) =>
    runs.length ? (most ? Math.max : Math.min)(...runs.map(pick)) : Number.NaN;
  const sum = (pick: (r: KindRun) => Record<string, number>) => {
    const out: Record<string, number> = {};
    for (const r of runs) addCounts(out, pick(r));
    return out;
  };
  const total = (pick: (r: KindRun) => number) => runs.reduce((s, r) => s + pick(r), 0);
  return {
    variant,
    runs: runs.length,
    throughput: med((r) => r.throughput),
    waitP50: med((r) => r.waitP50),
    waitP99: med((r) => r.waitP99),
    waitMax: med((r) => r.waitMax),
    sides: sideNames.map((name, side) => ({
      name,
      throughput: med((r) => r.sides[side].throughput),
      waitP50: med((r) => r.sides[side].waitP50),
      waitP99: med((r) => r.sides[side].waitP99),
      waitMax: med((r) => r.sides[side].waitMax),
      mostAtOnce: worst((r) => r.sides[side].mostAtOnce),
    })),
    grantsMin: worst((r) => r.grantsMin, false),
    grantsMax: worst((r) => r.grantsMax),
    starved: worst((r) => r.starved),
    executedPerAcquisition: med((r) => r.executedPerAcquisition),
    sentPerAcquisition: med((r) => r.sentPerAcquisition),
    redisCpuUsPerAcquisition: med((r) => r.redisCpuUsPerAcquisition),
    clientCpuUsPerAcquisition: med((r) => r.clientCpuUsPerAcquisition),
    violations: total((r) => r.violations),
    failures: total((r) => r.failures),
    failureKinds: sum((r) => r.failureKinds),
    releaseErrors: sum((r) => r.releaseErrors),
    uncaught: total((r) => r.uncaught.length),
    unfinished: total((r) => r.unfinished),
    errors,
  };
}

/** a / b as "1.23×", or '-' where there is no ratio. */
export const ratio = (a: number, b: number): string => {
  const r = a / b;
  return b > 0 && Number.isFinite(r) ? `${num(r, r >= 100 ? 0 : 2)}×` : '-';
};

/** A row of the table: label, a variant's cell, the ratio first / second variant, the target. */
export type KindRow = [label: string, cell: (m: KindMetrics) => string, ratio: string, target: string];

/**
 * The rows of a table comparing `metrics[0]` (this library, as the scenario is about) with `metrics[1]`:
 * `figure` makes a row of a number with its ratio; `shared` are the rows both scenarios end with
 * (fairness, costs, the scenario's holders rows, failures, runs). `targets`: of the commands per
 * acquisition, and of the counts that must be 0 (starved workers, failed acquisitions).
 */
export function kindRows(metrics: KindMetrics[], targets: { cmds: string; none: string }) {
  const [first, second] = metrics;
  const figure = (label: string, pick: (m: KindMetrics) => number, digits?: number, target = ''): KindRow => [
    label,
    (m) => num(pick(m), digits),
    first && second ? ratio(pick(first), pick(second)) : '-',
    target,
  ];
  const shared = (holders: KindRow[]): KindRow[] => [
    ['grants/worker min..max', (m) => `${m.grantsMin}..${m.grantsMax}`, '', ''],
    ['starved workers', (m) => String(m.starved), '', targets.none],
    figure('Redis cmds/acq', (m) => m.executedPerAcquisition, 2, targets.cmds),
    figure('sent cmds/acq', (m) => m.sentPerAcquisition, 2),
    figure('Redis CPU µs/acq', (m) => m.redisCpuUsPerAcquisition, 0),
    figure('node CPU µs/acq', (m) => m.clientCpuUsPerAcquisition, 0),
    ...holders,
    ['failed acquisitions', (m) => String(m.failures), '', targets.none],
    ['runs', (m) => String(m.runs), '', ''],
  ];
  return { figure, shared };
}

/** The table, one column per variant, then the ratio and the target; a line of notes per variant. */
export function kindTable(metrics: KindMetrics[], ratioHeader: string, rows: KindRow[]): string {
  const body = table(
    ['', ...metrics.map((m) => m.variant), ratioHeader, 'target'],
    rows.map(([label, cell, r, target]) => [label, ...metrics.map(cell), r, target]),
  );
  const notes = metrics.flatMap((m) => {
    const out: string[] = [];
    if (m.failures) out.push(`failures: ${kinds(m.failureKinds)}`);
    if (Object.keys(m.releaseErrors).length) out.push(`release errors: ${kinds(m.releaseErrors)}`);
    if (m.uncaught) out.push(`${m.uncaught} uncaught errors`);
    if (m.unfinished) out.push(`${m.unfinished} calls still open after the drain`);
    if (m.errors.length) out.push(`RUN ERRORS: ${m.errors.join(' | ')}`);
    return out.length ? [`  ${m.variant}: ${out.join('; ')}`] : [];
  });
  return [body, ...notes].join('\n');
}

const waitText = (w: Waits): string => `${num(w.waitP50)}/${num(w.waitP99)}/${num(w.waitMax)}`;

/** One line per run: the spread behind the medians (with several sides, each side's rate and waits). */
export function formatKindRuns(runs: KindRun[]): string {
  const width = Math.max(0, ...runs.map((r) => r.variant.length));
  return runs
    .map((r) => {
      const sides =
        r.sides.length > 1
          ? r.sides.map((s) => `, ${s.name} ${num(s.throughput, 1)}/s wait ${waitText(s)} ms`).join('')
          : '';
      const most = r.sides.map((s) => `${s.name} ${s.mostAtOnce}`).join(', ');
      return (
        `  round ${r.round + 1} ${r.variant.padEnd(width)} ${num(r.throughput, 1)} acq/s, wait p50/p99/max ` +
        `${waitText(r)} ms${sides}, grants ${r.grantsMin}..${r.grantsMax}, starved ${r.starved}, ` +
        `Redis cmds/acq ${num(r.executedPerAcquisition, 2)}, most at once: ${most}, ` +
        `violations ${r.violations}, load ${num(r.loadavg1m, 2)}`
      );
    })
    .join('\n');
}

/**
 * The targets of a scenario: `check` adds one; the correctness checks every variant gets are added
 * first (it completed runs; `exclusion`, what its counters must show, named by the scenario).
 */
export function kindTargets(
  scenario: string,
  metrics: KindMetrics[],
  exclusion: { name: string; pass: (m: KindMetrics) => boolean; detail: (m: KindMetrics) => string },
) {
  const targets: Target[] = [];
  const check = (name: string, pass: boolean, detail: string, correctness = false) =>
    targets.push({ scenario, name, pass, detail, correctness });
  for (const m of metrics) {
    check(`${m.variant}: runs completed`, m.errors.length === 0 && m.runs > 0, `${m.runs} run(s)`, true);
    if (m.runs > 0) check(`${m.variant}: ${exclusion.name}`, exclusion.pass(m), exclusion.detail(m), true);
  }
  return { targets, check };
}
