/**
 * How long to wait for one quorum node's reply: at least the configured node timeout, and longer while
 * the replies this node has sent have been slower, as TCP sets its retransmission timeout (RFC 6298: the
 * smoothed round trip plus four times its mean deviation). On a machine busy enough that round trips of
 * 150 ms are normal, a fixed 100 ms would count every node as failed and refuse grants a calm machine
 * gives; a node that stopped answering sends no replies, so it cannot raise its own timeout. Replies that
 * came after their call had timed out are counted too: they are the ones that say the timeout is short.
 */

/** How the smoothed round trip and its deviation follow each new sample (RFC 6298's alpha and beta). */
const ALPHA = 1 / 8;
const BETA = 1 / 4;

export class ReplyPace {
  private smoothed: number | undefined;
  private deviation = 0;

  /** `floor`: the configured timeout, never gone below; `cap`: the longest the timeout may grow to. */
  constructor(
    readonly floor: number,
    readonly cap: number,
  ) {}

  /** The timeout in force, ms. */
  get timeout(): number {
    if (this.smoothed === undefined) return this.floor;
    return Math.max(this.floor, Math.min(this.cap, Math.ceil(this.smoothed + 4 * this.deviation)));
  }

  /** A reply came `ms` after its call was sent (in time or not). */
  sample(ms: number): void {
    if (this.smoothed === undefined) {
      this.smoothed = ms;
      this.deviation = ms / 2;
      return;
    }
    this.deviation = (1 - BETA) * this.deviation + BETA * Math.abs(this.smoothed - ms);
    this.smoothed = (1 - ALPHA) * this.smoothed + ALPHA * ms;
  }
}
