/**
 * The read-mostly benchmark's table and targets (bench/read-write.ts; its figures are
 * bench/kind-report.ts's): this library's read-write lock against its plain mutex on the same load.
 * Reported, never gated, but the correctness checks: no reader beside a writer and a writer alone (the
 * holders' counters), no failed acquisition, no run lost.
 */
import { num } from './format';
import { type KindMetrics, kindRows, kindTable, kindTargets, ratio, type SideFigures } from './kind-report';
import type { Target } from './report';

/** The variants: `mode: 'read'` / `'write'`, and the plain mutex for every acquisition. */
export const READ_WRITE_VARIANTS = ['read-write', 'mutex'] as const;
export type ReadWriteVariant = (typeof READ_WRITE_VARIANTS)[number];
const [RW, MUTEX] = READ_WRITE_VARIANTS;
/** The sides of every acquisition, in the order the worker records them. */
export const SIDES = ['write', 'read'] as const;

const side = (m: KindMetrics, name: (typeof SIDES)[number]): SideFigures => {
  const found = m.sides.find((s) => s.name === name);
  if (!found) throw new Error(`no ${name} side in ${m.variant}`);
  return found;
};
const reads = (m: KindMetrics) => side(m, 'read');
const writes = (m: KindMetrics) => side(m, 'write');

/** The figures, one column per variant, then read-write / mutex and the target where it has one. */
export function formatReadWrite(metrics: KindMetrics[]): string {
  const { figure, shared } = kindRows(metrics, { cmds: '', none: '0' });
  return kindTable(metrics, 'rw/mutex', [
    figure('acq/s', (m) => m.throughput, 1, '> 1×'),
    figure('reads/s', (m) => reads(m).throughput, 1),
    figure('writes/s', (m) => writes(m).throughput, 1),
    figure('read wait p50 ms', (m) => reads(m).waitP50),
    figure('read wait p99 ms', (m) => reads(m).waitP99),
    figure('read wait max ms', (m) => reads(m).waitMax),
    figure('write wait p50 ms', (m) => writes(m).waitP50),
    figure('write wait p99 ms', (m) => writes(m).waitP99),
    figure('write wait max ms', (m) => writes(m).waitMax, undefined, 'reported'),
    ...shared([
      ['most readers at once', (m) => String(reads(m).mostAtOnce), '', ''],
      ['most writers at once', (m) => String(writes(m).mostAtOnce), '', '1'],
      ['overlaps (reader+writer, 2 writers)', (m) => String(m.violations), '', '0'],
    ]),
  ]);
}

export function readWriteTargets(metrics: KindMetrics[]): Target[] {
  const { targets, check } = kindTargets('read-write', metrics, {
    name: 'a writer alone, no reader beside a writer',
    pass: (m) => m.violations === 0 && writes(m).mostAtOnce <= 1,
    detail: (m) =>
      `${m.violations} overlaps; most writers at once ${writes(m).mostAtOnce}, readers ${reads(m).mostAtOnce}`,
  });
  for (const m of metrics.filter((m) => m.runs > 0))
    check(`${m.variant}: no failed acquisition`, m.failures === 0, `${m.failures}`, true);
  const rw = metrics.find((m) => m.variant === RW && m.runs > 0);
  const mutex = metrics.find((m) => m.variant === MUTEX && m.runs > 0);
  if (!rw || !mutex) return targets;
  check(
    'read-write throughput > mutex',
    rw.throughput > mutex.throughput,
    `${num(rw.throughput, 1)}/s vs ${num(mutex.throughput, 1)}/s = ${ratio(rw.throughput, mutex.throughput)} ` +
      `(reads ${num(reads(rw).throughput, 1)}/s, writes ${num(writes(rw).throughput, 1)}/s)`,
  );
  check(
    "no writer starved: max writer wait ≤ the mutex's",
    writes(rw).throughput > 0 && writes(rw).waitMax <= writes(mutex).waitMax,
    `max ${num(writes(rw).waitMax)} ms (p99 ${num(writes(rw).waitP99)}) vs mutex max ` +
      `${num(writes(mutex).waitMax)} ms (p99 ${num(writes(mutex).waitP99)})`,
  );
  return targets;
}
