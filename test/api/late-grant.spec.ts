// A waiter whose process is stalled when the lock is handed to it loses its turn, not its place: once
// the grant has moved on (its claim window ran out unconfirmed) and the process runs again, that waiter
// goes back to the front of the line, ahead of everyone who arrived after it, and nothing overlaps.
import { describe, expect, it } from '@jest/globals';
import { agentInstance, listening, lockService, until } from '../support/lock-fixtures';
import { spawnWorker, type Worker, workerPath } from '../support/processes';
import { useRedis } from '../support/redis-server';
import type { AgentMessage } from '../workers/lock-agent.worker';

const server = useRedis();

/** The stalled waiter's claim window: short, so the grant moves on soon after it is made. */
const CLAIM_WINDOW = 300;

async function readyAgent(args: Record<string, unknown> = {}): Promise<Worker<AgentMessage>> {
  const agent = spawnWorker<AgentMessage>(workerPath('lock-agent'), { url: server().url, ...args });
  await agent.next((m) => m.type === 'ready');
  return agent;
}

describe('a waiter stalled when it is granted the lock', () => {
  it('is served next once it runs again, before a waiter that arrived after it, with fences in order', async () => {
    const key = 'late-grant';
    const locks = lockService(server());
    const stalled = await readyAgent({ claimWindow: CLAIM_WINDOW });
    const others = await readyAgent();
    const queued = (n: number) =>
      until(
        () => locks.inspect(key),
        (info) => info.queueLength === n,
      );
    try {
      const holder = await locks.acquire(key, { ttl: 30_000 });
      stalled.send({ type: 'acquire', id: 'w', key, ttl: 10_000, waitTimeout: 20_000 });
      await queued(1);
      // Frozen below while it listens: a process frozen before its wake connection is up looks gone once
      // its early join's mark expires (docs/protocol.md, "The first wait").
      await listening(server(), agentInstance(stalled));
      others.send({ type: 'acquire', id: 'x', key, ttl: 10_000, waitTimeout: 20_000 });
      await queued(2);

      // Frozen with its connections open: the grant is delivered to a process that does not run.
      stalled.pause();
      let x: AgentMessage;
      try {
        await holder.release();
        // The grant to the frozen waiter is never confirmed: after its claim window the next one takes it.
        x = await others.next((m) => m.id === 'x' && m.type !== 'ready');
        expect(x).toMatchObject({ type: 'granted' });
        // Arrives after the frozen waiter, while it is still frozen.
        others.send({ type: 'acquire', id: 'y', key, ttl: 10_000, waitTimeout: 20_000 });
        await queued(1);
      } finally {
        stalled.resume();
      }
      // The frozen waiter reads its grant, too late to start on it, and goes back in line: at the front.
      await queued(2);
      expect(stalled.messages.filter((m) => m.id === 'w' && m.type !== 'ready')).toEqual([]);

      others.send({ type: 'release', id: 'x' });
      const w = await stalled.next((m) => m.id === 'w');
      expect(w).toMatchObject({ type: 'granted' });
      // y is still waiting while w holds the lock: nobody overtook w, and nothing overlaps.
      expect(others.messages.some((m) => m.id === 'y' && m.type === 'granted')).toBe(false);
      stalled.send({ type: 'release', id: 'w' });
      const y = await others.next((m) => m.id === 'y' && m.type !== 'released');
      expect(y).toMatchObject({ type: 'granted' });
      expect(w.fence).toBeGreaterThan(x.fence as number);
      expect(y.fence).toBeGreaterThan(w.fence as number);
      others.send({ type: 'release', id: 'y' });
      await others.next((m) => m.id === 'y' && m.type === 'released');
      // No lease was lost on the way.
      for (const agent of [stalled, others])
        expect(agent.messages.filter((m) => m.type === 'lost')).toEqual([]);
    } finally {
      await Promise.all([stalled.kill(), others.kill()]);
    }
  }, 30_000);
});
