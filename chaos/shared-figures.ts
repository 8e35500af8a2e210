/**
 * The figures a fault run reports for a semaphore and a read-write lock: what their checks found, and
 * how the summary prints the part both share.
 */
import type { SharedStats } from './checks';

/**
 * What the checks of a semaphore or a read-write lock found, or null for a run without its workload.
 * `config` is the workload's: its keys, and its permits or its share of writes.
 */
export function sharedFigures(
  config: { keys: string[]; permits?: number; writes?: number } | undefined,
  s: SharedStats,
  handoffMax: number,
): SharedFigures | null {
  if (!config) return null;
  return {
    keys: config.keys,
    permits: config.permits,
    writeShare: config.writes,
    grants: s.grants,
    writes: s.writes,
    abandoned: s.abandoned,
    overBound: s.overBound.length,
    overBoundExamples: s.overBound.slice(0, 5),
    excused: s.excused.length,
    excusedByCause: s.excusedByCause,
    excusedExamples: s.excused.slice(0, 10),
    undetermined: s.undetermined.length,
    peakHolders: s.peakHolders,
    beliefPeak: s.beliefPeak,
    frozenGrants: s.frozenGrants,
    fenceViolations: s.fenceViolations,
    calmHandoffMaxMs: Math.round(handoffMax),
  };
}

export interface SharedFigures {
  keys: string[];
  /** A semaphore's permits; a read-write workload's share of writes. */
  permits?: number;
  writeShare?: number;
  grants: number;
  writes: number;
  abandoned: number;
  overBound: number;
  overBoundExamples: unknown[];
  excused: number;
  excusedByCause: Record<string, number>;
  excusedExamples: unknown[];
  undetermined: number;
  peakHolders: number;
  beliefPeak: number;
  frozenGrants: number;
  fenceViolations: number;
  calmHandoffMaxMs: number;
}

/** The figures a semaphore's and a read-write lock's sections share, past their bound's own line. */
export function printShared(
  line: (label: string, value: unknown) => void,
  topology: string,
  f: SharedFigures,
  handoffBoundMs: unknown,
): void {
  line(
    '  past the bound after state loss',
    `${f.excused} ${JSON.stringify(f.excusedByCause)}` +
      (topology === 'sentinel' ? ' (none allowed)' : ' (allowed: restart, or eviction of its holders)'),
  );
  line('  undetermined (holder SIGKILLed)', f.undetermined);
  line('  peak holders / believing holders', `${f.peakHolders} / ${f.beliefPeak}`);
  line('  grants past validity (frozen)', f.frozenGrants);
  line('  fence order violations (must be 0)', f.fenceViolations);
  line('  max hand-off after nemesis stop', `${f.calmHandoffMaxMs} ms (bound ${handoffBoundMs})`);
}
