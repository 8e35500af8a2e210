import { describe, expect, it } from '@jest/globals';
import { FencedStore, LockTimeoutError, RedisUnavailableError } from '../../lib/core';
import { sleep, watchEventLoop } from '../support/event-loop';
import { listening, lockService, outcome, until } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();

/** Resolves once the queue of lock `key` holds `length` tokens (one probe connection, closed after). */
async function queueReaches(key: string, length: number): Promise<void> {
  const redis = server().client();
  try {
    await until(
      () => redis.llen(`lock:{${key}}:q`),
      (queued) => queued === length,
    );
  } finally {
    redis.disconnect();
  }
}

describe('Redis unreachable', () => {
  it('fails fast with RedisUnavailableError instead of waiting in the offline queue', async () => {
    const locks = lockService(server());
    await (await locks.acquire('up')).release();
    await server().kill();
    try {
      await until(
        async () => locks.client.status,
        (status) => status !== 'ready',
      );
      const started = performance.now();
      await expect(locks.acquire('down')).rejects.toBeInstanceOf(RedisUnavailableError);
      await expect(locks.tryAcquire('down')).rejects.toMatchObject({ code: 'LOCK_REDIS_UNAVAILABLE' });
      await expect(locks.inspect('down')).rejects.toMatchObject({ code: 'LOCK_REDIS_UNAVAILABLE' });
      expect(performance.now() - started).toBeLessThan(100);
    } finally {
      await server().restart();
    }
    await until(
      async () => locks.client.status,
      (status) => status === 'ready',
    );
    await (await locks.acquire('up-again')).release();
  });

  it('calls made while the client is still connecting are sent once it is ready, sharing one wait', async () => {
    const locks = lockService(server(), undefined, { lazyConnect: true });
    expect(locks.client.status).toBe('wait');
    const before = locks.client.listenerCount('ready');
    // A burst at start-up: far more callers than an EventEmitter's default limit of 10 listeners,
    // which would print a "possible memory leak" warning if each call listened for itself.
    const burst = Array.from({ length: 50 }, (_, i) => locks.tryAcquire(`boot-${i}`));
    expect(locks.client.listenerCount('ready') - before).toBeLessThanOrEqual(1);
    const leases = await Promise.all(burst);
    expect(leases.every((lease) => lease !== null)).toBe(true);
    await Promise.all(leases.map((lease) => lease?.release()));
    expect(locks.client.listenerCount('ready')).toBe(before);
  });

  it('a server that stops answering fails a call after commandTimeout, not never', async () => {
    const locks = lockService(server(), { commandTimeout: 300 });
    await (await locks.acquire('warm')).release();
    server().pause();
    const loop = watchEventLoop();
    try {
      const started = performance.now();
      await expect(locks.tryAcquire('hung')).rejects.toMatchObject({ code: 'LOCK_REDIS_UNAVAILABLE' });
      // commandTimeout with room for a round trip's scheduling, and however late this process's timers ran.
      expect(performance.now() - started).toBeLessThan(1_000 + loop.worst());
    } finally {
      loop.stop();
      server().resume();
    }
  });

  it('a wait that Redis never answered ends as unavailable, not as a lock somebody holds', async () => {
    const locks = lockService(server());
    await (await locks.acquire('warm')).release();
    const holder = await locks.acquire('held');
    // The contrast: a holder seen by Redis keeps the lock, so the wait ends with LockTimeoutError.
    await expect(locks.acquire('held', { waitTimeout: 200 })).rejects.toBeInstanceOf(LockTimeoutError);
    await holder.release();
    server().pause();
    const result = await outcome(locks.acquire('stalled', { waitTimeout: 300 })).finally(() =>
      server().resume(),
    );
    expect(result.error).toBeInstanceOf(RedisUnavailableError);
    expect((result.error as Error).message).toMatch(/no reply to the call within its waitTimeout of 300 ms/);
    // Its join ran once the server woke: what it took is given back, the lock is free and nobody is in line.
    await until(
      () => locks.inspect('stalled'),
      (info) => !info.held && info.queueLength === 0,
    );
    await (await locks.acquire('stalled', { waitTimeout: 1_000 })).release();
  });

  it('waiters fail at once when the application ends the client, though the wake-up connection is still up', async () => {
    const holder = await lockService(server()).acquire('ended', { ttl: 30_000 });
    const locks = lockService(server());
    const started = performance.now();
    const waiting = outcome(locks.acquire('ended', { waitTimeout: 20_000 }));
    await queueReaches('ended', 1);
    locks.client.disconnect();
    const result = await waiting;
    expect(result.error).toBeInstanceOf(RedisUnavailableError);
    expect((result.error as Error).message).toMatch(/connection to Redis ended/);
    expect(performance.now() - started).toBeLessThan(5_000);
    // Later calls fail fast too, and the lock goes on working for everyone else.
    await expect(locks.tryAcquire('ended')).rejects.toMatchObject({ code: 'LOCK_REDIS_UNAVAILABLE' });
    await holder.release();
    const other = lockService(server());
    await (await other.acquire('ended', { waitTimeout: 5_000 })).release();
  });

  it('a token the ended service left queued is skipped at once, not granted for a claim window', async () => {
    // Its cancel could not be sent, so the token stays queued; with the service's subscription closed
    // too, Redis sees nobody listening for it and passes the lock straight on.
    const claimWindow = 2_000;
    const holder = await lockService(server(), { claimWindow }).acquire('left', { ttl: 30_000 });
    const locks = lockService(server(), { claimWindow });
    const waiting = outcome(locks.acquire('left', { waitTimeout: 20_000 }));
    await queueReaches('left', 1);
    // Listening (its early join's mark gone): a service that ends before then leaves the mark behind, and
    // Redis keeps its tokens' places for the mark's life (docs/protocol.md, "The first wait").
    await listening(server(), locks);
    locks.client.disconnect();
    expect((await waiting).error).toBeInstanceOf(RedisUnavailableError);
    await until(
      () => server().client().pubsub('CHANNELS', 'lock:wake:*'),
      (channels) => (channels as string[]).length === 0,
    );
    const other = lockService(server(), { claimWindow });
    const next = other.acquire('left', { waitTimeout: 10_000 });
    await queueReaches('left', 2);
    const released = performance.now();
    await holder.release();
    const lease = await next;
    expect(performance.now() - released).toBeLessThan(claimWindow / 4);
    await lease.release();
  });

  it('a client the application connects again after ending it waits in line as before', async () => {
    const locks = lockService(server());
    const holder = await lockService(server()).acquire('again', { ttl: 30_000 });
    const first = outcome(locks.acquire('again', { waitTimeout: 20_000 }));
    await queueReaches('again', 1);
    const line = () => server().client().lrange('lock:{again}:q', 0, -1);
    const [abandoned] = await line();
    locks.client.disconnect();
    expect((await first).error).toBeInstanceOf(RedisUnavailableError);
    await locks.client.connect();
    const second = locks.acquire('again', { waitTimeout: 20_000 });
    // The new call is in line. The abandoned token is taken back once the client is connected again
    // (its cancel may run before or after the new join): the new one is granted by a push either way.
    await until(line, (tokens) => tokens.some((token) => token !== abandoned));
    await holder.release();
    const lease = await second;
    expect(lease.signal.aborted).toBe(false);
    await lease.release();
  });

  // One timer serves every call in flight: a later call must still get its full timeout.
  const timeout = 400;

  /** Sends calls to a frozen server, the later ones once the first is well under way. */
  /** How long each of three calls took to fail, and the worst event-loop delay meanwhile (ms). */
  async function failuresOnAFrozenServer(
    call: (key: string) => Promise<unknown>,
  ): Promise<{ waits: number[]; late: number }> {
    server().pause();
    const loop = watchEventLoop();
    try {
      const failedAfter = async (key: string): Promise<number> => {
        const started = performance.now();
        const result = await outcome(call(key));
        expect(result.error).toMatchObject({ code: 'LOCK_REDIS_UNAVAILABLE' });
        expect((result.error as Error).message).toMatch(`no reply within ${timeout} ms`);
        return performance.now() - started;
      };
      const first = failedAfter('hung-1');
      // The later calls start once the first is well under way (a timer, not a measurement).
      await sleep(timeout / 2);
      const waits = await Promise.all([first, failedAfter('hung-2'), failedAfter('hung-3')]);
      return { waits, late: loop.worst() };
    } finally {
      loop.stop();
      server().resume();
    }
  }

  it('calls in flight to a frozen server each fail after their own commandTimeout, never before', async () => {
    const locks = lockService(server(), { commandTimeout: timeout });
    await (await locks.acquire('warm')).release();
    const { waits, late } = await failuresOnAFrozenServer((key) => locks.tryAcquire(key));
    for (const waited of waits) {
      expect(waited).toBeGreaterThanOrEqual(timeout - 1);
      // A round trip's scheduling, and however late this process's timers ran (a busy machine).
      expect(waited).toBeLessThan(timeout + 1_000 + late);
    }
  });

  it('FencedStore calls in flight to a frozen server each fail after their own commandTimeout too', async () => {
    const store = new FencedStore(server().client(), { commandTimeout: timeout });
    await store.set('warm', 1, 'v');
    const { waits, late } = await failuresOnAFrozenServer((key) => store.set(key, 1, 'v'));
    for (const waited of waits) {
      expect(waited).toBeGreaterThanOrEqual(timeout - 1);
      expect(waited).toBeLessThan(timeout + 1_000 + late);
    }
  });
});
