// While a grant pushed to a waiter of another service is pending (its start window not over), the waiter
// who takes over if it runs out is the first waiter of another service, not the first in line (the
// grant's own service is passed over then). That waiter is told when the window ends (an `h` note), and a
// re-check or join reply that reaches Redis before then must call it first too: told "not first", it
// would wait a claim window instead of a start window. The scripts are driven one call at a time, with
// start windows long enough that every call lands inside them, and the notes read from the wake channels.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type Redis from 'ioredis';
import { connectionOf } from '../../lib/clients';
import { redisKeys } from '../../lib/protocol/keys';
import { type AcquireReply, LockScripts, type ScriptContext } from '../../lib/protocol/lock-scripts';
import { useRedis } from '../support/redis-server';

const server = useRedis();
const CHANNELS = 'lock:wake:';

let redis: Redis;
let listener: Redis;
let scripts: LockScripts;
/** The `h` notes published, in order: the token told. */
let told: string[];

beforeEach(async () => {
  redis = server().client();
  listener = server().client();
  scripts = new LockScripts(connectionOf(redis), 5_000);
  told = [];
  listener.on('pmessage', (_pattern, _channel, message: string) => {
    const [type, waiter] = message.split(' ');
    if (type === 'h' && waiter) told.push(waiter);
  });
  await listener.psubscribe(`${CHANNELS}*`);
});

afterEach(async () => {
  scripts.close();
  await listener.punsubscribe();
  listener.disconnect();
});

/** A call of `waiter` ("<instance>:<n>") on `key`: start window 5 s, claim window 10 s. */
function ctx(key: string, waiter: string, kind?: string): ScriptContext {
  return {
    keys: redisKeys('lock:', key),
    token: `${waiter}+5000~10000`,
    ttl: 30_000,
    claimWindow: 10_000,
    channelPrefix: CHANNELS,
    // Every push counts as heard: the grants are kept though nobody confirms them.
    trustReceivers: false,
    fenceRetention: 60_000,
    kind,
  };
}

const full = (waiter: string) => `${waiter}+5000~10000`;

function isHead(reply: AcquireReply): boolean {
  if (reply.granted) throw new Error('expected to wait, was granted');
  return reply.isHead;
}

/** The notes published so far, once all have arrived: a message published after them comes after them. */
async function notes(): Promise<string[]> {
  const synced = new Promise<void>((resolve) => {
    const seen = (_p: string, channel: string) => {
      if (channel !== `${CHANNELS}sync`) return;
      listener.off('pmessage', seen);
      resolve();
    };
    listener.on('pmessage', seen);
  });
  await redis.publish(`${CHANNELS}sync`, 'sync');
  await synced;
  return told;
}

describe.each([
  ['a mutex', undefined],
  ['a semaphore of 1', '1'],
  ['a read-write lock (writers)', 'rw'],
])('%s: a grant pushed to B:1 is pending, B:2 is first in line, then C:1 and D:1', (_name, kind) => {
  // A key of its own per test: what one test leaves in line is not another's.
  let key = '';
  let tests = 0;
  const call = (waiter: string) => ctx(key, waiter, kind);

  beforeEach(async () => {
    tests += 1;
    key = `pending-head-${kind ?? 'mutex'}-${tests}`;
    expect((await scripts.acquire(call('A:1'), 'try', 60_000)).granted).toBe(true);
    for (const waiter of ['B:1', 'B:2', 'C:1', 'D:1']) {
      expect((await scripts.acquire(call(waiter), 'join', 60_000)).granted).toBe(false);
    }
    told.length = 0;
    // A:1 releases: the lock is pushed to B:1 (a mutex names B:2 its follower), pending until confirmed.
    expect(await scripts.release(call('A:1'))).toBe(true);
    expect(await notes()).toEqual([full('C:1')]);
  });

  it("C:1's re-check before the window ends is told it is first, as the note said; B:2's and D:1's are not", async () => {
    expect(isHead(await scripts.acquire(call('C:1'), 'wait', 60_000))).toBe(true);
    expect(isHead(await scripts.acquire(call('D:1'), 'wait', 60_000))).toBe(false);
    // B:2 is first in line: if B:1 confirms, it is next.
    expect(isHead(await scripts.acquire(call('B:2'), 'wait', 60_000))).toBe(true);
  });

  it('once B:1 confirms, nothing is pending: C:1 is no longer first', async () => {
    if (kind) {
      expect(await scripts.extend(call('B:1'), 30_000, true)).toBe('extended');
    } else {
      expect((await scripts.acquire(call('B:1'), 'wait', 60_000)).granted).toBe(true);
    }
    expect(isHead(await scripts.acquire(call('C:1'), 'wait', 60_000))).toBe(false);
  });

  it('C:1 cancels before the window ends: D:1, next of another service, is told instead', async () => {
    told.length = 0;
    expect(await scripts.cancel(call('C:1'))).toBe(false);
    expect(await notes()).toEqual([full('D:1')]);
    expect(isHead(await scripts.acquire(call('D:1'), 'wait', 60_000))).toBe(true);
  });
});
