/**
 * The open-loop scenario (8) and the slow-instance scenario (9): how their rounds are combined, their
 * tables, and their checks. Speed figures are reported, never gated; a lost update or overlapping holders
 * are correctness failures as in every other scenario (checked in report.ts).
 */
import { num, pct, runNotes, table } from './format';
import { OURS } from './ipc';
import { combineRounds, type LoadMetrics, type RoundOutcome } from './metrics';
import { type OpenLoopSummary, summarizeOpenLoopRounds } from './open-loop';
import type { Target } from './report';

export interface OpenMetrics {
  scenario: 8;
  lib: LoadMetrics['lib'];
  keys: number;
  /** Fraction of the serial capacity offered. */
  load: number;
  /** The offered rate asked for, requests per second over all processes. */
  ratePerS: number;
  /** Serial capacity of one key (the critical section alone, back to back), per second. */
  capacityPerKeyPerS: number;
  timeoutMs: number;
  summary: OpenLoopSummary;
  /** The closed-loop figures of the same runs: CPU, commands, lost updates, overlaps, hand-offs. */
  base: LoadMetrics;
}

export function combineOpenRounds(
  lib: LoadMetrics['lib'],
  keys: number,
  load: number,
  ratePerS: number,
  capacityPerKeyPerS: number,
  timeoutMs: number,
  outcomes: RoundOutcome[],
): OpenMetrics {
  const rounds = outcomes.flatMap((o) => (o.requests && !o.error ? [o.requests] : []));
  return {
    scenario: 8,
    lib,
    keys,
    load,
    ratePerS,
    capacityPerKeyPerS,
    timeoutMs,
    summary: summarizeOpenLoopRounds(rounds),
    // One "worker" per process: the loop has no workers, only arrivals.
    base: combineRounds(8, lib, outcomes[0]?.analysis?.processes ?? 0, outcomes),
  };
}

export function formatOpen(title: string, rows: OpenMetrics[]): string {
  if (rows.length === 0) return '';
  const out: string[] = [`\nScenario 8: ${title}`];
  const capacity = rows[0].capacityPerKeyPerS;
  out.push(
    `  serial capacity of one key (GET / 2 ms / SET back to back, no lock): ${num(capacity, 0)}/s; ` +
      `deadline per request ${rows[0].timeoutMs} ms; latency from each request's arrival, timed-out and ` +
      'still-open requests included at the time they gave up or were last seen',
  );
  for (const keys of [...new Set(rows.map((m) => m.keys))]) {
    out.push(`\n  ${keys} key${keys === 1 ? '' : 's'}`);
    out.push(
      table(
        [
          'library',
          'load',
          'offered/s',
          'goodput/s',
          'p50 ms',
          'p99',
          'max',
          'timed out',
          'errors',
          'CPU µs/acq node',
          'redis',
          'sent/acq',
          'exec/acq',
          'same-proc',
          'lost',
          'overlap',
        ],
        rows
          .filter((m) => m.keys === keys)
          .map((m) => [
            m.lib,
            pct(m.load),
            num(m.summary.offeredPerS, 0),
            num(m.summary.goodputPerS, 0),
            num(m.summary.latency.p50),
            num(m.summary.latency.p99),
            num(m.summary.latency.max),
            m.summary.arrived
              ? `${m.summary.timedOut} (${pct(m.summary.timedOut / m.summary.arrived)})`
              : '-',
            String(m.summary.errors + m.summary.open),
            num(m.base.clientCpuUsPerAcquisition, 0),
            num(m.base.redisCpuUsPerAcquisition, 0),
            num(m.base.sentPerAcquisition, 2),
            num(m.base.executedPerAcquisition, 1),
            pct(m.base.handoffSameShare),
            String(m.base.lostUpdates),
            String(m.base.overlaps),
          ]),
      ),
    );
  }
  for (const m of rows) {
    const notes = runNotes(m.base);
    if (m.summary.censored) notes.push(`${m.summary.censored} still open when last seen`);
    if (notes.length) out.push(`  ${m.lib} ${m.keys} key(s) at ${pct(m.load)}: ${notes.join('; ')}`);
  }
  return out.join('\n');
}

