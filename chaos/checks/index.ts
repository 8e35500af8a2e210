/**
 * Every checker, run on one history in a fixed order (so the violations list reads the same for the
 * same history). To add a check: a module beside these returning a CheckResult, a unit test with a
 * history it passes and one it fails (test/chaos/), and a line here and in chaos/report.ts.
 */
import type { History, Violation } from '../history';
import type { CheckContext, CheckResult } from './check';
import { checkErrors, type ErrorStats } from './errors';
import { checkFaultEffects, type FaultEffectStats } from './fault-effects';
import { checkFenceOrder } from './fence-order';
import { checkFencedWrites, type FencedStats } from './fenced-writes';
import { checkHangs, type HangStats } from './hangs';
import { checkLostUpdates, type LostUpdateStats } from './lost-updates';
import { checkMemoryPressure, type MemoryPressureStats } from './memory-pressure';
import { checkSensitivity, type SensitivityStats } from './sensitivity';
import { checkSharedFences, type SharedFenceStats } from './shared-fences';
import { checkSharedHolders, type SharedHolderStats } from './shared-holders';
import type { SharedKind } from './shared-kinds';
import { checkValidityWindows, type WindowStats } from './validity-windows';

export interface Verdicts {
  fenceOrderViolations: number;
  fenced: FencedStats;
  lostUpdates: LostUpdateStats;
  windows: WindowStats;
  hangs: HangStats;
  errors: ErrorStats;
  effects: FaultEffectStats;
  sensitivity: SensitivityStats;
  memoryPressure: MemoryPressureStats;
  /** A semaphore's checks, and a read-write lock's (the same two, each with its own bound). */
  semaphore: SharedStats;
  readWrite: SharedStats;
  violations: Violation[];
}

export type SharedStats = SharedHolderStats & SharedFenceStats;

/** The holders and the fences of the keys of one kind of lock several callers hold at once. */
function checkShared(history: History, ctx: CheckContext, kind: SharedKind): CheckResult<SharedStats> {
  const holders = checkSharedHolders(history, ctx, kind);
  const fences = checkSharedFences(history, kind);
  return {
    stats: { ...holders.stats, ...fences.stats },
    violations: [...holders.violations, ...fences.violations],
  };
}

export function checkHistory(history: History, ctx: CheckContext): Verdicts {
  const fenceOrder = checkFenceOrder(history, ctx);
  const fenced = checkFencedWrites(history);
  const lostUpdates = checkLostUpdates(history);
  const windows = checkValidityWindows(history, ctx);
  const hangs = checkHangs(history, ctx);
  const errors = checkErrors(history);
  const effects = checkFaultEffects(history, ctx);
  const sensitivity = checkSensitivity(history, ctx, lostUpdates.stats.unfencedViolations);
  const memoryPressure = checkMemoryPressure(history, ctx);
  const semaphore = checkShared(history, ctx, 'semaphore');
  const readWrite = checkShared(history, ctx, 'rw');
  const all = [
    fenceOrder,
    fenced,
    lostUpdates,
    windows,
    hangs,
    errors,
    effects,
    sensitivity,
    memoryPressure,
    semaphore,
    readWrite,
  ];
  return {
    fenceOrderViolations: fenceOrder.stats.fenceOrderViolations,
    fenced: fenced.stats,
    lostUpdates: lostUpdates.stats,
    windows: windows.stats,
    hangs: hangs.stats,
    errors: errors.stats,
    effects: effects.stats,
    sensitivity: sensitivity.stats,
    memoryPressure: memoryPressure.stats,
    semaphore: semaphore.stats,
    readWrite: readWrite.stats,
    violations: all.flatMap((result) => result.violations),
  };
}
