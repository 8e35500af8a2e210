import { describe, expect, it } from '@jest/globals';
import { checkSensitivity } from '../../chaos/checks/sensitivity';
import { call, context, fault, historyOf } from './histories';

// A holder paused at 1 000 in its work (read at 900, twin write at 3 000) while another process read the
// same lock at 2 000: an effective GC pause.
function pausedAndOvertaken() {
  return historyOf(
    [
      call('1.a', 'k', { tGrant: 800, tEnd: 3_100 }, { tRead: 900, twin: { seq: 1, t: 3_000 } }),
      call('2.a', 'k', { tGrant: 1_900, tEnd: 2_100 }, { tRead: 2_000, twin: { seq: 1, t: 2_050 } }),
    ],
    { faults: [fault(1, 'gc-pause', 1_000, 2_500, { detail: { op: '1.a' } })] },
  );
}

describe('checker: sensitivity (the checkers are shown to see)', () => {
  it('passes an effective pause that the unfenced twin caught', () => {
    const result = checkSensitivity(pausedAndOvertaken(), context({ quick: true }), 1);
    expect(result.violations).toEqual([]);
    expect(result.stats.effectivePauses).toBe(1);
  });

  it('fails an effective pause the twin did not catch: the checker is blind', () => {
    expect(checkSensitivity(pausedAndOvertaken(), context(), 0).violations.map((v) => v.check)).toEqual([
      'checker blind: a holder was paused mid-work and overtaken, yet the unfenced twin shows no violation',
    ]);
  });

  it('fails a quick run in which no pause landed inside a holder’s work', () => {
    const history = historyOf([call('1.a', 'k', { tGrant: 800, tEnd: 900 })], {
      faults: [fault(1, 'gc-pause', 1_000, 2_500, { detail: { op: '1.a' } })],
    });
    expect(checkSensitivity(history, context({ quick: true }), 0).violations.map((v) => v.check)).toEqual([
      "quick mode: no GC pause landed inside a holder's work, so the checker was not shown to see violations",
    ]);
  });
});
