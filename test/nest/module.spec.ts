// RedisLockModule's configuration surface: forRoot with each kind of connection, forRootAsync with
// useFactory / useClass / useExisting, global registration, who closes which connection, and bad
// options failing at start-up with a typed error.
import { describe, expect, it } from '@jest/globals';
import { Inject, Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockService, LockUsageError, RedisLockModule, type RedisLockModuleOptions } from '../../lib';
import { REDIS_LOCK_MODULE_OPTIONS } from '../../lib/nest/redis-lock.module-definition';
import { bootApp } from '../support/nest-apps';
import { useRedis } from '../support/redis-server';

const server = useRedis();

/** Takes and releases a lock through the injected service: proof that it reaches the test's Redis. */
async function roundTrip(locks: LockService, key: string): Promise<void> {
  const lease = await locks.acquire(key);
  expect((await server().client().get(`lock:{${key}}`)) ?? '').toBe(lease.token);
  await lease.release();
}

@Injectable()
class Settings {
  constructor(readonly url: string) {}
}

@Module({
  providers: [{ provide: Settings, useFactory: () => new Settings(server().url) }],
  exports: [Settings],
})
class SettingsModule {}

describe('RedisLockModule', () => {
  it('forRoot({ url }) opens its own connection and closes it on shutdown', async () => {
    const app = await bootApp({ imports: [RedisLockModule.forRoot({ url: server().url })] });
    const locks = app.get(LockService);
    await roundTrip(locks, 'url');
    await app.close();
    expect(locks.client.status).toBe('end');
  });

  it('forRoot({ redis }) opens a connection from ioredis options', async () => {
    const port = Number(new URL(server().url).port);
    const app = await bootApp({ imports: [RedisLockModule.forRoot({ redis: { host: '127.0.0.1', port } })] });
    await roundTrip(app.get(LockService), 'options');
  });

  it('forRoot({ client }) uses the given client and never closes it', async () => {
    const client = server().client();
    const app = await bootApp({ imports: [RedisLockModule.forRoot({ client, prefix: 'mine:' })] });
    const locks = app.get(LockService);
    expect(locks.client).toBe(client);
    const lease = await locks.acquire('given');
    expect(await client.get('mine:{given}')).toBe(lease.token);
    await app.close();
    // The application is gone; the client it was given still works, and the lease was released.
    expect(client.status).toBe('ready');
    expect(await client.exists('mine:{given}')).toBe(0);
  });

  it('forRootAsync with useFactory, imports and inject', async () => {
    const app = await bootApp({
      imports: [
        RedisLockModule.forRootAsync({
          imports: [SettingsModule],
          inject: [Settings],
          useFactory: (settings: Settings): RedisLockModuleOptions => ({
            url: settings.url,
            prefix: 'async:',
          }),
        }),
      ],
    });
    const lease = await app.get(LockService).acquire('factory');
    expect(await server().client().get('async:{factory}')).toBe(lease.token);
    await lease.release();
  });

  it('forRootAsync with useClass', async () => {
    @Injectable()
    class LockConfig {
      createRedisLockOptions(): RedisLockModuleOptions {
        return { url: server().url, claimWindow: 500 };
      }
    }
    const app = await bootApp({ imports: [RedisLockModule.forRootAsync({ useClass: LockConfig })] });
    await roundTrip(app.get(LockService), 'use-class');
    expect(app.get<RedisLockModuleOptions>(REDIS_LOCK_MODULE_OPTIONS).claimWindow).toBe(500);
  });

  it('forRootAsync with useExisting', async () => {
    @Injectable()
    class SharedConfig {
      createRedisLockOptions(): RedisLockModuleOptions {
        return { url: server().url, prefix: 'existing:' };
      }
    }
    @Module({ providers: [SharedConfig], exports: [SharedConfig] })
    class ConfigModule {}
    const app = await bootApp({
      imports: [RedisLockModule.forRootAsync({ imports: [ConfigModule], useExisting: SharedConfig })],
    });
    const lease = await app.get(LockService).acquire('use-existing');
    expect(await server().client().get('existing:{use-existing}')).toBe(lease.token);
    await lease.release();
  });

  it('is global by default: a module that does not import it can inject LockService', async () => {
    @Injectable()
    class Consumer {
      constructor(@Inject(LockService) readonly locks: LockService) {}
    }
    @Module({ providers: [Consumer] })
    class Feature {}
    const app = await bootApp({ imports: [RedisLockModule.forRoot({ url: server().url }), Feature] });
    await roundTrip(app.get(Consumer).locks, 'global');
  });

  it('is always global: isGlobal is refused as an unknown option', async () => {
    await expect(
      Test.createTestingModule({
        imports: [RedisLockModule.forRoot({ url: server().url, isGlobal: false } as never)],
      }).compile(),
    ).rejects.toThrow(/^Unknown option "isGlobal" in the RedisLockModule options/);
  });

  it.each<[string, RedisLockModuleOptions]>([
    ['no connection', {}],
    ['a url that is not redis://', { url: 'http://127.0.0.1:6380' }],
    ['a ttl below 10 ms', { url: 'redis://127.0.0.1:1', defaults: { ttl: 9 } }],
    ['a claim window that is not an integer', { url: 'redis://127.0.0.1:1', claimWindow: 1.5 }],
    ['a negative grace period', { url: 'redis://127.0.0.1:1', gracePeriod: -1 }],
  ])('bad options fail at start-up with LockUsageError: %s', async (_, options) => {
    const attempt = Test.createTestingModule({ imports: [RedisLockModule.forRoot(options)] }).compile();
    await expect(attempt).rejects.toBeInstanceOf(LockUsageError);
  });

  it('refuses both a client and a url, naming both', async () => {
    const client = server().client();
    await client.ping();
    const attempt = Test.createTestingModule({
      imports: [RedisLockModule.forRoot({ client, url: server().url })],
    }).compile();
    await expect(attempt).rejects.toThrow(/needs one connection.*Got client and url\./);
    expect(client.status).toBe('ready');
  });
});
