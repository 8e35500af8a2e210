/**
 * RedisLockModule's definition, built with ConfigurableModuleBuilder: `forRoot(options)` and
 * `forRootAsync({ imports, inject, useFactory | useClass | useExisting })`, plus the extras `isGlobal`
 * (default true), `name` and `httpErrors`. Each configuration gets its own providers; a named one
 * exports them under named tokens so several can coexist in one application.
 */
import { ConfigurableModuleBuilder, type DynamicModule, type Provider } from '@nestjs/common';
import {
  APP_FILTER,
  APP_INTERCEPTOR,
  DiscoveryModule,
  DiscoveryService,
  HttpAdapterHost,
} from '@nestjs/core';
import { LockOptionsError } from '../errors/lock-options.error';
import type { LockService } from '../lock.service';
import { describeValue } from '../lock-options';
import { LockInterceptor } from './lock.interceptor';
import { LockHttpErrorsInterceptor } from './lock-http.errors';
import { LockHttpExceptionFilter } from './lock-http.filter';
import { LockedMethodsChecker } from './locked-methods.checker';
import { RedisLockContext } from './redis-lock.context';
import { RedisLockHealthIndicator } from './redis-lock.health';
import { getLockInterceptorToken, getLockServiceToken, getRedisLockHealthToken } from './redis-lock.tokens';
import type { RedisLockModuleExtras, RedisLockModuleOptions } from './redis-lock-options.interface';

const built = new ConfigurableModuleBuilder<RedisLockModuleOptions>({ moduleName: 'RedisLock' })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createRedisLockOptions')
  // `name` is listed (undefined by default) so that forRoot() keeps it out of the lock options too.
  .setExtras<RedisLockModuleExtras>({ isGlobal: true, httpErrors: true, name: undefined }, addProviders)
  .build();

export const { MODULE_OPTIONS_TOKEN: REDIS_LOCK_MODULE_OPTIONS, OPTIONS_TYPE, ASYNC_OPTIONS_TYPE } = built;

/**
 * The generated class, with its arguments checked first: Nest's own methods would fail on `null` with
 * a bare TypeError, or on forRootAsync({}) with a DI error that does not say what was missing.
 */
export class ConfigurableModuleClass extends built.ConfigurableModuleClass {
  static override forRoot(options: typeof OPTIONS_TYPE): DynamicModule {
    if (options === null || typeof options !== 'object' || Array.isArray(options)) {
      throw new LockOptionsError(
        `RedisLockModule.forRoot() needs an options object such as { url: 'redis://host:6379' }, got ` +
          `${describeValue(options)}.`,
      );
    }
    // biome-ignore lint/complexity/noThisInStatic: super keeps `this` (the subclass), which Nest uses as the module.
    return super.forRoot(options);
  }

  static override forRootAsync(options: typeof ASYNC_OPTIONS_TYPE): DynamicModule {
    if (options === null || typeof options !== 'object' || Array.isArray(options)) {
      throw new LockOptionsError(
        'RedisLockModule.forRootAsync() needs an object with useFactory, useClass or useExisting, got ' +
          `${describeValue(options)}.`,
      );
    }
    const how = (['useFactory', 'useClass', 'useExisting'] as const).filter((k) => options[k] !== undefined);
    if (how.length !== 1) {
      throw new LockOptionsError(
        'RedisLockModule.forRootAsync() needs exactly one of useFactory, useClass or useExisting, got ' +
          `${how.length ? how.join(' and ') : 'none'}.`,
      );
    }
    if (options.useFactory !== undefined && typeof options.useFactory !== 'function') {
      throw new LockOptionsError(
        `RedisLockModule.forRootAsync(): useFactory must be a function returning the options, got ` +
          `${describeValue(options.useFactory)}.`,
      );
    }
    if (options.useClass !== undefined && typeof options.useClass !== 'function') {
      throw new LockOptionsError(
        `RedisLockModule.forRootAsync(): useClass must be a class with createRedisLockOptions(), got ` +
          `${describeValue(options.useClass)}.`,
      );
    }
    // biome-ignore lint/complexity/noThisInStatic: super keeps `this` (the subclass), which Nest uses as the module.
    return super.forRootAsync(options);
  }
}

function addProviders(definition: DynamicModule, extras: RedisLockModuleExtras): DynamicModule {
  const { name } = extras;
  if (name !== undefined && (typeof name !== 'string' || name === '')) {
    throw new LockOptionsError(
      `RedisLockModule: name must be a non-empty string (the configuration's name), got ${describeValue(name)}.`,
    );
  }
  for (const flag of ['isGlobal', 'httpErrors'] as const) {
    if (extras[flag] !== undefined && typeof extras[flag] !== 'boolean') {
      throw new LockOptionsError(
        `RedisLockModule: ${flag} must be true or false, got ${describeValue(extras[flag])}.`,
      );
    }
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
      // Through the service's own token, so that Test.createTestingModule(...).overrideProvider(
      // LockService) (or a named configuration's token) is what @Locked methods use too.
      provide: interceptorToken,
      inject: [serviceToken],
      useFactory: (service: LockService) => new LockInterceptor(service),
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
    // The interceptor converts lock errors to HttpExceptions before any filter (the app's own
    // catch-all included) sees them; the filter covers errors thrown where no interceptor runs.
    providers.push(
      {
        provide: APP_INTERCEPTOR,
        inject: [HttpAdapterHost, RedisLockContext],
        useFactory: (host: HttpAdapterHost, c: RedisLockContext) =>
          new LockHttpErrorsInterceptor(host, c.retryAfterSeconds),
      },
      {
        provide: APP_FILTER,
        inject: [HttpAdapterHost, RedisLockContext],
        useFactory: (host: HttpAdapterHost, c: RedisLockContext) =>
          new LockHttpExceptionFilter(host, c.retryAfterSeconds),
      },
    );
  }
  return {
    ...definition,
    global: extras.isGlobal !== false,
    imports: [...(definition.imports ?? []), DiscoveryModule],
    providers: [...(definition.providers ?? []), ...providers],
    exports: [...(definition.exports ?? []), serviceToken, interceptorToken, healthToken],
  };
}
