// The benchmark's own statistics: what it reports is only as true as these. Open-loop latency counts
// from each request's arrival, requests still open are censored rather than dropped, goodput counts what
// was delivered in the window, CPU is a delta of cumulative counters, and hand-offs are split by process.
import { describe, expect, it } from '@jest/globals';
import type { LoadResult } from '../../bench/ipc';
import { RECORD_STRIDE } from '../../bench/ipc';
import { combineRounds } from '../../bench/metrics';
import {
  cpuPerGrant,
  poissonArrivals,
  type RequestOutcome,
  seededRandom,
  summarizeOpenLoop,
  summarizeOpenLoopRounds,
} from '../../bench/open-loop';
import { cpuUsFromInfo } from '../../bench/redis-server';
import { analyzeRun, median } from '../../bench/stats';
import { useRedis } from '../support/redis-server';

const NaN_ = Number.NaN;
const granted = (arrival: number, at: number): RequestOutcome => ({ arrival, granted: at, failed: NaN_ });
const failed = (arrival: number, at: number, timedOut: boolean): RequestOutcome => ({
  arrival,
  granted: NaN_,
  failed: at,
  timedOut,
});
const open = (arrival: number): RequestOutcome => ({ arrival, granted: NaN_, failed: NaN_ });

describe('arrivals', () => {
  it('are a Poisson process of the rate asked for, inside the window, in order, replayable', () => {
    const a = poissonArrivals(500, 1_000, 61_000, seededRandom(7));
    const b = poissonArrivals(500, 1_000, 61_000, seededRandom(7));
    expect([...a]).toEqual([...b]);
    // 30,000 expected; a Poisson count's standard deviation is its square root (173): 3 % is > 5 sigma.
    expect(a.length).toBeGreaterThan(29_100);
    expect(a.length).toBeLessThan(30_900);
    let outside = 0;
    let unordered = 0;
    for (let i = 0; i < a.length; i++) {
      if (a[i] < 1_000 || a[i] >= 61_000) outside++;
      if (i > 0 && a[i] <= a[i - 1]) unordered++;
    }
    expect({ outside, unordered }).toEqual({ outside: 0, unordered: 0 });
    // Exponential gaps: the coefficient of variation of the gaps is 1 (a fixed-rate schedule's is 0).
    const gaps = Array.from({ length: a.length - 1 }, (_, i) => a[i + 1] - a[i]);
    const mean = gaps.reduce((x, y) => x + y, 0) / gaps.length;
    const sd = Math.sqrt(gaps.reduce((x, g) => x + (g - mean) ** 2, 0) / gaps.length);
    expect(mean).toBeCloseTo(2, 1);
    expect(sd / mean).toBeGreaterThan(0.95);
    expect(sd / mean).toBeLessThan(1.05);
  });

  it('differ with the seed, and there are none at a rate of zero', () => {
    const a = poissonArrivals(100, 0, 1_000, seededRandom(1));
    const b = poissonArrivals(100, 0, 1_000, seededRandom(2));
    expect([...a]).not.toEqual([...b]);
    expect(poissonArrivals(0, 0, 1_000, seededRandom(1))).toHaveLength(0);
  });
});

