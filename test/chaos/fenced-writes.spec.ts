import { describe, expect, it } from '@jest/globals';
import { checkFencedWrites } from '../../chaos/checks/fenced-writes';
import { call, historyOf } from './histories';

const written = (newest: number) => ({ written: true, newest, tSent: 0, tDone: 1 });
const refused = (newest: number) => ({ written: false, newest, tSent: 0, tDone: 1 });

describe('checker: fenced writes (in the resource order)', () => {
  it('passes rising accepted fences that match their grants, and a stale writer refused', () => {
    const history = historyOf(
      [
        call('1.a', 'k', { tGrant: 100, tEnd: 200 }, { fence: 10, fenced: written(10) }),
        call('2.a', 'k', { tGrant: 300, tEnd: 400 }, { fence: 11, fenced: written(11) }),
        call('3.a', 'k', { tGrant: 150, tEnd: 500 }, { fence: 9, fenced: refused(11) }),
      ],
      {
        fencedAccepts: [
          { key: 'k', op: '1.a', fence: 10 },
          { key: 'k', op: '2.a', fence: 11 },
        ],
      },
    );
    const result = checkFencedWrites(history);
    expect(result.violations).toEqual([]);
    expect(result.stats).toEqual({ fencedViolations: 0, fencedAcceptedReported: 2, fencedRefused: 1 });
  });

  it('fails a stale fence the resource accepted after a newer one', () => {
    const history = historyOf(
      [
        call('1.a', 'k', { tGrant: 100, tEnd: 200 }, { fence: 11, fenced: written(11) }),
        call('2.a', 'k', { tGrant: 300, tEnd: 400 }, { fence: 10, fenced: written(10) }),
      ],
      {
        fencedAccepts: [
          { key: 'k', op: '1.a', fence: 11 },
          { key: 'k', op: '2.a', fence: 10 },
        ],
      },
    );
    const result = checkFencedWrites(history);
    expect(result.stats.fencedViolations).toBe(1);
    expect(result.violations.map((v) => v.check)).toEqual(['fenced: stale token accepted']);
  });

  it("fails an accepted fence that is not the writer's grant, and a refusal without a newer fence", () => {
    const history = historyOf(
      [
        call('1.a', 'k', { tGrant: 100, tEnd: 200 }, { fence: 10, fenced: written(12) }),
        call('2.a', 'k', { tGrant: 300, tEnd: 400 }, { fence: 13, fenced: refused(12) }),
      ],
      { fencedAccepts: [{ key: 'k', op: '1.a', fence: 12 }] },
    );
    expect(checkFencedWrites(history).violations.map((v) => v.check)).toEqual([
      "fenced: accepted fence differs from the writer's grant",
      'fenced: FencedStore result disagrees with the resource',
      'fenced: a refusal without a newer fence',
    ]);
  });
});
