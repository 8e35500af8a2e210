// `telemetry.logger` under overload: each warning says why the call was not granted (turned away at the
// door, cut for overload, cut by its deadline, or out of waitTimeout), and warnings of one lock are
// summarised: the first of a window at once, the rest as one line when the window ends; a lost lease is
// written at once. The window runs on jest's fake timers; the last tests drive a real LockService.
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { LockLostError, LockShedError, LockTimeoutError } from '../../lib/core';
import { loggedEvents, MAX_SUMMARISED_LOCKS, WARNING_SUMMARY_MS } from '../../lib/telemetry/event-log';
import type { LockEvent } from '../../lib/telemetry/lock-events';
import { lockService } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();

/** A logger that keeps what it is given, as `warn …` / `error …` lines. */
function capture() {
  const lines: string[] = [];
  return {
    lines,
    logger: {
      warn: (message: string) => lines.push(`warn ${message}`),
      error: (message: string) => lines.push(`error ${message}`),
    },
  };
}

const timeout = (name: string, key: string, error: unknown, waitedMs = 0): LockEvent => ({
  kind: 'timeout',
  name,
  keys: [key],
  waitedMs,
  error,
});
/** 12 callers in line at 20 ms a place: the line clears in 240 ms. */
const shed = (key: string) => new LockShedError(key, 12, 20, 100);
/**
 * A LockTimeoutError with `fields` set as the engine sets them; assigned, not passed to the constructor,
 * so the test reads the error's fields whatever the constructor takes.
 */
const timedOut = (key: string, waitedMs: number, fields: object = {}) =>
  Object.assign(new LockTimeoutError(key, waitedMs), fields);
const waitedOut = (key: string) => timedOut(key, 100);
const cutByDeadline = (key: string) => timedOut(key, 80, { deadline: { leftMs: 100, holdMs: 30 } });

afterEach(() => {
  jest.useRealTimers();
});

describe('a warning says why the call was not granted', () => {
  it('a call turned away at the door: how many were in line and when the line should clear', () => {
    const { lines, logger } = capture();
    loggedEvents(logger)(timeout('order:<0>', 'order:1', shed('order:1')));
    expect(lines).toEqual([
      'warn Lock "order:<0>" ("order:1"): turned away at the door, unqueued: 12 callers were in line, ' +
        'more than it could wait through; the line should clear in about 240 ms',
    ]);
    expect(lines[0]).not.toContain('not granted within');
  });

  it('a wait cut by the deadline, and a deadline already past (with when to retry, when the error says)', () => {
    const { lines, logger } = capture();
    const log = loggedEvents(logger);
    log(timeout('a', 'a:1', cutByDeadline('a:1'), 80));
    log(timeout('b', 'b:1', timedOut('b:1', 0, { deadline: { leftMs: -5, holdMs: 30 } })));
    log(timeout('c', 'c:1', timedOut('c:1', 0, { deadline: { leftMs: -5, holdMs: 30 }, retryAfterMs: 60 })));
    expect(lines).toEqual([
      'warn Lock "a" ("a:1"): stopped waiting after 80 ms, cut by the call\'s deadline: 100 ms were left ' +
        'and a hold takes about 30 ms',
      'warn Lock "b" ("b:1"): not asked for: the call\'s deadline had passed 5 ms before',
      'warn Lock "c" ("c:1"): not asked for: the call\'s deadline had passed 5 ms before; retry in about 60 ms',
    ]);
  });

  it('a wait cut for overload, when the error carries a numeric retryAfterMs', () => {
    const { lines, logger } = capture();
    loggedEvents(logger)(timeout('o', 'o:1', timedOut('o:1', 150, { retryAfterMs: 400 }), 150));
    expect(lines).toEqual([
      'warn Lock "o" ("o:1"): stopped waiting after 150 ms, cut for overload; retry in about 400 ms',
    ]);
  });

  it('a wait that ran out its waitTimeout', () => {
    const { lines, logger } = capture();
    loggedEvents(logger)(timeout('w', 'w:1', waitedOut('w:1'), 100.4));
    expect(lines).toEqual(['warn Lock "w" ("w:1"): not granted within 100 ms']);
  });
});

