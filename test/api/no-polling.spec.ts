import { describe, expect, it } from '@jest/globals';
import { sleep } from '../support/event-loop';
import { commandsIn, listening, lockService, until } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();

describe('no polling', () => {
  it('50 waiters behind a holder for 2 s cost Redis O(1) commands each, not a stream of retries', async () => {
    const holderService = lockService(server());
    const waiters = lockService(server());
    const holder = await holderService.acquire('busy', { ttl: 30_000 });

    await server().resetStats();
    // Each waiter releases as soon as it is granted, so the queue drains one holder at a time.
    const pending = Array.from({ length: 50 }, () =>
      waiters.acquire('busy', { waitTimeout: 20_000 }).then(async (lease) => {
        await lease.release();
        return lease.fence;
      }),
    );
    // Watch the queue with plain LLEN so the test's own probes are not counted as script calls.
    const admin = server().client();
    await until(
      () => admin.llen('lock:{busy}:q'),
      (length) => length === 50,
    );
    // Its service listens (a first wait's subscription, and its re-check if a push was missed, are done).
    await listening(server(), waiters);
    const joined = await server().commandStats();

    // Two seconds of pure waiting: nothing may reach Redis.
    await server().resetStats();
    await sleep(2_000);
    const idle = await server().commandStats();
    expect(commandsIn(idle)).toBe(0);

    // Joining cost at most two script calls per waiter: a try, then (once subscribed) joining the queue.
    const scripts = (joined.get('evalsha') ?? 0) + (joined.get('eval') ?? 0);
    expect(scripts).toBeGreaterThanOrEqual(50);
    expect(scripts).toBeLessThanOrEqual(2 * 50 + 5 /* first-time script loads */);

    await holder.release();
    const fences = await Promise.all(pending);
    expect(new Set(fences).size).toBe(50);
  }, 30_000);
});
