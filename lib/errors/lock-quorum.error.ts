import { RedisUnavailableError } from './redis-unavailable.error';

/** Why one node of a quorum did not answer a call. */
export interface NodeFailure {
  /** The node, as `host:port`. */
  node: string;
  /** What went wrong there (no reply in time, connection down, a refused command...). */
  reason: string;
}

/**
 * Fewer than a majority of a quorum's nodes answered (Redlock over independent masters): nothing can be
 * granted, renewed or released with certainty. `nodes` says which failed and why. A subclass of
 * RedisUnavailableError (same code), so code that handles an unreachable Redis handles this too.
 */
export class LockQuorumError extends RedisUnavailableError {
  readonly nodes: readonly NodeFailure[];

  constructor(answered: number, total: number, failures: readonly NodeFailure[], key?: string) {
    const majority = Math.floor(total / 2) + 1;
    const detail = failures.map((f) => `${f.node}: ${f.reason}`).join('; ');
    super(`${answered} of ${total} nodes answered, a majority needs ${majority} (${detail})`, key);
    this.nodes = Object.freeze([...failures]);
  }
}
