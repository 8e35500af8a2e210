/**
 * The semaphore benchmark's table and targets (bench/semaphore.ts; its figures are bench/kind-report.ts's):
 * reported, never gated, but the correctness checks: at most `permits` holders at once, no failed
 * acquisition of this library, no run lost.
 */
import { num } from './format';
import { type KindMetrics, kindRows, kindTable, kindTargets, ratio } from './kind-report';
import type { KindLib } from './kind-worker';
import type { Target } from './report';

export const SEMAPHORE_LIBS = ['nestjs-redis-lock', 'redis-semaphore'] as const satisfies readonly KindLib[];
export type SemaphoreLib = (typeof SEMAPHORE_LIBS)[number];
const [OURS_SEM, PEER_SEM] = SEMAPHORE_LIBS;

/** The holders' one side: its most at once. */
const holders = (m: KindMetrics): number => m.sides[0]?.mostAtOnce ?? Number.NaN;

/** The figures, one column per library, then ours / peer and the target where it has one. */
export function formatSemaphore(metrics: KindMetrics[], permits: number): string {
  const { figure, shared } = kindRows(metrics, { cmds: '< 1×', none: '0 (ours)' });
  return kindTable(metrics, 'ours/peer', [
    figure('acq/s', (m) => m.throughput, 1, '≥ 0.95×'),
    figure('wait p50 ms', (m) => m.waitP50),
    figure('wait p99 ms', (m) => m.waitP99),
    figure('wait max ms', (m) => m.waitMax, undefined, '≤ 0.1×'),
    ...shared([['max holders at once', (m) => String(holders(m)), '', `≤ ${permits}`]]),
  ]);
}

export function semaphoreTargets(metrics: KindMetrics[], permits: number): Target[] {
  const { targets, check } = kindTargets('semaphore', metrics, {
    name: `at most ${permits} holders at once`,
    pass: (m) => holders(m) <= permits && m.violations === 0,
    detail: (m) => `max ${holders(m)}`,
  });
  const ours = metrics.find((m) => m.variant === OURS_SEM && m.runs > 0);
  const peer = metrics.find((m) => m.variant === PEER_SEM && m.runs > 0);
  if (!ours) return targets;
  check('no failed acquisition (nestjs-redis-lock)', ours.failures === 0, `${ours.failures}`, true);
  check(
    'no starved worker (nestjs-redis-lock)',
    ours.starved === 0,
    `worst run ${ours.starved}; grants per worker ${ours.grantsMin}..${ours.grantsMax}` +
      (peer ? `; ${peer.variant} ${peer.starved} starved, ${peer.grantsMin}..${peer.grantsMax}` : ''),
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
