// Hand-made histories for the fault suite's checkers: a few calls with the times their workers would
// have reported, so each checker can be shown a history it passes and one it fails.
import type { CheckContext } from '../../chaos/checks/check';
import type { Fault } from '../../chaos/faults/kinds';
import { emptyHistory, type History, type OpRec } from '../../chaos/history';

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
