/**
 * A standing-line rule (CoDel, as in "Fail at Scale"), per key, in memory: when every call served from a
 * key's line during an interval waited longer than `targetMs`, the line is standing, and while it stands
 * a new call waits at most twice the target (its door is cut to match). Served at once counts as 0 ms.
 * Off unless the service option `shed` gives a target.
 */
const MAX_KEYS = 4_096;

interface Line {
  /** The least wait of a call served since `since`, ms. */
  least: number;
  since: number;
  standing: boolean;
}

export class StandingLines {
  private readonly keys = new Map<string, Line>();

  constructor(
    private readonly targetMs: number,
    private readonly intervalMs: number,
  ) {}

  served(key: string, waitedMs: number, at: number): void {
    let line = this.keys.get(key);
    if (!line) {
      if (this.keys.size >= MAX_KEYS) this.keys.delete(this.keys.keys().next().value as string);
      line = { least: waitedMs, since: at, standing: false };
      this.keys.set(key, line);
    }
    line.least = Math.min(line.least, waitedMs);
    if (at - line.since < this.intervalMs) return;
    line.standing = line.least > this.targetMs;
    line.least = Number.POSITIVE_INFINITY;
    line.since = at;
  }

  /** The wait a new call on `key` gets: `waitMs`, or twice the target while the line stands. */
  patience(key: string, waitMs: number): number {
    return this.keys.get(key)?.standing ? Math.min(waitMs, 2 * this.targetMs) : waitMs;
  }
}
