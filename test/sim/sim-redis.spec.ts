// SimRedis, the simulation's Redis, held to a real redis-server: the same calls of the lock's scripts
// (built and sent by LockScripts and QuorumNode themselves) and of plain commands go to both, and every
// reply, every message published and every key left must match (differential.ts: clock readings and
// time left within a slack, the rest exactly).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { redisKeys, wakeChannelPrefix } from '../../lib/protocol/keys';
import { FENCE_RETENTION_MS, LockScripts, type ScriptContext } from '../../lib/protocol/lock-scripts';
import { fencedWriteLua } from '../../lib/protocol/lua/scripts.generated';
import { QuorumNode } from '../../lib/protocol/quorum-node';
import { isReplyError } from '../../lib/protocol/redis-errors';
import type { WakeMessage } from '../../lib/protocol/replies';
import { parseInfo } from '../../lib/protocol/server-info';
import { lockToken } from '../../lib/store/token';
import { SimRedis } from '../../sim/redis/sim-redis';
import { useRedis } from '../support/redis-server';
import { Differential } from './differential';

const PREFIX = 'sim:';
const CHANNELS = wakeChannelPrefix(PREFIX);
/** Two services listen on their wake channels; the third is gone (pushes to it reach nobody). */
const [ALPHA, BETA, GONE] = ['alpha', 'beta', 'gone'];
/** Long enough that nothing expires during a test unless it means to. */
const TTL = 60_000;

const server = useRedis();
let run: Differential;
let scripts: LockScripts;
let quorum: QuorumNode;
const grantsInReply: WakeMessage[] = [];

beforeAll(async () => {
  run = await Differential.open(server());
  await run.listen(CHANNELS + ALPHA);
  await run.listen(CHANNELS + BETA);
  scripts = new LockScripts(run.connection(), 10_000, undefined, (grant) => grantsInReply.push(grant));
  quorum = new QuorumNode(run.connection(), 10_000);
});
afterAll(() => {
  scripts?.close();
  run?.close();
});
beforeEach(() => run.reset());

let callers = 0;
/** A caller of `service` on `key`: a mutex's, or with `kind` a semaphore's ("2") or read-write lock's. */
function caller(service: string, key: string, kind?: string, reader = false): ScriptContext {
  return {
    keys: redisKeys(PREFIX, key),
    token: lockToken(service, ++callers, TTL, reader),
    ttl: TTL,
    claimWindow: TTL,
    channelPrefix: CHANNELS,
    trustReceivers: true,
    fenceRetention: FENCE_RETENTION_MS,
    kind,
  };
}

/** Both servers answered, published and hold the same, and made as many PUBLISH calls (returned). */
async function expectAlike(): Promise<number> {
  expect(await run.check()).toEqual([]);
  const counts = await run.publishCounts();
  expect(counts.simulated).toBe(counts.real);
  return counts.real;
}

