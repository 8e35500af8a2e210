import { describe, expect, it } from '@jest/globals';
import { LockLostError } from '../../lib/core';
import { sleep, watchEventLoop } from '../support/event-loop';
import { abortedAt, lockService, outcome, until } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();

describe('renewal', () => {
  it('a lease held for 5x its TTL inside using() stays held', async () => {
    const locks = lockService(server(), { claimWindow: 100 });
    // A renewal every third of the ttl must reach Redis before the lease runs out: with 400 ms, a busy
    // 2-core machine (test:busy in a clean clone's CI) stalled this process past that once, and the lease
    // was lost. 1 s leaves room for the stalls measured there (up to ~300 ms).
    const ttl = 1_000;
    const observer = lockService(server());
    const result = await locks.using(
      'long-job',
      async (lease) => {
        const until = performance.now() + 5 * ttl;
        while (performance.now() < until) {
          const info = await observer.inspect('long-job');
          expect(info.holder).toBe(lease.token);
          expect(lease.signal.aborted).toBe(false);
          // The length of the job is the scenario; checks run every 50 ms along the way.
          await sleep(50);
        }
        return 'done';
      },
      { ttl },
    );
    expect(result).toBe('done');
    expect((await observer.inspect('long-job')).held).toBe(false);
  });

  it('when the key is deleted behind its back, the signal aborts with LockLostError before the validity ends', async () => {
    const locks = lockService(server(), { claimWindow: 100 });
    const ttl = 900;
    const admin = server().client();
    const run = outcome(
      locks.using(
        'deleted',
        async (lease) => {
          const deletedAt = performance.now();
          await admin.del('lock:{deleted}');
          const lostAt = await abortedAt(lease.signal);
          // Detected by the next renewal (every ttl/3), while the lease would still have been valid.
          expect(lostAt - deletedAt).toBeLessThan(ttl);
          expect(lease.signal.reason).toBeInstanceOf(LockLostError);
        },
        { ttl },
      ),
    );
    const { error } = await run;
    expect(error).toBeInstanceOf(LockLostError);
  });

  it('when Redis is paused past the TTL, the signal aborts with LockLostError before the validity ends', async () => {
    const locks = lockService(server(), { commandTimeout: 10_000, claimWindow: 100 });
    const ttl = 600;
    let pausedAt = 0;
    const run = outcome(
      locks.using(
        'paused',
        async (lease) => {
          pausedAt = performance.now();
          server().pause();
          const lostAt = await abortedAt(lease.signal);
          server().resume();
          // The last confirmed extension was sent before the pause, so validity ended by pausedAt + ttl.
          expect(lostAt).toBeLessThan(pausedAt + ttl);
          expect(lease.signal.reason).toMatchObject({ code: 'LOCK_LOST', key: 'paused' });
        },
        { ttl },
      ),
    );
    const { error } = await run;
    server().resume();
    expect(error).toBeInstanceOf(LockLostError);
  });

  it('without renew, the signal aborts before the TTL runs out', async () => {
    const locks = lockService(server(), { claimWindow: 100 });
    // The abort is a timer set inside the validity: it fires as late as this process's event loop runs.
    const loop = watchEventLoop();
    const sentBefore = performance.now();
    const lease = await locks.acquire('no-renew', { ttl: 300 });
    const lostAt = await abortedAt(lease.signal);
    loop.stop();
    expect(lostAt).toBeLessThan(sentBefore + 300 + loop.worst());
    // Once Redis has expired it too, releasing says so with a clear, typed error.
    await until(
      () => locks.inspect('no-renew'),
      (info) => !info.held,
    );
    await expect(lease.release()).rejects.toMatchObject({ code: 'LOCK_NOT_HELD', key: 'no-renew' });
    await expect(lease.extend()).rejects.toMatchObject({ code: 'LOCK_NOT_HELD' });
  });
  it('a process frozen past its validity sees the lease lost as soon as it looks, before any timer runs', async () => {
    const locks = lockService(server(), { claimWindow: 100 });
    const lease = await locks.acquire('frozen', { ttl: 300, renew: false });
    // Freeze this process (as a GC pause or SIGSTOP would): no timer can fire while the loop is blocked.
    const frozenUntil = performance.now() + 400;
    while (performance.now() < frozenUntil) {
      // blocked
    }
    // The first code to run after the freeze reads the signal: it is already aborted.
    expect(lease.signal.aborted).toBe(true);
    expect(lease.signal.reason).toBeInstanceOf(LockLostError);
    await expect(lease.release()).rejects.toMatchObject({ code: 'LOCK_NOT_HELD' });
  });
});
