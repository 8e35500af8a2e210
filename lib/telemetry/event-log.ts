/**
 * The `telemetry.logger` option: the lock events worth a log line, written to a logger the application
 * gives (a Nest `Logger`, `console`, pino): a lock not granted (warn; a skip is not logged, it is the job
 * running elsewhere) and a lease lost while held (error). Other events are metrics, not logs.
 *
 * A warning says why the call was not granted, from its error: turned away at the door (LockShedError),
 * cut for overload, cut by the call's deadline, or a wait that ran out its waitTimeout. Under overload one
 * lock can fail a thousand calls in seconds, so warnings are summarised per lock name: the first of a
 * window is written at once, the rest are counted and written as one line when the window ends. A lost
 * lease is an incident and is always written at once.
 */
import { LockShedError } from '../errors/lock-shed.error';
import { LockTimeoutError } from '../errors/lock-timeout.error';
import { quote, quoteList } from '../errors/log-text';
import type { LockEvent } from './lock-events';
import type { LockLogger } from './telemetry-options';

/**
 * How long warnings of one lock are counted before their summary is written: at most two lines per lock
 * in this time under a sustained overload, and the summary still comes while someone is looking (the
 * same period as a usual metrics export, so the log and the dashboard tell of the same stretch).
 */
export const WARNING_SUMMARY_MS = 10_000;

/**
 * Lock names summarised in one window. Names are key templates and labels, so a few dozen is usual; past
 * this, warnings of further locks are counted together, so a runaway set of labels cannot grow the map.
 */
export const MAX_SUMMARISED_LOCKS = 1_000;

/** Keys listed in a summary line; the rest are an ellipsis (the keys are on the events and spans). */
const LISTED_KEYS = 3;

/** Why a call was not granted, as a warning tells it. */
type Refusal = 'shed' | 'overload' | 'deadline' | 'timeout';

/** How each refusal is counted in a summary line, in this order. */
const SUMMARY_WORDS: Record<Refusal, string> = {
  shed: 'turned away at the door',
  overload: 'cut for overload',
  deadline: 'cut by their deadline',
  timeout: 'ran out their waitTimeout',
};

/** Warnings of one lock name in the current window, after the one written at once. */
interface Pending {
  counts: Record<Refusal, number>;
  keys: Set<string>;
  moreKeys: boolean;
}

/** `onEvent` that logs; `flush()` writes the pending summaries now (for a service's close). */
export interface LockEventLog {
  (event: LockEvent): void;
  flush(): void;
}

/** `onEvent` that logs to `logger`, then passes each event on to `own` (the application's onEvent). */
export function loggedEvents(logger: LockLogger, own?: (event: LockEvent) => void): LockEventLog {
  const pending = new Map<string, Pending>();
  let others = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  // A logger that throws must not break the lock call, nor the timer, where it would crash the process.
  const write = (level: 'warn' | 'error', message: string) => {
    try {
      logger[level](message);
    } catch {}
  };

  const flush = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    for (const [name, entry] of pending) {
      const line = summary(entry);
      if (line) write('warn', `Lock ${quote(name)} (${listKeys(entry)}): ${line}`);
    }
    if (others > 0) {
      write(
        'warn',
        `Locks: ${calls(others)} not granted in the last ${WARNING_SUMMARY_MS / 1000} s, of locks ` +
          `past the first ${MAX_SUMMARISED_LOCKS} warned about (lock.acquisitions counts them by name)`,
      );
    }
    pending.clear();
    others = 0;
  };

  const warn = (event: LockEvent) => {
    const refusal = refusalOf(event.error);
    let entry = pending.get(event.name);
    if (entry === undefined) {
      if (pending.size >= MAX_SUMMARISED_LOCKS) {
        others += 1;
        return;
      }
      const counts = { shed: 0, overload: 0, deadline: 0, timeout: 0 };
      entry = { counts, keys: new Set(), moreKeys: false };
      pending.set(event.name, entry);
      if (timer === undefined) {
        timer = setTimeout(flush, WARNING_SUMMARY_MS);
        // A summary still to come must not keep the process alive.
        timer.unref();
      }
      write('warn', `Lock ${quote(event.name)} (${quoteList(event.keys)}): ${warningText(refusal, event)}`);
      return;
    }
    entry.counts[refusal] += 1;
    const keys = quoteList(event.keys);
    if (entry.keys.has(keys)) return;
    if (entry.keys.size < LISTED_KEYS) entry.keys.add(keys);
    else entry.moreKeys = true;
  };

  const log = ((event: LockEvent) => {
    if (event.kind === 'timeout' && !event.skipped) warn(event);
    else if (event.kind === 'lost') {
      write(
        'error',
        `Lock ${quote(event.name)} (${quoteList(event.keys)}) lost after ${Math.round(event.heldMs ?? 0)} ms: ${(event.error as Error | undefined)?.message ?? event.reason}`,
      );
    }
    own?.(event);
  }) as LockEventLog;
  log.flush = flush;
  return log;
}

