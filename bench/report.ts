/** The tables printed on stdout and the targets, each checked within one run and printed PASS/FAIL. */
import { PEERS, PROBE_GAPS, REDLOCK_PEERS, SCENARIOS } from './config';
import { kinds, ms, num, pct, runNotes, table } from './format';
import { type LibName, OURS, OURS_NODE_REDIS } from './ipc';
import type { FloorMetrics, LoadMetrics, ManyMetrics } from './metrics';
import { formatOpen, formatSlow, type OpenMetrics, openTargets } from './report-open';
import type { Summary } from './stats';

export interface Results {
  load: LoadMetrics[];
  many: ManyMetrics[];
  floors: FloorMetrics[];
  open: OpenMetrics[];
}

export interface Target {
  scenario: string;
  name: string;
  pass: boolean;
  detail: string;
  /** A correctness check (lost update, overlap, crash, failed acquisition of this library), not a speed target. */
  correctness: boolean;
}

// ---------------------------------------------------------------------------------------------------
// Formatting

const cpu = (m: LoadMetrics): string =>
  `${num(m.clientCpuUsPerAcquisition, 0)}+${num(m.redisCpuUsPerAcquisition, 0)}`;

export function formatTables(results: Results): string {
  const out: string[] = [];
  if (results.floors.length) {
    out.push(
      '\nHand-off floor of this machine: a one-line PUBLISH script from one worker process to another',
    );
    out.push(
      table(
        ['idle before each push', 'push arrives p50 ms', 'p90', 'p99', 'sender reply p50 ms', 'samples'],
        results.floors.map((f) => [
          `${f.gapMs} ms`,
          num(f.push.p50, 3),
          num(f.push.p90, 3),
          num(f.push.p99, 3),
          num(f.reply.p50, 3),
          f.errors.length ? `error: ${f.errors.join(' | ')}` : String(f.push.n),
        ]),
      ),
    );
  }
  for (const scenario of SCENARIOS) {
    if (scenario.kind === 'open') {
      const rows = results.open.filter((m) => m.scenario === scenario.id);
      if (rows.length) out.push(formatOpen(scenario.title, rows));
      continue;
    }
    if (scenario.kind === 'load' && scenario.slow) {
      out.push(
        formatSlow(
          scenario.title,
          results.load.filter((m) => m.scenario === scenario.id),
        ),
      );
      continue;
    }
    if (scenario.kind === 'load') {
      const rows = results.load.filter((m) => m.scenario === scenario.id);
      if (rows.length === 0) continue;
      out.push(`\nScenario ${scenario.id}: ${scenario.title}`);
      if (scenario.id === 1) {
        const floor = rows.find((m) => m.lib === 'raw-floor');
        out.push(
          table(
            [
              'library',
              'acq/s',
              'µs/acq+rel',
              'x floor',
              'wait p50 ms',
              'p99',
              'max',
              'sent/acq',
              'exec/acq',
              'CPU µs/acq node+redis',
              'fail',
            ],
            rows.map((m) => [
              m.lib,
              num(m.throughput, 0),
              num(m.usPerAcquisition, 1),
              floor ? num(m.usPerAcquisition / floor.usPerAcquisition, 2) : '-',
              ms(m.wait.p50),
              ms(m.wait.p99),
              ms(m.wait.max),
              num(m.sentPerAcquisition, 2),
              num(m.executedPerAcquisition, 1),
              cpu(m),
              String(m.failures),
            ]),
          ),
        );
      } else {
        out.push(
          table(
            [
              'library',
              'acq/s',
              'wait p50 ms',
              'p99',
              'max',
              'F ms',
              'grants min/max',
              'sent/acq',
              'exec/acq',
              'CPU µs/acq node+redis',
              'fail',
              'lost',
              'overlap',
              'handoff p50/p99 ms',
              'same-proc',
              'p50 same/cross',
            ],
            rows.map((m) => [
              m.lib,
              num(m.throughput, 1),
              ms(m.wait.p50),
              ms(m.wait.p99),
              ms(m.wait.max),
              num(m.fairShareMs),
              `${m.grantsMin}/${m.grantsMax}`,
              num(m.sentPerAcquisition, 2),
              num(m.executedPerAcquisition, 1),
              cpu(m),
              m.failures ? `${m.failures} (${num(100 * m.failureRate, 0)}%)` : '0',
              String(m.lostUpdates),
              String(m.overlaps),
              m.handoff ? `${ms(m.handoff.p50)}/${ms(m.handoff.p99)}` : '-',
              pct(m.handoffSameShare),
              `${m.handoffSame ? num(m.handoffSame.p50, 2) : '-'}/${m.handoffCross ? num(m.handoffCross.p50, 2) : '-'}`,
            ]),
          ),
        );
      }
      for (const m of rows) {
        const notes = runNotes(m);
        if (notes.length) out.push(`  ${m.lib}: ${notes.join('; ')}`);
      }
      // One key: a turn (1 / throughput) is a hold and what passes before the next one begins, so these
      // say whether a library loses its time between holders or inside the holds (work of its own
      // slowing the holder's process down while its critical section runs).
      if (scenario.keys === 1 && rows.some((m) => m.hold)) {
        out.push(
          '  a turn (1 / throughput) = hold (grant → release()) + between holders, mean ms; ' +
            'holds that began with a hand-off within a process / from another',
        );
        for (const m of rows) {
          if (!m.hold || !m.throughput) continue;
          const turn = 1000 / m.throughput;
          const after = (s: Summary | null) => (s ? num(s.mean, 3) : '-');
          out.push(
            `    ${m.lib}: ${num(turn, 3)} = ${num(m.hold.mean, 3)} + ${num(turn - m.hold.mean, 3)}; ` +
              `${after(m.holdAfterSame)} / ${after(m.holdAfterCross)}`,
          );
        }
      }
      if (scenario.transfer) {
        // The transfer scenario's own correctness: money is neither made nor lost, whoever holds what.
        out.push(
          `  sum of balances: ${rows
            .map((m) => `${m.lib} ${m.sumDrift === 0 ? 'conserved' : `DRIFTED by ${m.sumDrift ?? '?'}`}`)
            .join(', ')}; lost = units the balances differ from the transfers made; no hand-off ` +
            'measured (the next holder of one account may still wait for its other one)',
        );
      }
      const ours = rows.find((m) => m.lib === OURS);
      if (ours && scenario.id !== 1) {
        const top = (b: Record<string, number>) =>
          Object.entries(b)
            .slice(0, 8)
            .map(([k, v]) => `${k} ${num(v, 2)}`)
            .join(', ');
        out.push(`  ${OURS} sent/acq: ${top(ours.sentBreakdown)}`);
        out.push(`  ${OURS} executed/acq: ${top(ours.executedBreakdown)}`);
        if (ours.handoffPush && ours.handoffWake) {
          out.push(
            `  ${OURS} hand-off split (p50): release() → push arrives ${ms(ours.handoffPush.p50)} ms, ` +
              `push → acquire resolved ${ms(ours.handoffWake.p50)} ms`,
          );
        }
      }
    } else {
      if (results.many.length === 0) continue;
      out.push(`\nScenario ${scenario.id}: ${scenario.title}`);
      out.push(
        table(
          [
            'library',
            'variant',
            'connections',
            'heap B/waiter',
            'net of harness',
            'cmds/waiter/s idle',
            'sent/waiter',
            'CPU µs/waiter node+redis',
            'drain ms',
            'p50 after release',
            'granted',
            'fail',
          ],
          results.many.map((m) => [
            m.lib,
            m.variant,
            String(m.connections),
            num(m.heapPerWaiter, 0),
            num(m.netHeapPerWaiter, 0),
            num(m.idleCommandsPerWaiterPerS, 2),
            num(m.sentPerWaiter, 1),
            `${num(m.clientCpuUsPerWaiter, 0)}+${num(m.redisCpuUsPerWaiter, 0)}`,
            num(m.drainMs, 0),
            ms(m.afterRelease.p50),
            String(m.granted),
            String(m.failures),
          ]),
        ),
      );
      for (const m of results.many) {
        const notes: string[] = [];
        if (m.failures) notes.push(`failures: ${kinds(m.failureKinds)}`);
        if (m.uncaught) notes.push(`${m.uncaught} uncaught`);
        if (m.errors.length) notes.push(`RUN ERRORS: ${m.errors.join(' | ')}`);
        if (notes.length) out.push(`  ${m.lib} ${m.variant}: ${notes.join('; ')}`);
      }
    }
  }
  return out.join('\n');
}

