import { describe, expect, it } from '@jest/globals';
import { checkErrors } from '../../chaos/checks/errors';
import { call, historyOf } from './histories';

describe('checker: errors (typed, none unhandled)', () => {
  it('passes typed outcomes and counts them', () => {
    const history = historyOf(
      [
        call('1.a', 'k', { tGrant: 100, tEnd: 200 }),
        call('2.a', 'k', { tEnd: 3_000, outcome: 'LOCK_TIMEOUT' }),
        call('3.a', 'k', { tGrant: 300, tEnd: 400 }, {}),
      ],
      { closes: [{ slot: 1, unhandled: 0 }] },
    );
    const result = checkErrors(history);
    expect(result.violations).toEqual([]);
    expect(result.stats.outcomes).toEqual({ ok: 2, LOCK_TIMEOUT: 1 });
  });

  it('fails an untyped error, a failed resource write, and unhandled rejections (reported, or counted at close)', () => {
    const untyped = call('1.a', 'k', { tEnd: 100, outcome: 'UNTYPED' });
    const harness = call('2.a', 'k', { tGrant: 100, tEnd: 200 });
    if (harness.end) harness.end.harnessError = 'ECONNRESET';
    const history = historyOf([untyped, harness], {
      unhandled: [{ slot: 1, pid: 1_001, kind: 'rejection', message: 'boom' }],
      closes: [{ slot: 2, unhandled: 1 }],
    });
    expect(checkErrors(history).violations.map((v) => v.check)).toEqual([
      'an untyped error reached the caller',
      'harness: resource write failed',
      'unhandled rejection / exception in a worker',
      'unhandled rejections counted at close',
    ]);
  });
});
