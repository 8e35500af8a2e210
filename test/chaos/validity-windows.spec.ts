import { describe, expect, it } from '@jest/globals';
import { checkValidityWindows } from '../../chaos/checks/validity-windows';
import { call, context, historyOf } from './histories';

describe('checker: overlapping validity windows', () => {
  it('passes holders that follow one another', () => {
    const history = historyOf([
      call('1.a', 'k', { tGrant: 100, tEnd: 200 }, { fence: 10 }),
      call('2.a', 'k', { tGrant: 250, tEnd: 400 }, { fence: 11 }),
    ]);
    const result = checkValidityWindows(history, context());
    expect(result.violations).toEqual([]);
    expect(result.stats.overlaps).toEqual([]);
    expect(result.stats.closest.gapMs).toBe(50);
  });

  it('fails a grant made while the previous holder still held a valid lease', () => {
    const history = historyOf([
      call('1.a', 'k', { tGrant: 100, tEnd: 300, validUntil: 350 }, { fence: 10 }),
      call('2.a', 'k', { tGrant: 250, tEnd: 400 }, { fence: 11 }),
    ]);
    const result = checkValidityWindows(history, context());
    expect(result.violations).toHaveLength(1);
    expect(result.violations[0]).toMatchObject({
      check: 'mutual exclusion: two holders with overlapping validity',
      detail: { key: 'k', overlapMs: 50 },
    });
  });

  it('counts an overlap across a Redis restart apart, without a violation', () => {
    const history = historyOf(
      [
        // Fences are the server clock in µs: the first grant before the kill, the second after it.
        call('1.a', 'k', { tGrant: 100, tEnd: 300 }, { fence: 1_000_000 }),
        call('2.a', 'k', { tGrant: 250, tEnd: 400 }, { fence: 3_000_000 }),
      ],
      { restarts: [{ t0: 200, t1: 240, wall0: 1_500, wall1: 1_600 }] },
    );
    const result = checkValidityWindows(history, context());
    expect(result.violations).toEqual([]);
    expect(result.stats.restartOverlaps).toHaveLength(1);
  });

  it('fails a lease that reached its holder past its validity with no pause to explain it', () => {
    const frozen = call('1.a', 'k', { tGrant: 500, tEnd: 600, validUntil: 300 }, { fence: 10 });
    expect(checkValidityWindows(historyOf([frozen]), context()).violations.map((v) => v.check)).toEqual([
      'a lease whose validity had ended reached its holder without a pause of its process',
    ]);
    // The same history with its process SIGSTOPped in between is the limit fencing exists for.
    const paused = historyOf([frozen], { pauses: [{ pid: frozen.pid, t0: 250, t1: 490 }] });
    const result = checkValidityWindows(paused, context());
    expect(result.violations).toEqual([]);
    expect(result.stats.frozenGrants).toHaveLength(1);
  });
});