// ---------------------------------------------------------------------------------------------------
// Targets

export function evaluateTargets(results: Results): Target[] {
  const targets: Target[] = [];
  const get = (scenario: number, lib: LibName) =>
    results.load.find((m) => m.scenario === scenario && m.lib === lib && m.errors.length === 0);
  const peersOf = (scenario: number, libs: LibName[] = PEERS) =>
    libs.map((lib) => get(scenario, lib)).filter((m): m is LoadMetrics => m !== undefined);
  const check = (scenario: string, name: string, pass: boolean, detail: string, correctness = false) =>
    targets.push({ scenario, name, pass, detail, correctness });
  // Targets several scenarios share.
  const throughputTarget = (s: string, ours: LoadMetrics, peers: LoadMetrics[]): void => {
    const best = peers.reduce((a, b) => (b.throughput > a.throughput ? b : a));
    check(
      s,
      'throughput ≥ 0.95 × best peer',
      ours.throughput >= 0.95 * best.throughput,
      `${num(ours.throughput, 1)}/s vs ${best.lib} ${num(best.throughput, 1)}/s = ${num(ours.throughput / best.throughput, 2)}×`,
    );
  };
  const starvationTarget = (s: string, ours: LoadMetrics, peers: LoadMetrics[]): void => {
    check(
      s,
      'no worker starved (min grants > 0)',
      ours.grantsMin > 0,
      `grants per worker ${ours.grantsMin}..${ours.grantsMax}; ${peers
        .map((p) => `${p.lib} ${p.grantsMin}..${p.grantsMax}`)
        .join(', ')}`,
    );
  };
  /** Commands sent and executed per acquisition, every library of the scenario. */
  const commandFigures = (all: LoadMetrics[]): string =>
    `sent ${all.map((m) => `${m.lib} ${num(m.sentPerAcquisition, 2)}`).join(', ')}; ` +
    `executed ${all.map((m) => `${m.lib} ${num(m.executedPerAcquisition, 1)}`).join(', ')}`;

  // Scenario 1.
  const ours1 = get(1, OURS);
  const floor = get(1, 'raw-floor');
  if (ours1 && floor) {
    const ratio = ours1.usPerAcquisition / floor.usPerAcquisition;
    check(
      'S1',
      'uncontended ≤ 1.25 × raw floor',
      ratio <= 1.25,
      `${num(ours1.usPerAcquisition, 1)} µs vs floor ${num(floor.usPerAcquisition, 1)} µs = ${num(ratio, 2)}×`,
    );
  }
  const peers1 = peersOf(1);
  if (ours1 && peers1.length) {
    const slower = peers1.filter((p) => p.throughput > ours1.throughput);
    check(
      'S1',
      'uncontended not slower than either peer',
      slower.length === 0,
      `${num(ours1.usPerAcquisition, 1)} µs vs ${peers1.map((p) => `${p.lib} ${num(p.usPerAcquisition, 1)} µs`).join(', ')}`,
    );
  }

  // Scenarios 2-4.
  for (const scenario of [2, 3, 4]) {
    const ours = get(scenario, OURS);
    const peers = peersOf(scenario);
    const s = `S${scenario}`;
    if (!ours) continue;
    if (peers.length) throughputTarget(s, ours, peers);
    if (scenario !== 4) {
      // In scenario 4 each worker picks a random key per acquisition, so grants per worker follow the
      // keys' luck, not the lock's fairness.
      check(
        s,
        'no worker starved (min > 0, max/min ≤ 1.5)',
        ours.grantsMin > 0 && ours.grantsRatio <= 1.5,
        `grants per worker ${ours.grantsMin}..${ours.grantsMax}, worst round max/min ${num(ours.grantsRatio, 2)}`,
      );
    }
    const f = ours.fairShareMs;
    check(
      s,
      'wait p99 ≤ 1.5 F and max ≤ 3 F',
      ours.wait.p99 <= 1.5 * f && ours.wait.max <= 3 * f,
      `F = ${ours.workers} / ${num(ours.throughput, 1)}/s = ${num(f)} ms; p99 ${num(ours.wait.p99)} ms (${num(
        ours.wait.p99 / f,
        2,
      )} F), max ${num(ours.wait.max)} ms (${num(ours.wait.max / f, 2)} F)`,
    );
    if (scenario === 2 && peers.length) {
      const best = peers.reduce((a, b) => (b.wait.p99 < a.wait.p99 ? b : a));
      check(
        s,
        'wait p99 ≤ 1/10 of best peer',
        ours.wait.p99 <= best.wait.p99 / 10,
        `${num(ours.wait.p99)} ms vs ${best.lib} ${num(best.wait.p99)} ms (ours = ${num(
          ours.wait.p99 / best.wait.p99,
          3,
        )}×; its max ${num(best.wait.max)} ms, fewest grants of a worker ${best.grantsMin}: a retrying lock's p99 ` +
          'is mostly the same worker re-taking it, its starved workers sit beyond p99 and its failed calls are not ' +
          'among its waits)',
      );
    }
    check(
      s,
      'commands sent per acquisition ≤ 4',
      ours.sentPerAcquisition <= 4,
      `${num(ours.sentPerAcquisition, 2)} (${Object.entries(ours.sentBreakdown)
        .slice(0, 5)
        .map(([k, v]) => `${k} ${num(v, 2)}`)
        .join(', ')})`,
    );
    if (scenario === 3 && peers.length) {
      check(
        s,
        'commands executed per acquisition below every peer',
        peers.every((p) => ours.executedPerAcquisition < p.executedPerAcquisition),
        `${num(ours.executedPerAcquisition, 1)} vs ${peers
          .map((p) => `${p.lib} ${num(p.executedPerAcquisition, 1)}`)
          .join(', ')}`,
      );
    }
    const floor = results.floors.find(
      (f) => f.gapMs === (scenario === 3 ? PROBE_GAPS.long : PROBE_GAPS.short),
    );
    check(
      s,
      'hand-off p50 ≤ 0.5 ms',
      ours.handoff !== null && ours.handoff.p50 <= 0.5,
      ours.handoff
        ? `p50 ${num(ours.handoff.p50, 3)} ms, p99 ${num(ours.handoff.p99, 2)} ms over ${ours.handoff.n} hand-offs` +
            (floor?.push.n
              ? `; machine floor (bare PUBLISH after ${floor.gapMs} ms idle) ${num(floor.push.p50, 3)} ms`
              : '')
        : 'no hand-off measured',
    );
  }

  // Scenario 6: transfers over two keys at once. Printed, not gated (like the speed targets above).
  const ours6 = get(6, OURS);
  const peers6 = peersOf(6);
  if (ours6) {
    const failed = (m: LoadMetrics) => (m.failures ? `, ${m.failures} failed calls not among its waits` : '');
    if (peers6.length) {
      throughputTarget('S6', ours6, peers6);
      const calm = peers6.reduce((a, b) => (b.wait.max < a.wait.max ? b : a));
      check(
        'S6',
        'worst wait (max) ≤ 0.1 × best peer',
        ours6.wait.max <= 0.1 * calm.wait.max,
        `max ${num(ours6.wait.max)} ms vs ${calm.lib} ${num(calm.wait.max)} ms (ours = ${num(
          ours6.wait.max / calm.wait.max,
          3,
        )}×${failed(calm)})`,
      );
    }
    starvationTarget('S6', ours6, peers6);
    check(
      'S6',
      'commands per acquisition reported',
      Number.isFinite(ours6.sentPerAcquisition),
      commandFigures([ours6, ...peers6]),
    );
  }

  // Scenario 7: Redlock over five masters, against the peers' Redlock implementations on the same setup.
  const ours7 = get(7, OURS);
  const peers7 = peersOf(7, REDLOCK_PEERS);
  if (ours7) {
    if (peers7.length) {
      throughputTarget('S7', ours7, peers7);
      // A peer that granted nothing in the windows has no wait figures: it is no better than any other.
      const timed = peers7.filter((p) => Number.isFinite(p.wait.p99));
      const calm = timed.length ? timed.reduce((a, b) => (b.wait.p99 < a.wait.p99 ? b : a)) : undefined;
      check(
        'S7',
        'wait p99 ≤ 0.1 × best peer',
        calm === undefined || ours7.wait.p99 <= 0.1 * calm.wait.p99,
        calm
          ? `${num(ours7.wait.p99)} ms vs ${calm.lib} ${num(calm.wait.p99)} ms (ours = ${num(
              ours7.wait.p99 / calm.wait.p99,
              3,
            )}×; max ${num(ours7.wait.max)} vs ${num(calm.wait.max)} ms)`
          : `${num(ours7.wait.p99)} ms; no peer was granted anything in the windows`,
      );
      check(
        'S7',
        'fewer commands per acquisition than every peer (all masters)',
        peers7.every((p) => ours7.sentPerAcquisition < p.sentPerAcquisition),
        commandFigures([ours7, ...peers7]),
      );
    }
    starvationTarget('S7', ours7, peers7);
  }

  // Scenario 5.
  for (const m of results.many.filter((x) => x.lib === OURS && x.errors.length === 0)) {
    const s = `S5 ${m.variant}`;
    check(s, 'connections ≤ 4', m.connections <= 4, `${m.connections} connections for ${m.waiters} waiters`);
    check(
      s,
      'heap per waiter ≤ 2 KB',
      m.heapPerWaiter <= 2048,
      `${num(m.heapPerWaiter, 0)} B (${num(m.netHeapPerWaiter, 0)} B net of the harness' ${num(
        m.harnessHeapPerWaiter,
        0,
      )} B)`,
    );
  }

  // Correctness, every library, every run: the closed loops and each cell of the open loop.
  const runs: [string, LoadMetrics][] = [
    ...results.load.map((m): [string, LoadMetrics] => [`S${m.scenario}`, m]),
    ...results.open.map((o): [string, LoadMetrics] => [`S8 ${o.keys}k ${pct(o.load)}`, o.base]),
  ];
  for (const [s, m] of runs) {
    if (m.errors.length) check(s, `${m.lib}: run completed`, false, m.errors.join(' | '), true);
    if (m.sumDrift !== null) {
      check(
        s,
        `${m.lib}: sum of balances conserved`,
        m.sumDrift === 0,
        m.sumDrift === 0 ? `${m.acquisitions} transfers` : `drifted by ${m.sumDrift}`,
        true,
      );
    }
    if (m.lostUpdates !== 0 || m.overlaps !== 0) {
      check(
        s,
        `${m.lib}: no lost update, no overlap`,
        false,
        `${m.lostUpdates} lost updates, ${m.overlaps} overlapping holders`,
        true,
      );
    }
  }
  for (const m of results.many) {
    if (m.errors.length)
      check(`S5 ${m.variant}`, `${m.lib}: run completed`, false, m.errors.join(' | '), true);
  }
  for (const lib of [OURS, OURS_NODE_REDIS]) {
    const oursLoad = results.load.filter((m) => m.lib === lib && m.errors.length === 0);
    if (oursLoad.length) {
      const bad = oursLoad.filter(
        (m) => m.failures || m.uncaught || Object.keys(m.releaseErrors).length || m.lostUpdates || m.overlaps,
      );
      check(
        `S${oursLoad.map((m) => m.scenario).join(',')}`,
        `${lib}: every acquisition granted, no lost update, no overlap, no release error`,
        bad.length === 0,
        bad.length
          ? bad
              .map(
                (m) =>
                  `S${m.scenario}: ${m.failures} failed, ${m.lostUpdates} lost, ${m.overlaps} overlaps, ` +
                  `release errors ${kinds(m.releaseErrors) || 0}, ${m.uncaught} uncaught`,
              )
              .join('; ')
          : `${oursLoad.reduce((a, m) => a + m.acquisitions, 0)} acquisitions`,
        true,
      );
    }
  }
  const oursMany = results.many.filter((m) => m.lib === OURS && m.errors.length === 0);
  if (oursMany.length) {
    const bad = oursMany.filter((m) => m.granted !== m.waiters || m.uncaught);
    check(
      'S5',
      `${OURS}: every waiter granted`,
      bad.length === 0,
      oursMany.map((m) => `${m.variant} ${m.granted}/${m.waiters}`).join(', '),
      true,
    );
  }
  targets.push(
    ...openTargets(
      results.open,
      results.load.filter((m) => m.groups !== undefined),
    ),
  );
  return targets;
}

export function formatTargets(targets: Target[]): string {
  const width = Math.max(...targets.map((t) => t.scenario.length + t.name.length + 2));
  return targets
    .map(
      (t) =>
        `${t.pass ? 'PASS' : 'FAIL'}${t.correctness ? '*' : ' '} ${`${t.scenario}  ${t.name}`.padEnd(width)}  ${t.detail}`,
    )
    .join('\n');
}
