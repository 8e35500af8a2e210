// The door on Redis, across processes: a service that has seen a key's line move turns away, at once
// and unqueued, a call that finds more in line (waiters of other processes) than its wait could see
// through; the line is not touched and is served in its order. The refusal is the script's, so no
// other caller can slip in between a look at the line and the join. For a mutex, a semaphore's permits
// and a read-write lock's writers.
import { describe, expect, it } from '@jest/globals';
import {
  type AcquireOptions,
  type Lease,
  type LockService,
  LockShedError,
  LockTimeoutError,
} from '../../lib/core';
import { sleep } from '../support/event-loop';
import { lockService, until } from '../support/lock-fixtures';
import { spawnWorker, type Worker, workerPath } from '../support/processes';
import { useRedis } from '../support/redis-server';
import type { AgentMessage } from '../workers/lock-agent.worker';

const server = useRedis();

async function readyAgent(): Promise<Worker<AgentMessage>> {
  const agent = spawnWorker<AgentMessage>(workerPath('lock-agent'), { url: server().url });
  await agent.next((m) => m.type === 'ready');
  return agent;
}

/** Each kind of lock: its options, and how many holders fill it. */
const KINDS: { kind: string; options: AcquireOptions; holders: number }[] = [
  { kind: 'a mutex', options: {}, holders: 1 },
  { kind: "a semaphore's permits", options: { permits: 2 }, holders: 2 },
  { kind: "a read-write lock's writer", options: { mode: 'write' }, holders: 1 },
];

describe.each(KINDS)('the door on Redis, for $kind', ({ kind, options, holders }) => {
  // A key of its own per kind: the pace one kind's test leaves in Redis (10 s, never replaced meanwhile)
  // must not stand in for the one the next kind's test teaches, and expire under it.
  const keyed = (name: string) => `${name}:${kind.replace(/[^a-z]+/gi, '-')}`;
  const queueLength = async (locks: LockService, key: string): Promise<number> =>
    (await locks.inspect(key)).queueLength;

  /** Holders of `locks` that fill `key`, with a release of them all. */
  async function fill(locks: LockService, key: string, extra: AcquireOptions = {}) {
    const all: Lease[] = [];
    for (let i = 0; i < holders; i++) all.push(await locks.acquire(key, { ...options, ...extra }));
    return { release: () => Promise.all(all.map((lease) => lease.release())) };
  }

  /** `locks` waits behind `other` for a hold of about `ms`, `times` times: it learns the line's pace. */
  async function learnPace(locks: LockService, other: LockService, key: string, ms: number, times: number) {
    for (let i = 0; i < times; i++) {
      const holder = await fill(other, key);
      const waiting = locks.acquire(key, { ...options, waitTimeout: 10_000 });
      await until(
        () => queueLength(locks, key),
        (length) => length === 1,
      );
      await sleep(ms); // the hold the waiter waits through
      await holder.release();
      await (await waiting).release();
    }
  }

  /**
   * A service that learnt `key`'s pace (about 100 ms a place), a hold of another, and three waiters of
   * other processes in line behind it, in order.
   */
  async function pacedLine(key: string) {
    const [locks, other] = [lockService(server()), lockService(server())];
    // The agents first: the pace the service leaves in Redis lasts 10 s from its first paced join, and
    // starting three processes on a busy machine can take longer than that.
    const agents = await Promise.all([readyAgent(), readyAgent(), readyAgent()]);
    await learnPace(locks, other, key, 100, 3);
    const holder = await fill(other, key, { ttl: 30_000, renew: true });
    for (const [i, agent] of agents.entries()) {
      agent.send({ type: 'acquire', id: `w${i}`, key, waitTimeout: 60_000, ...options });
      await until(
        () => queueLength(locks, key),
        (length) => length === i + 1,
      );
    }
    return { locks, agents, holder };
  }

  it('turns away a call that could not wait through the line of other processes; the line stays as it was', async () => {
    const key = keyed('door');
    const { locks, agents, holder } = await pacedLine(key);
    const line = (await locks.inspect(key)).waiting;

    const error = await locks.acquire(key, { ...options, waitTimeout: 250 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockShedError);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect((error as LockShedError).inLine).toBe(3);
    expect((error as LockShedError).waitedMs).toBe(0);
    expect((await locks.inspect(key)).waiting).toEqual(line);

    // A call that can wait joins as usual, behind them.
    const patient = locks.acquire(key, { ...options, waitTimeout: 60_000 });
    await until(
      () => queueLength(locks, key),
      (length) => length === 4,
    );
    await holder.release();
    for (const [i, agent] of agents.entries()) {
      // Served in the line's own order.
      await agent.next((m) => m.type === 'granted');
      agent.send({ type: 'release', id: `w${i}` });
      await agent.next((m) => m.type === 'released');
    }
    await (await patient).release();
  }, 60_000);

  it('protects a new instance from its first join: the pace another instance left in Redis sets its door', async () => {
    const key = keyed('door-cold');
    const { agents, holder } = await pacedLine(key);
    // A service started now, which has never seen this key's line move.
    const fresh = lockService(server());
    const error = await fresh.acquire(key, { ...options, waitTimeout: 250 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockShedError);
    const shed = error as LockShedError;
    expect(shed.inLine).toBe(3);
    expect(shed.waitedMs).toBe(0);
    // The pace it was turned away by is the one the other service saw: about 100 ms a place.
    expect(shed.perPlaceMs).toBeGreaterThanOrEqual(90);
    expect(shed.retryAfterMs).toBeGreaterThanOrEqual(3 * 90);
    expect((await fresh.inspect(key)).queueLength).toBe(3);
    // It has learnt the pace: its next call is turned away by its own door too (no cold join sent).
    const again = await fresh.acquire(key, { ...options, waitTimeout: 250 }).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(LockShedError);
    await holder.release();
    for (const [i, agent] of agents.entries()) {
      await agent.next((m) => m.type === 'granted');
      agent.send({ type: 'release', id: `w${i}` });
      await agent.next((m) => m.type === 'released');
    }
  }, 60_000);
});

describe('the pace a service leaves in Redis', () => {
  it('is offered with one join every 2 s at most, not with each: a busy line pays no write per join', async () => {
    const key = 'pace-offer';
    const paceKey = `lock:{${key}}:p`;
    const [locks, other] = [lockService(server()), lockService(server())];
    // One wait behind a hold of the other service: `locks` learns the line's pace.
    const first = await other.acquire(key);
    const learning = locks.acquire(key, { waitTimeout: 10_000 });
    await until(
      async () => (await locks.inspect(key)).queueLength,
      (length) => length === 1,
    );
    await first.release();
    await (await learning).release();

    const holder = await other.acquire(key, { ttl: 30_000 });
    // Its first join with a pace offers it, and Redis keeps it.
    const offering = locks.acquire(key, { waitTimeout: 10_000 });
    await until(
      async () => (await locks.inspect(key)).queueLength,
      (length) => length === 1,
    );
    expect(await server().admin((redis) => redis.exists(paceKey))).toBe(1);
    // Gone (expired, evicted): the next joins of the same service, within 2 s, do not leave it again.
    await server().admin((redis) => redis.del(paceKey));
    const next = [locks.acquire(key, { waitTimeout: 10_000 }), locks.acquire(key, { waitTimeout: 10_000 })];
    await until(
      async () => (await locks.inspect(key)).queueLength,
      (length) => length === 3,
    );
    expect(await server().admin((redis) => redis.exists(paceKey))).toBe(0);

    await holder.release();
    for (const waiting of [offering, ...next]) await (await waiting).release();
  });
});
