import { describe, expect, it } from '@jest/globals';
import { LockService, LockUsageError } from '../../lib/core';
import { MAX_KEY_LENGTH } from '../../lib/options/lock-keys';
import { commandsIn, lockService } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();

describe('bad input gets a typed error before anything is sent to Redis', () => {
  const badKeys: Array<[string, unknown]> = [
    ['empty', ''],
    ['a number', 42],
    ['undefined', undefined],
    ['null', null],
    ['an object', { id: 1 }],
    ['too long', 'k'.repeat(MAX_KEY_LENGTH + 1)],
    ['an opening brace', 'order{1'],
    ['a closing brace', 'order}1'],
    ['a lone surrogate', 'order:\uD800'],
  ];
  const badOptions: Array<[string, Record<string, unknown>]> = [
    ['ttl 0', { ttl: 0 }],
    ['ttl negative', { ttl: -5 }],
    ['ttl NaN', { ttl: Number.NaN }],
    ['ttl Infinity', { ttl: Number.POSITIVE_INFINITY }],
    ['ttl fractional', { ttl: 1.5 }],
    ['ttl string', { ttl: '100' }],
    ['ttl below 10 ms', { ttl: 9 }],
    ['waitTimeout negative', { waitTimeout: -1 }],
    ['waitTimeout NaN', { waitTimeout: Number.NaN }],
    ['waitTimeout huge', { waitTimeout: 2 ** 40 }],
    ['renew not boolean', { renew: 'yes' }],
    ['signal not a signal', { signal: {} }],
    ['an unknown option (timeout for waitTimeout)', { timeout: 5_000 }],
    ['a misspelt option', { waittimeout: 5_000 }],
  ];

  it.each(badKeys)('key: %s', async (_, key) => {
    const locks = lockService(server());
    await server().resetStats();
    for (const call of [
      () => locks.acquire(key as string),
      () => locks.tryAcquire(key as string),
      () => locks.using(key as string, () => 1),
      () => locks.inspect(key as string),
    ]) {
      await expect(call()).rejects.toMatchObject({ code: 'LOCK_INVALID_KEY' });
    }
    expect(commandsIn(await server().commandStats())).toBe(0);
    expect(await server().keys('*')).toEqual([]);
  });

  it.each(badOptions)('call option: %s', async (_, options) => {
    const locks = lockService(server());
    await server().resetStats();
    await expect(locks.acquire('k', options)).rejects.toBeInstanceOf(LockUsageError);
    await expect(locks.using('k', () => 1, options)).rejects.toBeInstanceOf(LockUsageError);
    expect(commandsIn(await server().commandStats())).toBe(0);
    expect(await server().keys('*')).toEqual([]);
  });

  it('service options are checked when the service is created', () => {
    const client = server().client();
    const cases: unknown[] = [
      { claimWindow: 0 },
      { claimWindow: 5 },
      { claimWindow: 2.5 },
      { defaults: { ttl: 9 } },
      { defaults: { waitTimeout: -1 } },
      { defaults: 'fast' },
      { prefix: 'has{brace}' },
      { prefix: 42 },
      { commandTimeout: Number.NaN },
      'not an object',
    ];
    for (const options of cases) {
      expect(() => new LockService(client, options as never)).toThrow(LockUsageError);
    }
  });

  it('an unknown call option is named, with the option it was probably meant to be', async () => {
    const locks = lockService(server());
    await expect(locks.acquire('k', { waittimeout: 5_000 } as never)).rejects.toThrow(
      'Unknown option "waittimeout" in lock options: did you mean "waitTimeout"?',
    );
    await expect(locks.tryAcquire('k', { timeout: 5_000 } as never)).rejects.toThrow(
      'Unknown option "timeout" in lock options (known: ttl, waitTimeout, renew, minHold, maxHold, permits, mode, signal, deadline, label).',
    );
  });

  it('a client that is not a Redis client is refused with a message saying what to pass', () => {
    for (const client of [undefined, null, {}, { get() {} }, 'redis://localhost']) {
      expect(() => new LockService(client as never)).toThrow(/needs a Redis client.*ioredis.*node-redis/);
    }
  });

  it('messages say what was wrong and what to do', async () => {
    const locks = lockService(server());
    await expect(locks.acquire('a{b}')).rejects.toThrow(/brace.*hash tag/);
    await expect(locks.acquire('k', { ttl: 9 })).rejects.toThrow(
      'ttl must be an integer number of milliseconds between 10 and 2147483647, got 9.',
    );
    await expect(locks.acquire('k', { waitTimeout: -1 })).rejects.toThrow(/waitTimeout must be an integer/);
  });
});
