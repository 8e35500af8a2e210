/**
 * Which attempt of each quorum caller is its latest. The votes of an attempt that failed are given back
 * only if no attempt of the same token came after it (a vote round, a hand-off started on, a renewal):
 * given back then, they would undo the holds of the later one. A waiter handed the lock while its vote
 * round still waited for a slow node starts on the hand-off and renews it; the round's give-back, when
 * it failed, freed the holder's nodes for a second caller's majority.
 */
export class QuorumAttempts {
  /** The attempt under way of each token still waiting or holding. */
  private readonly latest = new Map<string, number>();

  /**
   * @param began told of each new attempt: the releases still owed for the token's earlier ones are not
   *   sent (QuorumTakeBacks.forget), for the same reason.
   */
  constructor(private readonly began: (token: string) => void) {}

  /** A new attempt of `token`: the number it goes by. */
  next(token: string): number {
    this.began(token);
    const attempt = (this.latest.get(token) ?? 0) + 1;
    this.latest.set(token, attempt);
    return attempt;
  }

  /** Whether `attempt` is `token`'s latest, or the token is done (released, cancelled, a try that failed). */
  isLatest(token: string, attempt: number): boolean {
    const latest = this.latest.get(token);
    return latest === undefined || latest === attempt;
  }

  /** `token` waits and holds no more: any vote of it that comes in late is given back. */
  done(token: string): void {
    this.latest.delete(token);
  }
}
