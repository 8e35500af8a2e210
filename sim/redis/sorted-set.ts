/**
 * A sorted set as Redis orders it: by score, then by member (Redis compares members' bytes; here their
 * UTF-16 code units, the same order for ASCII, which every lock key and token is). One array kept in
 * order, found by binary search, beside a map of each member's score.
 */

export interface Scored {
  readonly member: string;
  readonly score: number;
}

/** One end of a score range: "(" makes it exclusive. */
export interface ScoreBound {
  readonly score: number;
  readonly exclusive: boolean;
}

function before(a: Scored, score: number, member: string): boolean {
  return a.score < score || (a.score === score && a.member < member);
}

export class SortedSet {
  private readonly scores = new Map<string, number>();
  private readonly order: Scored[] = [];

  get size(): number {
    return this.order.length;
  }

  score(member: string): number | undefined {
    return this.scores.get(member);
  }

  /** In order, lowest score first. */
  entries(): readonly Scored[] {
    return this.order;
  }

  /** Adds `member` or moves it to `score`; true when it is new. */
  add(member: string, score: number): boolean {
    const old = this.scores.get(member);
    if (old === score) return false;
    if (old !== undefined) this.order.splice(this.lowerBound(old, member), 1);
    this.scores.set(member, score);
    this.order.splice(this.lowerBound(score, member), 0, { member, score });
    return old === undefined;
  }

  remove(member: string): boolean {
    const old = this.scores.get(member);
    if (old === undefined) return false;
    this.order.splice(this.lowerBound(old, member), 1);
    this.scores.delete(member);
    return true;
  }

  /** The member's place, lowest score first (0-based). */
  rank(member: string): number | undefined {
    const score = this.scores.get(member);
    return score === undefined ? undefined : this.lowerBound(score, member);
  }

  /** The members whose scores lie within `min`..`max`, in order. */
  inRange(min: ScoreBound, max: ScoreBound): Scored[] {
    const from = this.firstAbove(min);
    const out: Scored[] = [];
    for (let i = from; i < this.order.length; i++) {
      const { score } = this.order[i];
      if (score > max.score || (max.exclusive && score === max.score)) break;
      out.push(this.order[i]);
    }
    return out;
  }

  /** The first index whose entry does not sort before (score, member). */
  private lowerBound(score: number, member: string): number {
    let low = 0;
    let high = this.order.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (before(this.order[mid], score, member)) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  /** The first index whose score is within `min`. */
  private firstAbove(min: ScoreBound): number {
    let low = 0;
    let high = this.order.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      const { score } = this.order[mid];
      if (score < min.score || (min.exclusive && score === min.score)) low = mid + 1;
      else high = mid;
    }
    return low;
  }
}
