/**
 * A standing-line rule (CoDel, as in "Fail at Scale"), per key, in memory. When every call served from a
 * key's line during an interval waited longer than the target, the line is standing: while it stands, a
 * new call that serves someone waits at most half the target, and its door is cut to match. The line
 * stops standing after an interval in which nearly every such call that came was served: the load fell
 * back below what the key can serve. Served at once counts as 0 ms.
 *
 * The trip and the cut are two thresholds on purpose. Below capacity a line drains now and then, so over
 * an interval of 150 places some caller is served within 15 of them, and the rule does not trip; past
 * capacity none is. Once tripped, the short door keeps the line near 7 places instead of 30 (or the
 * callers' whole patience), at the cost of a line that empties a little more often. Exit by the share
 * served, not by a short wait, because a short line past capacity still serves someone at once now and
 * then. Modelled (Poisson arrivals, holds varying by half their length): at 90 % of a key's capacity
 * it turns away 6 callers in 10,000; at 120 % the median wait is 5 places and the key is busy 99 % of the
 * time, against 28 places and 100 % for a cut to twice the target. The floors keep event-loop jitter on
 * keys held for microseconds from reading as a standing line.
 *
 * The target and interval are fixed (`shed: { target, interval }`) or, by default, scaled to the pace
 * the key's line moves at (ms per place, LineTimes): a target of PACED_TARGET places (or
 * `shed: { places }`) and an interval of PACED_INTERVAL targets.
 */
const MAX_KEYS = 4_096;
export const PACED_TARGET = 15;
const PACED_INTERVAL = 10;
const MIN_TARGET_MS = 20;
const MIN_INTERVAL_MS = 200;
/** A standing line stops standing after an interval that served at least this share of the calls that came. */
const SERVED_TO_STOP = 0.95;

/** A fixed rule, or one scaled to each key's pace: a target of `places` at that pace. */
export type StandingRule = { target: number; interval: number } | { places: number };

interface Line {
  /** The least wait of a call served since `since`, ms. */
  least: number;
  since: number;
  standing: boolean;
  /** Calls that serve someone: how many came to this key since `since`, and how many were served. */
  came: number;
  served: number;
}

export class StandingLines {
  private readonly keys = new Map<string, Line>();

  /** `pace`: ms per place of a key's line, as this service has seen it (undefined before any was seen). */
  constructor(
    private readonly rule: StandingRule,
    private readonly pace: (key: string) => number | undefined,
  ) {}

  /** A call that serves someone came to `key`'s line. */
  came(key: string, at: number): void {
    this.line(key, at).came++;
  }

  /** A call on `key` was served after `waitedMs`; `serving`: it serves someone (it counted as come). */
  served(key: string, waitedMs: number, at: number, serving = true): void {
    const line = this.line(key, at);
    line.least = Math.min(line.least, waitedMs);
    if (serving) line.served++;
    const times = this.timesOf(key);
    if (!times || at - line.since < times.interval) return;
    line.standing = line.standing ? line.served < SERVED_TO_STOP * line.came : line.least > times.target;
    line.least = Number.POSITIVE_INFINITY;
    line.since = at;
    line.came = 0;
    line.served = 0;
  }

  /** The wait a new call on `key` gets: `waitMs`, or half the target while the line stands. */
  patience(key: string, waitMs: number): number {
    if (!this.keys.get(key)?.standing) return waitMs;
    const times = this.timesOf(key);
    return times ? Math.min(waitMs, times.target / 2) : waitMs;
  }

  /** The target of `key`'s line in ms while it stands (every call served lately waited past it), else undefined. */
  standingTarget(key: string): number | undefined {
    return this.keys.get(key)?.standing ? this.timesOf(key)?.target : undefined;
  }

  private line(key: string, at: number): Line {
    let line = this.keys.get(key);
    if (!line) {
      if (this.keys.size >= MAX_KEYS) this.keys.delete(this.keys.keys().next().value as string);
      line = { least: Number.POSITIVE_INFINITY, since: at, standing: false, came: 0, served: 0 };
      this.keys.set(key, line);
    }
    return line;
  }

  private timesOf(key: string): { target: number; interval: number } | undefined {
    if ('target' in this.rule) return this.rule;
    const pace = this.pace(key);
    if (!pace) return undefined;
    const target = Math.max(MIN_TARGET_MS, this.rule.places * pace);
    return { target, interval: Math.max(MIN_INTERVAL_MS, PACED_INTERVAL * target) };
  }
}
