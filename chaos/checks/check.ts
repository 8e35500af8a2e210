/**
 * The shape every checker shares. A checker reads a run's history (chaos/history.ts) and returns what
 * it measured (`stats`, merged into the report's `checks` section) and the violations it found; it
 * never reads a clock, a server or a process, so the same history always gives the same verdict, and a
 * history written by hand shows what each checker catches (test/chaos/).
 */
import type { Violation } from '../history';

export interface CheckResult<S extends object> {
  stats: S;
  violations: Violation[];
}

/** What a run promised, against which the checkers measure it. */
export interface CheckContext {
  /** End of the run (shared monotonic clock, ms): calls still open count as lasting until then. */
  now: number;
  ttl: number;
  claimWindow: number;
  waitTimeout: number;
  commandTimeout: number;
  /** Scheduling slack for a loaded 2-core machine, ms. */
  slackMs: number;
  keys: readonly string[];
  /** When the nemesis had stopped and the run began to calm down. */
  tCalm: number;
  /** Quick mode must show the unfenced twin failing (a GC pause that landed). */
  quick: boolean;
  /** Lock servers: one, or several holding each lock on a majority (a quorum, Redlock). */
  nodes: number;
  /** False when the run had no mutex workload: no twin, so nothing to show the checkers see with. */
  mutex?: boolean;
}

/** Collects violations under one checker. */
export class Findings {
  readonly violations: Violation[] = [];

  add(check: string, detail: unknown): void {
    this.violations.push({ check, detail });
  }
}
