// waitTimeout: Infinity waits without limit: woken by push on release, recovered by its one bounded
// fallback re-check when the holder crashed, stopped by its AbortSignal, and never a timer beyond what
// Node can hold (which would fire at once, with a TimeoutOverflowWarning).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SLACK_MS, sleep } from '../support/event-loop';
import { commandsIn, elapsedSince, listening, lockService, outcome, until } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();

const warnings: string[] = [];
const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
beforeAll(() => {
  process.on('warning', onWarning);
});
afterAll(() => {
  process.off('warning', onWarning);
});

describe('waitTimeout: Infinity', () => {
  it('waits without polling and is woken by push when the holder releases', async () => {
    const holderSide = lockService(server());
    const holder = await holderSide.acquire('forever', { ttl: 30_000 });
    const waitingSide = lockService(server());
    const waiting = waitingSide.acquire('forever', { waitTimeout: Number.POSITIVE_INFINITY });
    await until(
      () => holderSide.inspect('forever'),
      (info) => info.queueLength === 1,
    );
    // The queue key still expires, however long the wait.
    expect(await server().client().pttl('lock:{forever}:q')).toBeGreaterThan(0);
    // Its service listens (a first wait's subscription, and its re-check if a push was missed, are done).
    await listening(server(), waitingSide);
    await server().resetStats();
    // Time passing while it waits is the scenario: nothing may reach Redis meanwhile.
    await sleep(500);
    expect(commandsIn(await server().commandStats())).toBe(0);

    const releasedAt = performance.now();
    await holder.release();
    const lease = await waiting;
    expect(elapsedSince(releasedAt)).toBeLessThan(SLACK_MS);
    await lease.release();
    expect(warnings).toEqual([]);
  });

  it('takes over from a holder that crashed, at the end of its ttl', async () => {
    const holderSide = lockService(server());
    await holderSide.acquire('forever-crash', { ttl: 400, renew: false }); // never released
    const started = performance.now();
    const lease = await lockService(server()).acquire('forever-crash', {
      waitTimeout: Number.POSITIVE_INFINITY,
    });
    expect(elapsedSince(started)).toBeLessThan(400 + SLACK_MS);
    await lease.release();
    expect(warnings).toEqual([]);
  });

  it('is stopped by its AbortSignal and leaves the queue', async () => {
    const holderSide = lockService(server());
    const holder = await holderSide.acquire('forever-abort', { ttl: 30_000 });
    const controller = new AbortController();
    const waiting = outcome(
      lockService(server()).acquire('forever-abort', {
        waitTimeout: Number.POSITIVE_INFINITY,
        signal: controller.signal,
      }),
    );
    await until(
      () => holderSide.inspect('forever-abort'),
      (info) => info.queueLength === 1,
    );
    controller.abort();
    expect((await waiting).error).toMatchObject({ code: 'LOCK_ABORTED' });
    await until(
      () => holderSide.inspect('forever-abort'),
      (info) => info.queueLength === 0,
    );
    await holder.release();
    expect(warnings).toEqual([]);
  });

  it('works as a service default too', async () => {
    const locks = lockService(server(), { defaults: { waitTimeout: Number.POSITIVE_INFINITY } });
    const holder = await locks.acquire('forever-default', { ttl: 30_000 });
    const waiting = lockService(server(), { defaults: { waitTimeout: Number.POSITIVE_INFINITY } }).acquire(
      'forever-default',
    );
    await until(
      () => locks.inspect('forever-default'),
      (info) => info.queueLength === 1,
    );
    await holder.release();
    await (await waiting).release();
  });
});
