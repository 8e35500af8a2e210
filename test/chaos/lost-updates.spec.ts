import { describe, expect, it } from '@jest/globals';
import { checkLostUpdates } from '../../chaos/checks/lost-updates';
import { call, historyOf } from './histories';

describe('checker: lost updates of the unfenced twin', () => {
  it('counts none when every SET raises the counter', () => {
    const history = historyOf(
      [
        call('1.a', 'k', { tGrant: 100, tEnd: 200 }, { twin: { seq: 1, t: 150 } }),
        call('2.a', 'k', { tGrant: 300, tEnd: 400 }, { twin: { seq: 2, t: 350 } }),
      ],
      {
        twinSets: [
          { key: 'k', seq: 1, op: '1.a' },
          { key: 'k', seq: 2, op: '2.a' },
        ],
      },
    );
    expect(checkLostUpdates(history)).toEqual({
      stats: { unfencedViolations: 0, unfencedExamples: [], lostUpdatesReported: 0 },
      violations: [],
    });
  });

  it('sees a stale writer overwrite a newer value (and reports it, without failing the run itself)', () => {
    const history = historyOf(
      [
        call('1.a', 'k', { tGrant: 100, tEnd: 900 }, { twin: { seq: 1, t: 850 } }),
        call('2.a', 'k', { tGrant: 300, tEnd: 400 }, { twin: { seq: 1, t: 350 } }),
      ],
      {
        twinSets: [
          { key: 'k', seq: 1, op: '2.a' },
          { key: 'k', seq: 1, op: '1.a' },
        ],
      },
    );
    const result = checkLostUpdates(history);
    expect(result.stats.unfencedViolations).toBe(1);
    expect(result.stats.lostUpdatesReported).toBe(1);
    expect(result.stats.unfencedExamples).toEqual([
      { key: 'k', staleWriter: '1.a', wrote: 1, overwrote: { key: 'k', seq: 1, op: '2.a' } },
    ]);
    expect(result.violations).toEqual([]);
  });
});
