// The door on Redis, across processes: a service that has seen a key's line move turns away, at once
// and unqueued, a call that finds more in line (waiters of other processes) than its wait could see
// through; the line is not touched and is served in its order. The refusal is the script's, so no
// other caller can slip in between a look at the line and the join.
import { describe, expect, it } from '@jest/globals';
import { type LockService, LockShedError, LockTimeoutError } from '../../lib/core';
import { lockService, until } from '../support/lock-fixtures';
import { spawnWorker, type Worker, workerPath } from '../support/processes';
import { useRedis } from '../support/redis-server';

const server = useRedis();

type AgentMessage = { type: string; id?: string };

async function readyAgent(): Promise<Worker<AgentMessage>> {
  const agent = spawnWorker<AgentMessage>(workerPath('lock-agent'), { url: server().url });
  await agent.next((m) => m.type === 'ready');
  return agent;
}

const queueLength = (key: string): Promise<number> => server().client().llen(`lock:{${key}}:q`);

/** `locks` waits behind `other` for a hold of about `ms`, `times` times: it learns the line's pace. */
async function learnPace(locks: LockService, other: LockService, key: string, ms: number, times: number) {
  for (let i = 0; i < times; i++) {
    const holder = await other.acquire(key);
    const waiting = locks.acquire(key, { waitTimeout: 10_000 });
    await until(
      () => queueLength(key),
      (length) => length === 1,
    );
    await new Promise((resolve) => setTimeout(resolve, ms)); // the hold the waiter waits through
    await holder.release();
    await (await waiting).release();
  }
}

describe('the door on Redis', () => {
  it('turns away a call that could not wait through the line of other processes; the line stays as it was', async () => {
    const key = 'door';
    const [locks, other] = [lockService(server()), lockService(server())];
    await learnPace(locks, other, key, 100, 3);
    const agents = await Promise.all([readyAgent(), readyAgent(), readyAgent()]);
    const holder = await other.acquire(key, { ttl: 30_000, renew: true });
    for (const [i, agent] of agents.entries()) {
      agent.send({ type: 'acquire', id: `w${i}`, key, waitTimeout: 60_000 });
      await until(
        () => queueLength(key),
        (length) => length === i + 1,
      );
    }
    const line = (await locks.inspect(key)).waiting;

    const error = await locks.acquire(key, { waitTimeout: 250 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockShedError);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect((error as LockShedError).inLine).toBe(3);
    expect((error as LockShedError).waitedMs).toBe(0);
    expect((await locks.inspect(key)).waiting).toEqual(line);

    // A call that can wait joins as usual, behind them.
    const patient = locks.acquire(key, { waitTimeout: 60_000 });
    await until(
      () => queueLength(key),
      (length) => length === 4,
    );
    await holder.release();
    for (const [i, agent] of agents.entries()) {
      // Each is granted only once the one before it let go: the line's own order.
      await agent.next((m) => m.type === 'granted');
      agent.send({ type: 'release', id: `w${i}` });
      await agent.next((m) => m.type === 'released');
    }
    await (await patient).release();
  }, 60_000);
});
