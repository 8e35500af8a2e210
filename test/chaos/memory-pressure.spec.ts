import { describe, expect, it } from '@jest/globals';
import { checkMemoryPressure } from '../../chaos/checks/memory-pressure';
import { call, context, fault, historyOf } from './histories';

describe('report: what memory pressure did', () => {
  // Injected at 1 000, healed at 1 500: its span runs to 1 500 + ttl 500 + claim window 200 = 2 200.
  const pressure = () =>
    fault(3, 'memory-pressure', 1_000, 1_500, {
      detail: { node: 'lock', filler: { kb: 900 }, evictedKeys: 420 },
      evictions: [
        { key: 'lock:{k}', lock: 'k', part: 'owner', after: 1_100, by: 1_102 },
        { key: 'lock:{k}:q', lock: 'k', part: 'queue', after: 1_200, by: 1_201 },
      ],
    });
  /** A holder whose lease was lost at `lostAt`, with the LockLostError's reason or only its message. */
  const lost = (op: string, lostAt: number, why: { lostCode?: string; lostReason?: string } = {}) => {
    const r = call(op, 'k', { tGrant: lostAt - 100, tEnd: lostAt + 10, outcome: 'LOCK_LOST' });
    if (r.end) r.end = { ...r.end, lostAt, ...why };
    return r;
  };

  it('counts the evictions, the leases lost in its span by reason, and releases of a lost lock', () => {
    const inside = lost('1.a', 1_300, { lostCode: 'key-missing' });
    const after = lost('2.a', 2_100, { lostReason: 'renewal failed' });
    const later = lost('3.a', 2_600, { lostCode: 'key-missing' });
    // Its loss noticed only when it released.
    const released = call('4.a', 'k', { tGrant: 1_050, tEnd: 1_450, outcome: 'LOCK_NOT_HELD' });
    const history = historyOf([inside, after, later, released], { faults: [pressure()] });
    const result = checkMemoryPressure(history, context());
    expect(result.violations).toEqual([]);
    expect(result.stats).toMatchObject({
      injected: 1,
      fillerKb: 900,
      evictedKeys: 420,
      lockKeysEvicted: { owner: 1, queue: 1, fence: 0 },
      leasesLost: 2,
      lostByReason: { 'key-missing': 1, 'renewal failed': 1 },
      notHeldAtRelease: 1,
    });
  });

  it('counts the stale twin writes sent in its span only', () => {
    const history = historyOf(
      [
        call('1.a', 'k', { tGrant: 1_100, tEnd: 1_400 }, { twin: { seq: 5, t: 1_380 } }),
        call('2.a', 'k', { tGrant: 1_200, tEnd: 1_300 }, { twin: { seq: 5, t: 1_250 } }),
        call('3.a', 'k', { tGrant: 3_000, tEnd: 3_300 }, { twin: { seq: 9, t: 3_280 } }),
        call('4.a', 'k', { tGrant: 3_100, tEnd: 3_200 }, { twin: { seq: 9, t: 3_150 } }),
      ],
      {
        faults: [pressure()],
        twinSets: [
          { key: 'k', seq: 5, op: '2.a' },
          { key: 'k', seq: 5, op: '1.a' },
          { key: 'k', seq: 9, op: '4.a' },
          { key: 'k', seq: 9, op: '3.a' },
        ],
      },
    );
    const { stats } = checkMemoryPressure(history, context());
    expect(stats.unfencedViolations).toBe(1);
    expect(stats.lostUpdatesReported).toBe(1);
  });

  it('reports nothing when no memory-pressure fault ran', () => {
    const { stats } = checkMemoryPressure(historyOf([lost('1.a', 1_300)]), context());
    expect(stats).toMatchObject({ injected: 0, leasesLost: 0, evictedKeys: 0 });
  });
});
