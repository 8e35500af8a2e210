/**
 * RedisLockTestingModule: RedisLockModule's providers and tokens on a MemoryLockBackend, for tests with
 * no Redis. It opens no connection and starts no timer of its own; leases and waiters end with the app.
 */
import { type DynamicModule, Module } from '@nestjs/common';
import { defineLockModule } from '../nest/redis-lock.module-definition';
import type { RedisLockModuleExtras, RedisLockModuleOptions } from '../nest/redis-lock-options.interface';

/**
 * RedisLockModule's options, with no connection needed. `url`, `redis` and a Redis `client` are accepted
 * and ignored, so the application's own options object can be passed as is; `client: backend` shares one
 * MemoryLockBackend between several configurations or applications (each gets a new one otherwise).
 */
export type RedisLockTestingOptions = RedisLockModuleOptions;

const testing = defineLockModule<RedisLockTestingOptions>({
  label: 'RedisLockTestingModule',
  memory: true,
  optionsToken: 'REDIS_LOCK_TESTING_MODULE_OPTIONS',
});

/** The options token of RedisLockTestingModule (what forRoot / the options factory gave). */
export const REDIS_LOCK_TESTING_MODULE_OPTIONS = testing.MODULE_OPTIONS_TOKEN;

/**
 * A drop-in for RedisLockModule in `Test.createTestingModule({ imports: [RedisLockTestingModule.forRoot()] })`:
 * the same tokens (LockService, LockInterceptor behind @Locked, RedisLockHealthIndicator, named
 * configurations through `name`), the same validation and typed errors, locks kept in this process.
 */
@Module({})
export class RedisLockTestingModule extends testing.ConfigurableModuleClass {
  static override forRoot(
    options: RedisLockTestingOptions & Partial<RedisLockModuleExtras> = {},
  ): DynamicModule {
    // biome-ignore lint/complexity/noThisInStatic: super keeps `this` (the subclass), which Nest uses as the module.
    return super.forRoot(options);
  }
}
