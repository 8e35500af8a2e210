/**
 * The module definitions, built with ConfigurableModuleBuilder: `forRoot(options)` and
 * `forRootAsync({ imports, inject, useFactory | useClass | useExisting })`, plus the extras `name` and
 * `httpErrors`. Each configuration gets its own providers, global (a lock is the whole application's
 * concern); a named one exports them under named tokens so several can coexist in one application.
 */
import { ConfigurableModuleBuilder, type DynamicModule, type Provider } from '@nestjs/common';
import {
  APP_FILTER,
  APP_GUARD,
  APP_INTERCEPTOR,
  DiscoveryModule,
  DiscoveryService,
  HttpAdapterHost,
} from '@nestjs/core';
import { LockUsageError } from '../errors/lock-usage.error';
import type { LockService } from '../lock.service';
import { describeValue } from '../options/describe-value';
import { checkKnownKeys } from '../options/option-checks';
import { LockInterceptor } from './lock.interceptor';
import { canConvertWithoutInterceptor, LockHttpErrorsHook } from './lock-http.conversion';
import { LockHttpErrorsInterceptor } from './lock-http.errors';
import { LockHttpExceptionFilter } from './lock-http.filter';
import { LockedMethodsChecker } from './locked-methods.checker';
import { EXTRAS, snapshotRootOptions } from './module-options';
import { type ContextKind, RedisLockContext } from './redis-lock.context';
import { RedisLockHealthIndicator } from './redis-lock.health';
import {
  CONFIGURED_BACKEND,
  getLockBackendToken,
  getLockInterceptorToken,
  getLockServiceToken,
  getRedisLockHealthToken,
} from './redis-lock.tokens';
import type { RedisLockModuleExtras, RedisLockModuleOptions } from './redis-lock-options.interface';
import { RequestArrivals } from './request-deadline';
import { RequestGuard } from './request-scope';

/** What forRootAsync takes: Nest's own keys, and the extras. */
const ASYNC_KEYS = [
  'imports',
  'inject',
  'useFactory',
  'useClass',
  'useExisting',
  'provideInjectionTokensFrom',
  ...EXTRAS,
];

/** Which module a definition is for: names its messages, picks the store, owns an options token. */
interface ModuleKind extends ContextKind {
  readonly optionsToken: string;
}

/**
 * RedisLockModule's and RedisLockTestingModule's definitions: one ConfigurableModuleBuilder each (so each
 * has its own options token), the same providers and tokens, the same validation of what they are given.
 */
export function defineLockModule<O extends object>(kind: ModuleKind) {
  const built = new ConfigurableModuleBuilder<O>({
    moduleName: kind.label,
    optionsInjectionToken: kind.optionsToken,
  })
    .setClassMethodName('forRoot')
    .setFactoryMethodName('createRedisLockOptions')
    // `name` is listed (undefined by default) so that forRoot() keeps it out of the lock options too.
    .setExtras<RedisLockModuleExtras>({ httpErrors: true, name: undefined }, (definition, extras) =>
      addProviders(definition, extras, kind),
    )
    .build();
  type Options = typeof built.OPTIONS_TYPE;
  type AsyncOptions = typeof built.ASYNC_OPTIONS_TYPE;
  const { label } = kind;

  /**
   * The generated class, with its arguments checked first: Nest's own methods would fail on `null` with
   * a bare TypeError, or on forRootAsync({}) with a DI error that does not say what was missing.
   */
  class CheckedModuleClass extends built.ConfigurableModuleClass {
    static override forRoot(options: Options): DynamicModule {
      if (options === null || typeof options !== 'object' || Array.isArray(options)) {
        throw new LockUsageError(
          `${label}.forRoot() needs an options object such as ` +
            `${kind.memory ? '{ defaults: { ttl: 5000 } }' : "{ url: 'redis://host:6379' }"}, got ` +
            `${describeValue(options)}.`,
        );
      }
      // biome-ignore lint/complexity/noThisInStatic: super keeps `this` (the subclass), which Nest uses as the module.
      return super.forRoot(snapshotRootOptions(options, label) as Options);
    }

    static override forRootAsync(options: AsyncOptions): DynamicModule {
      if (options === null || typeof options !== 'object' || Array.isArray(options)) {
        throw new LockUsageError(
          `${label}.forRootAsync() needs an object with useFactory, useClass or useExisting, got ` +
            `${describeValue(options)}.`,
        );
      }
      const how = (['useFactory', 'useClass', 'useExisting'] as const).filter(
        (k) => options[k] !== undefined,
      );
      if (how.length !== 1) {
        throw new LockUsageError(
          `${label}.forRootAsync() needs exactly one of useFactory, useClass or useExisting, got ` +
            `${how.length ? how.join(' and ') : 'none'}.`,
        );
      }
      if (options.useFactory !== undefined && typeof options.useFactory !== 'function') {
        throw new LockUsageError(
          `${label}.forRootAsync(): useFactory must be a function returning the options, got ` +
            `${describeValue(options.useFactory)}.`,
        );
      }
      if (options.useClass !== undefined && typeof options.useClass !== 'function') {
        throw new LockUsageError(
          `${label}.forRootAsync(): useClass must be a class with createRedisLockOptions(), got ` +
            `${describeValue(options.useClass)}.`,
        );
      }
      // Nest would ignore a misspelt or unknown key here without a word.
      checkKnownKeys(options, ASYNC_KEYS, `${label}.forRootAsync()`);
      // biome-ignore lint/complexity/noThisInStatic: super keeps `this` (the subclass), which Nest uses as the module.
      return super.forRootAsync(options);
    }
  }
  return { ...built, ConfigurableModuleClass: CheckedModuleClass };
}

