// A semaphore whose keys vanish from Redis (DEL, as maxmemory eviction does) between a grant and its
// confirmation, renewal or release: its hash (`P{K}`, each holder's fence), its holders set (`:s`, the
// count of the permits held) or its line (`:sq`). The scripts are driven one call at a time, as the
// service would send them, with nobody subscribed (receivers not trusted): every grant is kept.
//
// The bound checked is the chaos checker's (chaos/checks/shared-holders.ts): at no moment do more than
// `permits` callers hold, where a holder is one Redis told it holds (a grant, a confirmation, a renewal).
// A DEL of the holders set erases the holds recorded in it: those holders are excused until Redis
// affirms their hold again (a confirmation or renewal that succeeds counts them once more). The first
// case replays chaos run 928540490 (chaos/results/semaphore-4-holders-seed-928540490.*).
import { describe, expect, it } from '@jest/globals';
import type Redis from 'ioredis';
import { connectionOf } from '../../lib/clients';
import { redisKeys } from '../../lib/protocol/keys';
import { LockScripts, type ScriptContext } from '../../lib/protocol/lock-scripts';
import type { AcquireMode } from '../../lib/protocol/replies';
import { useRedis } from '../support/redis-server';

const server = useRedis();

/** A semaphore of `permits` on `key`, with the callers Redis says hold it. */
class Semaphore {
  readonly keys;
  /** Told they hold, and counted. */
  readonly held = new Set<string>();
  /** Told they held, but their hold was erased with the holders set: not counted until affirmed again. */
  readonly erased = new Set<string>();
  peak = 0;
  private readonly scripts: LockScripts;

  constructor(
    private readonly redis: Redis,
    key: string,
    private readonly permits: number,
  ) {
    this.keys = redisKeys('lock:', key);
    this.scripts = new LockScripts(connectionOf(redis), 5_000);
  }

  private ctx(token: string): ScriptContext {
    return {
      keys: this.keys,
      // "<instance>:<n>~<ms>" (lib/store/token.ts): the claim window long enough that no grant lapses.
      token: `${token}:1~10000`,
      ttl: 30_000,
      claimWindow: 10_000,
      channelPrefix: 'lock:wake:',
      trustReceivers: false,
      fenceRetention: 60_000,
      kind: String(this.permits),
    };
  }

  private affirmed(token: string): void {
    this.erased.delete(token);
    this.held.add(token);
    this.peak = Math.max(this.peak, this.held.size);
  }

  private gone(token: string): void {
    this.held.delete(token);
    this.erased.delete(token);
  }

  /** semaphore-acquire.lua in `mode`; the fence when granted. */
  async acquire(token: string, mode: AcquireMode): Promise<number | undefined> {
    const reply = await this.scripts.acquire(this.ctx(token), mode, 60_000);
    if (!reply.granted) return undefined;
    this.affirmed(token);
    return reply.fence;
  }

  /** semaphore-extend.lua: a renewal, or a pushed grant's confirmation. */
  async extend(token: string): Promise<boolean> {
    const extended = (await this.scripts.extend(this.ctx(token), 30_000)) === 'extended';
    if (extended) this.affirmed(token);
    else this.gone(token);
    return extended;
  }

  async release(token: string): Promise<boolean> {
    this.gone(token);
    return this.scripts.release(this.ctx(token));
  }

  /** Whether Redis granted `token` a permit (pushed to it, not confirmed yet): it is in the set. */
  async granted(token: string): Promise<boolean> {
    return (await this.redis.zscore(this.keys.holders, `${token}:1~10000`)) !== null;
  }

  /** ms until the hash of fences expires: -1 for none (a key that would outlive every holder). */
  async hashTtl(): Promise<number> {
    return this.redis.pttl(this.keys.owner);
  }

  /** The eviction of one of the semaphore's keys. */
  async evict(part: 'hash' | 'holders' | 'line'): Promise<void> {
    const key = { hash: this.keys.owner, holders: this.keys.holders, line: this.keys.semaphoreQueue }[part];
    expect(await this.redis.del(key)).toBe(1);
    if (part !== 'holders') return;
    for (const token of this.held) this.erased.add(token);
    this.held.clear();
  }

  close(): void {
    this.scripts.close();
  }
}

async function withSemaphore(
  key: string,
  permits: number,
  work: (sem: Semaphore) => Promise<void>,
): Promise<void> {
  const sem = new Semaphore(server().client(), key, permits);
  try {
    await work(sem);
    expect(sem.peak).toBeLessThanOrEqual(permits);
  } finally {
    sem.close();
  }
}

