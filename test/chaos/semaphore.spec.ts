import { describe, expect, it } from '@jest/globals';
import type { CheckContext } from '../../chaos/checks/check';
import { checkHangs } from '../../chaos/checks/hangs';
import { checkKeyHygiene } from '../../chaos/checks/key-hygiene';
import { checkSharedFences } from '../../chaos/checks/shared-fences';
import { checkSharedHolders } from '../../chaos/checks/shared-holders';
import type { History } from '../../chaos/history';
import { abandonedAt, context, historyOf, killedAt, onK } from './histories';

const checkSemaphoreHolders = (history: History, ctx: CheckContext) =>
  checkSharedHolders(history, ctx, 'semaphore');
const checkSemaphoreFences = (history: History) => checkSharedFences(history, 'semaphore');

/** A holder of semaphore k (3 permits), granted at `tGrant`, released at `tEnd`. */
const holder = onK.holders({ permits: 3 });
const three = () => onK.three(holder);

describe('checker: never more holders than permits', () => {
  it('passes as many holders as permits at once, and a fourth once one let go', () => {
    const history = historyOf([...three(), holder('4.a', 450, 500, 1_000_003)]);
    const result = checkSemaphoreHolders(history, context());
    expect(result.violations).toEqual([]);
    expect(result.stats).toMatchObject({ grants: 4, peakHolders: 3, overBound: [] });
  });

  it('fails a fourth holder granted while three held valid leases', () => {
    const history = historyOf([...three(), holder('4.a', 300, 500, 1_000_003)]);
    const result = checkSemaphoreHolders(history, context());
    expect(result.violations).toHaveLength(1);
    expect(result.violations[0]).toMatchObject({
      check: 'semaphore: more than 3 holders of one key at once',
      detail: { key: 'k', permits: 3, op: '4.a' },
    });
  });

  it('counts a fourth holder after a Redis restart apart, without a violation', () => {
    const history = historyOf([...three(), holder('4.a', 300, 500, 3_000_000)], {
      restarts: [onK.restart],
    });
    const result = checkSemaphoreHolders(history, context());
    expect(result.violations).toEqual([]);
    expect(result.stats.excused).toEqual([expect.objectContaining({ loss: '#4 lock', cause: 'restart' })]);
  });

  it("excuses an eviction of the key's holders set, not of its hash", () => {
    const ops = () => [...three(), holder('4.a', 300, 500, 1_000_003)];
    const excused = checkSemaphoreHolders(
      historyOf(ops(), { faults: [onK.eviction(':s', 'holders')] }),
      context(),
    );
    expect(excused.violations).toEqual([]);
    expect(excused.stats.excusedByCause).toEqual({ eviction: 1 });
    const hash = checkSemaphoreHolders(historyOf(ops(), { faults: [onK.eviction('', 'owner')] }), context());
    expect(hash.violations).toHaveLength(1);
  });

  it("counts an abandoned lease's window until its validity ended", () => {
    // Walked away from at 105; its validity lasted to 600.
    const abandoned = abandonedAt(holder('1.a', 100, 105, 1), 600);
    const others = [holder('2.a', 200, 700, 2), holder('3.a', 210, 700, 3)];
    const early = checkSemaphoreHolders(
      historyOf([abandoned, ...others, holder('4.a', 400, 700, 4)]),
      context(),
    );
    expect(early.violations).toHaveLength(1);
    const late = checkSemaphoreHolders(
      historyOf([abandoned, ...others, holder('4.a', 650, 700, 4)]),
      context(),
    );
    expect(late.violations).toEqual([]);
    expect(late.stats.abandoned).toBe(1);
  });

  it("reports a fourth holder as undetermined when only a killed holder's upper bound counts it", () => {
    // Killed at 500; it reported holding until 150, with a validity to 300.
    const killed = killedAt(holder('1.a', 100, 0, 1), 500, 150, 300);
    const others = [holder('2.a', 200, 600, 2), holder('3.a', 210, 600, 3)];
    const result = checkSemaphoreHolders(
      historyOf([killed, ...others, holder('4.a', 400, 700, 4)]),
      context(),
    );
    expect(result.violations).toEqual([]);
    expect(result.stats.undetermined).toHaveLength(1);
  });
});

