import { describe, expect, it } from '@jest/globals';
import { commandsIn, lockService, outcome } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();

describe('timeout and abort', () => {
  it('waiters that time out or are aborted leave the queue: no ghost entries remain', async () => {
    const locks = lockService(server());
    const holder = await locks.acquire('ghosts');
    const others = lockService(server());

    const controllers = Array.from({ length: 10 }, () => new AbortController());
    const aborted = controllers.map((c) =>
      outcome(others.acquire('ghosts', { waitTimeout: 20_000, signal: c.signal })),
    );
    const timedOut = Array.from({ length: 10 }, (_, i) =>
      outcome(others.acquire('ghosts', { waitTimeout: 200 + 10 * i })),
    );
    for (const c of controllers) c.abort(new Error('caller gave up'));

    for (const r of await Promise.all(aborted)) expect(r.error).toMatchObject({ code: 'LOCK_ABORTED' });
    for (const r of await Promise.all(timedOut)) {
      expect(r.error).toMatchObject({ code: 'LOCK_TIMEOUT', key: 'ghosts' });
      expect((r.error as { waitedMs: number }).waitedMs).toBeGreaterThanOrEqual(200);
    }
    // Each waiter's cancel is sent before its promise settles, so one more round trip sees them all gone.
    const admin = server().client();
    await admin.ping();
    expect(await admin.llen('lock:{ghosts}:q')).toBe(0);
    expect((await locks.inspect('ghosts')).queueLength).toBe(0);

    // With the ghosts gone, a release leaves the lock free rather than granting it to nobody.
    await holder.release();
    expect((await locks.inspect('ghosts')).held).toBe(false);
  });

  it('an already aborted signal fails before anything is sent to Redis', async () => {
    const locks = lockService(server());
    await server().resetStats();
    const controller = new AbortController();
    controller.abort();
    await expect(locks.acquire('pre-aborted', { signal: controller.signal })).rejects.toMatchObject({
      code: 'LOCK_ABORTED',
    });
    expect(commandsIn(await server().commandStats())).toBe(0);
  });
});
