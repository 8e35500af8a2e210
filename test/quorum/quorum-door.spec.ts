// The door on a quorum: a service that has seen a key's line move turns away, at once and unqueued, a
// call that finds more in line than its wait could see through. Each node's vote script refuses the join
// itself (so nothing can slip in between a look at its line and the join), and the call is turned away
// only when a majority of nodes did: a node whose line is longer than the others' cannot turn it away
// alone. The line stays as it was, on every node, and is served in its order.
import { describe, expect, it } from '@jest/globals';
import { type Lease, type LockService, LockShedError, LockTimeoutError } from '../../lib/core';
import { until } from '../support/lock-fixtures';
import { useQuorum } from './quorum-fixtures';

const quorum = useQuorum(3);

/** Each node's line for `key`, as its sorted set of waiters by arrival. */
const lines = (key: string) =>
  Promise.all(
    quorum()
      .clients()
      .map((client) => client.zrange(`lock:{${key}}:l`, 0, -1)),
  );

/** `locks` waits behind `other` for a hold of about `ms`, `times` times: it learns the line's pace. */
async function learnPace(locks: LockService, other: LockService, key: string, ms: number, times: number) {
  for (let i = 0; i < times; i++) {
    const holder = await other.acquire(key);
    const waiting = locks.acquire(key, { waitTimeout: 10_000 });
    await until(
      () => locks.inspect(key),
      (info) => info.queueLength === 1,
    );
    await new Promise((resolve) => setTimeout(resolve, ms)); // the hold the waiter waits through
    await holder.release();
    await (await waiting).release();
  }
}

/** Three callers of three other services in line for `key`, each joined after the one before. */
async function lineOfThree(locks: LockService, key: string) {
  const order: number[] = [];
  const served = [0, 1, 2].map(() => ({ release: () => {} }) as { release: () => void });
  const waiting: Promise<void>[] = [];
  for (const i of [0, 1, 2]) {
    const service = quorum().service();
    waiting.push(
      service.acquire(key, { waitTimeout: 60_000 }).then(async (lease: Lease) => {
        order.push(i);
        // Each holds until told, so the order they were served in is the order they were granted in.
        await new Promise<void>((resolve) => {
          served[i].release = resolve;
        });
        await lease.release();
      }),
    );
    await until(
      () => locks.inspect(key),
      (info) => info.queueLength === i + 1,
    );
  }
  return { order, served, waiting };
}

describe('the door on a quorum', () => {
  it('turns away a call that could not wait through the line; no node put it in line, and the line is served in its order', async () => {
    const key = 'qdoor';
    const [locks, other] = [quorum().service(), quorum().service()];
    await learnPace(locks, other, key, 100, 3);
    const holder = await other.acquire(key, { ttl: 30_000, renew: true });
    const line = await lineOfThree(locks, key);
    const before = await lines(key);
    expect(before.map((l) => l.length)).toEqual([3, 3, 3]);

    // About 100 ms a place: 250 ms could see through 2 places, and 3 are in line.
    const error = await locks.acquire(key, { waitTimeout: 250 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockShedError);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect((error as LockShedError).inLine).toBe(3);
    expect((error as LockShedError).waitedMs).toBe(0);
    expect(await lines(key)).toEqual(before);

    // A call that can wait joins as usual, behind them.
    let patientServed = false;
    const patient = locks.acquire(key, { waitTimeout: 60_000 }).then((lease) => {
      patientServed = true;
      return lease;
    });
    await until(
      () => locks.inspect(key),
      (info) => info.queueLength === 4,
    );
    await holder.release();
    for (const i of [0, 1, 2]) {
      await until(
        () => Promise.resolve(line.order.length),
        (n) => n === i + 1,
      );
      expect(patientServed).toBe(false);
      line.served[i].release();
    }
    await Promise.all(line.waiting);
    expect(line.order).toEqual([0, 1, 2]);
    await (await patient).release();
    expect((await lines(key)).map((l) => l.length)).toEqual([0, 0, 0]);
  }, 60_000);

  it('a minority of nodes whose line is longer cannot turn a call away: it joins, and is served', async () => {
    const key = 'qdoor:minority';
    const [locks, other] = [quorum().service(), quorum().service()];
    await learnPace(locks, other, key, 100, 3);
    const holder = await other.acquire(key, { ttl: 30_000, renew: true });
    // One node of three counts 20 more waiting (entries that expire in a minute and are in no line, so no
    // hand-off ever picks them): its door turns the call away, the other two put it in line.
    const [odd] = quorum().clients();
    const expires = Date.now() + 60_000;
    await odd.zadd(
      `lock:{${key}}:w`,
      ...Array.from({ length: 20 }, (_, i) => i).flatMap((i) => [expires, `ghost-${i}`]),
    );

    // About 100 ms a place: 1.5 s could see through 15 places.
    const waiting = locks.acquire(key, { waitTimeout: 1_500 });
    await until(
      () => lines(key),
      (found) => found[1].length === 1 && found[2].length === 1,
    );
    await holder.release();
    const lease = await waiting;
    expect(lease.fence).toBeGreaterThan(0);
    await lease.release();
    await odd.del(`lock:{${key}}:w`);
  }, 60_000);
});
