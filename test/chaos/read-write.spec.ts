import { describe, expect, it } from '@jest/globals';
import { checkHangs } from '../../chaos/checks/hangs';
import { checkSharedFences } from '../../chaos/checks/shared-fences';
import { checkSharedHolders } from '../../chaos/checks/shared-holders';
import { checkValidityWindows } from '../../chaos/checks/validity-windows';
import { settingsFrom } from '../../chaos/config';
import type { History } from '../../chaos/history';
import { abandonedAt, context, historyOf, killedAt, onK } from './histories';

const check = (history: History) => checkSharedHolders(history, context(), 'rw');

/** Readers and writers of read-write lock k, each granted at `tGrant`, released at `tEnd`. */
const reader = onK.holders({ mode: 'read' });
const writer = onK.holders({ mode: 'write' });
const readers = () => onK.three(reader);

describe('checker: a writer holds its read-write lock alone', () => {
  it('passes readers that share the key, and a writer once they all let go', () => {
    const history = historyOf([...readers(), writer('4.a', 450, 500, 1_000_003)]);
    const result = check(history);
    expect(result.violations).toEqual([]);
    expect(result.stats).toMatchObject({ grants: 4, writes: 1, peakHolders: 3, overBound: [] });
    // Nor are the readers an overlap for the mutex check: they are not a mutex's holders.
    expect(checkValidityWindows(history, context()).stats.overlaps).toEqual([]);
  });

  it('fails a writer granted while a reader held, and a reader granted while a writer held', () => {
    const writerLate = check(historyOf([...readers(), writer('4.a', 300, 500, 1_000_003)]));
    expect(writerLate.violations).toHaveLength(1);
    expect(writerLate.violations[0]).toMatchObject({
      check: 'read-write: a writer held its key beside another holder',
      detail: { key: 'k', op: '4.a', mode: 'write' },
    });
    expect(writerLate.stats.overBound).toHaveLength(1);
    const readerLate = check(
      historyOf([writer('1.a', 100, 400, 1_000_000), reader('2.a', 300, 500, 1_000_001)]),
    );
    expect(readerLate.violations[0]).toMatchObject({
      detail: { op: '2.a', mode: 'read', holders: [{ op: '1.a', mode: 'write' }] },
    });
  });

  it('fails two writers at once', () => {
    const result = check(historyOf([writer('1.a', 100, 400, 1), writer('2.a', 300, 500, 2)]));
    expect(result.violations.map((v) => v.check)).toEqual([
      'read-write: a writer held its key beside another holder',
    ]);
  });

  it('counts a writer beside readers after a Redis restart apart, without a violation', () => {
    const history = historyOf([...readers(), writer('4.a', 300, 500, 3_000_000)], {
      restarts: [onK.restart],
    });
    const result = check(history);
    expect(result.violations).toEqual([]);
    expect(result.stats.excused).toEqual([expect.objectContaining({ loss: '#4 lock', cause: 'restart' })]);
    // The three readers; the writer beside them is the excused excess, left out.
    expect(result.stats.peakHolders).toBe(3);
  });

  it('fails a writer beside a reader granted after the restart, whose state was not lost', () => {
    const after = reader('5.a', 260, 600, 2_500_000);
    const history = historyOf([...readers(), after, writer('4.a', 300, 500, 3_000_000)], {
      restarts: [onK.restart],
    });
    const result = check(history);
    expect(result.violations).toHaveLength(1);
    expect(result.violations[0]).toMatchObject({ detail: { op: '4.a' } });
  });

  it("excuses an eviction of the key's holders set, not of its hash", () => {
    const ops = () => [...readers(), writer('4.a', 300, 500, 1_000_003)];
    const excused = check(historyOf(ops(), { faults: [onK.eviction(':s', 'holders')] }));
    expect(excused.violations).toEqual([]);
    expect(excused.stats.excusedByCause).toEqual({ eviction: 1 });
    expect(check(historyOf(ops(), { faults: [onK.eviction('', 'owner')] })).violations).toHaveLength(1);
  });

  it("counts an abandoned read's window until its validity ended", () => {
    // Walked away from at 105; its validity lasted to 600.
    const abandoned = abandonedAt(reader('1.a', 100, 105, 1), 600);
    expect(check(historyOf([abandoned, writer('2.a', 400, 700, 2)])).violations).toHaveLength(1);
    const late = check(historyOf([abandoned, writer('2.a', 650, 700, 2)]));
    expect(late.violations).toEqual([]);
    expect(late.stats.abandoned).toBe(1);
  });

  it("reports a writer as undetermined when only a killed reader's upper bound counts it", () => {
    // Killed at 500; it reported holding until 150, with a validity to 300.
    const killed = killedAt(reader('1.a', 100, 0, 1), 500, 150, 300);
    const result = check(historyOf([killed, reader('2.a', 200, 350, 2), writer('3.a', 400, 700, 3)]));
    expect(result.violations).toEqual([]);
    expect(result.stats.undetermined).toHaveLength(1);
  });
});