describe('open-loop summary', () => {
  const window = { from: 1_000, to: 2_000, timeoutMs: 500, observedUntil: 3_000 };

  it('counts latency from the arrival, not from when the call was made', () => {
    // Arrived at 1,100 and held at 1,400: 300 ms, whenever the event loop got round to calling acquire.
    const s = summarizeOpenLoop([granted(1_100, 1_400)], window);
    expect(s.latency.max).toBe(300);
    expect(s.served).toBe(1);
  });

  it('keeps timed-out and still-open requests among the latencies, at lower bounds, instead of dropping them', () => {
    const s = summarizeOpenLoop(
      [
        granted(1_000, 1_010),
        granted(1_100, 1_700), // granted after its 500 ms deadline: timed out, latency 600
        failed(1_200, 1_700, true), // the library gave up: timed out, latency 500
        failed(1_300, 1_350, false), // another error before the deadline
        open(1_400), // never settled: censored at observation end, 1,600 ms
        granted(1_500, 3_500), // granted after observation ended: as good as open, 1,500 ms
      ],
      window,
    );
    expect(s).toMatchObject({ arrived: 6, served: 1, timedOut: 4, errors: 1, censored: 2, open: 0 });
    expect(s.latency.n).toBe(6);
    expect(s.latency.max).toBe(1_600);
    // Dropping what did not succeed, as a closed loop's wait figures do, would leave only the 10 ms.
    expect(s.latency.p50).toBeGreaterThanOrEqual(500);
  });

  it('reports a request open without having waited its deadline as open, never as served or dropped', () => {
    const s = summarizeOpenLoop([open(1_900)], { ...window, observedUntil: 2_100 });
    expect(s).toMatchObject({ arrived: 1, censored: 1, open: 1, timedOut: 0, served: 0 });
    expect(s.latency.max).toBe(200);
  });

  it('judges only arrivals in the window, and counts goodput by grants made in the window', () => {
    const s = summarizeOpenLoop(
      [
        granted(900, 1_100), // arrived before the window, granted in it in time: goodput, not a sample
        granted(1_800, 2_100), // arrived in it, granted after it: a sample, not this window's goodput
        granted(1_200, 1_250),
        granted(1_300, 1_900), // granted in the window, but past its deadline: not goodput
      ],
      window,
    );
    expect(s.arrived).toBe(3);
    expect(s.latency.n).toBe(3);
    expect(s.goodputPerS).toBe(2); // two in-time grants in a 1 s window
    expect(s.offeredPerS).toBe(3);
  });

  it('pools rounds: counts add, latencies pool, rates are over all the windows', () => {
    const second = { from: 10_000, to: 11_000, timeoutMs: 500, observedUntil: 12_000 };
    const s = summarizeOpenLoopRounds([
      { outcomes: [granted(1_000, 1_100)], window },
      { outcomes: [granted(10_000, 10_300), open(10_500)], window: second },
    ]);
    expect(s).toMatchObject({ arrived: 3, served: 2, timedOut: 1, censored: 1 });
    expect(s.goodputPerS).toBe(1); // 2 over 2 s
    expect(s.latency.max).toBe(1_500);
  });
});

describe('median over rounds', () => {
  it('is the middle value (the upper middle for an even count), leaving out rounds with no figure', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(3);
    expect(median([Number.NaN, 5, 1, Number.NaN, 3])).toBe(3);
    expect(median([Number.NaN])).toBeNaN();
    expect(median([])).toBeNaN();
  });
});

describe('CPU per acquisition', () => {
  it('is the delta of a cumulative counter over the grants; a counter going backwards is an error', () => {
    expect(cpuPerGrant(1_000, 5_000, 40)).toBe(100);
    expect(cpuPerGrant(1_000, 5_000, 0)).toBeNaN();
    expect(() => cpuPerGrant(5_000, 1_000, 1)).toThrow(/backwards/);
  });

  it('reads user + system time of redis-server and its children from INFO cpu, not the main-thread subtotals', () => {
    const info = [
      '# CPU',
      'used_cpu_sys:1.500000',
      'used_cpu_user:2.250000',
      'used_cpu_sys_children:0.010000',
      'used_cpu_user_children:0.020000',
      'used_cpu_sys_main_thread:1.400000',
      'used_cpu_user_main_thread:2.200000',
      '',
    ].join('\r\n');
    expect(cpuUsFromInfo(info)).toBeCloseTo(3_780_000, 0);
    expect(() => cpuUsFromInfo('# CPU\r\n')).toThrow(/used_cpu/);
  });

  const server = useRedis();

  it('grows with the work a real redis-server does', async () => {
    const redis = server().client();
    try {
      const before = cpuUsFromInfo(await redis.info('cpu'));
      // A script that keeps Redis busy for a measurable time: far more than a millisecond of CPU.
      await redis.eval('for i = 1, 3000000 do redis.call("INCR", KEYS[1]) end return 1', 1, 'bench:cpu');
      const after = cpuUsFromInfo(await redis.info('cpu'));
      expect(after - before).toBeGreaterThan(100_000);
      expect(cpuPerGrant(before, after, 10)).toBeCloseTo((after - before) / 10, 6);
    } finally {
      redis.disconnect();
    }
  });
});

