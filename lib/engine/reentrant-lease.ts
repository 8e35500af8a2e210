/**
 * A nested acquisition of a key the current async call chain already holds. It shares the outer
 * lease's token, fence and signal; releasing it does nothing, because the outer scope still needs the
 * lock. This is what makes a `using` (or @Locked method) that calls another for the same key safe.
 */
import './dispose-symbol';
import type { Lease } from '../lease';
import type { OwnedLease } from './held-lease';

export class ReentrantLease implements Lease {
  constructor(private readonly outer: OwnedLease) {}

  get key(): string {
    return this.outer.key;
  }
  get keys(): readonly string[] {
    return this.outer.keys;
  }
  get fences(): Readonly<Record<string, number>> {
    return this.outer.fences;
  }
  get tokens(): Readonly<Record<string, string>> {
    return this.outer.tokens;
  }
  get token(): string {
    return this.outer.token;
  }
  get fence(): number {
    return this.outer.fence;
  }
  get signal(): AbortSignal {
    return this.outer.signal;
  }

  extend(ttl?: number): Promise<void> {
    return this.outer.extend(ttl);
  }

  async release(): Promise<void> {}

  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }
}