describe('checker: read-write fences', () => {
  it('passes rising fences, and fails a repeated one', () => {
    const passing = checkSharedFences(
      historyOf([reader('1.a', 100, 200, 10), writer('2.a', 300, 400, 11)]),
      'rw',
    );
    expect(passing).toEqual({ stats: { fenceViolations: 0 }, violations: [] });
    const repeated = checkSharedFences(
      historyOf([reader('1.a', 100, 200, 10), reader('2.a', 110, 200, 10, 50)]),
      'rw',
    );
    expect(repeated.violations.map((v) => v.check)).toEqual([
      'read-write fencing: two grants of one key with the same fence',
    ]);
  });
});

describe('liveness of a read-write lock', () => {
  // After the calm (50 000): two readers until 50 500, a writer granted as they let go.
  const ahead = () => [reader('1.a', 49_000, 50_500, 1), reader('2.a', 49_000, 50_500, 2)];

  it('passes a reader granted beside readers, and a writer granted once they let go', () => {
    const beside = reader('3.a', 50_100, 50_200, 3, 50_050);
    const after = writer('4.a', 50_600, 50_700, 4, 49_500);
    const result = checkHangs(historyOf([...ahead(), beside, after]), context());
    expect(result.violations).toEqual([]);
    expect(result.stats.readWriteHandoffMax).toBe(100);
  });

  it('fails a reader granted slowly while only readers held, and a writer granted slowly after them', () => {
    const slowReader = reader('3.a', 52_100, 52_200, 3, 50_050);
    // Free for the writer once the slow reader let go (52 200): granted 1.8 s later.
    const slowWriter = writer('4.a', 54_000, 54_100, 4, 49_500);
    const result = checkHangs(historyOf([...ahead(), slowReader, slowWriter]), context());
    expect(result.violations.map((v) => (v.detail as { op: string }).op)).toEqual(['3.a', '4.a']);
    expect(result.violations[0].check).toBe(
      'liveness: slow hand-off of a read-write lock after the nemesis stopped',
    );
  });

  it('lets a reader in line behind a writer wait for that writer', () => {
    const first = writer('3.a', 50_600, 52_500, 3, 49_500);
    const behind = reader('4.a', 52_600, 52_700, 4, 50_100);
    expect(checkHangs(historyOf([...ahead(), first, behind]), context()).violations).toEqual([]);
  });
});

describe('the --workload flag', () => {
  it('runs every workload by default and with `all` or its old name `both`', () => {
    for (const argv of [[], ['--workload', 'all'], ['--workload', 'both']]) {
      const { workload, cfg } = settingsFrom(argv);
      expect(workload).toBe('all');
      expect([cfg.agents > 0, cfg.semaphore !== undefined, cfg.readWrite !== undefined]).toEqual([
        true,
        true,
        true,
      ]);
    }
  });

  it('runs the read-write workload alone with `rw`, and refuses it on redlock', () => {
    const { cfg, reproduce } = settingsFrom(['--quick', '--workload', 'rw', '--seed', '7']);
    expect(cfg.agents).toBe(0);
    expect(cfg.semaphore).toBeUndefined();
    expect(cfg.readWrite).toMatchObject({ keys: ['chaos-rw-0', 'chaos-rw-1'], writes: 0.25 });
    expect(reproduce).toBe('tsx chaos/run.ts --quick --topology single --workload rw --seed 7');
    expect(() => settingsFrom(['--workload', 'rw', '--topology', 'redlock'])).toThrow(/no semaphores/);
    const redlock = settingsFrom(['--topology', 'redlock']).cfg;
    expect([redlock.semaphore, redlock.readWrite]).toEqual([undefined, undefined]);
  });
});
