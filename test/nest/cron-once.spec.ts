// A scheduled job on two instances of one app (two processes, one Redis), with the README's pattern:
// @Cron every second above @Locked(..., { waitTimeout: 0, onTimeout: 'skip' }). Both schedulers fire a
// few ms apart; a job that takes no time ends before the other instance asks, so without minHold the
// other finds the lock free and runs it again. With minHold it runs exactly once per tick.
// CRON_REPORT=1 prints the counts.
import { describe, expect, it } from '@jest/globals';
import { spawnWorker, workerPath } from '../support/processes';
import { useRedis } from '../support/redis-server';
import type { CronReport } from '../workers/cron-app.worker';

const server = useRedis();

/** Ticks counted at least, and at most: the run ends at the first tick after MIN_TICKS once the plain
 * job has run twice in some tick (it usually has within a few), so the contrast is shown without a
 * fixed minute of waiting. */
const MIN_TICKS = 12;
const MAX_TICKS = 60;
/** A little less than the one-second period, leaving room for a tick that fires late on a busy machine. */
const MIN_HOLD = 700;

type Ran = Extract<CronReport, { type: 'ran' }>;

/** Runs per tick (the second a run started in, rounded: schedulers fire just after the boundary). */
function runsPerTick(runs: readonly Ran[], job: Ran['job'], ticks: readonly number[]): number[] {
  const counts = new Map<number, number>();
  for (const run of runs) {
    if (run.job !== job) continue;
    const tick = Math.round(run.at / 1000);
    counts.set(tick, (counts.get(tick) ?? 0) + 1);
  }
  return ticks.map((tick) => counts.get(tick) ?? 0);
}

describe('a scheduled job on two instances', () => {
  it(`runs once per tick with minHold, and sometimes twice without it (${MIN_TICKS} to ${MAX_TICKS} one-second ticks)`, async () => {
    const instances = [0, 1].map(() =>
      spawnWorker<CronReport>(workerPath('cron-app'), { url: server().url, minHold: MIN_HOLD }),
    );
    try {
      await Promise.all(instances.map((instance) => instance.next((m) => m.type === 'ready', 30_000)));
      // Both schedulers are running from the next full second on.
      const first = Math.ceil(Date.now() / 1000) + 1;
      const tickOf = (run: Ran) => Math.round(run.at / 1000);
      const allRuns = () =>
        instances.flatMap((instance) => instance.messages.filter((m): m is Ran => m.type === 'ran'));
      const span = (last: number) => Array.from({ length: last - first + 1 }, (_, i) => first + i);
      // The plain job runs on at least one instance every tick: once a run of a later tick is reported,
      // every tick before it is over. The run ends there if enough ticks are over and the plain job has
      // run twice in one of them, or if MAX_TICKS are.
      let last = 0;
      const over = (m: CronReport) => {
        if (last) return true;
        if (m.type !== 'ran') return false;
        const ended = tickOf(m) - 1;
        if (ended < first + MIN_TICKS - 1) return false;
        const doubled = runsPerTick(allRuns(), 'plain', span(ended)).some((c) => c === 2);
        if (!doubled && ended < first + MAX_TICKS - 1) return false;
        last = ended;
        return true;
      };
      const watches = instances.map((instance) => instance.next(over, (MAX_TICKS + 15) * 1_000));
      await Promise.any(watches);
      for (const watch of watches) watch.catch(() => {});
      for (const instance of instances) instance.send({ type: 'stop' });
      await Promise.all(instances.map((instance) => instance.next((m) => m.type === 'stopped', 10_000)));

      const ticks = span(last);
      const runs = allRuns();
      const withMinHold = runsPerTick(runs, 'minHold', ticks);
      const plain = runsPerTick(runs, 'plain', ticks);
      const count = (counts: number[], n: number) => counts.filter((c) => c === n).length;
      if (process.env.CRON_REPORT) {
        console.log(
          `cron-once: ${ticks.length} ticks; minHold ${MIN_HOLD}: ${count(withMinHold, 1)} once, ` +
            `${count(withMinHold, 2)} twice, ${count(withMinHold, 0)} never; without: ` +
            `${count(plain, 1)} once, ${count(plain, 2)} twice, ${count(plain, 0)} never`,
        );
      }

      expect(withMinHold).toEqual(ticks.map(() => 1));
      // Without minHold the job ran twice in some ticks: minHold is what makes it once.
      expect(count(plain, 2)).toBeGreaterThan(0);
      expect(plain.every((c) => c >= 1 && c <= 2)).toBe(true);
    } finally {
      await Promise.all(instances.map((instance) => instance.stop()));
    }
  }, 120_000);
});
