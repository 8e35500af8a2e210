// maxHold on @Locked: a handler that hangs (a call to a dead partner with no timeout) stops being the
// holder. At maxHold its lease's signal aborts with LockLostError reason 'max-hold', renewal stops, and a
// waiter in another process gets the lock once the last renewal's ttl has run out.
// MAX_HOLD_REPORT=1 prints the measured times.
import { describe, expect, it } from '@jest/globals';
import { Inject, Injectable } from '@nestjs/common';
import { type Lease, Locked, LockLostError, LockService, RedisLockModule } from '../../lib';
import { deferred } from '../support/deferred';
import { SLACK_MS, watchEventLoop } from '../support/event-loop';
import { bootApp } from '../support/nest-apps';
import { spawnWorker, workerPath } from '../support/processes';
import { useRedis } from '../support/redis-server';
import type { AgentMessage } from '../workers/lock-agent.worker';
import { connection, queued } from './locked-fixtures';

const server = useRedis();

const TTL = 500;
const MAX_HOLD = 2_000;

const report = (what: string, ms: number): void => {
  if (process.env.MAX_HOLD_REPORT) console.log(`max-hold: ${what}: ${ms.toFixed(0)} ms`);
};

/** What the hung handler saw: when it started (wall clock, as the worker reports), and its lease. */
const started = deferred<{ at: number; lease: Lease }>();

@Injectable()
class Partner {
  constructor(@Inject(LockService) readonly locks: LockService) {}

  @Locked('partner:<0>', { ttl: TTL, maxHold: MAX_HOLD })
  async call(id: string): Promise<string> {
    started.resolve({ at: Date.now(), lease: this.locks.currentLease() as Lease });
    // The partner never answers and nothing times the request out.
    await new Promise(() => {});
    return id;
  }
}

describe('@Locked with maxHold', () => {
  it('a hung handler loses the lock at maxHold; a waiter in another process gets it within one ttl more', async () => {
    const nest = await bootApp({
      imports: [RedisLockModule.forRoot(connection(server()))],
      providers: [Partner],
    });
    const locks = nest.get(LockService);
    // Started before the hung call: a worker's start-up on a busy machine can outlast maxHold, and the
    // waiter must be in line while the handler still holds the lock.
    const waiter = spawnWorker<AgentMessage>(workerPath('lock-agent'), { url: server().url });
    await waiter.next((m) => m.type === 'ready');
    const loop = watchEventLoop();
    // Taken before the call: the grant, from which maxHold counts, comes after it; the handler's own start
    // comes later still, by the interceptor's work, which a busy machine stretches.
    const calledAt = Date.now();
    void nest.get(Partner).call('dead');
    const { at: grantedAt, lease } = await started.promise;
    const aborted = new Promise<number>((resolve) =>
      lease.signal.addEventListener('abort', () => resolve(Date.now()), { once: true }),
    );
    expect(lease.signal.aborted).toBe(false);

    waiter.send({ type: 'acquire', id: 'w', key: 'partner:dead', ttl: TTL, waitTimeout: 10_000 });
    await queued(locks, 'partner:dead', 1);

    const abortedAt = await aborted;
    expect(lease.signal.reason).toBeInstanceOf(LockLostError);
    expect(lease.signal.reason).toMatchObject({ reason: 'max-hold', key: 'partner:dead' });
    // Still the holder in Redis when told to stop: the work gets up to a ttl to notice.
    const granted = await waiter.next((m) => m.type === 'granted' || m.type === 'failed');
    expect(granted).toMatchObject({ type: 'granted' });
    const servedAt = granted.at as number;
    const delay = loop.worst();
    loop.stop();
    report('signal aborted after the grant', abortedAt - grantedAt);
    report('waiter in another process granted after the grant', servedAt - grantedAt);
    report('worst event-loop delay meanwhile', delay);
    // Wall clocks of two processes on one machine, in whole ms: 1 ms of rounding either way.
    expect(abortedAt - calledAt).toBeGreaterThanOrEqual(MAX_HOLD - 1);
    expect(abortedAt - calledAt).toBeLessThan(MAX_HOLD + delay + SLACK_MS);
    expect(servedAt).toBeGreaterThanOrEqual(abortedAt - 1);
    expect(servedAt - calledAt).toBeLessThan(MAX_HOLD + TTL + delay + SLACK_MS);
    expect(granted.fence).toBeGreaterThan(lease.fence);
    waiter.send({ type: 'release', id: 'w' });
    await waiter.next((m) => m.type === 'released');
  });
});
