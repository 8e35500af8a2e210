// First come, first served from a service's very first wait: a call that finds the lock taken takes
// its place in line at once, while its service's wake connection is still opening (here: held back by a
// proxy), or reconnecting after a reset; a grant made to it meanwhile is kept for it, not skipped, and
// later callers of services that already listen are served after it. Mutex, semaphore and read-write
// lock, across services and across processes.
import { afterEach, describe, expect, it } from '@jest/globals';
import { type AcquireOptions, type Lease, LockService, type LockServiceOptions } from '../../lib/core';
import { HoldProxy } from '../support/hold-proxy';
import { lockClient } from '../support/lock-clients';
import { listening, lockService, until } from '../support/lock-fixtures';
import { spawnWorker, workerPath } from '../support/processes';
import { useRedis } from '../support/redis-server';

const server = useRedis();

// Long enough that a grant kept for a waiter whose connection is held back never runs out in a test.
const claimWindow = 15_000;
const call = { ttl: 30_000, waitTimeout: 30_000 };

const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closing.splice(0).map((close) => close()));
});

/** A service named `name` whose connections go through `proxy`; its command connection is open. */
async function behind(
  proxy: HoldProxy,
  name: string,
  options: LockServiceOptions = {},
): Promise<LockService> {
  const { client, close } = lockClient(proxy.url);
  const service = new LockService(client, { instanceName: name, claimWindow, ...options });
  closing.push(async () => {
    await service.close().catch(() => {});
    close();
  });
  await service.inspect('first-wait:open');
  return service;
}

/** How many connections listen on `service`'s wake channel (docs/protocol.md, "Wake-ups"). */
async function listeners(service: LockService): Promise<number> {
  const admin = server().client();
  try {
    const reply = (await admin.pubsub('NUMSUB', `lock:wake:${service.instance}`)) as [string, number];
    return Number(reply[1]);
  } finally {
    admin.disconnect();
  }
}

/** A service that has waited once, so its wake connection is live. */
async function subscribedService(name: string, options: LockServiceOptions = {}): Promise<LockService> {
  const service = lockService(server(), { instanceName: name, claimWindow, ...options });
  const holder = lockService(server());
  const held = await holder.acquire(`first-wait:warm:${name}`);
  const waited = service.acquire(`first-wait:warm:${name}`, call);
  await until(
    () => service.inspect(`first-wait:warm:${name}`),
    (info) => info.queueLength === 1,
  );
  await held.release();
  await (await waited).release();
  await listening(server(), service);
  return service;
}

/** The tokens in line for `key`, by their service's name. */
async function line(locks: LockService, key: string): Promise<string[]> {
  const info = await locks.inspect(key);
  return (info.waiting ?? []).map((waiter) => waiter.token.slice(0, waiter.token.indexOf('@')));
}

/** Waits until `key`'s line reads `names` (each waiter by its service's name). */
async function lineIs(locks: LockService, key: string, names: string[]): Promise<void> {
  await until(
    () => line(locks, key),
    (now) => now.join() === names.join(),
  );
}

/** Each grant is released as it comes; resolves with the callers in the order of their fences. */
async function served(calls: Record<string, Promise<Lease>>): Promise<string[]> {
  const fences = await Promise.all(
    Object.entries(calls).map(async ([name, granted]) => {
      const lease = await granted;
      const fence = lease.fence;
      await lease.release();
      return { name, fence };
    }),
  );
  return fences.sort((a, b) => a.fence - b.fence).map(({ name }) => name);
}

/** `left`: the line once the holder let go (a read-write lock grants both readers at its front). */
type Kind = {
  name: string;
  first: AcquireOptions;
  later: AcquireOptions;
  holder: AcquireOptions;
  left: string[];
};
const kinds: Kind[] = [
  { name: 'a mutex', first: {}, later: {}, holder: {}, left: ['A', 'B', 'A'] },
  // One permit stays held throughout, so the other goes round the line one caller at a time.
  {
    name: 'a semaphore',
    first: { permits: 2 },
    later: { permits: 2 },
    holder: { permits: 2 },
    left: ['A', 'B', 'A'],
  },
  // Readers first, then a writer: a reader that joined late would share the lock ahead of the writer.
  {
    name: 'a read-write lock',
    first: { mode: 'read' },
    later: { mode: 'write' },
    holder: { mode: 'write' },
    left: ['B', 'A'],
  },
];

