/**
 * From raw worker records to the numbers reported: throughput in the measurement window, wait-time
 * percentiles, per-worker grants, hand-off latency, mutual-exclusion overlaps, commands per acquisition.
 */
import { type CallErrors, FAILURE, FAILURE_STRIDE, type LoadResult, RECORD, RECORD_STRIDE } from './ipc';

export interface Summary {
  n: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
}

export function sorted(values: ArrayLike<number>): Float64Array {
  return Float64Array.from(values).sort();
}

/** Nearest-rank quantile of sorted values. */
export function quantile(values: Float64Array, q: number): number {
  if (values.length === 0) return Number.NaN;
  const rank = Math.ceil(q * values.length) - 1;
  return values[Math.min(values.length - 1, Math.max(0, rank))];
}

export function summarize(values: ArrayLike<number>): Summary {
  const s = sorted(values);
  let sum = 0;
  for (const v of s) sum += v;
  return {
    n: s.length,
    mean: s.length ? sum / s.length : Number.NaN,
    p50: quantile(s, 0.5),
    p90: quantile(s, 0.9),
    p99: quantile(s, 0.99),
    p999: quantile(s, 0.999),
    max: s.length ? s[s.length - 1] : Number.NaN,
  };
}

/**
 * The middle value (the upper of the two middle ones for an even count), NaN values left out; NaN if
 * none is left. For figures taken once per round, reported as their median over the rounds.
 */
export function median(values: readonly number[]): number {
  const s = sorted(values.filter((v) => !Number.isNaN(v)));
  return s.length ? s[Math.floor(s.length / 2)] : Number.NaN;
}

/** Up to `points` (quantile, value) pairs describing a distribution, denser in the tail. */
export function cdf(values: ArrayLike<number>, points = 120): { q: number; v: number }[] {
  const s = sorted(values);
  if (s.length === 0) return [];
  const qs = new Set<number>();
  for (let i = 0; i <= points / 2; i++) qs.add(i / (points / 2)); // 0 .. 1 evenly
  for (let i = 1; i <= points / 2; i++) qs.add(1 - 10 ** (-(3 * i) / (points / 2))); // 0.9 .. 0.999 in log steps
  return [...qs].sort((a, b) => a - b).map((q) => ({ q, v: q === 0 ? s[0] : quantile(s, q) }));
}

export interface RunWindow {
  measureFrom: number;
  measureTo: number;
}

/** What one run (one library, one round, one scenario) measured. */
export interface RunAnalysis extends CallErrors {
  processes: number;
  windowMs: number;
  grantsInWindow: number;
  /** Grants in the window per worker (all workers of all processes, in order). */
  perWorker: number[];
  /** acquire call → holding, for calls made in the window that succeeded. */
  waits: number[];
  /** release() called → the next holder (already waiting) starts, for releases in the window. */
  handoffs: number[];
  /** The same, split by whether the next holder is in the releasing process or another one. */
  handoffsSame: number[];
  handoffsCross: number[];
  /**
   * grant → release() called, for grants in the window: the critical section as the holder's process
   * ran it. Apart: the holds that began with a hand-off within one process, and those that began with one
   * from another process.
   */
  holds: number[];
  holdsAfterSame: number[];
  holdsAfterCross: number[];
  /** Grants in the window and waits (as `waits`), per worker process. */
  grantsByProcess: number[];
  waitsByProcess: number[][];
  /** release() called → the grant's push reaches the next holder's process (this library). */
  handoffPush: number[];
  /** Push arrival → acquire resolved in the next holder (this library). */
  handoffWake: number[];
  /** A holder started before the previous one had finished (mutual exclusion broken). */
  overlaps: number;
  successes: number;
  criticalSections: number;
  failures: number;
  failuresInWindow: number;
  sent: Record<string, number>;
  sentTotal: Record<string, number>;
  connections: number;
  /** CPU of all worker processes in the window, µs. */
  clientCpuUs: number;
  dataGets: number;
  dataSets: number;
}

/** Adds counts by name (commands, error kinds) into `into`. */
export function addCounts(into: Record<string, number>, from: Record<string, number>): void {
  for (const [k, v] of Object.entries(from)) into[k] = (into[k] ?? 0) + v;
}