describe('a semaphore whose keys are evicted between a grant and its confirmation, renewal or release', () => {
  it('holders set evicted after a grant, before its confirmation (chaos seed 928540490): at most 3 holders', () =>
    withSemaphore('sem-evict-holders', 3, async (sem) => {
      // 1.9455.s1.155, 0.9449.s1.169 and 0.9449.s2.165 hold; 1.9455.s0.158 waits.
      for (const t of ['s1.155', 's1.169', 's2.165']) expect(await sem.acquire(t, 'try')).toBeDefined();
      expect(await sem.acquire('s0.158', 'join')).toBeUndefined();
      // s2.165 releases (ok): its permit is granted to s0.158, pushed (server t ≈ 5902545.0).
      expect(await sem.release('s2.165')).toBe(true);
      expect(await sem.granted('s0.158')).toBe(true);
      // The holders set is evicted (notice 5902544.2-5902545.7): s1.155 and s1.169 are no longer counted
      // (both their releases later find nothing: LOCK_NOT_HELD), nor is s0.158's unconfirmed grant.
      await sem.evict('holders');
      expect([...sem.erased].sort()).toEqual(['s1.155', 's1.169']);
      // s0.158 learnt of its grant too late to start on it and asks Redis (`late`), which answers from
      // the hash. A confirmation must agree with the set that counts the holders: either it is not
      // granted, or it is granted and counted (its renewal then succeeds).
      const confirmed = (await sem.acquire('s0.158', 'late')) !== undefined;
      // 0.9449.s2.172 takes a permit and releases it; 0.9449.s0.174, 1.9455.s2.144, 0.9449.s1.176 follow.
      expect(await sem.acquire('s2.172', 'try')).toBeDefined();
      expect(await sem.release('s2.172')).toBe(true);
      for (const t of ['s0.174', 's2.144', 's1.176']) await sem.acquire(t, 'try');
      expect([...sem.held].sort()).toHaveLength(3);
      if (confirmed) expect(await sem.extend('s0.158')).toBe(true);
      // The erased holders learn it at their next renewal.
      expect(await sem.extend('s1.169')).toBe(false);
    }));

  it('holders set evicted before a first call sent again (its reply lost): at most 2 holders', () =>
    withSemaphore('sem-evict-resent', 2, async (sem) => {
      expect(await sem.acquire('a', 'try')).toBeDefined();
      await sem.evict('holders');
      // The same `try` sent again after a reconnect: its token is still in the hash.
      const again = (await sem.acquire('a', 'try')) !== undefined;
      for (const t of ['b', 'c']) await sem.acquire(t, 'try');
      expect([...sem.held].sort()).toHaveLength(2);
      if (again) expect(await sem.extend('a')).toBe(true);
    }));

  it('hash evicted after a grant, before its confirmation (wait or extend): at most 2 holders', () =>
    withSemaphore('sem-evict-hash', 2, async (sem) => {
      for (const t of ['a', 'b']) expect(await sem.acquire(t, 'try')).toBeDefined();
      expect(await sem.acquire('w', 'join')).toBeUndefined();
      expect(await sem.acquire('v', 'join')).toBeUndefined();
      expect(await sem.release('a')).toBe(true);
      expect(await sem.granted('w')).toBe(true);
      await sem.evict('hash');
      // Its confirmation by a re-check finds no fence in the hash: it is not granted again while b and
      // its own unconfirmed grant take both permits; by extend it is confirmed from the set.
      expect(await sem.acquire('w', 'wait')).toBeUndefined();
      expect(await sem.extend('w')).toBe(true);
      expect(await sem.acquire('n', 'try')).toBeUndefined();
      expect(await sem.acquire('v', 'wait')).toBeUndefined();
      // b renews and releases: its permit goes to the first in line, and nobody else gets in.
      expect(await sem.extend('b')).toBe(true);
      expect(await sem.release('b')).toBe(true);
      expect(await sem.acquire('n', 'try')).toBeUndefined();
      expect(sem.held.size).toBeLessThanOrEqual(2);
    }));

  it('hash evicted while two hold and one waits: renewals, releases and the next grant keep to 2', () =>
    withSemaphore('sem-evict-hash-release', 2, async (sem) => {
      for (const t of ['a', 'b']) expect(await sem.acquire(t, 'try')).toBeDefined();
      expect(await sem.acquire('w', 'join')).toBeUndefined();
      await sem.evict('hash');
      expect(await sem.extend('a')).toBe(true);
      expect(await sem.release('a')).toBe(true);
      expect(await sem.granted('w')).toBe(true);
      // The grant wrote the hash again: it expires with the last hold, as it did before (b's, 30 s).
      expect(await sem.hashTtl()).toBeGreaterThan(25_000);
      expect(await sem.acquire('w', 'wait')).toBeDefined();
      expect(await sem.acquire('n', 'try')).toBeUndefined();
      expect(await sem.extend('b')).toBe(true);
      expect(sem.held.size).toBe(2);
    }));

  it('line evicted after a grant, before its confirmation: at most 2 holders, the lost waiter rejoins', () =>
    withSemaphore('sem-evict-line', 2, async (sem) => {
      for (const t of ['a', 'b']) expect(await sem.acquire(t, 'try')).toBeDefined();
      expect(await sem.acquire('w', 'join')).toBeUndefined();
      expect(await sem.acquire('v', 'join')).toBeUndefined();
      expect(await sem.release('a')).toBe(true);
      await sem.evict('line');
      expect(await sem.acquire('w', 'wait')).toBeDefined();
      // v's place went with the line: its re-check joins again, behind nobody, but both permits are held.
      expect(await sem.acquire('v', 'wait')).toBeUndefined();
      expect(await sem.acquire('n', 'try')).toBeUndefined();
      expect(await sem.release('b')).toBe(true);
      expect(await sem.granted('v')).toBe(true);
      expect(await sem.extend('v')).toBe(true);
      expect(sem.held.size).toBe(2);
    }));

  it('holders set evicted between a grant and its renewal or release: both say the hold is gone', () =>
    withSemaphore('sem-evict-renewal', 2, async (sem) => {
      for (const t of ['a', 'b']) expect(await sem.acquire(t, 'try')).toBeDefined();
      await sem.evict('holders');
      expect(await sem.extend('a')).toBe(false);
      expect(await sem.release('b')).toBe(false);
      for (const t of ['c', 'd', 'e']) await sem.acquire(t, 'try');
      expect(sem.held.size).toBe(2);
    }));
});
