// The standing-line rule on Redis, with the holders in another process: while a key's line stands (every
// call this service was served from it in an interval waited past the target), a call that serves
// someone (a request's, or one with a deadline) waits at most half the target; a job's call (no request,
// no deadline: a cron's) is never cut, waits as long as it asked, and is served. A wait the rule cut is
// refused for overload (`retryAfterMs`, from the line's pace); one that ran out its own waitTimeout is not.
import { describe, expect, it } from '@jest/globals';
import { type LockService, LockTimeoutError } from '../../lib/core';
import { sleep } from '../support/event-loop';
import { lockService, until } from '../support/lock-fixtures';
import { spawnWorker, type Worker, workerPath } from '../support/processes';
import { useRedis } from '../support/redis-server';
import { shedRule } from '../support/shed-rule';
import type { AgentMessage } from '../workers/lock-agent.worker';

const server = useRedis();
const TARGET = 20;
const INTERVAL = 50;

/** `agent` (another process) holds `key` until `release` is called. */
async function heldBy(agent: Worker<AgentMessage>, key: string, id: string) {
  agent.send({ type: 'acquire', id, key, ttl: 30_000, renew: true });
  await agent.next((m) => m.type === 'granted' && m.id === id);
  return async () => {
    agent.send({ type: 'release', id });
    await agent.next((m) => m.type === 'released' && m.id === id);
  };
}

/** `locks` is served from `key`'s line after about `ms` behind `agent`'s hold. */
async function servedAfter(
  locks: LockService,
  agent: Worker<AgentMessage>,
  key: string,
  ms: number,
  id: string,
) {
  const release = await heldBy(agent, key, id);
  const waiting = locks.acquire(key, { waitTimeout: 10_000 });
  await until(
    () => locks.inspect(key),
    (info) => info.queueLength === 1,
  );
  await sleep(ms); // the hold the waiter waits through
  await release();
  await (await waiting).release();
}

/**
 * A service whose line on `key` stands: two calls served past the target (5 targets a place), an interval
 * apart; and the agent in another process that held it.
 */
async function standingLine(key: string) {
  const agent = spawnWorker<AgentMessage>(workerPath('lock-agent'), { url: server().url });
  await agent.next((m) => m.type === 'ready');
  const locks = lockService(server(), shedRule({ target: TARGET, interval: INTERVAL }));
  await servedAfter(locks, agent, key, 5 * TARGET, 'h1');
  await sleep(2 * INTERVAL); // so the next serve closes an interval
  await servedAfter(locks, agent, key, 5 * TARGET, 'h2');
  return { agent, locks };
}

describe('the standing-line rule on Redis', () => {
  it("cuts a call with a deadline behind a standing line, never a job's: it waits and is served", async () => {
    const key = 'standing';
    const { agent, locks } = await standingLine(key);

    const release = await heldBy(agent, key, 'h3');
    // Someone waits on this one (its deadline 5 s away): cut to half the target, it gives up.
    const cut = await locks.acquire(key, { deadline: Date.now() + 5_000 }).catch((e: unknown) => e);
    expect(cut).toBeInstanceOf(LockTimeoutError);
    expect((cut as LockTimeoutError).waitedMs).toBeLessThan(2_500);

    // A job's call behind the same hold: no request, no deadline. It waits through the whole hold.
    let served = false;
    const job = locks.acquire(key, { waitTimeout: 20_000 }).then((lease) => {
      served = true;
      return lease;
    });
    await until(
      () => locks.inspect(key),
      (info) => info.queueLength === 1,
    );
    await sleep(10 * TARGET); // far past half the target
    expect(served).toBe(false);
    expect((await locks.inspect(key)).queueLength).toBe(1); // still in line, not cut
    await release();
    await (await job).release();
    await agent.stop();
  }, 60_000);

  it('a wait the line cut is refused for overload, with when the line would clear; one that ran out its own waitTimeout is not', async () => {
    const key = 'standing-refusal';
    const { agent, locks } = await standingLine(key);

    const release = await heldBy(agent, key, 'h3');
    // Serves someone (a deadline a minute away, past its own 5 s wait, so the deadline cuts nothing).
    const cut = await locks
      .acquire(key, { waitTimeout: 5_000, deadline: Date.now() + 60_000 })
      .catch((e: unknown) => e);
    expect(cut).toBeInstanceOf(LockTimeoutError);
    const refused = cut as LockTimeoutError;
    expect(refused.deadline).toBeUndefined();
    expect(refused.waitedMs).toBeLessThan(2_500);
    // From the line: it joined first, at a pace of at least 5 targets a place.
    expect(refused.retryAfterMs).toBeGreaterThanOrEqual(5 * TARGET);
    expect(refused.message).toMatch(
      /cut from its waitTimeout of 5000 ms and it was turned away for overload/,
    );
    expect(refused.message).not.toMatch(/another holder kept it/);

    // A job's call behind the same hold, never cut: its own waitTimeout runs out while the lock is held.
    const own = await locks.acquire(key, { waitTimeout: 10 * TARGET }).catch((e: unknown) => e);
    expect(own).toBeInstanceOf(LockTimeoutError);
    expect((own as LockTimeoutError).waitedMs).toBeGreaterThanOrEqual(10 * TARGET);
    expect((own as LockTimeoutError).retryAfterMs).toBeUndefined();
    expect((own as LockTimeoutError).message).toMatch(/another holder kept it/);
    await release();
    await agent.stop();
  }, 60_000);
});
