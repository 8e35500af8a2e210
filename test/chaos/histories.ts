// Hand-made histories for the fault suite's checkers: a few calls with the times their workers would
// have reported, so each checker can be shown a history it passes and one it fails.
import type { CheckContext } from '../../chaos/checks/check';
import type { Fault } from '../../chaos/faults/kinds';
import { emptyHistory, type History, type OpRec, type Restart } from '../../chaos/history';

/** A call that was granted at `tGrant` and ended (released) at `tEnd`, with validity to `validUntil`. */
export function call(
  op: string,
  key: string,
  times: { t0?: number; tGrant?: number; tEnd: number; validUntil?: number; outcome?: string },
  more: Partial<OpRec> = {},
): OpRec {
  const { tGrant, tEnd, outcome = 'ok' } = times;
  const t0 = times.t0 ?? tGrant ?? tEnd;
  return {
    op,
    key,
    slot: Number(op.split('.')[0]),
    pid: 1_000 + Number(op.split('.')[0]),
    t0,
    tGrant,
    end: {
      t0,
      tGrant,
      tWorkEnd: tGrant === undefined ? undefined : tEnd,
      validUntilEnd: tGrant === undefined ? undefined : (times.validUntil ?? tEnd + 500),
      tEnd,
      outcome,
    },
    ...more,
  };
}

export function historyOf(ops: OpRec[], more: Partial<History> = {}): History {
  const history = emptyHistory();
  for (const r of ops) history.ops.set(r.op, r);
  return Object.assign(history, more);
}

export function context(more: Partial<CheckContext> = {}): CheckContext {
  return {
    now: 100_000,
    ttl: 500,
    claimWindow: 200,
    waitTimeout: 3_000,
    commandTimeout: 1_000,
    slackMs: 1_000,
    keys: ['k'],
    tCalm: 50_000,
    quick: false,
    nodes: 1,
    ...more,
  };
}

export function fault(
  id: number,
  kind: Fault['kind'],
  t0: number,
  t1: number,
  more: Partial<Fault> = {},
): Fault {
  return { id, kind, t0, t1, detail: {}, ...more };
}

/** `r`, walked away from at its end: its lease abandoned, valid until `validUntil`. */
export function abandonedAt(r: OpRec, validUntil: number): OpRec {
  return { ...r, end: { ...r.end!, tWorkEnd: validUntil, validUntilEnd: validUntil, abandoned: true } };
}

/**
 * `r`, its process killed at `killed` before its end report; its last reports said it held until
 * `heldUntil`, valid until `validUntilLast`.
 */
export function killedAt(r: OpRec, killed: number, heldUntil: number, validUntilLast: number): OpRec {
  return { ...r, end: undefined, killedAt: killed, heldAtLeastUntil: heldUntil, validUntilLast };
}

/** A restart of the one lock server at 200 (wall clock 1 500 to 1 600 ms), by fault #4. */
const restart: Restart = {
  t0: 200,
  t1: 240,
  wall0: 1_500,
  wall1: 1_600,
  node: 'lock',
  early: true,
  faultId: 4,
};

type HolderOfK = (op: string, tGrant: number, tEnd: number, fence: number, t0?: number) => OpRec;

/** Fixtures on one lock, k, shared by the tests of the semaphore's and the read-write lock's checks. */
export const onK = {
  /** Holders of k, each granted at `tGrant` and released at `tEnd`; `kind`: its permits or mode. */
  holders:
    (kind: Partial<OpRec>): HolderOfK =>
    (op, tGrant, tEnd, fence, t0 = tGrant) =>
      call(op, 'k', { t0, tGrant, tEnd }, { ...kind, fence }),
  /**
   * Three holders of k from about 100 to 400, granted before `restart` (fences: the server clock in µs,
   * so 1 000 000 is 1 000 ms on the wall clock).
   */
  three: (holder: HolderOfK): OpRec[] => [
    holder('1.a', 100, 400, 1_000_000),
    holder('2.a', 110, 400, 1_000_001),
    holder('3.a', 120, 400, 1_000_002),
  ],
  restart,
  /** A memory-pressure fault #5 that evicted `part` of k (key `lock:{k}<suffix>`) between 200 and 210. */
  eviction: (suffix: string, part: 'holders' | 'owner'): Fault =>
    fault(5, 'memory-pressure', 150, 260, {
      evictions: [{ key: `lock:{k}${suffix}`, lock: 'k', part, after: 200, by: 210 }],
    }),
};