/** Scenario 9: the healthy processes apart from the slow one. */
export function formatSlow(title: string, rows: LoadMetrics[]): string {
  if (rows.length === 0) return '';
  const out = [`\nScenario 9: ${title}`];
  out.push(
    table(
      [
        'library',
        'healthy acq/s',
        'wait p50 ms',
        'p99',
        'max',
        'slow acq/s',
        'wait p50 ms',
        'p99',
        'max',
        'all acq/s',
        'CPU µs/acq node+redis',
        'fail',
        'lost',
        'overlap',
      ],
      rows.map((m) => {
        const h = m.groups?.healthy;
        const s = m.groups?.slow;
        return [
          m.lib,
          h ? num(h.throughput, 1) : '-',
          h ? num(h.wait.p50) : '-',
          h ? num(h.wait.p99) : '-',
          h ? num(h.wait.max) : '-',
          s ? num(s.throughput, 1) : '-',
          s ? num(s.wait.p50) : '-',
          s ? num(s.wait.p99) : '-',
          s ? num(s.wait.max) : '-',
          num(m.throughput, 1),
          `${num(m.clientCpuUsPerAcquisition, 0)}+${num(m.redisCpuUsPerAcquisition, 0)}`,
          m.failures ? `${m.failures} (${pct(m.failureRate)})` : '0',
          String(m.lostUpdates),
          String(m.overlaps),
        ];
      }),
    ),
  );
  for (const m of rows) {
    const notes = runNotes(m);
    if (notes.length) out.push(`  ${m.lib}: ${notes.join('; ')}`);
  }
  return out.join('\n');
}

/**
 * Reported figures for the open loop and the slow instance (ours against the best peer). Not gated on
 * speed; the correctness of every open-loop run is checked with every other run's (report.ts).
 */
export function openTargets(open: OpenMetrics[], slow: LoadMetrics[]): Target[] {
  const targets: Target[] = [];
  for (const keys of [...new Set(open.map((m) => m.keys))]) {
    for (const load of [...new Set(open.map((m) => m.load))]) {
      const cell = open.filter((m) => m.keys === keys && m.load === load && m.base.errors.length === 0);
      const ours = cell.find((m) => m.lib === OURS);
      const peers = cell.filter((m) => m.lib !== OURS);
      if (!ours || peers.length === 0) continue;
      const best = peers.reduce((a, b) => (b.summary.latency.p99 < a.summary.latency.p99 ? b : a));
      const most = peers.reduce((a, b) => (b.summary.goodputPerS > a.summary.goodputPerS ? b : a));
      targets.push({
        scenario: `S8 ${keys}k ${pct(load)}`,
        // Below capacity every library delivers what is offered, give or take the window's edges.
        name: 'p99 ≤ best peer, goodput ≥ 0.98 × best peer',
        pass:
          ours.summary.latency.p99 <= best.summary.latency.p99 &&
          ours.summary.goodputPerS >= 0.98 * most.summary.goodputPerS,
        detail:
          `p99 ${num(ours.summary.latency.p99)} ms vs ${best.lib} ${num(best.summary.latency.p99)} ms; goodput ` +
          `${num(ours.summary.goodputPerS, 0)}/s vs ${most.lib} ${num(most.summary.goodputPerS, 0)}/s; timed out ` +
          `${ours.summary.timedOut} vs ${peers.map((p) => `${p.lib} ${p.summary.timedOut}`).join(', ')}`,
        correctness: false,
      });
    }
  }
  const ours9 = slow.find((m) => m.lib === OURS && m.errors.length === 0);
  const peers9 = slow.filter((m) => m.lib !== OURS && m.errors.length === 0 && m.groups);
  if (ours9?.groups && peers9.length) {
    const best = peers9.reduce((a, b) =>
      (b.groups?.healthy.throughput ?? 0) > (a.groups?.healthy.throughput ?? 0) ? b : a,
    );
    const bh = best.groups?.healthy.throughput ?? Number.NaN;
    const oh = ours9.groups.healthy.throughput;
    targets.push({
      scenario: 'S9',
      name: 'healthy processes ≥ 0.95 × best peer',
      pass: oh >= 0.95 * bh,
      detail: `${num(oh, 1)}/s vs ${best.lib} ${num(bh, 1)}/s = ${num(oh / bh, 2)}×; healthy wait max ${num(
        ours9.groups.healthy.wait.max,
      )} ms vs ${num(best.groups?.healthy.wait.max ?? Number.NaN)} ms`,
      correctness: false,
    });
  }
  return targets;
}
