// What each step of a contended lock costs Redis, counted by Redis itself (INFO commandstats, which
// counts the commands a script runs as well as the script call). Waiting is free (no-polling.spec); these
// bound the steps that do run: joining the queue, and a release that hands the lock on.
import { describe, expect, it } from '@jest/globals';
import { lockKeys } from '../../lib/protocol/keys';
import { LockScripts, type ScriptContext } from '../../lib/protocol/lock-scripts';
import { commandsIn, lockService, outcome, until } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();

const inner = (stats: Map<string, number>) => commandsIn(stats) - (stats.get('evalsha') ?? 0);

describe('Redis load of a contended lock', () => {
  // The protocol on its own, so that no waiter process reacts to the pushes while Redis counts. Nobody
  // subscribes here, so receivers are not trusted (as on a Cluster): every grant is published and kept.
  const setUp = () => {
    const scripts = new LockScripts(server().client(), 5_000);
    const ctx = (token: string): ScriptContext => ({
      keys: lockKeys('lock:', 'busy'),
      token,
      ttl: 30_000,
      claimWindow: 2_000,
      channelPrefix: 'lock:wake:',
      trustReceivers: false,
      fenceRetention: 3_600_000,
    });
    const step = async <T>(call: () => Promise<T>): Promise<{ reply: T; stats: Map<string, number> }> => {
      await server().resetStats();
      const reply = await call();
      const stats = await server().commandStats();
      expect(stats.get('evalsha')).toBe(1);
      return { reply, stats };
    };
    return { scripts, ctx, step };
  };

  it('joining the queue runs at most 6 commands, first or behind others, and skips the checks a first call cannot need', async () => {
    const { scripts, ctx, step } = setUp();
    // Load the scripts once, so each measured call is one EVALSHA.
    await scripts.acquire(ctx('warm:1'), 'try', 0);
    await scripts.release(ctx('warm:1'));

    const holder = ctx('h:1');
    expect((await step(() => scripts.acquire(holder, 'try', 0))).reply.granted).toBe(true);
    for (const [token, head] of [
      ['a:1', true],
      ['b:1', false],
    ] as const) {
      const { reply, stats } = await step(() => scripts.acquire(ctx(token), 'join', 20_000));
      expect(reply).toMatchObject({ granted: false, isHead: head });
      // Behind others, one LINDEX tells whether everyone ahead is a reservation (docs/protocol.md).
      expect(inner(stats)).toBeLessThanOrEqual(6);
      expect(stats.get('lpos') ?? 0).toBe(0);
      expect(stats.get('lindex') ?? 0).toBe(head ? 0 : 1);
    }
    expect(await server().client().lrange('lock:{busy}:q', 0, -1)).toEqual(['a:1', 'b:1']);

    // A later call of a queued waiter finds its place instead of queueing twice.
    const again = await step(() => scripts.acquire(ctx('b:1'), 'wait', 20_000));
    expect(again.reply).toMatchObject({ granted: false, isHead: false });
    expect(await server().client().llen('lock:{busy}:q')).toBe(2);

    // Handing the lock on overwrites the owner key with the next waiter's grant: no DEL on the way.
    const released = await step(() => scripts.release(holder));
    expect(released.reply).toBe(true);
    expect(released.stats.get('del') ?? 0).toBe(0);
    expect(inner(released.stats)).toBeLessThanOrEqual(8);
    expect(await server().client().get('lock:{busy}')).toBe('a:1');

    // The last release, with nobody queued, deletes the owner key.
    expect(await scripts.acquire(ctx('a:1'), 'wait', 20_000)).toMatchObject({ granted: true });
    await scripts.release(ctx('a:1'));
    expect(await scripts.acquire(ctx('b:1'), 'wait', 20_000)).toMatchObject({ granted: true });
    const last = await step(() => scripts.release(ctx('b:1')));
    expect(last.stats.get('del')).toBe(1);
    expect(await server().client().exists('lock:{busy}', 'lock:{busy}:q')).toBe(0);
  });

  it('within one service a grant comes in the release reply with its successor, and the local hand-off is one lean script', async () => {
    const { scripts, ctx, step } = setUp();
    await scripts.acquire(ctx('warm:1'), 'try', 0);
    await scripts.release(ctx('warm:1'));
    expect((await scripts.transfer('warm:1', ctx('warm:2'))).outcome).toBe('missing');
    const holder = ctx('s:1');
    expect((await scripts.acquire(holder, 'try', 0)).granted).toBe(true);
    await scripts.acquire(ctx('s:2'), 'join', 20_000);
    await scripts.acquire(ctx('s:3'), 'join', 20_000);
    const other = await scripts.acquire(ctx('x:1'), 'join', 20_000);
    expect(other.granted).toBe(false);

    // s:1 releases to s:2, of its own service: nothing is published, the reply carries the grant and
    // names s:3, next in line and of the same service too, with the fence set aside for it.
    const released = await step(() => scripts.release(holder));
    expect(released.reply).toBe(true);
    expect(released.stats.get('publish') ?? 0).toBe(0);
    expect(inner(released.stats)).toBeLessThanOrEqual(7);
    expect(await server().client().get('lock:{busy}')).toBe('s:2');
    const fence = Number(await server().client().get('lock:{busy}:fence'));

    // s:2 hands on to s:3 locally; Redis records it: owner, ttl, queue, and the head note to x:1 (of
    // another service) as the new hold begins.
    const transferred = await step(() => scripts.transfer('s:2', ctx('s:3')));
    expect(transferred.reply).toEqual({ outcome: 'extended', next: undefined });
    expect(inner(transferred.stats)).toBeLessThanOrEqual(5);
    expect(transferred.stats.get('publish')).toBe(1);
    expect(await server().client().get('lock:{busy}')).toBe('s:3');
    expect(await server().client().pttl('lock:{busy}')).toBeGreaterThan(29_000);
    expect(await server().client().lrange('lock:{busy}:q', 0, -1)).toEqual(['x:1']);
    // The fence s:3 started under was set aside when s:2 was granted: no new one is drawn.
    expect(Number(await server().client().get('lock:{busy}:fence'))).toBe(fence);

    // Repeated (a lost reply), it only renews; from an owner that is not the owner, it is refused.
    expect((await scripts.transfer('s:2', ctx('s:3'))).outcome).toBe('extended');
    expect((await scripts.transfer('s:9', ctx('x:1'))).outcome).toBe('taken');
    await scripts.release(ctx('s:3'));
    expect((await scripts.transfer('s:3', ctx('x:1'))).outcome).toBe('extended');
    await scripts.release(ctx('x:1'));
    expect((await scripts.transfer('x:1', ctx('s:4'))).outcome).toBe('missing');
  });

  it('a waiter with a shorter wait never shortens the queue, one with a longer wait lengthens it', async () => {
    const holder = await lockService(server()).acquire('queue-ttl', { ttl: 30_000 });
    const admin = server().client();
    const pttl = () => admin.pttl('lock:{queue-ttl}:q');
    const long = lockService(server()).acquire('queue-ttl', { waitTimeout: 30_000 });
    const afterLong = await until(pttl, (ms) => ms > 0);
    expect(afterLong).toBeGreaterThan(29_000);

    const short = lockService(server()).acquire('queue-ttl', { waitTimeout: 1_000 });
    await until(
      () => admin.llen('lock:{queue-ttl}:q'),
      (length) => length === 2,
    );
    expect(await pttl()).toBeGreaterThan(28_000);

    const longer = lockService(server()).acquire('queue-ttl', { waitTimeout: 60_000 });
    await until(
      () => admin.llen('lock:{queue-ttl}:q'),
      (length) => length === 3,
    );
    expect(await pttl()).toBeGreaterThan(59_000);

    expect((await outcome(short)).error).toMatchObject({ code: 'LOCK_TIMEOUT' });
    await holder.release();
    await (await long).release();
    await (await longer).release();
  });
});