describe('checker: semaphore fences', () => {
  it('passes fences that rise for grants asked for after others were granted', () => {
    // 3.a waited from 50, before 1.a's grant: its lower fence says Redis granted it first.
    const history = historyOf([holder('1.a', 100, 200, 10), holder('2.a', 300, 400, 11, 150)]);
    history.ops.set('3.a', holder('3.a', 200, 300, 9, 50));
    expect(checkSemaphoreFences(history)).toEqual({ stats: { fenceViolations: 0 }, violations: [] });
  });

  it('fails a repeated fence, and a fence not above one granted before the call began', () => {
    const repeated = checkSemaphoreFences(
      historyOf([holder('1.a', 100, 200, 10), holder('2.a', 110, 200, 10, 50)]),
    );
    expect(repeated.violations.map((v) => v.check)).toEqual([
      'semaphore fencing: two grants of one key with the same fence',
    ]);
    const lower = checkSemaphoreFences(
      historyOf([holder('1.a', 100, 200, 10), holder('2.a', 300, 400, 9, 150)]),
    );
    expect(lower.violations[0]).toMatchObject({
      check: 'semaphore fencing: a grant asked for after another got a fence not above it',
      detail: { key: 'k', earlier: '1.a', later: '2.a' },
    });
  });
});

describe('liveness of a semaphore', () => {
  it('fails a permit handed on slowly after the nemesis stopped', () => {
    const ahead = [
      holder('1.a', 49_000, 50_500, 1),
      holder('2.a', 49_000, 50_500, 2),
      holder('3.a', 49_000, 50_500, 3),
    ];
    const prompt = holder('4.a', 50_600, 50_700, 4, 49_500);
    const passing = checkHangs(historyOf([...ahead, prompt]), context({ tCalm: 50_000 }));
    expect(passing.violations).toEqual([]);
    expect(passing.stats.semaphoreHandoffMax).toBe(100);
    // A permit was free from 50 500 (three of the four before it had let go): granted 2.5 s later.
    const slow = holder('5.a', 53_000, 53_100, 5, 50_000);
    const failing = checkHangs(historyOf([...ahead, prompt, slow]), context({ tCalm: 50_000 }));
    expect(failing.violations.map((v) => v.check)).toEqual([
      'liveness: slow hand-off of a semaphore permit after the nemesis stopped',
    ]);
  });
});

describe('key hygiene of a semaphore', () => {
  const gone = ['lock:{s}', 'lock:{s}:s', 'lock:{s}:sq'];

  it('passes when its hash, holders and line are gone and its fence counter expires', () => {
    const lock = [
      { key: 'lock:{s}:fence', ttl: 3_600_000 },
      { key: 'lock:{s}:sq', ttl: -2 },
    ];
    const result = checkKeyHygiene({ lock, resource: [], keptPrefixes: [], gone });
    expect(result.violations).toEqual([]);
    expect(result.stats).toMatchObject({ sharedKeysLeft: 0, lockKeyKinds: { fence: 1, line: 1 } });
  });

  it('fails a key of the semaphore still there, even with a TTL', () => {
    const lock = [{ key: 'lock:{s}:s', ttl: 300 }];
    const result = checkKeyHygiene({ lock, resource: [], keptPrefixes: [], gone });
    expect(result.violations).toEqual([
      {
        check:
          "key hygiene: a semaphore's or read-write lock's keys still there after its last hold and wait ended",
        detail: [{ key: 'lock:{s}:s', ttl: 300 }],
      },
    ]);
  });
});
