/**
 * The `telemetry.logger` option: the lock events worth a log line, written to a logger the application
 * gives (a Nest `Logger`, `console`, pino): a lock not granted in time (warn; a skip is not logged, it
 * is the job running elsewhere) and a lease lost while held (error). Other events are metrics, not logs.
 */
import type { LockEvent } from './lock-events';
import type { LockLogger } from './telemetry-options';

/** `onEvent` that logs to `logger`, then passes each event on to `own` (the application's onEvent). */
export function loggedEvents(
  logger: LockLogger,
  own?: (event: LockEvent) => void,
): (event: LockEvent) => void {
  return (event) => {
    if (event.kind === 'timeout' && !event.skipped) {
      logger.warn(
        `Lock "${event.name}" (${event.keys.join(', ')}): not granted within ${Math.round(event.waitedMs ?? 0)} ms`,
      );
    } else if (event.kind === 'lost') {
      logger.error(
        `Lock "${event.name}" (${event.keys.join(', ')}) lost after ${Math.round(event.heldMs ?? 0)} ms: ${(event.error as Error | undefined)?.message ?? event.reason}`,
      );
    }
    own?.(event);
  };
}
