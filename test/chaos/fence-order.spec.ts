import { describe, expect, it } from '@jest/globals';
import { checkFenceOrder } from '../../chaos/checks/fence-order';
import { call, context, historyOf } from './histories';

describe('checker: fence order (grant log)', () => {
  it('passes grants whose fences rise with their order', () => {
    const history = historyOf([
      call('1.a', 'k', { tGrant: 100, tEnd: 200 }, { fence: 10 }),
      call('2.a', 'k', { tGrant: 300, tEnd: 400 }, { fence: 11 }),
    ]);
    expect(checkFenceOrder(history, context())).toEqual({
      stats: { fenceOrderViolations: 0 },
      violations: [],
    });
  });

  it('fails a later grant (after the earlier holder let go) with a fence not above the earlier one', () => {
    const history = historyOf([
      call('1.a', 'k', { tGrant: 100, tEnd: 200 }, { fence: 10 }),
      call('2.a', 'k', { tGrant: 300, tEnd: 400 }, { fence: 10 }),
    ]);
    const result = checkFenceOrder(history, context());
    expect(result.stats.fenceOrderViolations).toBe(1);
    expect(result.violations[0]).toMatchObject({
      check: 'fencing: a later grant got a fence not above an earlier one',
      detail: { key: 'k', earlier: '1.a', later: '2.a' },
    });
  });
});
