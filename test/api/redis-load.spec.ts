// What each step of a contended lock costs Redis, counted by Redis itself (INFO commandstats, which
// counts the commands a script runs as well as the script call). Waiting is free (no-polling.spec); these
// bound the steps that do run: joining the queue, and a release that hands the lock on.
import { describe, expect, it } from '@jest/globals';
import { connectionOf } from '../../lib/clients';
import { redisKeys } from '../../lib/protocol/keys';
import { LockScripts, type ScriptContext } from '../../lib/protocol/lock-scripts';
import type { LockTicket, WakeMessage } from '../../lib/store/lock-store';
import { commandsIn, lockService, outcome, until } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();

const inner = (stats: Map<string, number>) => commandsIn(stats) - (stats.get('evalsha') ?? 0);

describe('Redis load of a contended lock', () => {
  // The protocol on its own, so that no waiter process reacts to the pushes while Redis counts. Nobody
  // subscribes here, so receivers are not trusted (as on a Cluster): every grant is published and kept.
  const setUp = () => {
    const scripts = new LockScripts(connectionOf(server().client()), 5_000);
    const ctx = (token: string): ScriptContext & LockTicket => ({
      key: 'busy',
      keys: redisKeys('lock:', 'busy'),
      token,
      ttl: 30_000,
      claimWindow: 2_000,
      channelPrefix: 'lock:wake:',
      trustReceivers: false,
      fenceRetention: 60_000,
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

  it('joining the queue runs at most 6 commands, first or behind others, and reads neither the line nor the owner', async () => {
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
      // TIME, SET NX GET (the owner it returns is all the join needs of it), PTTL (the hold, for the
      // reply), the bounded LPOS (a join the client may have sent again after a reconnect must not queue
      // twice), RPUSH (its reply says how many are ahead: the line is not read) and PEXPIRE.
      expect(inner(stats)).toBeLessThanOrEqual(6);
      expect(stats.get('llen') ?? 0).toBe(0);
      expect(stats.get('get') ?? 0).toBe(0);
      expect(stats.get('lpos') ?? 0).toBe(1);
      expect(stats.get('lindex') ?? 0).toBe(0);
      expect(stats.get('lrange') ?? 0).toBe(0);
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
    // GET, LPOP, TIME, LRANGE (followers?), SET … GET (fences), PUBLISH (grant), SET PX (owner), PUBLISH
    // (the next head's note). Nothing is noted for a stall: a grant that runs out costs its claim window.
    expect(inner(released.stats)).toBeLessThanOrEqual(8);
    expect(released.stats.get('hkeys') ?? 0).toBe(0);
    expect(await server().client().get('lock:{busy}')).toBe('a:1');

    // The last release, with nobody queued, deletes the owner key.
    expect(await scripts.acquire(ctx('a:1'), 'wait', 20_000)).toMatchObject({ granted: true });
    await scripts.release(ctx('a:1'));
    expect(await scripts.acquire(ctx('b:1'), 'wait', 20_000)).toMatchObject({ granted: true });
    const last = await step(() => scripts.release(ctx('b:1')));
    expect(last.stats.get('del')).toBe(1);
    expect(await server().client().exists('lock:{busy}', 'lock:{busy}:q')).toBe(0);
  });

  it('within one service a grant comes in the release reply naming its followers, and only the last of them tells Redis, in one lean script', async () => {
    const { ctx, step } = setUp();
    const grants: WakeMessage[] = [];
    const local = new LockScripts(connectionOf(server().client()), 5_000, undefined, (grant) =>
      grants.push(grant),
    );
    await server().client().del('lock:{busy}', 'lock:{busy}:q');
    await local.acquire(ctx('warm:1'), 'try', 0);
    await local.release(ctx('warm:1'));
    const handedOn = (from: string, ...handed: string[]) => ({ from: ctx(from), handed });
    expect((await local.transfer(ctx('warm:2'), handedOn('warm:1', 'warm:2'), true)).outcome).toBe('missing');
    const holder = ctx('s:1');
    expect((await local.acquire(holder, 'try', 0)).granted).toBe(true);
    for (const token of ['s:2', 's:3', 's:4', 'x:1', 's:5']) await local.acquire(ctx(token), 'join', 20_000);

    // s:1 releases to s:2, of its own service: nothing is published, the reply carries the grant and
    // names s:3 and s:4, next in line and of the same service too (not s:5: x:1 is between), with the
    // fences set aside for them.
    const released = await step(() => local.release(holder));
    expect(released.reply).toBe(true);
    expect(released.stats.get('publish') ?? 0).toBe(0);
    expect(inner(released.stats)).toBeLessThanOrEqual(9);
    expect(await server().client().get('lock:{busy}')).toBe('s:2');
    const fence = Number(await server().client().get('lock:{busy}:fence'));
    expect(grants).toEqual([
      {
        kind: 'grant',
        token: 's:2',
        fence: fence - 2,
        serverMs: expect.any(Number),
        next: [
          { token: 's:3', fence: fence - 1 },
          { token: 's:4', fence },
        ],
      },
    ]);

    // s:2 hands on to s:3, and s:3 to s:4, in the service alone. s:4, the last, releases: one script
    // takes s:3 and s:4 out of line and grants x:1 (of another service), published, and s:5, now first
    // in line but not of x:1's service, gets the head note.
    const last = await step(() => local.release(ctx('s:4'), handedOn('s:2', 's:3', 's:4')));
    expect(last.reply).toBe(true);
    expect(last.stats.get('publish')).toBe(2);
    expect(inner(last.stats)).toBeLessThanOrEqual(13);
    expect(await server().client().get('lock:{busy}')).toBe('x:1');
    expect(await server().client().lrange('lock:{busy}:q', 0, -1)).toEqual(['s:5']);
    // A follower of an owner that no longer holds the lock is told so, and changes nothing.
    expect(await local.release(ctx('s:9'), handedOn('s:2', 's:9'))).toBe(false);
    expect(await server().client().get('lock:{busy}')).toBe('x:1');
  });

  it('a follower whose work is long records the hand-off: it owns the lock for its ttl, and the followers before it leave the line', async () => {
    const { scripts, ctx, step } = setUp();
    await server().client().del('lock:{busy}', 'lock:{busy}:q');
    await scripts.acquire(ctx('warm:1'), 'try', 0);
    await scripts.release(ctx('warm:1'));
    const handedOn = (from: string, ...handed: string[]) => ({ from: ctx(from), handed });
    expect((await scripts.transfer(ctx('warm:2'), handedOn('warm:1', 'warm:2'), true)).outcome).toBe(
      'missing',
    );
    expect((await scripts.acquire(ctx('s:1'), 'try', 0)).granted).toBe(true);
    for (const token of ['s:2', 's:3', 'x:1']) await scripts.acquire(ctx(token), 'join', 20_000);
    const fence = Number(await server().client().get('lock:{busy}:fence'));

    // s:1 handed on to s:2 and s:2 to s:3 without telling Redis; s:3 records it, with no followers
    // left to hand on to: x:1, of another service, gets the head note as the new hold begins.
    const transferred = await step(() => scripts.transfer(ctx('s:3'), handedOn('s:1', 's:2', 's:3'), true));
    expect(transferred.reply).toEqual({ outcome: 'extended', next: undefined });
    expect(inner(transferred.stats)).toBeLessThanOrEqual(8);
    expect(transferred.stats.get('publish')).toBe(1);
    expect(await server().client().get('lock:{busy}')).toBe('s:3');
    expect(await server().client().pttl('lock:{busy}')).toBeGreaterThan(29_000);
    expect(await server().client().lrange('lock:{busy}:q', 0, -1)).toEqual(['x:1']);
    // No fence is drawn: the followers' were set aside when their owner was granted.
    expect(Number(await server().client().get('lock:{busy}:fence'))).toBe(fence);

    // Repeated (a lost reply), it only renews; from an owner that is not the owner, it is refused.
    expect((await scripts.transfer(ctx('s:3'), handedOn('s:1', 's:2', 's:3'), true)).outcome).toBe(
      'extended',
    );
    expect((await scripts.transfer(ctx('x:1'), handedOn('s:9', 'x:1'), true)).outcome).toBe('taken');
    await scripts.release(ctx('s:3'));
    await scripts.release(ctx('x:1'));
    expect((await scripts.transfer(ctx('s:6'), handedOn('x:1', 's:6'), true)).outcome).toBe('missing');
  });

  it('a recorded hand-off names the waiters of the same service now first in line, with fences set aside', async () => {
    const { scripts, ctx } = setUp();
    await server().client().del('lock:{busy}', 'lock:{busy}:q');
    const handedOn = (from: string, ...handed: string[]) => ({ from: ctx(from), handed });
    expect((await scripts.acquire(ctx('s:1'), 'try', 0)).granted).toBe(true);
    for (const token of ['s:2', 's:3', 's:4', 'x:1']) await scripts.acquire(ctx(token), 'join', 20_000);
    const before = Number(await server().client().get('lock:{busy}:fence'));
    const reply = await scripts.transfer(ctx('s:2'), handedOn('s:1', 's:2'), true);
    const fence = Number(await server().client().get('lock:{busy}:fence'));
    expect(fence).toBeGreaterThan(before + 1);
    expect(reply).toEqual({
      outcome: 'extended',
      next: [
        { token: 's:3', fence: fence - 1 },
        { token: 's:4', fence },
      ],
    });
    expect(await server().client().lrange('lock:{busy}:q', 0, -1)).toEqual(['s:3', 's:4', 'x:1']);
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
