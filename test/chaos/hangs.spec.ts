import { describe, expect, it } from '@jest/globals';
import { checkHangs } from '../../chaos/checks/hangs';
import { call, context, historyOf } from './histories';

describe('checker: hangs (liveness)', () => {
  it('passes calls that settle within waitTimeout + commandTimeout + slack, pauses not counted', () => {
    const slowButPaused = call('2.a', 'k', { t0: 1_000, tGrant: 8_000, tEnd: 8_100 });
    const history = historyOf([call('1.a', 'k', { t0: 0, tGrant: 500, tEnd: 600 }), slowButPaused], {
      pauses: [{ pid: slowButPaused.pid, t0: 1_100, t1: 6_000 }],
    });
    const result = checkHangs(history, context());
    expect(result.violations).toEqual([]);
    expect(result.stats.callBound).toBe(5_000);
  });

  it('fails a call slower than its bound, a call that never settled, and a slow hand-off after the storm', () => {
    const never = { ...call('3.a', 'k', { t0: 100, tEnd: 0 }), end: undefined };
    const history = historyOf([
      call('1.a', 'k', { t0: 0, tGrant: 6_000, tEnd: 6_100 }),
      never,
      // After the calm began (50 000), free from 50 000, granted 52 000: past ttl + claim window + slack.
      call('2.a', 'k', { t0: 49_000, tGrant: 52_000, tEnd: 52_100, outcome: 'ok' }),
    ]);
    expect(checkHangs(history, context({ tCalm: 50_000 })).violations.map((v) => v.check)).toEqual([
      'liveness: calls that took longer than waitTimeout + commandTimeout + 1000 ms',
      'liveness: calls that never settled',
      'liveness: slow hand-off after the nemesis stopped',
    ]);
  });
});
