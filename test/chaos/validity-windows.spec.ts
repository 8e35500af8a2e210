import { describe, expect, it } from '@jest/globals';
import { checkValidityWindows } from '../../chaos/checks/validity-windows';
import type { Fault } from '../../chaos/faults/kinds';
import { call, context, fault, historyOf } from './histories';

/**
 * Two holders of lock k that overlap: the first waited from 0, its granting attempt began at 90 (validity
 * 90 + ttl 500 = 590), it held until 300 (validity then 350); the second is granted at 250.
 */
const overlapping = () => [
  call(
    '1.a',
    'k',
    { t0: 0, tGrant: 100, tEnd: 300, validUntil: 350 },
    { fence: 1_000_000, validUntilGrant: 590 },
  ),
  call('2.a', 'k', { t0: 240, tGrant: 250, tEnd: 400 }, { fence: 3_000_000 }),
];

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
      { restarts: [{ t0: 200, t1: 240, wall0: 1_500, wall1: 1_600, node: 'lock', early: true, faultId: 4 }] },
    );
    const result = checkValidityWindows(history, context());
    expect(result.violations).toEqual([]);
    expect(result.stats.restartOverlaps).toHaveLength(1);
    expect(result.stats.excusedByFault).toEqual({ '#4 lock': 1 });
  });

  describe('on a quorum (Redlock)', () => {
    const restart = (t0: number, early: boolean) => ({
      t0,
      t1: t0 + 20,
      wall0: 1_500,
      wall1: 1_600,
      node: 'n3',
      early,
      faultId: 7,
    });
    const quorum = context({ nodes: 5 });

    it('counts apart an overlap after an early restart of a node inside the first window', () => {
      const history = historyOf(overlapping(), { restarts: [restart(200, true)] });
      const result = checkValidityWindows(history, quorum);
      expect(result.violations).toEqual([]);
      expect(result.stats.overlaps).toEqual([]);
      expect(result.stats.restartOverlaps).toEqual([expect.objectContaining({ key: 'k', restart: '#7 n3' })]);
      expect(result.stats.excusedByFault).toEqual({ '#7 n3': 1 });
    });

    it('fails the same overlap after a restart that waited out the longest ttl', () => {
      const history = historyOf(overlapping(), { restarts: [restart(200, false)] });
      const result = checkValidityWindows(history, quorum);
      expect(result.violations.map((v) => v.check)).toEqual([
        'mutual exclusion: two holders with overlapping validity',
      ]);
      expect(result.stats.restartOverlaps).toEqual([]);
    });

    it('fails an overlap whose early restart came while the first waited, or after the second grant', () => {
      for (const t0 of [50, 260]) {
        const history = historyOf(overlapping(), { restarts: [restart(t0, true)] });
        expect(checkValidityWindows(history, quorum).violations.map((v) => v.check)).toEqual([
          'mutual exclusion: two holders with overlapping validity',
        ]);
      }
    });

    it("counts apart an overlap after the lock's key was deleted on a node inside the first window", () => {
      const deletion = (keys: string[]): Fault => ({
        id: 9,
        kind: 'delete-lock-keys',
        t0: 200,
        t1: 201,
        keys,
        detail: { node: 'n2' },
      });
      const result = checkValidityWindows(historyOf(overlapping(), { faults: [deletion(['k'])] }), quorum);
      expect(result.violations).toEqual([]);
      expect(result.stats.excusedByFault).toEqual({ '#9 n2': 1 });
      // Another lock's deletion explains nothing.
      const other = checkValidityWindows(historyOf(overlapping(), { faults: [deletion(['j'])] }), quorum);
      expect(other.violations.map((v) => v.check)).toEqual([
        'mutual exclusion: two holders with overlapping validity',
      ]);
    });

    it('does not excuse by fences: a restart between the grants of one server is not enough', () => {
      // The one-server rule (the killed instance granted the first) would excuse this pair.
      const history = historyOf(overlapping(), { restarts: [restart(400, true)] });
      expect(checkValidityWindows(history, context()).violations).toEqual([]);
      expect(checkValidityWindows(history, quorum).violations).toHaveLength(1);
    });
  });

  describe('after an eviction under memory pressure', () => {
    // An eviction is known to lie between `after` and `by`.
    const pressure = (evictions: Array<{ key: string; after: number; by: number }>): Fault =>
      fault(12, 'memory-pressure', 150, 280, {
        detail: { node: 'n4' },
        evictions: evictions.map((e) => {
          const [, lock, suffix] = /^lock:\{(.*)\}(:q|:fence)?$/.exec(e.key) as RegExpExecArray;
          return { ...e, lock, part: suffix === ':q' ? 'queue' : suffix === ':fence' ? 'fence' : 'owner' };
        }),
      });
    const overlapCheck = ['mutual exclusion: two holders with overlapping validity'];

    for (const [topology, ctx] of [
      ['one server', context()],
      ['a quorum', context({ nodes: 5 })],
    ] as const) {
      it(`counts apart an overlap after the lock's owner key was evicted in the first window (${topology})`, () => {
        const history = historyOf(overlapping(), {
          faults: [pressure([{ key: 'lock:{k}', after: 195, by: 200 }])],
        });
        const result = checkValidityWindows(history, ctx);
        expect(result.violations).toEqual([]);
        expect(result.stats.restartOverlaps).toEqual([
          expect.objectContaining({ key: 'k', restart: '#12 n4', cause: 'eviction' }),
        ]);
        expect(result.stats.excusedByCause).toEqual({ eviction: 1 });
      });

      it(`excuses nothing by an eviction of another lock, or of the lock's line or fence (${topology})`, () => {
        for (const key of ['lock:{j}', 'lock:{k}:q', 'lock:{k}:fence']) {
          const history = historyOf(overlapping(), { faults: [pressure([{ key, after: 195, by: 200 }])] });
          expect(checkValidityWindows(history, ctx).violations.map((v) => v.check)).toEqual(overlapCheck);
        }
      });

      it(`excuses nothing by an eviction after the second grant, or before the window opened (${topology})`, () => {
        for (const [after, by] of [
          [251, 255],
          [60, 80],
        ]) {
          const history = historyOf(overlapping(), {
            faults: [pressure([{ key: 'lock:{k}', after, by }])],
          });
          expect(checkValidityWindows(history, ctx).violations.map((v) => v.check)).toEqual(overlapCheck);
        }
      });
    }

    it('orders the pair by fence: a grant pushed before the eviction that reached its waiter after a newer one', () => {
      // Redis granted 2.a first (the lower fence); its owner key was evicted at 60..62, and 1.a took the
      // free lock (granted at 100). 2.a read its pushed grant only at 102, still inside that grant's
      // claim window (validity 210), so on the holders' clocks 1.a came first.
      const pushedLate = () => [
        call(
          '1.a',
          'k',
          { t0: 50, tGrant: 100, tEnd: 160, validUntil: 590 },
          { fence: 2_000_000, validUntilGrant: 590 },
        ),
        call(
          '2.a',
          'k',
          { t0: 0, tGrant: 102, tEnd: 180, validUntil: 210 },
          { fence: 1_000_000, validUntilGrant: 210 },
        ),
      ];
      const excused = historyOf(pushedLate(), {
        faults: [pressure([{ key: 'lock:{k}', after: 60, by: 62 }])],
      });
      const result = checkValidityWindows(excused, context());
      expect(result.violations).toEqual([]);
      expect(result.stats.excusedByCause).toEqual({ eviction: 1 });
      // An eviction after the newer grant explains nothing, whatever the order.
      const late = historyOf(pushedLate(), {
        faults: [pressure([{ key: 'lock:{k}', after: 120, by: 122 }])],
      });
      expect(checkValidityWindows(late, context()).violations.map((v) => v.check)).toEqual(overlapCheck);
    });

    it('counts apart an eviction whose notification came after the second grant, if it may have preceded it', () => {
      // Sent after 245 and received at 252: it may have come before the grant at 250.
      const history = historyOf(overlapping(), {
        faults: [pressure([{ key: 'lock:{k}', after: 245, by: 252 }])],
      });
      expect(checkValidityWindows(history, context()).violations).toEqual([]);
    });
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
