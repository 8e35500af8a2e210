/**
 * What this service has seen of each key's line: how long a hold lasts, and how long the line takes per
 * place (a waiter granted after waiting `w` ms from place `p` gives w / p, departures ahead of it
 * included: the pace a newcomer's wait is measured by). Each is a mean that weighs the latest sample a
 * quarter, so it follows a change within a few. A call with a deadline keeps the hold back for its work
 * after the wait; a join is turned away at the door when the line is longer than its wait could see
 * through (LockEngine). Bounded: past MAX_KEYS the key seen first is forgotten, and learnt again.
 */
const MAX_KEYS = 4_096;

interface Seen {
  hold?: number;
  place?: number;
}

export class LineTimes {
  private readonly keys = new Map<string, Seen>();

  hold(key: string, ms: number): void {
    const seen = this.seen(key);
    seen.hold = mean(seen.hold, ms);
  }

  place(key: string, ms: number): void {
    const seen = this.seen(key);
    seen.place = mean(seen.place, ms);
  }

  /** The usual hold of `key` in ms; 0 before any was seen. */
  typicalHold(key: string): number {
    return this.keys.get(key)?.hold ?? 0;
  }

  /** ms the line of `key` takes per place; undefined before any waiter was served from it. */
  perPlace(key: string): number | undefined {
    return this.keys.get(key)?.place;
  }

  private seen(key: string): Seen {
    let seen = this.keys.get(key);
    if (!seen) {
      if (this.keys.size >= MAX_KEYS) this.keys.delete(this.keys.keys().next().value as string);
      seen = {};
      this.keys.set(key, seen);
    }
    return seen;
  }
}

function mean(previous: number | undefined, sample: number): number {
  return previous === undefined ? sample : previous + (sample - previous) / 4;
}
