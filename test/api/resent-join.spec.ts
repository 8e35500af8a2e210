// A waiter's first call ("join") sent twice: ioredis sends again the calls a dropped connection left
// unanswered, so a join whose reply was lost runs again on the new connection. Sent again while the
// lock is held, it finds its place (acquire.lua's queued_before); sent again once the lock is free with
// the waiter still in line (the holder's lease ran out meanwhile), it used to queue a second time, and
// the line held it twice. Found by the simulation (seed 9629); here on a real server, the script driven
// one call at a time as the service would send it.
import { describe, expect, it } from '@jest/globals';
import { connectionOf } from '../../lib/clients';
import { redisKeys } from '../../lib/protocol/keys';
import { LockScripts, type ScriptContext } from '../../lib/protocol/lock-scripts';
import { until } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();

describe('a join sent again after its reply was lost', () => {
  it('takes one place in line when it reaches a free lock with the waiter still in line', async () => {
    const redis = server().client();
    const keys = redisKeys('lock:', 'resent-join');
    const scripts = new LockScripts(connectionOf(redis), 5_000);
    const ticket = (name: string, ttl: number): ScriptContext => ({
      keys,
      token: `${name}:1~10000`,
      ttl,
      claimWindow: 10_000,
      channelPrefix: 'lock:wake:',
      trustReceivers: false,
      fenceRetention: 60_000,
    });
    const holder = ticket('holder', 200);
    const waiter = ticket('waiter', 30_000);
    expect((await scripts.acquire(holder, 'join', 30_000)).granted).toBe(true);
    expect(await scripts.acquire(waiter, 'join', 30_000)).toMatchObject({ granted: false });
    expect(await redis.lrange(keys.queue, 0, -1)).toEqual([waiter.token]);
    // The holder's lease runs out: the lock is free, the waiter first in line.
    await until(
      () => redis.pttl(keys.owner),
      (left) => left === -2,
    );
    // The join again, as the client resends it: the waiter is served from its place, once.
    const again = await scripts.acquire(waiter, 'join', 30_000);
    expect(again.granted).toBe(true);
    expect(await redis.get(keys.owner)).toBe(waiter.token);
    expect(await redis.lrange(keys.queue, 0, -1)).toEqual([]);
  });
});
