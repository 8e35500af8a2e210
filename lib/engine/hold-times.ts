/**
 * How long this service's holds of each key last: a mean that weighs the latest hold a quarter, so it
 * follows a change within a few holds. A call with a deadline keeps that much back for its work after
 * the wait (LockEngine.take). Bounded: past MAX_KEYS the key seen first is forgotten, and learnt again
 * from its next hold.
 */
const MAX_KEYS = 4_096;

export class HoldTimes {
  private readonly means = new Map<string, number>();

  record(key: string, ms: number): void {
    const mean = this.means.get(key);
    if (mean !== undefined) {
      this.means.set(key, mean + (ms - mean) / 4);
      return;
    }
    if (this.means.size >= MAX_KEYS) this.means.delete(this.means.keys().next().value as string);
    this.means.set(key, ms);
  }

  /** The usual hold of `key` in ms; 0 before any was seen. */
  typical(key: string): number {
    return this.means.get(key) ?? 0;
  }
}