describe('SimRedis answers the lock scripts as Redis does', () => {
  it('a mutex: try, join, a door, wait, extend, inspect, and releases that hand the lock on', async () => {
    const [owner, rival, gone, first, second] = [
      caller(ALPHA, 'm'),
      caller(BETA, 'm'),
      caller(GONE, 'm'),
      caller(BETA, 'm'),
      caller(ALPHA, 'm'),
    ];
    expect((await scripts.acquire(owner, 'try', TTL)).granted).toBe(true);
    expect((await scripts.acquire(rival, 'try', TTL)).granted).toBe(false);
    await scripts.acquire(gone, 'join', TTL);
    await scripts.acquire(first, 'join', TTL, undefined, { places: 5, perPlaceMs: 12.5, offer: true });
    await scripts.acquire(first, 'join', TTL);
    await scripts.acquire(second, 'join', TTL, 2_000, { waitMs: 40 });
    await scripts.acquire(rival, 'join', TTL, undefined, { places: 1, perPlaceMs: 3, offer: false });
    expect(await scripts.extend(owner, TTL)).toBe('extended');
    expect(await scripts.extend(rival, TTL)).toBe('taken');
    await scripts.inspect(owner.keys);
    // Skips the waiter whose service is gone, grants the next (published: another service).
    expect(await scripts.release(owner)).toBe(true);
    expect((await scripts.acquire(first, 'wait', TTL)).granted).toBe(true);
    expect(await scripts.releaseLater(first, TTL / 2)).toBe(true);
    expect(await scripts.release(first)).toBe(true);
    await scripts.acquire(second, 'late', TTL);
    expect(await scripts.release(second)).toBe(true);
    expect(await scripts.extend(second, TTL)).toBe('missing');
    expect(await expectAlike()).toBeGreaterThan(2);
  });

  it('a mutex: grants made in the reply to waiters of the releasing service, and a transfer', async () => {
    const [owner, next, after, other] = [
      caller(ALPHA, 't'),
      caller(ALPHA, 't'),
      caller(ALPHA, 't'),
      caller(BETA, 't'),
    ];
    await scripts.acquire(owner, 'join', TTL);
    for (const waiter of [next, after, other]) await scripts.acquire(waiter, 'join', TTL);
    grantsInReply.length = 0;
    expect(await scripts.release(owner)).toBe(true);
    expect(grantsInReply).toHaveLength(1);
    const transferred = await scripts.transfer(
      after,
      { from: { token: next.token }, handed: [after.token] },
      true,
    );
    expect(transferred.outcome).toBe('extended');
    await scripts.inspect(owner.keys);
    expect(await scripts.release(after)).toBe(true);
    await expectAlike();
  });

  it('a mutex: reservations kept, claimed, passed over and cancelled, and waiters cancelling', async () => {
    const [owner, reserving, waiter, deadReserver] = [
      caller(ALPHA, 'r'),
      caller(BETA, 'r'),
      caller(BETA, 'r'),
      caller(GONE, 'r'),
    ];
    await scripts.acquire(owner, 'try', TTL);
    const dead = await scripts.reserve(deadReserver, TTL);
    reserving.reserved = await scripts.reserve(reserving, TTL);
    await scripts.acquire(waiter, 'join', TTL);
    await scripts.inspect(owner.keys);
    expect(await scripts.cancel(waiter)).toBe(false);
    await scripts.acquire(reserving, 'wait', TTL);
    await scripts.acquire(waiter, 'join', TTL);
    expect(await scripts.release(owner)).toBe(true);
    await scripts.acquire(reserving, 'wait', TTL);
    expect(await scripts.cancel(reserving)).toBe(true);
    expect(await scripts.cancel({ ...deadReserver, reserved: dead })).toBe(false);
    await expectAlike();
  });

  it('a semaphore of two permits: holders, a line served in order, renewals, releases and cancels', async () => {
    const holders = [caller(ALPHA, 's', '2'), caller(BETA, 's', '2')];
    const [gone, waiter, late] = [caller(GONE, 's', '2'), caller(BETA, 's', '2'), caller(ALPHA, 's', '2')];
    for (const holder of holders) expect((await scripts.acquire(holder, 'join', TTL)).granted).toBe(true);
    await scripts.acquire(caller(ALPHA, 's', '2'), 'try', TTL);
    await scripts.acquire(gone, 'join', TTL);
    await scripts.acquire(waiter, 'join', TTL, undefined, { places: 4, perPlaceMs: 7, offer: true });
    await scripts.acquire(late, 'join', TTL, 1_000);
    expect(await scripts.extend(holders[0], TTL)).toBe('extended');
    await scripts.inspect(holders[0].keys);
    expect(await scripts.release(holders[0])).toBe(true);
    await scripts.acquire(waiter, 'wait', TTL);
    expect(await scripts.releaseLater(holders[1], TTL / 3)).toBe(true);
    expect(await scripts.cancel(late)).toBe(false);
    expect(await scripts.release(waiter)).toBe(true);
    await scripts.inspect(holders[0].keys);
    expect(await expectAlike()).toBeGreaterThan(2);
  });

  it('a read-write lock: readers share it, a writer waits alone and holds back the readers behind it', async () => {
    const [reader, reader2, writer, reader3] = [
      caller(ALPHA, 'rw', 'rw', true),
      caller(BETA, 'rw', 'rw', true),
      caller(BETA, 'rw', 'rw'),
      caller(ALPHA, 'rw', 'rw', true),
    ];
    await scripts.acquire(reader, 'join', TTL);
    await scripts.acquire(reader2, 'join', TTL);
    await scripts.acquire(writer, 'join', TTL);
    await scripts.acquire(reader3, 'join', TTL);
    await scripts.inspect(reader.keys);
    await scripts.release(reader);
    await scripts.release(reader2);
    await scripts.acquire(writer, 'wait', TTL);
    await scripts.release(writer);
    await scripts.inspect(reader.keys);
    await expectAlike();
  });

  it('a quorum node: votes, a line by arrival, commit, renewal, restore, and a release handing it on', async () => {
    const keys = redisKeys(PREFIX, 'q');
    const [holder, waiter, gone] = [
      lockToken(ALPHA, 1, 900),
      lockToken(BETA, 2, 900),
      lockToken(GONE, 3, 900),
    ];
    expect((await quorum.vote(keys, holder, TTL, 0, 100)).voted).toBe(true);
    expect((await quorum.vote(keys, gone, TTL, TTL, 101)).voted).toBe(false);
    expect((await quorum.vote(keys, waiter, TTL, TTL, 102)).voted).toBe(false);
    expect(await quorum.commit(keys, holder, 5_000_000_000_000_000, FENCE_RETENTION_MS, TTL)).toBe(true);
    expect(await quorum.extend(keys, holder, TTL)).toBe('extended');
    await quorum.inspect(keys);
    expect(
      await quorum.release(keys, holder, CHANNELS, true, 5_000_000_000_000_000, FENCE_RETENTION_MS),
    ).toBe(true);
    expect(await quorum.release(keys, waiter, CHANNELS, false, 0, FENCE_RETENTION_MS)).toBe(true);
    await run.call(['DEL', keys.owner]);
    expect(await quorum.restore(keys, waiter, TTL)).toBe(true);
    await quorum.inspect(keys);
    expect(await expectAlike()).toBe(1);
  });

  it('a fenced write: newer fences write, older ones are refused', async () => {
    const write = (fence: string, value: string) =>
      run.call(['EVAL', fencedWriteLua, 1, 'sim:res', fence, value, TTL]);
    await write('1700000000000001', 'a');
    await write('1700000000000000', 'b');
    await write('1700000000000002', 'c');
    await expectAlike();
  });

  it('keys of the wrong type or kind: WRONGTYPE and LOCKKIND, as the scripts word them', async () => {
    const [mutex, semaphore] = [caller(ALPHA, 'k'), caller(ALPHA, 'k', '3')];
    await scripts.acquire(mutex, 'try', TTL);
    await expect(scripts.acquire(semaphore, 'join', TTL)).rejects.toThrow();
    await scripts.release(mutex);
    await scripts.acquire(semaphore, 'join', TTL);
    await expect(scripts.acquire(caller(BETA, 'k'), 'join', TTL)).rejects.toThrow();
    await expect(scripts.acquire(caller(BETA, 'k', 'rw'), 'join', TTL)).rejects.toThrow();
    const list = caller(ALPHA, 'list');
    await run.call(['RPUSH', list.keys.owner, 'x']);
    for (const mode of ['try', 'join', 'wait'] as const) {
      await expect(scripts.acquire(list, mode, TTL)).rejects.toThrow();
      await expect(scripts.acquire({ ...list, kind: '2' }, mode, TTL)).rejects.toThrow();
    }
    await expect(scripts.extend(list, TTL)).rejects.toThrow();
    await expect(run.call(['GET', list.keys.owner])).rejects.toThrow('WRONGTYPE');
    await expect(run.call(['SET', list.keys.owner, 'v', 'GET'])).rejects.toThrow('WRONGTYPE');
    await run.call(['SET', 'sim:text', 'abc']);
    await expect(run.call(['INCR', 'sim:text'])).rejects.toThrow('not an integer');
    await expect(run.call(['HSET', 'sim:text', 'f', 'v'])).rejects.toThrow('WRONGTYPE');
    await expect(run.call(['ZADD', 'sim:text', 1, 'm'])).rejects.toThrow('WRONGTYPE');
    await expectAlike();
  });
});

