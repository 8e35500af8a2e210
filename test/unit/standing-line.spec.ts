// The standing-line rule, on the engine alone: once every call served from a key's line in an interval
// waited longer than the target, a new call waits at most half the target; an interval that serves the
// calls that came ends that, one in which they were turned away does not. By default the target and interval follow the key's pace; `shed: { target, interval }` fixes
// them; `shed: 'door'` has no rule. Fast, no Redis (bench/nest-load.ts measures it: the ours-handler,
// -door and -standing variants).
import { describe, expect, it } from '@jest/globals';
import { LockTimeoutError } from '../../lib/errors/lock-timeout.error';
import type { LockServiceOptions } from '../../lib/options/service-options';
import { sleep } from '../support/event-loop';
import { shedRule } from '../support/shed-rule';
import { call, engine, servedAfter } from './engine-fixtures';

const TARGET = 20;
const INTERVAL = 200; // long enough that a busy machine does not close one between a test's steps

/**
 * How long a call waits behind a holder that outlasts its wait; `serving`: it serves a request (else it
 * is a job's, say a cron's, that nobody waits on).
 */
async function waitBehindHolder(
  locks: ReturnType<typeof engine>,
  key: string,
  waitTimeout: number,
  serving = true,
) {
  const holder = await locks.takeOne(key, call());
  const error = await locks.takeOne(key, call({ waitTimeout }, true, serving)).catch((e: unknown) => e);
  await holder?.release();
  expect(error).toBeInstanceOf(LockTimeoutError);
  return (error as LockTimeoutError).waitedMs;
}

/**
 * An engine whose line on `key` stands: a call served after more than an interval, in an interval of its
 * own (its holder, served at once, closed the one before).
 */
async function standing(options: LockServiceOptions, key: string) {
  const locks = engine(options);
  await servedAfter(locks, key, INTERVAL + TARGET);
  // So the next serve closes an interval (twice: a timer may fire a ms early by the engine's clock).
  await sleep(2 * INTERVAL);
  await servedAfter(locks, key, INTERVAL + TARGET);
  return locks;
}

describe('the standing-line rule', () => {
  it('while a line stands, a new call waits at most half the target', async () => {
    const locks = await standing(shedRule({ target: TARGET, interval: INTERVAL }), 'k');
    const waited = await waitBehindHolder(locks, 'k', 5_000);
    expect(waited).toBeGreaterThanOrEqual(TARGET / 2);
    // Far below its own 5 s: the rule cut it (a busy event loop can add to 40 ms, not 4.9 s).
    expect(waited).toBeLessThan(2_500);
  });

  it('an interval that serves the calls that came ends it: the next call waits its whole wait', async () => {
    const locks = await standing(shedRule({ target: TARGET, interval: INTERVAL }), 'k');
    await (await locks.takeOne('k', call({}, true, true)))?.release();
    await sleep(INTERVAL); // so the next serve closes an interval
    await (await locks.takeOne('k', call({}, true, true)))?.release();
    expect(await waitBehindHolder(locks, 'k', 300)).toBeGreaterThanOrEqual(300);
  });

  it('an interval in which the calls that came were turned away keeps it standing', async () => {
    const locks = await standing(shedRule({ target: TARGET, interval: INTERVAL }), 'k');
    await waitBehindHolder(locks, 'k', 5_000); // cut: it came and was not served
    await sleep(INTERVAL); // so the next serve closes an interval
    await (await locks.takeOne('k', call({}, true, true)))?.release(); // 1 served of 2 that came
    expect(await waitBehindHolder(locks, 'k', 5_000)).toBeLessThan(2_500);
  });

  it('a call that serves nobody (no request, no deadline: a cron job) waits its whole wait', async () => {
    const locks = await standing(shedRule({ target: TARGET, interval: INTERVAL }), 'k');
    expect(await waitBehindHolder(locks, 'k', 300, false)).toBeGreaterThanOrEqual(300);
  });

  it('a call with a deadline serves someone: its wait is cut', async () => {
    const locks = await standing(shedRule({ target: TARGET, interval: INTERVAL }), 'k');
    const holder = await locks.takeOne('k', call());
    const deadline = Date.now() + 5_000;
    const error = await locks.takeOne('k', call({ deadline })).catch((e: unknown) => e);
    await holder?.release();
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect((error as LockTimeoutError).waitedMs).toBeLessThan(2_500);
  });

  it("is off with shed: 'door': behind the same standing line, a call waits its whole wait", async () => {
    const locks = await standing(shedRule('door'), 'k');
    expect(await waitBehindHolder(locks, 'k', 300)).toBeGreaterThanOrEqual(300);
  });
});

/**
 * `n` calls on `key` of `locks` joining its line at once, each holding it `holdMs` when served: the line
 * moves at about `holdMs` a place, and the call at place p waits about p places.
 */
async function longLine(locks: ReturnType<typeof engine>, key: string, n: number, holdMs: number) {
  const holder = await locks.takeOne(key, call());
  const served = Array.from({ length: n }, () =>
    locks.takeOne(key, call({ waitTimeout: 60_000 })).then(async (lease) => {
      await sleep(holdMs); // the hold the line moves at
      await lease?.release();
    }),
  );
  while ((await locks.store.inspect(key)).queueLength < n) await new Promise((r) => setImmediate(r));
  await holder?.release();
  await Promise.all(served);
}

describe('the default rule, paced by the key', () => {
  // 330 in line, each held 5 ms: a target of 15 places and an interval of 150. The first interval
  // holds the calls served from the first places (short waits); the second, calls that each waited past
  // 150 places: the line stands from there to the end.
  const IN_LINE = 330;
  const HOLD = 5;

  it('a line that stands an interval cuts a new call to half its paced target', async () => {
    const locks = engine();
    await longLine(locks, 'k', IN_LINE, HOLD);
    const waited = await waitBehindHolder(locks, 'k', 20_000);
    expect(waited).toBeGreaterThanOrEqual(10); // never below half the 20 ms floor
    // Far below its own 20 s: the rule cut it to 7.5 places (a busy event loop can stretch a place).
    expect(waited).toBeLessThan(5_000);
    // The line still stands (its interval lasts 150 places): a job's call behind it waits its whole wait.
    expect(await waitBehindHolder(locks, 'k', 600, false)).toBeGreaterThanOrEqual(600);
  }, 30_000);

  it("the same line with shed: 'door': a new call waits its whole wait", async () => {
    const locks = engine(shedRule('door'));
    await longLine(locks, 'k', IN_LINE, HOLD);
    expect(await waitBehindHolder(locks, 'k', 600)).toBeGreaterThanOrEqual(600);
  }, 30_000);
});
