import { describe, expect, it } from '@jest/globals';
import { RedisUnavailableError } from '../../lib';
import { lockService, until } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();

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

  it('a server that stops answering fails a call after commandTimeout, not never', async () => {
    const locks = lockService(server(), { commandTimeout: 300 });
    await (await locks.acquire('warm')).release();
    server().pause();
    try {
      const started = performance.now();
      await expect(locks.tryAcquire('hung')).rejects.toMatchObject({ code: 'LOCK_REDIS_UNAVAILABLE' });
      expect(performance.now() - started).toBeLessThan(1_000);
    } finally {
      server().resume();
    }
  });
});
