/**
 * RedisLockModule's definition, built with ConfigurableModuleBuilder: `forRoot(options)` and
 * `forRootAsync({ imports, inject, useFactory | useClass | useExisting })`, plus the extras `isGlobal`
 * (default true), `name` and `httpErrors`. Each configuration gets its own providers; a named one
 * exports them under named tokens so several can coexist in one application.
 */
import { ConfigurableModuleBuilder, type DynamicModule, type Provider } from '@nestjs/common';
import { APP_FILTER, DiscoveryModule, DiscoveryService, HttpAdapterHost } from '@nestjs/core';
import { LockInterceptor } from './lock.interceptor';
import { LockHttpExceptionFilter } from './lock-http.filter';
import { LockedMethodsChecker } from './locked-methods.checker';
import { RedisLockContext } from './redis-lock.context';
import { RedisLockHealthIndicator } from './redis-lock.health';
import { getLockInterceptorToken, getLockServiceToken, getRedisLockHealthToken } from './redis-lock.tokens';
import type { RedisLockModuleExtras, RedisLockModuleOptions } from './redis-lock-options.interface';

export const {
  ConfigurableModuleClass,
  MODULE_OPTIONS_TOKEN: REDIS_LOCK_MODULE_OPTIONS,
  OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<RedisLockModuleOptions>({ moduleName: 'RedisLock' })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createRedisLockOptions')
  .setExtras<RedisLockModuleExtras>({ isGlobal: true, httpErrors: true }, addProviders)
  .build();

function addProviders(definition: DynamicModule, extras: RedisLockModuleExtras): DynamicModule {
  const { name } = extras;
  if (name !== undefined && (typeof name !== 'string' || name === '')) {
    throw new TypeError('RedisLockModule: name must be a non-empty string.');
  }
  const serviceToken = getLockServiceToken(name);
  const interceptorToken = getLockInterceptorToken(name);
  const healthToken = getRedisLockHealthToken(name);
  const providers: Provider[] = [
    {
      // Local to this module (not exported), so each configuration has its own.
      provide: RedisLockContext,
      inject: [REDIS_LOCK_MODULE_OPTIONS],
      useFactory: (options: RedisLockModuleOptions) => RedisLockContext.create(options, name),
    },
    { provide: serviceToken, inject: [RedisLockContext], useFactory: (c: RedisLockContext) => c.service },
    {
      provide: interceptorToken,
      inject: [RedisLockContext],
      useFactory: (c: RedisLockContext) => new LockInterceptor(c.service),
    },
    {
      provide: healthToken,
      inject: [RedisLockContext],
      useFactory: (c: RedisLockContext) => new RedisLockHealthIndicator(c.service),
    },
    {
      provide: LockedMethodsChecker,
      inject: [DiscoveryService, RedisLockContext],
      useFactory: (discovery: DiscoveryService, c: RedisLockContext) =>
        new LockedMethodsChecker(discovery, c.service, name),
    },
  ];
  if (extras.httpErrors !== false) {
    providers.push({
      provide: APP_FILTER,
      inject: [HttpAdapterHost, RedisLockContext],
      useFactory: (host: HttpAdapterHost, c: RedisLockContext) =>
        new LockHttpExceptionFilter(host, c.retryAfterSeconds),
    });
  }
  return {
    ...definition,
    global: extras.isGlobal !== false,
    imports: [...(definition.imports ?? []), DiscoveryModule],
    providers: [...(definition.providers ?? []), ...providers],
    exports: [...(definition.exports ?? []), serviceToken, interceptorToken, healthToken],
  };
}