export function analyzeRun(
  results: LoadResult[],
  workersPerProcess: number,
  window: RunWindow,
  hasCriticalSection: boolean,
  /** The keys one record's key column stands for (scenario 6: the two accounts of its pair). Given, no
   * hand-off is measured: the next holder of one key may still be waiting for its other key. */
  keysOf?: (key: number) => readonly number[],
): RunAnalysis {
  const { measureFrom, measureTo } = window;
  const inWindow = (t: number) => t >= measureFrom && t < measureTo;
  const analysis: RunAnalysis = {
    processes: results.length,
    windowMs: measureTo - measureFrom,
    grantsInWindow: 0,
    perWorker: new Array(results.length * workersPerProcess).fill(0),
    waits: [],
    handoffs: [],
    handoffsSame: [],
    handoffsCross: [],
    holds: [],
    holdsAfterSame: [],
    holdsAfterCross: [],
    grantsByProcess: results.map(() => 0),
    waitsByProcess: results.map(() => []),
    handoffPush: [],
    handoffWake: [],
    overlaps: 0,
    successes: 0,
    criticalSections: 0,
    failures: 0,
    failuresInWindow: 0,
    failureKinds: {},
    releaseErrors: {},
    uncaught: [],
    sent: {},
    sentTotal: {},
    connections: 0,
    clientCpuUs: 0,
    dataGets: 0,
    dataSets: 0,
  };
  type Acq = { call: number; grant: number; release: number; push: number; process: number };
  const byKey = new Map<number, Acq[]>();
  for (const [index, result] of results.entries()) {
    const r = result.records;
    const offset = result.process * workersPerProcess;
    for (let i = 0; i < r.length; i += RECORD_STRIDE) {
      const acq: Acq = {
        call: r[i + RECORD.call],
        grant: r[i + RECORD.grant],
        release: r[i + RECORD.release],
        push: r[i + RECORD.push],
        process: result.process,
      };
      analysis.successes++;
      if (inWindow(acq.grant)) {
        analysis.grantsInWindow++;
        analysis.grantsByProcess[index]++;
        analysis.perWorker[offset + r[i + RECORD.worker]]++;
        analysis.holds.push(acq.release - acq.grant);
      }
      if (inWindow(acq.call)) {
        analysis.waits.push(acq.grant - acq.call);
        analysis.waitsByProcess[index].push(acq.grant - acq.call);
      }
      const column = r[i + RECORD.key];
      for (const key of keysOf ? keysOf(column) : [column]) {
        const list = byKey.get(key);
        if (list) list.push(acq);
        else byKey.set(key, [acq]);
      }
    }
    const f = result.failures;
    for (let i = 0; i < f.length; i += FAILURE_STRIDE) {
      analysis.failures++;
      if (inWindow(f[i + FAILURE.call])) analysis.failuresInWindow++;
    }
    addCounts(analysis.failureKinds, result.failureKinds);
    addCounts(analysis.releaseErrors, result.releaseErrors);
    addCounts(analysis.sent, result.sent);
    addCounts(analysis.sentTotal, result.sentTotal);
    analysis.uncaught.push(...result.uncaught);
    analysis.connections += result.connections;
    analysis.clientCpuUs += result.cpuUs;
    analysis.dataGets += result.dataGets;
    analysis.dataSets += result.dataSets;
  }
  if (hasCriticalSection) analysis.criticalSections = analysis.successes;
  for (const list of byKey.values()) {
    list.sort((a, b) => a.grant - b.grant);
    for (let i = 1; i < list.length; i++) {
      const prev = list[i - 1];
      const next = list[i];
      // The previous holder's critical section ends when it calls release(); nobody may start before.
      if (next.grant < prev.release) analysis.overlaps++;
      // A hand-off: the next holder was already waiting when the previous one called release().
      if (!keysOf && next.call < prev.release && inWindow(prev.release)) {
        analysis.handoffs.push(next.grant - prev.release);
        const within = next.process === prev.process;
        (within ? analysis.handoffsSame : analysis.handoffsCross).push(next.grant - prev.release);
        (within ? analysis.holdsAfterSame : analysis.holdsAfterCross).push(next.release - next.grant);
        if (!Number.isNaN(next.push) && next.push >= prev.release) {
          analysis.handoffPush.push(next.push - prev.release);
          analysis.handoffWake.push(next.grant - next.push);
        }
      }
    }
  }
  return analysis;
}
