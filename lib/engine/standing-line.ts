/**
 * A standing-line rule (CoDel, as in "Fail at Scale"), per key, in memory: when every call served from a
 * key's line during an interval waited longer than the target, the line is standing, and while it stands
 * a new call waits at most twice the target (its door is cut to match). Served at once counts as 0 ms.
 *
 * The target and interval are fixed (`shed: { target, interval }`) or, by default, scaled to the pace
 * the key's line moves at (ms per place, LineTimes): a target of PACED_TARGET places (or
 * `shed: { places }`) and an interval of PACED_INTERVAL targets. Below capacity a line drains now and
 * then, so over an interval of 150 places some caller is served within 15 of them; past capacity none
 * is, and the line then settles at about 30 places instead of the callers' whole patience. Modelled
 * with Poisson arrivals at 90 % of a key's capacity, it turns away 3 callers in 10,000 when holds vary
 * by half their length, 2 in 100 when they vary as much as they last (exponential); a shorter target
 * would keep a shorter line past capacity and turn away more at 90 %. The floors keep event-loop jitter
 * on keys held for microseconds from reading as a standing line.
 */
const MAX_KEYS = 4_096;
export const PACED_TARGET = 15;
const PACED_INTERVAL = 10;
const MIN_TARGET_MS = 20;
const MIN_INTERVAL_MS = 200;

/** A fixed rule, or one scaled to each key's pace: a target of `places` at that pace. */
export type StandingRule = { target: number; interval: number } | { places: number };

interface Line {
  /** The least wait of a call served since `since`, ms. */
  least: number;
  since: number;
  standing: boolean;
}

export class StandingLines {
  private readonly keys = new Map<string, Line>();

  /** `pace`: ms per place of a key's line, as this service has seen it (undefined before any was seen). */
  constructor(
    private readonly rule: StandingRule,
    private readonly pace: (key: string) => number | undefined,
  ) {}

  served(key: string, waitedMs: number, at: number): void {
    let line = this.keys.get(key);
    if (!line) {
      if (this.keys.size >= MAX_KEYS) this.keys.delete(this.keys.keys().next().value as string);
      line = { least: waitedMs, since: at, standing: false };
      this.keys.set(key, line);
    }
    line.least = Math.min(line.least, waitedMs);
    const times = this.timesOf(key);
    if (!times || at - line.since < times.interval) return;
    line.standing = line.least > times.target;
    line.least = Number.POSITIVE_INFINITY;
    line.since = at;
  }

  /** The wait a new call on `key` gets: `waitMs`, or twice the target while the line stands. */
  patience(key: string, waitMs: number): number {
    if (!this.keys.get(key)?.standing) return waitMs;
    const times = this.timesOf(key);
    return times ? Math.min(waitMs, 2 * times.target) : waitMs;
  }

  private timesOf(key: string): { target: number; interval: number } | undefined {
    if ('target' in this.rule) return this.rule;
    const pace = this.pace(key);
    if (!pace) return undefined;
    const target = Math.max(MIN_TARGET_MS, this.rule.places * pace);
    return { target, interval: Math.max(MIN_INTERVAL_MS, PACED_INTERVAL * target) };
  }
}
