// The engine through a Redis Cluster failover (three masters, one replica each). A failover is where
// a Redis lock is weakest: this suite checks what the engine promises there. When the replica has every
// write, the lock's state moves with it: the holder keeps its lease and the queue is served in order.
// Whatever happens, every caller gets a grant or a typed error in bounded time, never a hang, and the
// wake-up subscription follows the cluster to a live node.
import { describe, expect, it } from '@jest/globals';
import type { Lease, LockService } from '../../lib/core';
import { useCluster } from '../support/cluster-fixtures';
import { outcome, until } from '../support/lock-fixtures';
import type { RedisServer } from '../support/redis-server';

const { cluster: current, service } = useCluster({ masters: 3, replicas: 1, nodeTimeout: 1_000 });

const queueLength = (key: string): Promise<number> => current().client().llen(`lock:{${key}}:q`);

/**
 * Queues `names` behind the current holder of `key`, alternating between `via`'s services, one at a
 * time (each is in the queue before the next calls), and records the order in which they are granted.
 */
async function queueUp(
  key: string,
  names: string[],
  via: LockService[],
  waitTimeout: number,
): Promise<{ granted: string[]; settled: Promise<Array<{ value?: Lease; error?: unknown }>> }> {
  const granted: string[] = [];
  const calls: Array<Promise<{ value?: Lease; error?: unknown }>> = [];
  for (const [i, name] of names.entries()) {
    const call = via[i % via.length].acquire(key, { waitTimeout, ttl: 10_000 }).then(async (lease) => {
      granted.push(name);
      await lease.release();
      return lease;
    });
    calls.push(outcome(call));
    await until(
      () => queueLength(key),
      (length) => length === i + 1,
    );
  }
  return { granted, settled: Promise.all(calls) };
}

/** A key whose slot the given master serves (or, with `served` false, one it does not serve). */
async function keyServedBy(master: RedisServer, stem: string, served = true): Promise<string> {
  for (let i = 0; i < 500; i++) {
    const key = `${stem}-${i}`;
    if (((await current().portOf(`lock:{${key}}`)) === master.port) === served) return key;
  }
  throw new Error(`no key of the form ${stem}-n is ${served ? '' : 'not '}served by ${master.port}`);
}

/** Per node: its role, and how many connections subscribe to something (CLIENT LIST: sub > 0). */
async function subscriptions(): Promise<Map<RedisServer, { master: boolean; subscribers: number }>> {
  const found = new Map<RedisServer, { master: boolean; subscribers: number }>();
  for (const node of current().nodes) {
    await node
      .admin(async (admin) => {
        const master = /^role:master/m.test(await admin.info('replication'));
        const subscribers = String(await admin.client('LIST'))
          .split('\n')
          .filter((line) => /\bsub=[1-9]/.test(line)).length;
        found.set(node, { master, subscribers });
      })
      .catch(() => {}); // a node that is down serves nothing
  }
  return found;
}

/**
 * A service whose wake-up subscription landed on a master (the node is picked at random), or on any
 * node, and that node. Each candidate subscribes by waiting once behind `holderOf`.
 */
async function serviceSubscribedTo(
  holderOf: LockService,
  role: 'master' | 'any',
): Promise<[LockService, RedisServer]> {
  for (let attempt = 0; attempt < 16; attempt++) {
    const before = await subscriptions();
    const locks = service();
    const holder = await holderOf.acquire('warm-up', { ttl: 10_000 });
    const waiter = locks.acquire('warm-up', { waitTimeout: 10_000 });
    await until(
      () => queueLength('warm-up'),
      (length) => length === 1,
    );
    await holder.release();
    await (await waiter).release();
    for (const [node, now] of await subscriptions()) {
      const gained = now.subscribers > (before.get(node)?.subscribers ?? 0);
      if (gained && (now.master || role === 'any')) return [locks, node];
    }
  }
  throw new Error(`no wake-up subscription landed on a node of role ${role} in 16 tries`);
}