/** A worker's reply with the given acquisitions: [worker, key, call, grant, release]. */
function result(process: number, acquisitions: number[][]): LoadResult {
  const records = new Float64Array(acquisitions.length * RECORD_STRIDE);
  acquisitions.forEach(([worker, key, call, grant, release], i) => {
    records.set([worker, key, call, grant, release, release + 0.1, NaN_], i * RECORD_STRIDE);
  });
  return {
    process,
    records,
    failures: new Float64Array(0),
    requests: new Float64Array(0),
    reportedAt: 0,
    failureKinds: {},
    releaseErrors: {},
    uncaught: [],
    sent: {},
    sentTotal: {},
    dataGets: 0,
    dataSets: 0,
    connections: 1,
    cpuUs: 0,
  };
}

describe('hand-offs and processes', () => {
  // One key. Process 0 holds 0-10, hands to its own waiter (11-20), which hands to process 1 (22-30),
  // which hands to process 0 (30.5-40); process 1's second call arrives after the release before it
  // (no one was waiting then), so that grant is not a hand-off.
  const results = [
    result(0, [
      [0, 0, 0, 0, 10],
      [1, 0, 5, 11, 20],
      [0, 0, 25, 30.5, 40],
    ]),
    result(1, [
      [0, 0, 8, 22, 30],
      [1, 0, 45, 46, 50],
    ]),
  ];
  const window = { measureFrom: 0, measureTo: 100 };

  it('splits hand-offs by whether the next holder is in the releasing process', () => {
    const a = analyzeRun(results, 2, window, true);
    expect(a.overlaps).toBe(0);
    expect(a.handoffs).toEqual([1, 2, 0.5]);
    expect(a.handoffsSame).toEqual([1]);
    expect(a.handoffsCross).toEqual([2, 0.5]);
    expect(a.grantsByProcess).toEqual([3, 2]);
    expect(a.waitsByProcess).toEqual([
      [0, 6, 5.5],
      [14, 1],
    ]);
  });

  it('times each hold, and apart those that began with a hand-off within a process or from another', () => {
    const a = analyzeRun(results, 2, window, true);
    // Holds in grant order per process: 0-10, 11-20, 30.5-40 in process 0; 22-30, 46-50 in process 1.
    expect(a.holds).toEqual([10, 9, 9.5, 8, 4]);
    expect(a.holdsAfterSame).toEqual([9]);
    expect(a.holdsAfterCross).toEqual([8, 9.5]);
    const m = combineRounds(2, 'nestjs-redis-lock', 4, [{ analysis: a, loadavg: 0 }]);
    expect(m.hold?.mean).toBeCloseTo(8.1, 9);
    expect(m.holdAfterSame?.mean).toBe(9);
    expect(m.holdAfterCross?.mean).toBeCloseTo(8.75, 9);
  });

  it('sees a holder that started before the previous one released', () => {
    const a = analyzeRun([result(0, [[0, 0, 0, 0, 10]]), result(1, [[0, 0, 1, 9, 12]])], 1, window, true);
    expect(a.overlaps).toBe(1);
  });

  it('reports the slow process apart from the healthy ones, and the same-process share', () => {
    const m = combineRounds(
      9,
      'nestjs-redis-lock',
      4,
      [{ analysis: analyzeRun(results, 2, window, true), loadavg: 0 }],
      1,
    );
    expect(m.handoffSameShare).toBeCloseTo(1 / 3, 9);
    expect(m.groups?.healthy).toMatchObject({ processes: [0], throughput: 30 });
    expect(m.groups?.slow).toMatchObject({ processes: [1], throughput: 20 });
    expect(m.groups?.slow.wait.max).toBe(14);
  });
});