/**
 * Reads the error defensively. A deadline cut says so in `deadline`; a wait cut for overload otherwise
 * (its key's line standing) is a LockTimeoutError, not a shed, with a numeric `retryAfterMs` (or
 * `overload: true`), which an engine without that rule does not set: then it is a plain timeout.
 */
export function refusalOf(error: unknown): Refusal {
  if (error instanceof LockShedError) return 'shed';
  if (!(error instanceof LockTimeoutError)) return 'timeout';
  if (error.deadline) return 'deadline';
  return retryAfter(error) !== undefined || (error as { overload?: unknown }).overload === true
    ? 'overload'
    : 'timeout';
}

/** The error's `retryAfterMs` when it is a number. */
function retryAfter(error: unknown): number | undefined {
  const value = (error as { retryAfterMs?: unknown } | undefined)?.retryAfterMs;
  return typeof value === 'number' ? Math.round(value) : undefined;
}

function warningText(refusal: Refusal, event: LockEvent): string {
  const waited = Math.round(event.waitedMs ?? 0);
  const error = event.error;
  const retryMs = retryAfter(error);
  const retry = retryMs === undefined ? '' : `; retry in about ${retryMs} ms`;
  if (refusal === 'shed') {
    const { inLine } = error as LockShedError;
    return (
      `turned away at the door, unqueued: ${inLine} callers were in line, more than it could wait ` +
      `through; the line should clear in about ${retryMs ?? 0} ms`
    );
  }
  if (refusal === 'overload') return `stopped waiting after ${waited} ms, cut for overload${retry}`;
  if (refusal === 'deadline') {
    const { leftMs, holdMs } = (error as LockTimeoutError).deadline ?? { leftMs: 0, holdMs: 0 };
    if (leftMs <= 0) {
      return `not asked for: the call's deadline had passed ${Math.round(-leftMs)} ms before${retry}`;
    }
    return (
      `stopped waiting after ${waited} ms, cut by the call's deadline: ${Math.round(leftMs)} ms were ` +
      `left and a hold takes about ${Math.round(holdMs)} ms${retry}`
    );
  }
  return `not granted within ${waited} ms`;
}

/** `52 more calls not granted in the last 10 s: 37 turned away at the door, …`, or '' for none. */
function summary(entry: Pending): string {
  const parts = (Object.keys(SUMMARY_WORDS) as Refusal[])
    .filter((refusal) => entry.counts[refusal] > 0)
    .map((refusal) => `${entry.counts[refusal]} ${SUMMARY_WORDS[refusal]}`);
  if (parts.length === 0) return '';
  const total = Object.values(entry.counts).reduce((sum, count) => sum + count, 0);
  return `${calls(total)} not granted in the last ${WARNING_SUMMARY_MS / 1000} s: ${parts.join(', ')}`;
}

const calls = (count: number) => `${count} more call${count === 1 ? '' : 's'}`;

function listKeys(entry: Pending): string {
  return [...entry.keys, ...(entry.moreKeys ? ['…'] : [])].join(', ');
}
