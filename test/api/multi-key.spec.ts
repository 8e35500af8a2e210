// Multi-key locks across processes, on a real redis-server: random transfers between accounts from 4
// processes (money conserved, no two holders of an account, no deadlock), a holder of two keys
// SIGKILLed (both keys come back within ttl plus a claim window, waiters served in their order), FIFO per
// key between processes, and a key deleted behind a holder's back aborting the set's signal.
import { describe, expect, it } from '@jest/globals';
import { type Lease, LockLostError, type LockService } from '../../lib/core';
import { abortedAt, elapsedSince, lockService, until } from '../support/lock-fixtures';
import { spawnWorker, type Worker, workerPath } from '../support/processes';
import { useRedis } from '../support/redis-server';
import type { AgentMessage } from '../workers/lock-agent.worker';

const server = useRedis();

interface TransferReport {
  type: string;
  done: Array<[number, number, number]>;
  failed: string[];
  overlaps: number;
  maxWaitMs: number;
}

describe('multi-key locks across processes', () => {
  it('4 processes, 1,000 random transfers over 6 accounts: money conserved, no overlap, no deadlock', async () => {
    const accounts = 6;
    const opening = 1_000;
    const admin = server().client();
    for (let i = 0; i < accounts; i++) await admin.set(`bank:balance:${i}`, opening);
    const waitTimeout = 20_000;
    const workers = Array.from({ length: 4 }, (_, p) =>
      spawnWorker<TransferReport>(workerPath('transfer'), {
        url: server().url,
        accounts,
        tasks: 5,
        transfers: 50,
        waitTimeout,
        seed: p + 1,
      }),
    );
    const started = performance.now();
    const reports = await Promise.all(workers.map((worker) => worker.next((m) => m.type === 'done')));
    const took = elapsedSince(started);

    const done = reports.flatMap((report) => report.done);
    expect(reports.flatMap((report) => report.failed)).toEqual([]);
    expect(done).toHaveLength(1_000);
    expect(reports.reduce((sum, report) => sum + report.overlaps, 0)).toBe(0);
    // Every transfer is in the balances: each account ends where its own transfers take it.
    const expected = Array.from({ length: accounts }, () => opening);
    for (const [from, to, amount] of done) {
      expected[from] -= amount;
      expected[to] += amount;
    }
    const balances = (
      await admin.mget(...Array.from({ length: accounts }, (_, i) => `bank:balance:${i}`))
    ).map(Number);
    expect(balances).toEqual(expected);
    expect(balances.reduce((a, b) => a + b, 0)).toBe(accounts * opening);
    // No call came near its waitTimeout: nothing waited on a cycle.
    const maxWait = Math.max(...reports.map((report) => report.maxWaitMs));
    expect(maxWait).toBeLessThan(waitTimeout);
    if (process.env.MULTI_KEY_REPORT) {
      console.log(
        `1,000 transfers in ${Math.round(took)} ms; longest wait for both keys ${Math.round(maxWait)} ms`,
      );
    }
    // Every lock key expires or is gone: nothing left held.
    for (let i = 0; i < accounts; i++) {
      expect(await lockService(server()).inspect(`account:${i}`)).toMatchObject({
        held: false,
        queueLength: 0,
      });
    }
  }, 120_000);

  it('a holder of two keys SIGKILLed: both come back within ttl + claim window, waiters in order', async () => {
    const ttl = 1_500;
    const claimWindow = 300;
    const holder = spawnWorker<AgentMessage>(workerPath('lock-agent'), { url: server().url, claimWindow });
    await holder.next((m) => m.type === 'ready');
    holder.send({ type: 'acquire', id: 'h', key: ['kill:a', 'kill:b'], ttl, renew: true });
    const held = await holder.next((m) => m.type === 'granted');

    const [first, second, third] = [0, 1, 2].map(() => lockService(server(), { claimWindow }));
    const order: string[] = [];
    const grantedAt: Record<string, number> = {};
    const served =
      (label: string) => async (lease: { fences: Record<string, number>; release(): Promise<void> }) => {
        grantedAt[label] = performance.now();
        order.push(label);
        for (const [key, fence] of Object.entries(lease.fences)) {
          expect(fence).toBeGreaterThan(held.fences?.[key] as number);
        }
        await lease.release();
      };
    const queued = (key: string, n: number) =>
      until(
        () => first.inspect(key),
        (info) => info.queueLength === n,
      );
    // On kill:b: a single-key waiter, then the two-key waiter's reservation. On kill:a: the two-key
    // waiter, then a single-key one.
    const onlyB = second.acquire('kill:b', { ttl, waitTimeout: 10_000 }).then(served('b'));
    await queued('kill:b', 1);
    const both = first.acquire(['kill:a', 'kill:b'], { ttl, waitTimeout: 10_000 }).then(served('both'));
    await queued('kill:a', 1);
    await until(
      () => first.inspect('kill:b'),
      (info) => info.reserved === 1,
    );
    const onlyA = third.acquire('kill:a', { ttl, waitTimeout: 10_000 }).then(served('a'));
    await queued('kill:a', 2);

    await holder.kill();
    const killedAt = performance.now();
    await Promise.all([both, onlyB, onlyA]);
    // kill:b went to its first waiter, kill:a to the two-key waiter, which then waited its turn on kill:b.
    expect(order).toEqual(['b', 'both', 'a']);
    if (process.env.MULTI_KEY_REPORT) {
      const since = (label: string) => Math.round(grantedAt[label] - killedAt);
      console.log(`after the kill: kill:b granted in ${since('b')} ms, both keys in ${since('both')} ms`);
    }
    expect(grantedAt.b - killedAt).toBeLessThanOrEqual(ttl + claimWindow);
    expect(grantedAt.both - killedAt).toBeLessThanOrEqual(ttl + claimWindow + 1_000);
  }, 30_000);

  it('a caller SIGKILLed while it waits: its reservation is dropped by the next hand-off, nothing is left', async () => {
    const admin = server().client();
    const holder = lockService(server());
    const heldA = await holder.acquire('gone:a');
    const heldB = await holder.acquire('gone:b');
    const agent = spawnWorker<AgentMessage>(workerPath('lock-agent'), { url: server().url });
    await agent.next((m) => m.type === 'ready');
    agent.send({ type: 'acquire', id: 'm', key: ['gone:a', 'gone:b'], waitTimeout: 60_000 });
    await until(
      () => holder.inspect('gone:b'),
      (info) => info.reserved === 1,
    );
    const channels = async () => (await admin.pubsub('CHANNELS', 'lock:wake:*')).length;
    const listening = await channels();
    await agent.kill();
    // Redis has seen the process go: its wake channel has no subscriber left.
    await until(channels, (count) => count === listening - 1);

    // A waiter behind the dead reservation is served when gone:b is released, and the reservation goes.
    const next = lockService(server()).acquire('gone:b', { waitTimeout: 10_000 });
    await until(
      () => holder.inspect('gone:b'),
      (info) => info.queueLength === 1,
    );
    await heldB.release();
    const lease = await next;
    expect(await holder.inspect('gone:b')).toMatchObject({ queueLength: 0, reserved: 0 });
    await lease.release();
    expect(await admin.exists('lock:{gone:b}:q', 'lock:{gone:b}')).toBe(0);
    await heldA.release();
    expect(await admin.exists('lock:{gone:a}:q', 'lock:{gone:a}')).toBe(0);
  }, 30_000);

  it('a release that finds only a reservation in line keeps it, and the queue key keeps an expiry', async () => {
    const admin = server().client();
    const holder = lockService(server());
    const heldA = await holder.acquire('keep:a');
    const heldB = await holder.acquire('keep:b');
    const both = lockService(server()).acquire(['keep:a', 'keep:b'], { waitTimeout: 20_000 });
    await until(
      () => holder.inspect('keep:b'),
      (info) => info.reserved === 1,
    );
    await heldB.release();
    expect(await holder.inspect('keep:b')).toMatchObject({ held: false, queueLength: 0, reserved: 1 });
    const pttl = await admin.pttl('lock:{keep:b}:q');
    expect(pttl).toBeGreaterThan(15_000);
    expect(pttl).toBeLessThanOrEqual(20_000 + 2_000);
    await heldA.release();
    const lease = await both;
    expect(lease.keys).toEqual(['keep:a', 'keep:b']);
    await lease.release();
    expect(await admin.exists('lock:{keep:a}', 'lock:{keep:a}:q', 'lock:{keep:b}', 'lock:{keep:b}:q')).toBe(
      0,
    );
  });

  it('FIFO per key between processes: waiters of different key sets are served in arrival order', async () => {
    const holder = lockService(server());
    const lease = await holder.acquire('line:b');
    const agents = Array.from({ length: 3 }, () =>
      spawnWorker<AgentMessage>(workerPath('lock-agent'), { url: server().url }),
    );
    await Promise.all(agents.map((agent) => agent.next((m) => m.type === 'ready')));
    try {
      await lineUp(holder, lease, agents);
    } finally {
      await Promise.all(agents.map((agent) => agent.kill()));
    }
  }, 30_000);

  it("a key deleted behind the holder's back aborts the set's signal, naming that key", async () => {
    const locks = lockService(server(), { prefix: 'gone:' });
    const lease = await locks.acquire(['g:a', 'g:b'], { ttl: 600, renew: true });
    const aborted = abortedAt(lease.signal);
    const admin = server().client();
    // The owner key of g:b (lib/protocol/keys.ts), as an eviction would remove it.
    expect(await admin.del('gone:{g:b}')).toBe(1);
    const deletedAt = performance.now();
    const at = await aborted;
    // Found at the next renewal (every ttl/3), not later than the ttl.
    expect(at - deletedAt).toBeLessThanOrEqual(600);
    const reason = lease.signal.reason as LockLostError;
    expect(reason).toBeInstanceOf(LockLostError);
    expect(reason.key).toBe('g:b');
    await lease.release().catch(() => {});
    expect((await locks.inspect('g:a')).held).toBe(false);
  });
});

/** Three agents queue on line:b in turn with different key sets, and must be served in that order. */
async function lineUp(holder: LockService, lease: Lease, agents: Array<Worker<AgentMessage>>): Promise<void> {
  const sets = [['line:a', 'line:b'], ['line:b', 'line:c'], ['line:b']];
  for (const [i, agent] of agents.entries()) {
    agent.send({ type: 'acquire', id: String(i), key: sets[i], waitTimeout: 10_000 });
    await until(
      () => holder.inspect('line:b'),
      (info) => info.queueLength === i + 1,
    );
  }
  const order: number[] = [];
  const grants = new Map(
    agents.map((agent, i) => [i, agent.next((m) => m.type === 'granted').then(() => i)]),
  );
  await lease.release();
  for (let served = 0; served < 3; served++) {
    const granted = await Promise.race(grants.values());
    grants.delete(granted);
    order.push(granted);
    agents[granted].send({ type: 'release', id: String(granted) });
    await agents[granted].next((m) => m.type === 'released');
  }
  expect(order).toEqual([0, 1, 2]);
}
