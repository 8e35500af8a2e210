import { describe, expect, it } from '@jest/globals';
import { LockError } from '../../lib/core';
import { lockService, outcome, until, whenAborted } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();

describe('Redis restart', () => {
  it('while waiters wait, every caller gets a grant or a typed error; none hangs', async () => {
    const holderService = lockService(server(), { claimWindow: 200 });
    const holder = await holderService.acquire('restart', { ttl: 2_000, renew: true });
    const lost = whenAborted(holder.signal);

    const waiters = [
      lockService(server(), { claimWindow: 200 }),
      lockService(server(), { claimWindow: 200 }),
    ];
    const started = performance.now();
    const calls = Array.from({ length: 20 }, (_, i) =>
      outcome(waiters[i % 2].using('restart', async () => i, { ttl: 2_000, waitTimeout: 8_000 })),
    );
    const admin = server().client();
    await until(
      () => admin.llen('lock:{restart}:q'),
      (length) => length === 20,
    );

    await server().kill();
    await server().restart();
    const results = await Promise.all(calls);
    const took = performance.now() - started;

    // No hang: everything settled within the waiters' waitTimeout plus a command timeout.
    expect(took).toBeLessThan(8_000 + 5_000);
    for (const r of results) {
      if (r.error !== undefined) expect(r.error).toBeInstanceOf(LockError);
    }
    // The restart erased the lock (no persistence): the old holder learns it lost it.
    expect(await lost).toMatchObject({ code: 'LOCK_LOST' });
    const granted = results.filter((r) => r.error === undefined).length;
    expect(granted).toBeGreaterThan(0);
  }, 30_000);
});
