// The semaphore across processes, on a real redis-server: the bound holds and is reached, grants follow
// arrival order whichever process a waiter is in, waiting costs Redis nothing, a SIGKILLed holder's
// permit comes back within its ttl, and a frozen granted waiter's within its claim window.
// (Single-process properties: test/conformance/semaphore-conformance.ts.)
import { describe, expect, it } from '@jest/globals';
import { sleep, watchEventLoop } from '../support/event-loop';
import { arrivalAndGrants } from '../support/fifo-order';
import { agentInstance, commandsIn, keysLeft, listening, lockService, until } from '../support/lock-fixtures';
import { spawnWorker, workerPath } from '../support/processes';
import { useRedis } from '../support/redis-server';
import type { AgentMessage } from '../workers/lock-agent.worker';

const server = useRedis();

type Done = { type: string; seen: number[]; fences: number[]; perCaller: number[] };

describe('semaphore across processes', () => {
  it('4 processes x 10 callers on permits 3: concurrency reaches 3 and never exceeds it', async () => {
    const workers = [0, 1, 2, 3].map(() =>
      spawnWorker<Done>(workerPath('semaphore'), {
        url: server().url,
        key: 'export',
        counter: 'export:holding',
        permits: 3,
        callers: 10,
        rounds: 3,
        holdMs: 20,
      }),
    );
    await Promise.all(workers.map((w) => w.next((m) => m.type === 'ready')));
    for (const w of workers) w.send({ type: 'go' });
    const done = await Promise.all(workers.map((w) => w.next((m) => m.type === 'done', 90_000)));
    const seen = done.flatMap((d) => d.seen);
    expect(seen).toHaveLength(4 * 10 * 3);
    // Each holder counted itself in: never more than 3 at once, and 3 was reached.
    expect(Math.max(...seen)).toBe(3);
    // Every caller got every round (nobody starved) and every grant had its own fence.
    expect(done.flatMap((d) => d.perCaller)).toEqual(Array(40).fill(3));
    const fences = done.flatMap((d) => d.fences);
    expect(new Set(fences).size).toBe(fences.length);
    expect(await server().client().get('export:holding')).toBe('0');
    expect(await keysLeft(server().client(), 'lock:{export}*')).toEqual(['lock:{export}:fence']);
    await Promise.all(workers.map((w) => w.stop()));
  }, 120_000);

  it('grants follow arrival order across processes (by the fences Redis gave them)', async () => {
    const locks = lockService(server());
    const agents = [0, 1].map(() =>
      spawnWorker<AgentMessage>(workerPath('lock-agent'), { url: server().url, claimWindow: 500 }),
    );
    await Promise.all(agents.map((a) => a.next((m) => m.type === 'ready')));
    const holders = await Promise.all([0, 1, 2].map(() => locks.acquire('sem-order', { permits: 3 })));
    const { arrival, fences } = await arrivalAndGrants(
      locks,
      agents,
      'sem-order',
      10,
      () => Promise.all(holders.map((h) => h.release())),
      { permits: 3 },
    );
    const byFence = [...fences].sort((x, y) => x[1] - y[1]).map(([id]) => id);
    expect(byFence).toEqual(arrival);
    await Promise.all(agents.map((a) => a.stop()));
  }, 60_000);

  it('waiting costs Redis nothing: 30 waiters behind 3 holders send no command for 2 s', async () => {
    const holding = lockService(server());
    const waiting = lockService(server());
    const holders = await Promise.all([0, 1, 2].map(() => holding.acquire('sem-idle', { permits: 3 })));
    const pending = Array.from({ length: 30 }, () =>
      waiting.acquire('sem-idle', { permits: 3, waitTimeout: 20_000 }).then(async (lease) => {
        await lease.release();
        return lease.fence;
      }),
    );
    const admin = server().client();
    await until(
      () => admin.llen('lock:{sem-idle}:sq'),
      (length) => length === 30,
    );
    // Its service listens (a first wait's subscription, and its re-check if a push was missed, are done).
    await listening(server(), waiting);
    await server().resetStats();
    await sleep(2_000);
    expect(commandsIn(await server().commandStats())).toBe(0);
    await Promise.all(holders.map((h) => h.release()));
    const fences = await Promise.all(pending);
    expect(new Set(fences).size).toBe(30);
  }, 30_000);

  it("a SIGKILLed holder's permit comes back within its ttl, to the first in line", async () => {
    const ttl = 1_000;
    const locks = lockService(server());
    const agent = spawnWorker<AgentMessage>(workerPath('lock-agent'), { url: server().url });
    await agent.next((m) => m.type === 'ready');
    const mine = await locks.acquire('sem-kill', { permits: 2 });
    // The agent's lease is renewed every ttl/3 for as long as its process lives.
    agent.send({ type: 'acquire', id: 'held', key: 'sem-kill', permits: 2, ttl, renew: true });
    await agent.next((m) => m.id === 'held' && m.type === 'granted');
    const next = locks.acquire('sem-kill', { permits: 2, waitTimeout: 10_000 });
    await until(
      () => locks.inspect('sem-kill'),
      (info) => info.queueLength === 1,
    );
    const loop = watchEventLoop();
    const killed = performance.now();
    await agent.kill('SIGKILL');
    const granted = await next;
    const after = performance.now() - killed;
    // Its last renewal came at most ttl before the kill is noticed; the waiter re-checks when the hold
    // ends (it was told when), plus a round trip and whatever the event loop was held up meanwhile.
    expect(after).toBeLessThan(ttl + 150 + loop.worst());
    loop.stop();
    const info = await locks.inspect('sem-kill');
    expect(info.holders.map((h) => h.token).sort()).toEqual([mine.token, granted.token].sort());
    await Promise.all([granted.release(), mine.release()]);
  }, 30_000);
  it('a granted waiter that froze holds its permit only for its claim window; the next in line gets it then', async () => {
    const claimWindow = 500;
    const locks = lockService(server());
    const agent = spawnWorker<AgentMessage>(workerPath('lock-agent'), { url: server().url, claimWindow });
    await agent.next((m) => m.type === 'ready');
    const [first, second] = await Promise.all([0, 1].map(() => locks.acquire('sem-frozen', { permits: 2 })));
    agent.send({ type: 'acquire', id: 'frozen', key: 'sem-frozen', permits: 2, waitTimeout: 30_000 });
    await until(
      () => locks.inspect('sem-frozen'),
      (info) => info.queueLength === 1,
    );
    const next = locks.acquire('sem-frozen', { permits: 2, waitTimeout: 10_000 });
    await until(
      () => locks.inspect('sem-frozen'),
      (info) => info.queueLength === 2,
    );
    // Both waiters' services listen: the frozen one is frozen while subscribed (docs/protocol.md,
    // "The first wait").
    await listening(server(), agentInstance(agent), locks);
    agent.pause();
    try {
      const loop = watchEventLoop();
      const released = performance.now();
      await first.release();
      const granted = await next;
      const after = performance.now() - released;
      // The frozen waiter's grant held the permit for its claim window, then lapsed to the next in line.
      expect(after).toBeGreaterThanOrEqual(claimWindow - 5);
      expect(after).toBeLessThan(claimWindow + 150 + loop.worst());
      loop.stop();
      await granted.release();
    } finally {
      agent.resume();
    }
    // Back from its freeze, the waiter finds its grant gone and is served in turn, not lost.
    await second.release();
    const served = await agent.next((m) => m.id === 'frozen' && m.type !== 'lost', 10_000);
    expect(served.type).toBe('granted');
    await agent.stop();
  }, 30_000);
});