describe('warnings of one lock are summarised', () => {
  it('100 calls of one lock turned away give one line at once and one summary of 99', () => {
    jest.useFakeTimers();
    const { lines, logger } = capture();
    const log = loggedEvents(logger);
    for (let i = 0; i < 100; i++) log(timeout('order:<0>', 'order:1', shed('order:1')));
    expect(lines).toHaveLength(1);
    jest.advanceTimersByTime(WARNING_SUMMARY_MS);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toBe(
      'warn Lock "order:<0>" ("order:1"): 99 more calls not granted in the last 10 s: 99 turned away at the door',
    );
    expect(jest.getTimerCount()).toBe(0);
  });

  it('the summary counts each reason and lists the keys', () => {
    jest.useFakeTimers();
    const { lines, logger } = capture();
    const log = loggedEvents(logger);
    log(timeout('order:<0>', 'order:1', shed('order:1')));
    for (let i = 0; i < 37; i++) log(timeout('order:<0>', 'order:1', shed('order:1')));
    for (let i = 0; i < 12; i++) log(timeout('order:<0>', 'order:2', cutByDeadline('order:2'), 80));
    for (let i = 0; i < 3; i++) log(timeout('order:<0>', `order:${3 + i}`, waitedOut('order:3'), 100));
    jest.advanceTimersByTime(WARNING_SUMMARY_MS);
    expect(lines[1]).toBe(
      'warn Lock "order:<0>" ("order:1", "order:2", "order:3", …): 52 more calls not granted in the last 10 s: ' +
        '37 turned away at the door, 12 cut by their deadline, 3 ran out their waitTimeout',
    );
  });

  it('two locks each get their own line at once and their own summary', () => {
    jest.useFakeTimers();
    const { lines, logger } = capture();
    const log = loggedEvents(logger);
    for (let i = 0; i < 5; i++) {
      log(timeout('a', 'a:1', shed('a:1')));
      log(timeout('b', 'b:1', waitedOut('b:1'), 100));
    }
    expect(lines).toEqual([
      expect.stringMatching(/^warn Lock "a" \("a:1"\): turned away at the door/),
      'warn Lock "b" ("b:1"): not granted within 100 ms',
    ]);
    jest.advanceTimersByTime(WARNING_SUMMARY_MS);
    expect(lines.slice(2)).toEqual([
      'warn Lock "a" ("a:1"): 4 more calls not granted in the last 10 s: 4 turned away at the door',
      'warn Lock "b" ("b:1"): 4 more calls not granted in the last 10 s: 4 ran out their waitTimeout',
    ]);
  });

  it('a lock warned once writes no summary, and its next warning after the window is written at once', () => {
    jest.useFakeTimers();
    const { lines, logger } = capture();
    const log = loggedEvents(logger);
    log(timeout('w', 'w:1', waitedOut('w:1'), 100));
    jest.advanceTimersByTime(WARNING_SUMMARY_MS);
    expect(lines).toHaveLength(1);
    expect(jest.getTimerCount()).toBe(0);
    log(timeout('w', 'w:1', waitedOut('w:1'), 100));
    expect(lines).toHaveLength(2);
  });

  it('a lost lease is written at once, every time, beside a summarised lock', () => {
    jest.useFakeTimers();
    const { lines, logger } = capture();
    const log = loggedEvents(logger);
    const lost: LockEvent = {
      kind: 'lost',
      name: 'job',
      keys: ['job:1'],
      heldMs: 1200,
      reason: 'taken-over',
      error: new LockLostError('job:1', 'taken-over', 'another holder took it'),
    };
    log(timeout('job', 'job:1', waitedOut('job:1'), 100));
    log(lost);
    log(lost);
    expect(
      lines.filter((line) => line.startsWith('error Lock "job" ("job:1") lost after 1200 ms')),
    ).toHaveLength(2);
  });

  it('flush writes the pending summaries now and stops the timer', () => {
    jest.useFakeTimers();
    const { lines, logger } = capture();
    const log = loggedEvents(logger);
    log(timeout('a', 'a:1', shed('a:1')));
    log(timeout('a', 'a:1', shed('a:1')));
    log.flush();
    expect(lines[1]).toMatch(/^warn Lock "a" \("a:1"\): 1 more call not granted/);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('past MAX_SUMMARISED_LOCKS names, warnings of further locks are counted in one line', () => {
    jest.useFakeTimers();
    const { lines, logger } = capture();
    const log = loggedEvents(logger);
    for (let i = 0; i < MAX_SUMMARISED_LOCKS + 50; i++) log(timeout(`l${i}`, `k${i}`, waitedOut(`k${i}`)));
    expect(lines).toHaveLength(MAX_SUMMARISED_LOCKS);
    jest.advanceTimersByTime(WARNING_SUMMARY_MS);
    expect(lines).toHaveLength(MAX_SUMMARISED_LOCKS + 1);
    expect(lines.at(-1)).toMatch(/^warn Locks: 50 more calls not granted in the last 10 s/);
  });

  it("the window's timer does not keep the process alive", () => {
    const spy = jest.spyOn(globalThis, 'setTimeout');
    const log = loggedEvents(capture().logger);
    try {
      log(timeout('a', 'a:1', shed('a:1')));
      const timer = spy.mock.results.at(-1)?.value as NodeJS.Timeout;
      expect(timer.hasRef()).toBe(false);
    } finally {
      log.flush();
      spy.mockRestore();
    }
  });

  it('a logger that throws breaks neither the call nor the summary, and the own onEvent still runs', () => {
    jest.useFakeTimers();
    const own = jest.fn();
    const log = loggedEvents(
      {
        warn: () => {
          throw new Error('disk full');
        },
        error: () => {},
      },
      own,
    );
    log(timeout('a', 'a:1', shed('a:1')));
    log(timeout('a', 'a:1', shed('a:1')));
    expect(() => jest.advanceTimersByTime(WARNING_SUMMARY_MS)).not.toThrow();
    expect(own).toHaveBeenCalledTimes(2);
  });
});

describe('through a LockService on Redis', () => {
  it("a real timeout and a real deadline are worded as such, and a lock's second warning waits for the summary", async () => {
    const { lines, logger } = capture();
    const locks = lockService(server(), { telemetry: { logger } });
    const holder = await locks.acquire('log:1', { ttl: 5_000 });
    await expect(locks.acquire('log:1', { label: 'wait', waitTimeout: 20 })).rejects.toBeInstanceOf(
      LockTimeoutError,
    );
    await expect(locks.acquire('log:1', { label: 'wait', waitTimeout: 20 })).rejects.toBeInstanceOf(
      LockTimeoutError,
    );
    await expect(
      locks.acquire('log:1', { label: 'late', deadline: Date.now() - 1_000 }),
    ).rejects.toBeInstanceOf(LockTimeoutError);
    await holder.release();
    expect(lines).toEqual([
      expect.stringMatching(/^warn Lock "wait" \("log:1"\): not granted within \d+ ms$/),
      expect.stringMatching(
        /^warn Lock "late" \("log:1"\): not asked for: the call's deadline had passed \d+ ms before(; retry in about \d+ ms)?$/,
      ),
    ]);
    // Closing the service writes the summary still counted, before the process may exit.
    await locks.close();
    expect(lines.slice(2)).toEqual([
      expect.stringMatching(
        /^warn Lock "wait" \("log:1"\): 1 more call not granted in the last 10 s: 1 ran out their waitTimeout$/,
      ),
    ]);
  });
});
