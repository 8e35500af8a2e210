// Order between processes on a quorum: each node keeps a line ordered by the arrival every caller sends
// to all nodes alike, and a release hands the lock to the first of that line. Several processes here,
// since the claim is about them; the nodes are five independent redis-servers.
import { describe, expect, it } from '@jest/globals';
import { sleep } from '../support/event-loop';
import { arrivalAndGrants } from '../support/fifo-order';
import { elapsedSince, until } from '../support/lock-fixtures';
import { spawnWorker, workerPath } from '../support/processes';
import type { AgentMessage } from '../workers/lock-agent.worker';
import { useQuorum } from './quorum-fixtures';

const quorum = useQuorum();

const agent = (claimWindow = 2_000) =>
  spawnWorker<AgentMessage>(workerPath('lock-agent'), { urls: quorum().urls(), claimWindow });

/** Script calls (EVALSHA, which Redis counts under eval) each node executed since its stats were reset. */
const scriptCalls = async (): Promise<number[]> =>
  Promise.all(
    quorum().servers.map(async (server) => {
      const stats = await server.commandStats();
      return (stats.get('eval') ?? 0) + (stats.get('evalsha') ?? 0);
    }),
  );

describe('quorum store: first come, first served across processes', () => {
  it('grants follow arrival order, waiters alternating between two processes', async () => {
    const locks = quorum().service();
    const agents = [agent(), agent()];
    await Promise.all(agents.map((a) => a.next((m) => m.type === 'ready')));
    const holder = await locks.acquire('qf:order');
    // Ten waiters join one at a time, alternating between the two processes.
    const { arrival, grants } = await arrivalAndGrants(locks, agents, 'qf:order', 10, () => holder.release());
    expect(grants).toEqual(arrival);
    await Promise.all(agents.map((a) => a.stop()));
  }, 60_000);

  it("a hand-off costs the next waiter no command: it starts on the nodes' messages", async () => {
    const locks = quorum().service();
    // A long claim window: the waiter confirms its grant at half of it, long after the count below is
    // read, however slow a busy machine makes that read.
    const waiter = agent(20_000);
    await waiter.next((m) => m.type === 'ready');
    const holder = await locks.acquire('qf:cost');
    waiter.send({ type: 'acquire', id: 'w', key: 'qf:cost', waitTimeout: 10_000 });
    await until(
      () => locks.inspect('qf:cost'),
      (info) => info.queueLength === 1,
    );
    await Promise.all(quorum().servers.map((server) => server.resetStats()));
    await holder.release();
    const granted = await waiter.next((m) => m.id === 'w');
    expect(granted.type).toBe('granted');
    expect(granted.fence).toBe(holder.fence + 1);
    // Five releases, each handing the lock on with the next fence: no vote, no commit of the waiter's.
    expect(await scriptCalls()).toEqual([1, 1, 1, 1, 1]);
    waiter.send({ type: 'release', id: 'w' });
    await waiter.next((m) => m.type === 'released');
    await waiter.stop();
  }, 30_000);

  it('a lease started on a hand-off is confirmed before its claim window ends, then held for its ttl', async () => {
    const locks = quorum().service({ claimWindow: 400 });
    const waiter = agent(400);
    await waiter.next((m) => m.type === 'ready');
    const holder = await locks.acquire('qf:confirm');
    waiter.send({ type: 'acquire', id: 'w', key: 'qf:confirm', ttl: 5_000, waitTimeout: 10_000 });
    await until(
      () => locks.inspect('qf:confirm'),
      (info) => info.queueLength === 1,
    );
    await holder.release();
    expect((await waiter.next((m) => m.id === 'w')).type).toBe('granted');
    // Twice the claim window later the lease still holds, renewed to its ttl on a majority.
    await sleep(800);
    const info = await locks.inspect('qf:confirm');
    expect(info.held).toBe(true);
    expect(info.ttl).toBeGreaterThan(3_000);
    expect(await locks.tryAcquire('qf:confirm')).toBeNull();
    expect(waiter.messages.some((m) => m.type === 'lost')).toBe(false);
    waiter.send({ type: 'release', id: 'w' });
    await waiter.next((m) => m.type === 'released');
    await waiter.stop();
  }, 30_000);

  it('a waiter whose process was killed is passed over at once, not after its claim window', async () => {
    const locks = quorum().service({ claimWindow: 5_000 });
    const [doomed, next] = [agent(5_000), agent(5_000)];
    await Promise.all([doomed, next].map((a) => a.next((m) => m.type === 'ready')));
    const holder = await locks.acquire('qf:dead');
    doomed.send({ type: 'acquire', id: 'first', key: 'qf:dead', waitTimeout: 30_000 });
    await until(
      () => locks.inspect('qf:dead'),
      (info) => info.queueLength === 1,
    );
    next.send({ type: 'acquire', id: 'second', key: 'qf:dead', waitTimeout: 30_000 });
    await until(
      () => locks.inspect('qf:dead'),
      (info) => info.queueLength === 2,
    );
    await doomed.kill();
    const released = performance.now();
    await holder.release();
    expect((await next.next((m) => m.id === 'second', 10_000)).type).toBe('granted');
    // Handing it to the dead waiter first would have held it for the 5 s claim window.
    expect(elapsedSince(released)).toBeLessThan(1_000);
    await next.stop();
  }, 30_000);

  it('nodes that disagree on who is next: the majority choice is served, the other waiter after it', async () => {
    const locks = quorum().service();
    const agents = [agent(), agent()];
    await Promise.all(agents.map((a) => a.next((m) => m.type === 'ready')));
    const holder = await locks.acquire('qf:split');
    agents[0].send({ type: 'acquire', id: 'a', key: 'qf:split', waitTimeout: 10_000 });
    await until(
      () => locks.inspect('qf:split'),
      (info) => info.queueLength === 1,
    );
    agents[1].send({ type: 'acquire', id: 'b', key: 'qf:split', waitTimeout: 10_000 });
    await until(
      () => locks.inspect('qf:split'),
      (info) => info.queueLength === 2,
    );
    // Three nodes lose `a` from their line (as a node that missed its arrival would): they hand the
    // lock to `b`, the other two to `a`.
    const admins = quorum().clients();
    const [aToken] = await admins[0].zrange('lock:{qf:split}:l', 0, 0);
    for (const admin of admins.slice(2)) expect(await admin.zrem('lock:{qf:split}:l', aToken)).toBe(1);
    const nextGrant = (a: number) => agents[a].next((m) => m.type === 'granted', 10_000);
    const b = nextGrant(1);
    const a = nextGrant(0);
    const released = performance.now();
    await holder.release();
    const first = await Promise.race([a.then(() => 'a'), b.then(() => 'b')]);
    expect(first).toBe('b');
    agents[1].send({ type: 'release', id: 'b' });
    expect((await a).id).toBe('a');
    // Neither waited for a hold to run out: the failed attempt gave its votes back, and `b`'s release
    // handed the lock to `a`, still first in line on every node.
    expect(elapsedSince(released)).toBeLessThan(2_000);
    agents[0].send({ type: 'release', id: 'a' });
    await agents[0].next((m) => m.type === 'released');
    await Promise.all(agents.map((x) => x.stop()));
  }, 30_000);
});