describe('through a Redis Cluster failover', () => {
  it('checks each master: three reports, each warning about its replica and its lack of persistence, once', async () => {
    await current().settled();
    const warned: string[] = [];
    const locks = service({ onWarning: (warning) => warned.push(`${warning.server} ${warning.code}`) });
    const reports = await locks.checkServers();
    await locks.checkServers();
    expect(reports).toHaveLength(3);
    for (const report of reports) {
      expect(report.facts).toMatchObject({ role: 'master', connectedReplicas: 1 });
      expect(report.risks.map((risk) => risk.code).sort()).toEqual(['async-replication', 'no-persistence']);
    }
    // Once per master and kind, whether found by the start-up check or by the calls above.
    expect(warned.sort()).toEqual(
      reports.flatMap((r) => [`${r.server} async-replication`, `${r.server} no-persistence`]).sort(),
    );
  });

  it('a manual failover of the lock’s master: the holder keeps its lease and the queue is served in order', async () => {
    const [a, b] = [service(), service()];
    const key = 'manual';
    const holder = await a.acquire(key, { ttl: 3_000, renew: true });
    const { granted, settled } = await queueUp(key, ['w1', 'w2', 'w3', 'w4'], [a, b], 30_000);

    const { master, replicas } = await current().nodesOf(`lock:{${key}}`);
    await current().settled();
    const promoted = replicas[0];
    await promoted.client().cluster('FAILOVER');
    await until(
      () => current().portOf(`lock:{${key}}`),
      (port) => port === promoted.port,
    );
    expect(promoted.port).not.toBe(master.port);
    // Renewals reach the new master: its copy of the owner key's expiry, which otherwise only falls,
    // jumps back up to the ttl, twice.
    const owner = promoted.client();
    let previous = await owner.pttl(`lock:{${key}}`);
    for (let renewal = 0; renewal < 2; renewal++) {
      await until(
        () => owner.pttl(`lock:{${key}}`),
        (ttl) => {
          const renewed = ttl > previous + 100;
          previous = ttl;
          return renewed;
        },
        5_000,
      );
    }
    expect(holder.signal.aborted).toBe(false);
    expect(await owner.get(`lock:{${key}}`)).toBe(holder.token);

    await holder.release();
    const results = await settled;
    expect(results.map((r) => r.error)).toEqual([undefined, undefined, undefined, undefined]);
    expect(granted).toEqual(['w1', 'w2', 'w3', 'w4']);
  }, 60_000);

  it('the lock’s master is killed: waiters are served after the replica takes over, woken by pushes, and every call settles', async () => {
    const b = service();
    // `a` subscribes on the master that serves the lock, so the kill also cuts its wake-up connection.
    const [a, victim] = await serviceSubscribedTo(b, 'master');
    const key = await keyServedBy(victim, 'killed');

    const holder = await a.acquire(key, { ttl: 10_000, renew: true });
    const { granted, settled } = await queueUp(key, ['w1', 'w2', 'w3'], [a, b], 30_000);
    await current().settled();
    const { replicas } = await current().nodesOf(`lock:{${key}}`);

    await victim.kill();
    await until(
      () => current().portOf(`lock:{${key}}`),
      (port) => port === replicas[0].port,
      20_000,
    );
    await current().settled();
    // The replica had every write, and the failover took less than the lease's 10 s.
    expect(holder.signal.aborted).toBe(false);

    const released = performance.now();
    await holder.release();
    const results = await settled;
    expect(results.map((r) => r.error)).toEqual([undefined, undefined, undefined]);
    expect(granted).toEqual(['w1', 'w2', 'w3']);
    // Pushes, not the fallback re-checks (the next at the 10 s hold's end), woke them.
    expect(performance.now() - released).toBeLessThan(3_000);

    // A new caller is served as usual, and no key is left without an expiry.
    await (await b.acquire(key, { waitTimeout: 5_000 })).release();
    const data = current().client();
    for (const suffix of ['', ':q', ':fence']) {
      expect(await data.pttl(`lock:{${key}}${suffix}`)).not.toBe(-1);
    }
  }, 90_000);

  it('a push lost with the node that carried the wake-up connection: the waiter re-checks once another node carries it', async () => {
    const b = service();
    const [a, carrier] = await serviceSubscribedTo(b, 'any');
    const key = await keyServedBy(carrier, 'lost-push', false);
    const holder = await b.acquire(key, { ttl: 10_000, renew: true });
    const waiting = a.acquire(key, { waitTimeout: 20_000 });
    await until(
      () => queueLength(key),
      (length) => length === 1,
    );
    // Frozen, the carrier cannot pass the grant's push on; killed, the push is gone with it.
    carrier.pause();
    const released = performance.now();
    await holder.release();
    await carrier.kill();
    const lease = await waiting;
    // Without a re-check the waiter would only learn of its grant at its fallback check, when the
    // 10 s hold it was told of ends.
    expect(performance.now() - released).toBeLessThan(3_000);
    await lease.release();
  }, 60_000);
});
