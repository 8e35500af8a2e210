/**
 * The hand-offs a quorum's nodes announce to this service's waiters (quorum-release.lua), and the clock
 * bounds that date them. A node that hands the lock to a waiter publishes "<token> <fence> <node clock
 * µs>". Once a majority did with one fence, that fence is recorded on a majority and the lock is the
 * waiter's there until the earliest those holds may end: each node's hand-off time, translated to this
 * process' clock by an upper bound of the offset between the two clocks, plus the claim window. The
 * waiter may then start at once and confirm later by a renewal: a grant wake-up, as from one server.
 * If the nodes disagree, or a node's clock is not bounded yet, the waiter is only told to try again
 * (a commit of what it was handed, else a vote) after `handedWait`: the nodeTimeout, the time a node is
 * given to answer a call, since the nodes' messages are its answers to the release. A few ms would do
 * on an idle machine, but on a busy one a descheduled node or process spreads agreeing messages over
 * tens of ms, and each premature try costs a command on every node that handed the lock.
 */
import { performance } from 'node:perf_hooks';
import { CLOCK_RATE_DRIFT, type WakeMessage } from './lock-store';
import { claimWindowOf } from './token';

/** How long a hand-off no waiter asked about is remembered, ms (late messages of one already served). */
const HANDED_KEEP_MS = 1_000;

const now = (): number => performance.now();

/** One node's hand-off to a waiter: the fence, and the earliest its hold may end, on this clock. */
interface Handed {
  fence: number;
  endsBy: number | undefined;
}

interface Entry {
  nodes: Map<number, Handed>;
  timer: NodeJS.Timeout | undefined;
  /** The waiter was told it holds the lock. */
  granted: boolean;
}

export class QuorumHandoffs {
  private readonly entries = new Map<string, Entry>();
  /**
   * Per node, the least (node clock − this clock) seen, ms, and when: an upper bound of the offset
   * between the clocks, from replies that carry the node's time (a reply's server time was read after
   * the call was sent).
   */
  private readonly offsets: Array<{ value: number; at: number } | undefined>;

  constructor(
    nodes: number,
    private readonly majority: number,
    /** The drift a validity of `ttl` allows for (the store's validityDrift). */
    private readonly drift: (ttl: number) => number,
    private readonly wake: (message: WakeMessage) => void,
    /** How long a waiter some nodes handed the lock to waits for a majority of them, ms. */
    private readonly handedWait: number,
  ) {
    this.offsets = Array.from({ length: nodes }, () => undefined);
  }

  /** Records a reply of node `index` carrying its clock (`serverUs`) to a call sent at `sent` (this clock). */
  observeClock(index: number, serverUs: number, sent: number): void {
    if (!Number.isFinite(serverUs)) return;
    const value = serverUs / 1000 - sent;
    if (value < this.offsetBound(index, sent)) this.offsets[index] = { value, at: sent };
  }

  /** Node `index` announced a hand-off (the message as published). */
  onMessage(index: number, message: string): void {
    const [token, fenceText, atText] = message.split(' ');
    const fence = Number(fenceText);
    const atUs = Number(atText);
    if (!token || !Number.isFinite(fence) || !Number.isFinite(atUs)) return;
    const claim = claimWindowOf(token);
    const bound = this.offsetBound(index, now());
    const entry = this.entries.get(token) ?? this.open(token);
    entry.nodes.set(index, {
      fence,
      endsBy: Number.isFinite(bound) ? atUs / 1000 - bound + claim : undefined,
    });
    if (entry.granted) return;
    const ends = [...entry.nodes.values()]
      .filter((h) => h.fence === fence && h.endsBy !== undefined)
      .map((h) => h.endsBy as number)
      .sort((a, b) => b - a);
    if (ends.length < this.majority) return;
    entry.granted = true;
    // Held while a majority of these holds last: until the majority-th latest ends, less the drift.
    const validUntil = ends[this.majority - 1] - this.drift(claim);
    this.wake({ kind: 'grant', token, fence, serverMs: validUntil - claim });
  }

  /**
   * The highest fence the nodes handed `token` so far (they normally agree), or undefined if none did;
   * forgotten once read.
   */
  take(token: string): number | undefined {
    const entry = this.entries.get(token);
    if (!entry) return undefined;
    clearTimeout(entry.timer);
    this.entries.delete(token);
    return Math.max(...[...entry.nodes.values()].map((h) => h.fence));
  }

  clear(): void {
    for (const { timer } of this.entries.values()) clearTimeout(timer);
    this.entries.clear();
  }

  /**
   * An upper bound of (node clock − this clock) at `at`, ms: the least seen, loosened by CLOCK_RATE_DRIFT
   * of the time since it was seen.
   */
  private offsetBound(index: number, at: number): number {
    const best = this.offsets[index];
    return best ? best.value + Math.max(0, at - best.at) * CLOCK_RATE_DRIFT : Number.POSITIVE_INFINITY;
  }

  private open(token: string): Entry {
    const entry: Entry = { nodes: new Map(), timer: undefined, granted: false };
    const forget = (): void => {
      if (this.entries.get(token) === entry) this.entries.delete(token);
    };
    const giveUp = (): void => {
      if (!entry.granted) this.wake({ kind: 'head', token, holdMs: 0 });
      // Late messages of a hand-off already served land here too: forget them after a while.
      entry.timer = setTimeout(forget, HANDED_KEEP_MS);
      entry.timer.unref();
    };
    // After the timer, messages already received but not yet read (a late timer runs before the poll
    // phase) still count.
    entry.timer = setTimeout(() => setImmediate(giveUp), this.handedWait);
    entry.timer.unref();
    this.entries.set(token, entry);
    return entry;
  }
}
