import { describe, expect, it } from '@jest/globals';
import { checkFaultEffects } from '../../chaos/checks/fault-effects';
import { call, context, fault, historyOf } from './histories';

// Not a checker with a verdict: it measures what the faults did, for the report.
describe('fault effects (reported, never a violation)', () => {
  it('counts faults, measures stalls to the next grant, and files failures under the fault under way', () => {
    const history = historyOf(
      [
        call('1.a', 'k', { t0: 900, tEnd: 1_400, outcome: 'LOCK_TIMEOUT' }),
        call('2.a', 'k', { tGrant: 1_800, tEnd: 1_900 }, { fence: 5 }),
        call('3.a', 'k', { tEnd: 9_000, outcome: 'LOCK_REDIS_UNAVAILABLE', t0: 8_000 }),
      ],
      {
        faults: [
          fault(1, 'proxy-freeze', 1_000, 1_500),
          fault(2, 'kill-holder', 2_000, 2_000, { skipped: 'no holder' }),
        ],
      },
    );
    const result = checkFaultEffects(history, context());
    expect(result.violations).toEqual([]);
    expect(result.stats.faultCounts).toEqual({
      'proxy-freeze': { injected: 1, skipped: 0 },
      'kill-holder': { injected: 0, skipped: 1 },
    });
    expect(result.stats.stalls['proxy-freeze']).toEqual({ fromInjectMaxMs: 800, fromHealMaxMs: 300 });
    expect(result.stats.errorContext).toEqual({
      LOCK_TIMEOUT: { 'proxy-freeze': 1 },
      LOCK_REDIS_UNAVAILABLE: { 'no fault': 1 },
    });
  });
});
