/**
 * The start window of one service: how long a grant pushed to one of its waiters from another process
 * is reserved until that waiter confirms it. It travels in the waiter's token, so whoever hands the
 * lock on reserves it for that long (docs/protocol.md, "Start window").
 *
 * Too short, and a waiter that is merely slow to read its push finds the grant gone and goes back to
 * the front of the line (it keeps its place, but the line waits for its call), or its confirmation
 * reaches Redis after the grant ran out and its lease is lost; too long, and a stalled process holds up
 * the line for the whole window. What it must cover is a push and a confirmation on their way: about one
 * round trip to Redis, with Redis' and this process's own scheduling delays. So it follows the p99 of
 * the round trips of this service's waiters, times a factor, between a floor and a ceiling. Not the
 * push latency a waiter sees: that includes the waiter's own stalls, and would size the window to the
 * very stalls it is meant to cut short (a round trip of well under a ms rarely spans one). Until enough
 * were seen it is the ceiling: a service starts cautious.
 */
import type { StartWindowRule } from '../options/service-options';

/** Round trips remembered: the p99 of the last SAMPLES is the second highest of them... */
const SAMPLES = 200;
/** ...recomputed every EVERY of them, so that reading the window costs nothing per call. */
const EVERY = 20;

export class StartWindows {
  private readonly latencies = new Float64Array(SAMPLES);
  private seen = 0;
  private window: number;

  constructor(private readonly rule: StartWindowRule) {
    this.window = rule.max;
  }

  /** The window for a waiter whose claim window is `claimWindow` (whole ms, never more than it). */
  windowFor(claimWindow: number): number {
    return Math.min(claimWindow, this.window);
  }

  /** A call of one of this service's waiters was answered `ms` after it was sent. */
  observe(ms: number): void {
    this.latencies[this.seen % SAMPLES] = Math.max(0, ms);
    this.seen++;
    if (this.seen % EVERY === 0) this.window = this.size();
  }

  private size(): number {
    const { factor, min, max } = this.rule;
    const kept = this.latencies.slice(0, Math.min(this.seen, SAMPLES)).sort();
    const p99 = kept[Math.min(kept.length - 1, Math.floor(kept.length * 0.99))];
    return Math.round(Math.min(max, Math.max(min, factor * p99)));
  }
}
