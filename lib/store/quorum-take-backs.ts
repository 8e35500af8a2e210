/**
 * A quorum's releases and cancels that a node did not answer. The call itself is decided by the nodes
 * that did (a release by a majority, a cancel by any), but the silent node may still hold the caller's
 * vote, or its place in line, until the ttl runs out there: a vote that keeps the lock from a majority a
 * while longer, and a place that holds up its line. Each such node is sent the release again once it
 * answers, per node, so one node out of reach never costs the others anything.
 *
 * One request at a time per node: while a node stays silent (stopped, or unreachable) its retries back
 * off from 25 ms to 500 ms, and the tickets it owes wait in line behind the one being tried, so an
 * outage costs one request per node per retry, not one per ticket. Once a node answers, the tickets it
 * owes are sent one after another. A ticket is dropped once the node has let it go anyway (its ttl).
 */
import { setBounded } from '../bounded-map';
import type { LockTicket } from './lock-store';

/** The first retry's delay; each next one doubles, up to RETRY_MAX_MS. */
const RETRY_MIN_MS = 25;
const RETRY_MAX_MS = 500;

export interface Owed {
  readonly ticket: LockTicket;
  /** The releaser's fence (0 for a waiter that leaves): the node hands the lock on with the next. */
  readonly fence: number;
  /** When the node lets it go by itself (this process' clock, ms). */
  readonly until: number;
}

interface NodeDebt {
  readonly owed: Map<string, Owed>;
  timer?: NodeJS.Timeout;
  sending: boolean;
  delay: number;
}

export class QuorumTakeBacks {
  private readonly debts: NodeDebt[];
  private closed = false;

  /**
   * `send` runs the release on node `node` and resolves once the node answered it; `clock` is the store's.
   */
  constructor(
    nodes: number,
    private readonly send: (node: number, owed: Owed) => Promise<unknown>,
    private readonly clock: () => number,
  ) {
    this.debts = Array.from({ length: nodes }, () => ({
      owed: new Map(),
      sending: false,
      delay: RETRY_MIN_MS,
    }));
  }

  /** Node `node` did not answer the release or cancel of `owed.ticket`: send it again until it does. */
  add(node: number, owed: Owed): void {
    if (this.closed) return;
    const debt = this.debts[node];
    setBounded(debt.owed, owed.ticket.token, owed);
    if (!debt.sending && !debt.timer) this.schedule(node, debt.delay);
  }

  /**
   * `token` tries again (or holds the lock now): what it owes the nodes from before is no longer owed.
   * Sent late, a release of a waiter that has since been granted would free a node its lease holds.
   */
  forget(token: string): void {
    for (const debt of this.debts) debt.owed.delete(token);
  }

  /** One last attempt for each ticket still owed, then no more retries. */
  async close(): Promise<void> {
    this.closed = true;
    const last: Promise<unknown>[] = [];
    this.debts.forEach((debt, node) => {
      clearTimeout(debt.timer);
      for (const owed of debt.owed.values()) last.push(this.send(node, owed).catch(() => {}));
      debt.owed.clear();
    });
    await Promise.all(last);
  }

  private schedule(node: number, delay: number): void {
    const debt = this.debts[node];
    debt.timer = setTimeout(() => {
      debt.timer = undefined;
      void this.drain(node);
    }, delay);
    debt.timer.unref();
  }

  /** Sends what `node` owes, oldest first, until it is all answered or the node stays silent. */
  private async drain(node: number): Promise<void> {
    const debt = this.debts[node];
    debt.sending = true;
    try {
      for (const [token, owed] of debt.owed) {
        if (this.closed) return;
        if (owed.until <= this.clock()) {
          debt.owed.delete(token);
          continue;
        }
        try {
          await this.send(node, owed);
        } catch {
          debt.delay = Math.min(debt.delay * 2, RETRY_MAX_MS);
          this.schedule(node, debt.delay);
          return;
        }
        debt.owed.delete(token);
        debt.delay = RETRY_MIN_MS;
      }
    } finally {
      debt.sending = false;
    }
  }
}
