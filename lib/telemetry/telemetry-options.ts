/**
 * The public shapes of telemetry: the `telemetry` option and what it names. Kept apart from the code that
 * uses `@opentelemetry/api`, so an application without that optional package still type-checks against
 * these declarations.
 */
import type { LockEvent } from './lock-events';

/** The `telemetry` option of a LockService (and of the Nest module). */
export interface TelemetryOptions {
  /** Called with every lock event of this service (as the diagnostics channels publish them); must not throw. */
  onEvent?: (event: LockEvent) => void;
  /**
   * Log a lock not granted (warn, saying why: turned away, cut by overload or its deadline, or out of
   * waitTimeout; a lock's repeated warnings summarised, docs/observability.md "In a log") and a lease
   * lost while held (error, always at once), with the lock's name and keys: a Nest `Logger` (`new Logger('Locks')`), `console`,
   * or any object with `warn` and `error`. Default: none (a busy lock answering 409s is not an incident).
   */
  logger?: LockLogger;
}

/** Where `telemetry.logger` writes: a Nest `Logger`, `console`, or anything with these two methods. */
export interface LockLogger {
  warn(message: string): void;
  error(message: string): void;
}

/** `lock.outcome` of a call. */
export type LockOutcome =
  | 'acquired'
  | 'timeout'
  | 'shed'
  | 'overload'
  | 'aborted'
  | 'abandoned'
  | 'skipped'
  | 'error';