describe('SimRedis answers plain commands as Redis does', () => {
  it('expires a key at its expiry, lazily, in scripts and commands alike', async () => {
    const lock = caller(ALPHA, 'e');
    await run.call(['SET', lock.keys.owner, 'someone', 'PX', 50]);
    await run.call(['SET', 'sim:short', 'v', 'PX', 50]);
    await run.call(['RPUSH', 'sim:list', 'a', 'b']);
    await run.call(['PEXPIRE', 'sim:list', 50]);
    // The real server's clock is the one that must pass (the simulated one is read from it), until
    // every key is gone there: then it is for the simulated server too.
    for (const key of [lock.keys.owner, 'sim:short', 'sim:list']) {
      while ((await run.real.pttl(key)) !== -2) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    for (const key of ['sim:short', 'sim:list']) {
      await run.call(['GET', key]);
      await run.call(['EXISTS', key]);
      await run.call(['PTTL', key]);
      await run.call(['TYPE', key]);
    }
    expect((await scripts.acquire(lock, 'try', TTL)).granted).toBe(true);
    await run.call(['SET', 'sim:v', 'v']);
    await run.call(['PEXPIRE', 'sim:v', TTL, 'XX']);
    await run.call(['PEXPIRE', 'sim:v', TTL, 'NX']);
    await run.call(['PEXPIRE', 'sim:v', TTL * 2, 'GT']);
    await run.call(['PEXPIRE', 'sim:v', TTL, 'GT']);
    await run.call(['PEXPIRE', 'sim:v', TTL, 'LT']);
    await run.call(['PEXPIREAT', 'sim:v', 1]);
    await run.call(['GET', 'sim:v']);
    await run.call(['SET', 'sim:v', 'v', 'PX', TTL]);
    await run.call(['PEXPIRE', 'sim:v', -5]);
    await run.call(['EXISTS', 'sim:v']);
    await expectAlike();
  });

  it('the commands the library sends outside scripts: PING, INFO, SCAN, WAIT, SET NX PX, GETDEL, HMGET', async () => {
    await run.call(['PING']);
    const [realInfo, simInfo] = [await run.real.info(), run.sim.call(['INFO']) as string];
    const { rdbSaves: _, ...facts } = parseInfo('server', realInfo);
    expect(parseInfo('server', simInfo)).toMatchObject(facts);
    for (let i = 0; i < 30; i++) await run.call(['SET', `${PREFIX}{scan${i}}`, i, 'PX', TTL]);
    await run.call(['RPUSH', `${PREFIX}{scan}:q`, 'x']);
    const pattern = `${PREFIX}{scan*}`;
    const realKeys: string[] = [];
    let cursor = '0';
    do {
      const [next, found] = await run.real.scan(cursor, 'MATCH', pattern, 'COUNT', 7);
      realKeys.push(...found);
      cursor = next;
    } while (cursor !== '0');
    const [, simKeys] = run.sim.call(['SCAN', '0', 'MATCH', pattern, 'COUNT', 7]) as [string, string[]];
    expect([...simKeys].sort()).toEqual([...new Set(realKeys)].sort());
    await run.call(['WAIT', 0, 0]);
    await run.call(['SET', `${CHANNELS}x`, '1', 'PX', 5_000, 'NX']);
    await run.call(['SET', `${CHANNELS}x`, '1', 'PX', 5_000, 'NX']);
    await run.call(['PEXPIRE', `${CHANNELS}x`, 8_000]);
    await run.call(['GETDEL', `${CHANNELS}x`]);
    await run.call(['GETDEL', `${CHANNELS}x`]);
    await run.call(['HSET', 'sim:res', 'v', 'value', 'f', '17']);
    await run.call(['HMGET', 'sim:res', 'v', 'f', 'missing']);
    await run.call(['HMGET', 'sim:none', 'v']);
    await expectAlike();
  });

  it('lists, hashes, sorted sets and strings with the options the scripts use', async () => {
    const calls: (string | number)[][] = [
      ['RPUSH', 'sim:l', 'a', 'b', 'a', 'c', 'a', 'd'],
      ['LPUSH', 'sim:l', 'z', 'y'],
      ...[
        [],
        ['RANK', 2],
        ['RANK', -1],
        ['RANK', -2, 'MAXLEN', 3],
        ['RANK', 1, 'MAXLEN', 2],
        ['COUNT', 0],
      ].map((options) => ['LPOS', 'sim:l', 'a', ...options]),
      ['LPOS', 'sim:l', 'a', 'COUNT', 2, 'RANK', -1],
      ['LPOS', 'sim:l', 'nope'],
      ['LPOS', 'sim:none', 'a', 'COUNT', 1],
      ['LRANGE', 'sim:l', -3, -1],
      ['LRANGE', 'sim:l', 5, 100],
      ['LINDEX', 'sim:l', -1],
      ['LSET', 'sim:l', -2, 'x'],
      ['LREM', 'sim:l', -1, 'a'],
      ['LREM', 'sim:l', 1, 'a'],
      ['LRANGE', 'sim:l', 0, -1],
      ['LPOP', 'sim:l', 2],
      ['RPOP', 'sim:l', 2],
      ['LPOP', 'sim:l', 0],
      ['LLEN', 'sim:l'],
      ['RPOP', 'sim:l', 10],
      ['EXISTS', 'sim:l'],
      ['HSET', 'sim:h', '#', '3', 'a', '1'],
      ['HSET', 'sim:h', 'a', '2', 'b', '3'],
      ['HDEL', 'sim:h', 'a', 'nope'],
      ['HGET', 'sim:h', 'b'],
      ['HDEL', 'sim:h', '#', 'b'],
      ['EXISTS', 'sim:h'],
      ['ZADD', 'sim:z', 10, 'a', 20, 'b', 20, 'c', 30.5, 'd'],
      ['ZADD', 'sim:z', 'XX', 15, 'a', 99, 'new'],
      ['ZADD', 'sim:z', 'NX', 1, 'a', 5, 'e'],
      ['ZADD', 'sim:z', 'GT', 'CH', 12, 'a', 25, 'b'],
      ['ZADD', 'sim:z', 'LT', 12, 'a'],
      ['ZADD', 'sim:z', 'INCR', 0.5, 'a'],
      ['ZADD', 'sim:z', 'XX', 'INCR', 1, 'none'],
      ['ZRANGE', 'sim:z', 0, -1, 'WITHSCORES'],
      ['ZRANGE', 'sim:z', -1, -1, 'WITHSCORES'],
      ['ZRANGE', 'sim:z', 0, 1, 'REV'],
      ['ZRANGE', 'sim:z', '(20', '+inf', 'BYSCORE', 'LIMIT', 1, 5],
      ['ZRANGE', 'sim:z', '+inf', '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, 2],
      ['ZRANGEBYSCORE', 'sim:z', '-inf', '(20', 'WITHSCORES'],
      ['ZCOUNT', 'sim:z', '(12.5', 30.5],
      ['ZRANK', 'sim:z', 'c'],
      ['ZRANK', 'sim:z', 'none'],
      ['ZSCORE', 'sim:z', 'a'],
      ['ZREMRANGEBYSCORE', 'sim:z', '-inf', '(20'],
      ['ZREM', 'sim:z', 'b', 'none'],
      ['ZCARD', 'sim:z'],
      ['ZREMRANGEBYSCORE', 'sim:z', '-inf', '+inf'],
      ['EXISTS', 'sim:z'],
      ['SET', 'sim:p', 'v'],
      ['PEXPIRE', 'sim:p', TTL, 'GT'],
      ['PEXPIRE', 'sim:p', TTL, 'XX'],
      ['PEXPIRE', 'sim:p', TTL, 'LT'],
      ['PEXPIRE', 'sim:p', TTL / 2, 'GT'],
      ['PEXPIRE', 'sim:p', TTL * 2, 'GT'],
      ['PEXPIRE', 'sim:p', TTL, 'NX'],
      ['PEXPIREAT', 'sim:p', 2 ** 40, 'LT'],
      ['PTTL', 'sim:p'],
      ['SET', 'sim:s', 'v', 'PX', TTL],
      ['SET', 'sim:s', 'w', 'KEEPTTL', 'GET'],
      ['SET', 'sim:s', 'x', 'XX', 'GET'],
      ['SET', 'sim:none', 'x', 'XX'],
      ['SET', 'sim:s', 'y', 'NX', 'PX', TTL, 'GET'],
      ['PTTL', 'sim:s'],
      ['SET', 'sim:n', '9223372036854775806'],
      ['INCR', 'sim:n'],
      ['INCR', 'sim:n'],
      ['INCR', 'sim:new'],
      ['PEXPIRE', 'sim:new', TTL],
      ['INCR', 'sim:new'],
      ['PTTL', 'sim:new'],
    ];
    for (const args of calls) await run.call(args).catch(() => {});
    await expectAlike();
  });

  it('scripts by SHA1 (NOSCRIPT until loaded), and refusals: unknown commands, arity, syntax', async () => {
    const text = 'return #KEYS + #ARGV';
    const sha = (await run.call(['SCRIPT', 'LOAD', 'return 1'])) as string;
    await run.call(['SCRIPT', 'EXISTS', sha, 'f'.repeat(40)]);
    await run.call(['SCRIPT', 'FLUSH']);
    await expect(run.call(['EVALSHA', sha, 0])).rejects.toThrow('NOSCRIPT');
    await run.call(['EVAL', text, 1, 'k', 'a']);
    await expect(run.call(['EVAL', 'return (', 0])).rejects.toThrow('compiling');
    const refused: (string | number)[][] = [
      ['NOSUCH', 'a', 'b'],
      ['GET'],
      ['SET', 'k', 'v', 'PX', 0],
      ['SET', 'k', 'v', 'NX', 'XX'],
      ['SET', 'k', 'v', 'PX', 'soon'],
      ['PEXPIRE', 'k', 10, 'GT', 'LT'],
      ['PEXPIRE', 'k', 10, 'SOON'],
      ['ZADD', 'z', 'NX', 'XX', 1, 'm'],
      ['ZADD', 'z', 'GT', 'NX', 1, 'm'],
      ['ZADD', 'z', 'one', 'm'],
      ['ZCOUNT', 'z', 'low', 'high'],
      ['LPOS', 'l', 'x', 'RANK', 0],
      ['LSET', 'nokey', 0, 'x'],
      ['LPOP', 'l', -1],
      ['EVAL', text, -1],
      ['EVAL', text, 3, 'a'],
      ['SCRIPT', 'NOPE'],
      ['PUBSUB', 'NOPE'],
    ];
    for (const args of refused) await expect(run.call(args)).rejects.toThrow();
    await expectAlike();
  });
});

describe('SimRedis runs Lua as Redis 7 does (Lua 5.1)', () => {
  // Each runs on both servers with KEYS = sim:l1 (a list), sim:l2, sim:l3 and ARGV = a listened channel.
  const cases = [
    "return tostring(1700000000123456) .. ' ' .. tostring(3 / 2) .. ' ' .. 2 ^ 53 .. ' ' .. 10 / 3 .. ' ' .. 1e15",
    "return string.format('%d %d %.0f %.0f %.0f %d', 2.7, -2.7, 2.5, 3.5, 1700000000123456, 1700000000123456.7)",
    "return string.format('%5.1f|%-8.3e|%+d|% d|%05d|%.3d|%o|%X|%#x|%g|%g|%g|%.2f|%10.4s|%c|%q', 3.14159, " +
      "12345.6789, 5, 5, 42, 7, 8, 255, 255, 100000, 1000000, 1e-5, 2.675, 'abcdefg', 65, 'a\"b\\n')",
    "local t = redis.call('TIME') return string.format('%.0f', tonumber(t[1]) * 1000000 + tonumber(t[2]))",
    "return {1, 2.9, -2.9, 'a', true, false, nil, 3}",
    'return {2 ^ 63, -3.9, 1e300, 0 / 0 ~= 0 / 0}',
    "return {tostring(tonumber('0x10')), tostring(tonumber(' 12 ')), tostring(tonumber('12a')), " +
      "tostring(tonumber('1e2')), tostring(tonumber('0x100000000')), tostring(tonumber('inf'))}",
    "local t = {} t[1.0] = 'a' t[2] = 'b' return {#t, t[1], 7 % 3, -7 % 3, 2 ^ 10, 10 / 4, math.floor(3.7), math.ceil(-0.5)}",
    "redis.call('SET', KEYS[2], 0.1) redis.call('SET', KEYS[3], 1700000000123456) " +
      "return {redis.call('GET', KEYS[2]), redis.call('GET', KEYS[3])}",
    "return {redis.call('TYPE', KEYS[1])['ok'], redis.call('TYPE', 'sim:none')['ok'], type(redis.call('PING'))}",
    "return {redis.call('ZADD', KEYS[2] .. 'z', 0.1, 'a', 1.5, 'b', 1e20, 'c', 'inf', 'd'), " +
      "redis.call('ZRANGE', KEYS[2] .. 'z', 0, -1, 'WITHSCORES'), redis.call('ZSCORE', KEYS[2] .. 'z', 'a')}",
    "return redis.call('PUBSUB', 'NUMSUB', ARGV[1], 'nobody')",
    "return {redis.call('PUBLISH', ARGV[1], 'x'), redis.call('PUBLISH', 'nobody', 'y')}",
    'return {unpack({1, 2, 3})}',
    "return {redis.sha1hex('abc'), redis.LOG_WARNING}",
    "redis.log(redis.LOG_WARNING, 'dropped') return 1",
    "return redis.status_reply('FINE')",
    "return redis.error_reply('LOCKKIND 3 1')",
    "return redis.error_reply('NOSPACE')",
    "return {err = 'custom failure'}",
    "return {ok = 'A\\r\\nB'}",
    "return redis.pcall('INCR', KEYS[1]).err",
    "return redis.call('INCR', KEYS[1])",
    "return redis.pcall('NOSUCH').err",
    "return redis.call('NOSUCH')",
    "return redis.call('GET', 'a', 'b')",
    "return redis.call('EVAL', 'return 1', 0)",
    "return redis.call('SET', 'x', {})",
    'return redis.call()',
    'return redis.sha1hex()',
    'return redis.log(1)',
    'return foo',
    'foo = 1',
    "error('boom')",
    'error(12)',
    "local function f() error('deep') end\nf()",
    "local function f() return redis.call('INCR', KEYS[1]) end\n\nf()",
    'local x\nreturn x.y',
    'return missing()',
    'local t = {}\nreturn t.a.b',
    'return 1 + {}',
  ];

  it.each(cases.map((lua, i) => [i, lua]))('script %i answers alike: %s', async (_, lua) => {
    await run.call(['RPUSH', 'sim:l1', 'x']);
    await run.call(['EVAL', lua, 3, 'sim:l1', 'sim:l2', 'sim:l3', CHANNELS + ALPHA]).catch(() => {});
    await expectAlike();
  });
});

/** mulberry32: a small seeded generator, so that the fuzz replays the same calls every run. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('SimRedis agrees with Redis on random calls', () => {
  const SEED = 20_240_611;
  const STEPS = 300;

  it(`agrees over ${STEPS} calls of scripts and commands on a few keys (seed ${SEED})`, async () => {
    const random = seeded(SEED);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
    // Mutexes on f1 and f2, semaphores and read-write locks on f2 and f3: f2 mixes the kinds.
    const mutexes = ['f1', 'f2'].flatMap((name) => [
      caller(ALPHA, name),
      caller(BETA, name),
      caller(GONE, name),
    ]);
    const others = ['f2', 'f3'].flatMap((name) => [
      caller(ALPHA, name, '2'),
      caller(BETA, name, '2'),
      caller(GONE, name, '2'),
      caller(ALPHA, name, 'rw', true),
      caller(BETA, name, 'rw'),
    ]);
    const lockKeys = ['f1', 'f2', 'f3'].flatMap((name) => {
      const { owner, queue, fence, holders, semaphoreQueue } = redisKeys(PREFIX, name);
      return [owner, queue, fence, holders, semaphoreQueue];
    });
    const plainKeys = ['sim:p1', 'sim:p2', 'sim:p3'];
    // Commands mostly on keys of their own, now and then on a lock's.
    const key = () => (random() < 0.8 ? pick(plainKeys) : pick(lockKeys));
    const values = ['a', 'b', '1', '17', '-3', '0.1', 'x y'];
    const scores = ['1', '2.5', '-1', 'inf', '-inf', '0.1', '1e3', '(1', 'abc'];
    const numbers = [0, 1, 2, -1, -2, 3, 10];
    const commands: (() => (string | number)[])[] = [
      () => [
        'SET',
        key(),
        pick(values),
        ...pick([[], ['NX'], ['XX'], ['PX', TTL], ['NX', 'PX', TTL, 'GET'], ['GET'], ['KEEPTTL']]),
      ],
      () => ['GET', key()],
      () => ['DEL', key(), key()],
      () => ['EXISTS', key(), key()],
      () => ['INCR', key()],
      () => ['GETDEL', key()],
      () => ['TYPE', key()],
      () => ['PTTL', key()],
      () => ['PEXPIRE', key(), pick([TTL, TTL * 2, 0, -1]), ...pick([[], ['NX'], ['XX'], ['GT'], ['LT']])],
      () => [pick(['LPUSH', 'RPUSH']), key(), pick(values), pick(values)],
      () => [pick(['LPOP', 'RPOP']), key(), ...pick([[], [pick(numbers)]])],
      () => ['LRANGE', key(), pick(numbers), pick(numbers)],
      () => ['LINDEX', key(), pick(numbers)],
      () => ['LLEN', key()],
      () => ['LREM', key(), pick(numbers), pick(values)],
      () => ['LSET', key(), pick(numbers), pick(values)],
      () => [
        'LPOS',
        key(),
        pick(values),
        ...pick([
          [],
          ['RANK', pick(numbers)],
          ['COUNT', pick(numbers)],
          ['RANK', -1, 'MAXLEN', pick(numbers)],
        ]),
      ],
      () => ['HSET', key(), pick(values), pick(values)],
      () => ['HGET', key(), pick(values)],
      () => ['HDEL', key(), pick(values)],
      () => ['HMGET', key(), pick(values), pick(values)],
      () => [
        'ZADD',
        key(),
        ...pick([[], ['NX'], ['XX'], ['GT'], ['LT', 'CH'], ['INCR'], ['XX', 'CH']]),
        pick(scores),
        pick(values),
      ],
      () => ['ZSCORE', key(), pick(values)],
      () => ['ZRANK', key(), pick(values)],
      () => ['ZCARD', key()],
      () => ['ZREM', key(), pick(values)],
      () => ['ZCOUNT', key(), pick(scores), pick(scores)],
      () => ['ZREMRANGEBYSCORE', key(), pick(scores), pick(scores)],
      () => ['ZRANGE', key(), pick(numbers), pick(numbers), ...pick([[], ['WITHSCORES'], ['REV']])],
      () => ['ZRANGE', key(), pick(scores), pick(scores), 'BYSCORE', ...pick([[], ['LIMIT', 0, 1], ['REV']])],
      () => [
        'ZRANGEBYSCORE',
        key(),
        pick(scores),
        pick(scores),
        ...pick([[], ['WITHSCORES'], ['LIMIT', 1, 2]]),
      ],
    ];
    const lockCalls: ((ctx: ScriptContext) => Promise<unknown>)[] = [
      (ctx) => scripts.acquire(ctx, pick(['try', 'join', 'wait', 'late'] as const), TTL),
      (ctx) => scripts.release(ctx),
      (ctx) => scripts.cancel(ctx),
      (ctx) => scripts.extend(ctx, TTL),
      (ctx) => scripts.releaseLater(ctx, TTL / 2),
      (ctx) => scripts.inspect(ctx.keys),
    ];
    for (let step = 1; step <= STEPS; step++) {
      const roll = random();
      if (roll < 0.35) await pick(lockCalls)(pick(mutexes)).catch(() => {});
      else if (roll < 0.6) await pick(lockCalls)(pick(others)).catch(() => {});
      else if (roll < 0.65) await scripts.reserve(pick(mutexes), TTL).catch(() => {});
      else await run.call(pick(commands)()).catch(() => {});
      if (step % 50 === 0) expect(await run.check()).toEqual([]);
    }
    await expectAlike();
  });
});

describe('SimRedis on its own clock', () => {
  /** A server whose clock is `now.us`, counting its readings, and the messages it published. */
  function simulated(version?: number) {
    const now = { us: 1_700_000_000_000_000, reads: 0 };
    const published: string[] = [];
    const sim = new SimRedis({
      clock: () => {
        now.reads++;
        return now.us;
      },
      publish: (channel, message) => {
        published.push(`${channel} ${message}`);
        return 0;
      },
      version,
    });
    return { sim, now, published };
  }

  it('keeps a key through the ms it expires at and drops it the ms after, in commands and scripts', () => {
    const { sim, now } = simulated();
    sim.call(['SET', 'k', 'v', 'PX', 10]);
    now.us += 10_000;
    expect(sim.ttlOf('k')).toBe(0);
    expect(sim.call(['EVAL', "return redis.call('GET', KEYS[1])", 1, 'k'])).toBe('v');
    now.us += 999;
    expect(sim.call(['GET', 'k'])).toBe('v');
    now.us += 1;
    expect(sim.call(['EVAL', "return redis.call('EXISTS', KEYS[1])", 1, 'k'])).toBe(0);
    expect(sim.snapshot()).toEqual([]);
  });

  it('reads its clock once per script: TIME and expiry hold still while a script runs', () => {
    const { sim, now } = simulated();
    now.reads = 0;
    const times = sim.call(['EVAL', "return {redis.call('TIME'), redis.call('TIME')}", 0]) as string[][];
    expect(now.reads).toBe(1);
    expect(times[0]).toEqual(['1700000000', '0']);
    expect(times[1]).toEqual(times[0]);
  });

  it('replays the same calls into the same replies, messages and keys', () => {
    const runs = [simulated(), simulated()].map(({ sim, now, published }) => {
      const lua = "redis.call('PUBLISH', 'c', ARGV[1]) return redis.call('INCR', KEYS[1])";
      const replies = [1, 2, 3].map((i) => {
        now.us += 1_234;
        return [sim.call(['EVAL', lua, 1, 'n', i]), sim.call(['SET', `k${i}`, i, 'PX', 100 * i])];
      });
      return { replies, published, keys: sim.snapshot() };
    });
    expect(runs[1]).toEqual(runs[0]);
  });

  it('evicts keys, restarts empty (its scripts forgotten), and snapshots every type in order', () => {
    const { sim } = simulated();
    const sha = sim.call(['SCRIPT', 'LOAD', 'return 1']) as string;
    sim.call(['RPUSH', 'l', 'b', 'a']);
    sim.call(['HSET', 'h', 'z', '1', 'a', '2']);
    sim.call(['ZADD', 'z', 2, 'x', 1, 'y']);
    sim.call(['SET', 's', 'v', 'PX', 500]);
    expect(sim.snapshot()).toEqual([
      {
        key: 'h',
        type: 'hash',
        value: [
          ['a', '2'],
          ['z', '1'],
        ],
      },
      { key: 'l', type: 'list', value: ['b', 'a'] },
      { key: 's', type: 'string', value: 'v', pexpireAt: 1_700_000_000_000 + 500 },
      {
        key: 'z',
        type: 'zset',
        value: [
          ['y', 1],
          ['x', 2],
        ],
      },
    ]);
    expect(sim.evict('l')).toBe(true);
    expect(sim.evict('l')).toBe(false);
    expect(sim.call(['INFO', 'stats'])).toContain('evicted_keys:1');
    sim.flushAll();
    expect(sim.snapshot()).toEqual([]);
    expect(() => sim.call(['EVALSHA', sha, 0])).toThrow('NOSCRIPT No matching script. Please use EVAL.');
  });

  it('behaves as its version: 6.2 lacks SET NX GET and PEXPIRE GT; 7.2 writes doubles shortest', () => {
    const old = simulated(0x060200).sim;
    expect(() => old.call(['SET', 'k', 'v', 'NX', 'GET'])).toThrow('ERR syntax error');
    expect(() => old.call(['PEXPIRE', 'k', 10, 'GT'])).toThrow("wrong number of arguments for 'pexpire'");
    expect(old.call(['EVAL', 'return redis.REDIS_VERSION', 0])).toBe('6.2.0');
    const current = simulated().sim;
    const older = simulated(0x070000).sim;
    for (const sim of [current, older]) sim.call(['ZADD', 'z', '0.1', 'm']);
    expect(current.call(['ZSCORE', 'z', 'm'])).toBe('0.1');
    expect(older.call(['ZSCORE', 'z', 'm'])).toBe('0.10000000000000001');
  });

  it('throws error replies as ReplyError, as the library recognises them', () => {
    const { sim } = simulated();
    sim.call(['RPUSH', 'l', 'x']);
    const error = (() => {
      try {
        sim.call(['GET', 'l']);
      } catch (thrown) {
        return thrown;
      }
    })();
    expect(isReplyError(error)).toBe(true);
    expect((error as Error).message).toBe(
      'WRONGTYPE Operation against a key holding the wrong kind of value',
    );
  });
});
