// The quorum store (Redlock over three independent masters) reports as one Redis does: the metrics and
// spans are about the call, whatever store serves it. Real SDK, real redis-servers.
import { describe, expect, it } from '@jest/globals';
import { LockTimeoutError } from '../../lib/core';
import { useQuorum } from '../quorum/quorum-fixtures';
import { finished, histogram, registerSdk, sum } from './otel-fixtures';

const quorum = useQuorum(3);

describe('OpenTelemetry on the quorum store', () => {
  it('a grant, a timeout and a hold, with the same names and outcomes', async () => {
    registerSdk();
    const locks = quorum().service();
    const holder = await locks.acquire('q-order', { label: 'order', ttl: 5_000 });
    await expect(locks.acquire('q-order', { label: 'order', waitTimeout: 50 })).rejects.toBeInstanceOf(
      LockTimeoutError,
    );
    await holder.release();
    expect(await sum('lock.acquisitions', { 'lock.name': 'order', 'lock.outcome': 'acquired' })).toBe(1);
    expect(await sum('lock.acquisitions', { 'lock.name': 'order', 'lock.outcome': 'timeout' })).toBe(1);
    expect(await sum('lock.waiters', { 'lock.name': 'order' })).toBe(0);
    expect(await sum('lock.held', { 'lock.name': 'order' })).toBe(0);
    expect((await histogram('lock.hold.duration', { 'lock.name': 'order' })).count).toBe(1);
    const outcomes = finished('lock.acquire order').map((s) => s.attributes['lock.outcome']);
    expect(outcomes.sort()).toEqual(['acquired', 'timeout']);
    expect(
      finished('lock.acquire order').find((s) => s.attributes['lock.outcome'] === 'acquired')?.attributes[
        'lock.fence'
      ],
    ).toBe(holder.fence);
  });
});