const redisLock = defineLockModule<RedisLockModuleOptions>({
  label: 'RedisLockModule',
  memory: false,
  optionsToken: 'REDIS_LOCK_MODULE_OPTIONS',
});

export const {
  MODULE_OPTIONS_TOKEN: REDIS_LOCK_MODULE_OPTIONS,
  OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE,
  ConfigurableModuleClass,
} = redisLock;

function addProviders(
  definition: DynamicModule,
  extras: RedisLockModuleExtras,
  kind: ModuleKind,
): DynamicModule {
  const { name } = extras;
  if (name !== undefined && (typeof name !== 'string' || name === '')) {
    throw new LockUsageError(
      `${kind.label}: name must be a non-empty string (the configuration's name), got ${describeValue(name)}.`,
    );
  }
  if (extras.httpErrors !== undefined && typeof extras.httpErrors !== 'boolean') {
    throw new LockUsageError(
      `${kind.label}: httpErrors must be true or false, got ${describeValue(extras.httpErrors)}.`,
    );
  }
  const serviceToken = getLockServiceToken(name);
  const interceptorToken = getLockInterceptorToken(name);
  const healthToken = getRedisLockHealthToken(name);
  const backendToken = getLockBackendToken(name);
  const providers: Provider[] = [
    // What a test replaces (overrideProvider) to run the application's locks in memory: Nest matches an
    // overridden provider by token in every module, where overrideModule would need the very object
    // forRoot returned.
    { provide: backendToken, useValue: CONFIGURED_BACKEND },
    {
      // Local to this module (not exported), so each configuration has its own.
      provide: RedisLockContext,
      inject: [kind.optionsToken, backendToken],
      useFactory: (options: RedisLockModuleOptions, replacement: unknown) =>
        RedisLockContext.create(
          options,
          name,
          kind,
          replacement === CONFIGURED_BACKEND ? undefined : { backend: replacement, token: backendToken },
        ),
    },
    { provide: serviceToken, inject: [RedisLockContext], useFactory: (c: RedisLockContext) => c.service },
    {
      // Through the service's own token, so that Test.createTestingModule(...).overrideProvider(
      // LockService) (or a named configuration's token) is what @Locked methods use too.
      provide: interceptorToken,
      inject: [serviceToken, RedisLockContext],
      useFactory: (service: LockService, c: RedisLockContext) => new LockInterceptor(service, c.scope),
    },
    // Relative deadlines, and how long a client waited before it left, count from a request's arrival,
    // which only the HTTP server sees.
    {
      provide: RequestArrivals,
      inject: [HttpAdapterHost, RedisLockContext],
      useFactory: (host: HttpAdapterHost, c: RedisLockContext) =>
        new RequestArrivals(host, c.requests !== undefined),
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
        new LockedMethodsChecker(discovery, c.service, name, c.warn, c.scope, () => c.abandon()),
    },
  ];
  // Every HTTP request carried to the locked calls made while serving it, whichever method takes the
  // lock (lib/nest/request-scope.ts); none when the module takes nothing from a request.
  providers.push({
    provide: APP_GUARD,
    inject: [RedisLockContext],
    useFactory: (c: RedisLockContext) =>
      c.requests ? new RequestGuard(c.requests) : { canActivate: () => true },
  });
  if (extras.httpErrors !== false) {
    // Lock errors become HttpExceptions before any filter (the app's own catch-all included) sees them:
    // where Nest hands the error to its filters, at no cost to requests that succeed; or, on a Nest
    // where that is not found, by an app-wide interceptor. The filter renders them wherever the
    // conversion did not happen (a filter of the app consulted before it, on such a Nest).
    providers.push(
      canConvertWithoutInterceptor()
        ? {
            provide: LockHttpErrorsHook,
            inject: [HttpAdapterHost],
            useFactory: (host: HttpAdapterHost) => new LockHttpErrorsHook(host),
          }
        : {
            provide: APP_INTERCEPTOR,
            inject: [HttpAdapterHost],
            useFactory: (host: HttpAdapterHost) => new LockHttpErrorsInterceptor(host),
          },
      {
        provide: APP_FILTER,
        inject: [HttpAdapterHost],
        useFactory: (host: HttpAdapterHost) => new LockHttpExceptionFilter(host),
      },
    );
  }
  return {
    ...definition,
    global: true,
    imports: [...(definition.imports ?? []), DiscoveryModule],
    providers: [...(definition.providers ?? []), ...providers],
    exports: [...(definition.exports ?? []), serviceToken, interceptorToken, healthToken],
  };
}
