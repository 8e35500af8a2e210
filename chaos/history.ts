/**
 * What a fault run records, and what every checker reads: each lock call as its worker reported it,
 * the pauses and Redis restarts the nemesis caused, the writes the resource executed (in its own order),
 * and the faults. The coordinator fills it in as the run goes; the checkers (chaos/checks/) only read
 * it, so each can be tested on a history written by hand.
 */
import type { Fault } from './faults/kinds';

/** A call's last report: how it ended, with times on the shared monotonic clock (ms). */
export interface EndMsg {
  t0: number;
  tGrant?: number;
  tWorkEnd?: number;
  lostAt?: number;
  lostReason?: string;
  /** The lost lease's LockLostError `reason` (`'key-missing'`, ...), when the library gave one. */
  lostCode?: string;
  validUntilEnd?: number;
  tEnd: number;
  outcome: string;
  message?: string;
  harnessError?: string;
  /**
   * The holder abandoned its lease (a semaphore's permit or a read-write lock's hold, never released):
   * its window then lasts until the lease's validity ended, which tWorkEnd carries, since it could have
   * used the lease until then.
   */
  abandoned?: boolean;
}

/** One lock call, from its worker's reports. */
export interface OpRec {
  op: string;
  key: string;
  /** A semaphore's permits (more than 1); absent for a mutex. */
  permits?: number;
  /** A read-write lock's mode; absent for a mutex or a semaphore. */
  mode?: 'read' | 'write';
  slot: number;
  pid: number;
  t0: number;
  tGrant?: number;
  fence?: number;
  wall?: number;
  validUntilGrant?: number;
  /** The latest validity end any report carried (validity only grows while held). */
  validUntilLast?: number;
  /** The latest moment the holder reported it was still working under the lease. */
  heldAtLeastUntil?: number;
  tRead?: number;
  seqRead?: number;
  workMs?: number;
  fenced?: { written: boolean; newest: number; tSent: number; tDone: number };
  twin?: { seq: number; t: number };
  skipped?: number;
  end?: EndMsg;
  killedAt?: number;
}

export interface Pause {
  pid: number;
  t0: number;
  t1?: number;
}

/** When a lock server was killed and back: monotonic times, and wall-clock ms around the kill. */
export interface RestartTimes {
  /** Before the kill. */
  t0: number;
  /** Ready again. */
  t1: number;
  /** Wall clock before and after the kill (fences are Redis' wall clock in µs). */
  wall0: number;
  wall1: number;
}

/** A Redis restart without persistence, as the nemesis caused it. */
export interface Restart extends RestartTimes {
  /** The node that was restarted. */
  node: string;
  /** Started again before the longest ttl had passed since the kill (a quorum's restart rule broken). */
  early: boolean;
  /** The fault that restarted it. */
  faultId: number;
}

export interface Violation {
  check: string;
  detail: unknown;
}

/** A fenced write the resource accepted (fenced-write.lua ran its HSET). */
export interface FencedAccept {
  key: string;
  op: string;
  fence: number;
}

/** A SET of an unfenced twin counter, as the resource ran it. */
export interface TwinSet {
  key: string;
  seq: number;
  op: string;
}

export interface Unhandled {
  slot: number;
  pid: number;
  kind: string;
  message: string;
}

/** What a worker reported when it closed its LockService. */
export interface Closed {
  slot: number;
  /** Unhandled rejections it counted (undefined: it never reported). */
  unhandled?: number;
}

export interface History {
  ops: Map<string, OpRec>;
  pauses: Pause[];
  restarts: Restart[];
  fencedAccepts: FencedAccept[];
  twinSets: TwinSet[];
  unhandled: Unhandled[];
  faults: Fault[];
  closes: Closed[];
}

export function emptyHistory(): History {
  return {
    ops: new Map(),
    pauses: [],
    restarts: [],
    fencedAccepts: [],
    twinSets: [],
    unhandled: [],
    faults: [],
    closes: [],
  };
}

/** The kinds of lock the workloads take: a mutex, a semaphore (`permits`), a read-write lock (`mode`). */
export type LockKind = 'mutex' | 'semaphore' | 'rw';

/** Which kind of lock the call was on. */
export const kindOf = (r: OpRec): LockKind =>
  r.mode !== undefined ? 'rw' : (r.permits ?? 1) > 1 ? 'semaphore' : 'mutex';

/**
 * The granted calls of each lock, in grant order (as their holders learnt of them): the mutexes' by
 * default, whose checks forbid any two holders at once; a semaphore's and a read-write lock's have
 * checks of their own.
 */
export function grantsByKey(history: History, which: LockKind | 'all' = 'mutex'): Map<string, OpRec[]> {
  const byKey = new Map<string, OpRec[]>();
  for (const r of history.ops.values()) {
    if (r.tGrant === undefined) continue;
    if (which !== 'all' && kindOf(r) !== which) continue;
    const list = byKey.get(r.key) ?? [];
    list.push(r);
    byKey.set(r.key, list);
  }
  for (const list of byKey.values()) list.sort((a, b) => (a.tGrant as number) - (b.tGrant as number));
  return byKey;
}

/** End of the holder's client-side window: what it believed, cut at the lease's own validity. */
export function windowOf(
  r: OpRec,
  runEnd: number,
): { start: number; belief: number; validity: number; validityLow: number; known: boolean } {
  const start = r.tGrant as number;
  if (r.end) {
    const belief = Math.min(r.end.lostAt ?? Infinity, r.end.tWorkEnd ?? r.end.tEnd);
    const validUntil = r.end.validUntilEnd;
    const validity = validUntil === undefined ? belief : Math.min(belief, validUntil);
    return { start, belief, validity, validityLow: validity, known: validUntil !== undefined };
  }
  if (r.killedAt !== undefined) {
    // Killed before its end report: it may have released any time after its last report, and its
    // validity may have been renewed after it. So the window surely lasted until its last report
    // (cut at the validity it had then), and surely ended by the kill.
    const belief = r.killedAt;
    const low = Math.min(r.heldAtLeastUntil ?? start, r.validUntilLast ?? belief, belief);
    return { start, belief, validity: belief, validityLow: low, known: true };
  }
  return { start, belief: runEnd, validity: runEnd, validityLow: runEnd, known: false };
}

/** How long process `pid` was paused (SIGSTOP) between `a` and `b`. */
export function pausedOverlap(
  pauses: readonly Pause[],
  pid: number,
  a: number,
  b: number,
  now: number,
): number {
  let total = 0;
  for (const p of pauses) {
    if (p.pid !== pid) continue;
    const lo = Math.max(a, p.t0);
    const hi = Math.min(b, p.t1 ?? now);
    if (hi > lo) total += hi - lo;
  }
  return total;
}
