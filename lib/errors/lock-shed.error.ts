import { LockTimeoutError } from './lock-timeout.error';
import { quote } from './log-text';

/**
 * The call was turned away at the door, unqueued: more callers were in line than it could wait through,
 * at the pace this service has seen the line move. A LockTimeoutError (it would not have been granted in
 * time), so `onTimeout: 'skip'` and handlers of timeouts cover it; over HTTP a 503 whose `Retry-After`
 * is when the line it saw would have cleared.
 */
export class LockShedError extends LockTimeoutError {
  /** How many were in line. */
  readonly inLine: number;
  /** How long the line takes per place here, ms. */
  readonly perPlaceMs: number;
  /** When the line it saw would have cleared, ms from now (a shed always says). */
  declare readonly retryAfterMs: number;

  constructor(key: string, inLine: number, perPlaceMs: number, waitMs: number) {
    const perPlace = Math.max(1, Math.round(perPlaceMs));
    const retryAfter = Math.ceil(inLine * perPlaceMs);
    super(
      key,
      0,
      { retryAfterMs: retryAfter },
      `Lock ${quote(key)} was not waited for: ${inLine} callers were in line, about ${perPlace} ms each here, ` +
        `more than this call could wait through (${waitMs} ms). It was turned away at once, without ` +
        `queueing; the line should clear in about ${retryAfter} ms. Retry then, give the call a longer ` +
        'wait, or take load off this key.',
    );
    this.inLine = inLine;
    this.perPlaceMs = perPlaceMs;
  }
}
