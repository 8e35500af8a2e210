// minHold: a lease released sooner than minHold after its grant leaves the lock held (by the same
// holder, unrenewed) until minHold has passed; then the queue is served in order, woken by push.
// MIN_HOLD_REPORT=1 prints the measured grant times.
import { describe, expect, it } from '@jest/globals';
import { SLACK_MS, sleep } from '../support/event-loop';
import { elapsedSince, listening, lockService, until } from '../support/lock-fixtures';
import { spawnWorker, workerPath } from '../support/processes';
import { useRedis } from '../support/redis-server';
import type { AgentMessage } from '../workers/lock-agent.worker';

const server = useRedis();

const report = (what: string, ms: number): void => {
  if (process.env.MIN_HOLD_REPORT) console.log(`min-hold: ${what}: ${ms.toFixed(1)} ms`);
};

describe('minHold', () => {
  it('released at once, the lock stays held for minHold after its grant; queued waiters then follow in order', async () => {
    // Long enough that two waiters join before it has passed, on a busy machine too.
    const minHold = 1_000;
    const holderSide = lockService(server());
    const lease = await holderSide.acquire('mh', { ttl: 5_000, minHold });
    const grantedAt = performance.now();
    const [first, second] = [lockService(server()), lockService(server())];
    const firstWaiting = first.acquire('mh', { ttl: 5_000, waitTimeout: 5_000 });
    await until(
      () => holderSide.inspect('mh'),
      (info) => info.queueLength === 1,
    );
    const secondWaiting = second.acquire('mh', { ttl: 5_000, waitTimeout: 5_000 });
    await until(
      () => holderSide.inspect('mh'),
      (info) => info.queueLength === 2,
    );

    await lease.release();
    // Still held by the same holder, for what is left of minHold, and nobody else gets it meanwhile.
    const info = await holderSide.inspect('mh');
    expect(info).toMatchObject({ held: true, holder: lease.token, queueLength: 2 });
    expect(info.ttl).toBeGreaterThan(0);
    expect(info.ttl).toBeLessThanOrEqual(minHold);
    expect(await lockService(server()).tryAcquire('mh')).toBeNull();

    const firstLease = await firstWaiting;
    const firstAfter = elapsedSince(grantedAt);
    report('waiter granted after a grant with minHold 1000 released at once', firstAfter);
    // The hold counts from when the holder learnt of its grant, so never less than minHold (1 ms for
    // the await between the grant and the reading above).
    expect(firstAfter).toBeGreaterThanOrEqual(minHold - 1);
    expect(firstAfter).toBeLessThanOrEqual(minHold + SLACK_MS);
    expect(firstLease.fence).toBeGreaterThan(lease.fence);
    // Served in order: the second waiter still waits while the first holds.
    expect((await holderSide.inspect('mh')).queueLength).toBe(1);
    const releasedFirst = performance.now();
    await firstLease.release();
    const secondLease = await secondWaiting;
    expect(elapsedSince(releasedFirst)).toBeLessThan(SLACK_MS);
    await secondLease.release();
  });

  it('nobody polls during the hold: the waiter is woken once, by the hold note, when minHold ends', async () => {
    const holderSide = lockService(server());
    const lease = await holderSide.acquire('mh-push', { ttl: 5_000, minHold: 400 });
    const waitingSide = lockService(server());
    const waiting = waitingSide.acquire('mh-push', { ttl: 5_000, waitTimeout: 5_000 });
    await until(
      () => holderSide.inspect('mh-push'),
      (info) => info.queueLength === 1,
    );
    // Its service listens (a first wait's subscription, and its re-check if a push was missed, are done).
    await listening(server(), waitingSide);
    await server().resetStats();
    await lease.release();
    const next = await waiting;
    // The holder's release-later and the waiter's one re-check when the hold ended: no retries.
    // (A script's first call on a server is an EVAL.)
    const stats = await server().commandStats();
    const scripts = (stats.get('evalsha') ?? 0) + (stats.get('eval') ?? 0);
    expect(scripts).toBe(2);
    expect(stats.get('publish')).toBe(1); // the hold note to the waiter; its own re-check took the lock
    await next.release();
  });

  it('without minHold, the same release hands the lock on at once', async () => {
    const holderSide = lockService(server());
    const lease = await holderSide.acquire('no-mh', { ttl: 5_000 });
    const waiting = lockService(server()).acquire('no-mh', { ttl: 5_000, waitTimeout: 5_000 });
    await until(
      () => holderSide.inspect('no-mh'),
      (info) => info.queueLength === 1,
    );
    const releasedAt = performance.now();
    await lease.release();
    const next = await waiting;
    expect(elapsedSince(releasedAt)).toBeLessThan(SLACK_MS);
    await next.release();
  });

  it('a release after minHold has passed frees the lock at once', async () => {
    const locks = lockService(server());
    const lease = await locks.acquire('mh-late', { ttl: 5_000, minHold: 100 });
    // The work outlasts minHold: its length is the scenario, not a stand-in for synchronisation.
    await sleep(150);
    await lease.release();
    expect((await locks.inspect('mh-late')).held).toBe(false);
  });

  it('using() returns when its function does; the lock stays held, unrenewed, until minHold ends', async () => {
    const locks = lockService(server());
    const observer = lockService(server());
    let token = '';
    const started = performance.now();
    const result = await locks.using(
      'mh-using',
      (lease) => {
        token = lease.token;
        return 'done';
      },
      { ttl: 1_000, minHold: 400 },
    );
    expect(result).toBe('done');
    expect(elapsedSince(started)).toBeLessThan(SLACK_MS);
    expect(await observer.inspect('mh-using')).toMatchObject({ held: true, holder: token });
    // No renewal after the work ended: the key goes when minHold ends, not a ttl later.
    await until(
      () => observer.inspect('mh-using'),
      (info) => !info.held,
      2_000,
    );
    const freedAfter = elapsedSince(started);
    expect(freedAfter).toBeGreaterThanOrEqual(400 - 1);
    expect(freedAfter).toBeLessThan(1_000);
    expect(await observer.tryAcquire('mh-using')).not.toBeNull();
  });

  it("is a call's or a declaration's, never a service default: defaults.minHold is refused", () => {
    expect(() => lockService(server(), { defaults: { minHold: 300 } } as never)).toThrow(
      /^Unknown option "minHold" in defaults \(known: ttl, waitTimeout, maxHold\)\.$/,
    );
  });

  it('a function that throws under using() keeps minHold too, and the error reaches the caller', async () => {
    const locks = lockService(server());
    let token = '';
    await expect(
      locks.using(
        'mh-throws',
        (lease) => {
          token = lease.token;
          throw new Error('job failed');
        },
        { minHold: 500 },
      ),
    ).rejects.toThrow('job failed');
    expect(await locks.inspect('mh-throws')).toMatchObject({ held: true, holder: token });
  });

  it('a holder SIGKILLed during minHold, while it works, is replaced when its ttl ends, as without minHold', async () => {
    const ttl = 500;
    const holder = spawnWorker<AgentMessage>(workerPath('lock-agent'), { url: server().url });
    await holder.next((m) => m.type === 'ready');
    holder.send({ type: 'acquire', id: 'h', key: 'mh-crash', ttl, minHold: ttl, renew: true });
    const held = await holder.next((m) => m.type === 'granted');
    const locks = lockService(server());
    const waiting = locks.acquire('mh-crash', { ttl, waitTimeout: 10_000 });
    await until(
      () => locks.inspect('mh-crash'),
      (info) => info.queueLength === 1,
    );
    await holder.kill();
    const killedAt = performance.now();
    const lease = await waiting;
    const replacedAfter = elapsedSince(killedAt);
    report('holder with ttl 500 and minHold 500 SIGKILLed, replaced after', replacedAfter);
    expect(replacedAfter).toBeLessThanOrEqual(ttl + SLACK_MS);
    expect(lease.fence).toBeGreaterThan(held.fence as number);
    await lease.release();
  }, 30_000);
});