describe('the first wait', () => {
  it.each(kinds)(
    '$name: a new service joins the line while its wake connection opens, and keeps its place',
    async ({ first, later, holder: holderKind, left, name }) => {
      const key = `first-wait:${name}`;
      const proxy = await HoldProxy.start(server().port);
      const fresh = await behind(proxy, 'A');
      const subscribed = await subscribedService('B');
      const holder = lockService(server());
      const held = await holder.acquire(key, { ...call, ...holderKind });
      const alsoHeld = holderKind.permits ? await holder.acquire(key, { ...call, ...holderKind }) : undefined;

      // A's wake connection is held back: its first caller must be in line all the same.
      proxy.hold();
      const calls: Record<string, Promise<Lease>> = {};
      // Two calls back to back, neither waiting for the other to be in line.
      calls.a1 = fresh.acquire(key, { ...call, ...first });
      calls.a2 = fresh.acquire(key, { ...call, ...first });
      await proxy.whenHeld();
      await lineIs(holder, key, ['A', 'A']);
      calls.b1 = subscribed.acquire(key, { ...call, ...later });
      await lineIs(holder, key, ['A', 'A', 'B']);
      calls.a3 = fresh.acquire(key, { ...call, ...first });
      await lineIs(holder, key, ['A', 'A', 'B', 'A']);

      // Freed while nothing reaches A: the grant is kept for A's first caller, not skipped.
      await held.release();
      const info = await holder.inspect(key);
      expect(info.holders.map((h) => h.token.split('@')[0])).toContain('A');
      await lineIs(holder, key, left);

      proxy.release();
      expect(await served(calls)).toEqual(['a1', 'a2', 'b1', 'a3']);
      await alsoHeld?.release();
    },
    60_000,
  );

  it('across processes: a new process joins while its wake connection opens, ahead of later callers', async () => {
    const key = 'first-wait:processes';
    const proxy = await HoldProxy.start(server().port);
    type Message = { type: string; id?: string; fence?: number };
    const agent = spawnWorker<Message>(workerPath('lock-agent'), {
      url: proxy.url,
      claimWindow,
      instanceName: 'A',
    });
    await agent.next((m) => m.type === 'ready');
    await until(
      async () => proxy.accepted.length,
      (count) => count >= 1,
    );
    const subscribed = await subscribedService('B');
    const holder = lockService(server());
    const held = await holder.acquire(key, call);

    proxy.hold();
    agent.send({ type: 'acquire', id: 'a1', key, ...call });
    await proxy.whenHeld();
    await lineIs(holder, key, ['A']);
    const b1 = subscribed.acquire(key, call);
    await lineIs(holder, key, ['A', 'B']);
    agent.send({ type: 'acquire', id: 'a2', key, ...call });
    await lineIs(holder, key, ['A', 'B', 'A']);
    await held.release();

    proxy.release();
    const fences: Array<{ name: string; fence: number }> = [];
    const agentGrants = (async () => {
      for (let i = 0; i < 2; i++) {
        const granted = await agent.next((m) => m.type === 'granted', 30_000);
        fences.push({ name: granted.id as string, fence: granted.fence as number });
        agent.send({ type: 'release', id: granted.id });
      }
    })();
    const lease = await b1;
    fences.push({ name: 'b1', fence: lease.fence });
    await lease.release();
    await agentGrants;
    expect(fences.sort((a, b) => a.fence - b.fence).map(({ name }) => name)).toEqual(['a1', 'b1', 'a2']);
    await agent.stop();
  }, 60_000);

  it('while its wake connection reconnects, a caller joins at once and a grant to it waits for it', async () => {
    const key = 'first-wait:reconnect';
    const proxy = await HoldProxy.start(server().port);
    const service = await behind(proxy, 'A');
    // A waits once, so it listens: its wake connection is the proxy's second.
    const holder = lockService(server());
    let held = await holder.acquire(key, call);
    const warm = service.acquire(key, call);
    await lineIs(holder, key, ['A']);
    await held.release();
    await (await warm).release();
    await until(
      () => listeners(service),
      (count) => count === 1,
    );
    const subscribed = await subscribedService('B');
    held = await holder.acquire(key, call);

    // The wake connection is reset, and its reconnection held back.
    proxy.hold();
    proxy.drop(1);
    await proxy.whenHeld();
    await until(
      () => listeners(service),
      (count) => count === 0,
    );
    const calls: Record<string, Promise<Lease>> = {};
    calls.a1 = service.acquire(key, call);
    await lineIs(holder, key, ['A']);
    calls.b1 = subscribed.acquire(key, call);
    await lineIs(holder, key, ['A', 'B']);
    calls.a2 = service.acquire(key, call);
    await lineIs(holder, key, ['A', 'B', 'A']);
    await held.release();
    expect((await holder.inspect(key)).holder?.split('@')[0]).toBe('A');

    proxy.release();
    expect(await served(calls)).toEqual(['a1', 'b1', 'a2']);
  }, 60_000);

  it('once it listens, a service that is gone is skipped at once again: its mark is removed', async () => {
    const key = 'first-wait:mark';
    const proxy = await HoldProxy.start(server().port);
    const service = await behind(proxy, 'A');
    const holder = lockService(server());
    const held = await holder.acquire(key, call);
    proxy.hold();
    const waited = service.acquire(key, call);
    await proxy.whenHeld();
    await lineIs(holder, key, ['A']);
    const mark = `lock:wake:${service.instance}`;
    expect(await server().ttlOf(mark)).toBeGreaterThan(0);
    proxy.release();
    await until(
      () => listeners(service),
      (count) => count === 1,
    );
    await until(
      () => server().ttlOf(mark),
      (ttl) => ttl === -2,
    );
    await held.release();
    await (await waited).release();
  }, 60_000);
});
