/**
 * @Locked(key, options): runs a method of any provider or controller under a distributed lock. The
 * decorator compiles the key template and checks the options when the class is defined; at run time
 * the method delegates to the LockInterceptor that Nest injects into the instance (a property
 * injection, so singleton, request-scoped and transient classes all work). The wrapper keeps `this`,
 * the function's name and every metadata key, above or below route, pipe and Swagger decorators.
 */
import 'reflect-metadata';
import { Inject, SetMetadata } from '@nestjs/common';
import { Observable } from 'rxjs';
import { LockUsageError } from '../errors/lock-usage.error';
import { checkDeclaredOptions, DECLARED_OPTION_NAMES } from '../options/call-options';
import { checkKnownKeys } from '../options/option-checks';
import { checkKeyOptions } from './key-scope';
import {
  compileKeyTemplate,
  type LockKeyFunction,
  type LockKeyTemplate,
  templateIndexes,
} from './key-template';
import type { LockInterceptor } from './lock.interceptor';
import { LOCKED_METADATA, LOCKED_ROUTE_METADATA } from './redis-lock.constants';
import { getLockInterceptorToken, interceptorProperty } from './redis-lock.tokens';
import type { LockedOptions, LockedSpec } from './redis-lock-options.interface';

const OPTION_NAMES: readonly string[] = [
  ...DECLARED_OPTION_NAMES,
  'onTimeout',
  'service',
  'scope',
  'constantKey',
];

type Method = (...args: unknown[]) => unknown;

/** What `onTimeout` may be set to. */
type OnTimeout = NonNullable<LockedOptions['onTimeout']>;

/** The parameters a method is called with, which a key function receives. */
type ArgsOf<T> = T extends (...args: infer P) => unknown ? P : never;

/**
 * No requirement when a key function taking `A` can be called with the method's arguments, else a
 * property the descriptor lacks, whose name becomes the compiler's error message.
 */
type KeyCheck<A extends unknown[], T> = [LockKeyFunction<A>] extends [(...args: ArgsOf<T>) => unknown]
  ? unknown
  : { "@Locked: the key function's parameters do not accept this method's arguments": ArgsOf<T> };

/**
 * Whether the method's callers can take the undefined a skipped call gives: a Promise or a value that
 * admits undefined, or an Observable (a skipped call completes it without a value).
 */
type AdmitsSkip<T> = T extends (...args: never) => infer R
  ? [R] extends [Observable<unknown>]
    ? true
    : [undefined] extends [Awaited<R>]
      ? true
      : false
  : false;

/**
 * With `onTimeout: 'skip'` written out, the method must admit undefined. An `onTimeout` only known as
 * `'throw' | 'skip'` (options held in a LockedOptions variable), or not known at all (`never`), is not
 * checked.
 */
type SkipCheck<S, T> = [S] extends [never]
  ? unknown
  : [S] extends ['skip']
    ? AdmitsSkip<T> extends true
      ? unknown
      : {
          "@Locked: onTimeout 'skip' resolves undefined, which this method's return type does not admit": never;
        }
    : unknown;

/**
 * What `@Locked(key, options)` returns: a legacy (experimentalDecorators) method decorator whose
 * descriptor type carries the compile-time checks of the key function's parameters `A` and of
 * `onTimeout` `S` against the decorated method `T`.
 */
export interface LockedDecorator<A extends unknown[] = unknown[], S extends OnTimeout = OnTimeout> {
  <T extends (...args: never) => unknown>(
    target: object,
    propertyKey: string | symbol,
    descriptor: TypedPropertyDescriptor<T> & KeyCheck<A, T> & SkipCheck<S, T>,
  ): TypedPropertyDescriptor<T>;
  /**
   * Makes it a MethodDecorator as well, for `applyDecorators` (which cannot carry the checks): a
   * generic MethodDecorator accepts any descriptor, which the checked signature does not. A decorator is
   * called without `this`, so `@Locked(...)` itself never resolves to this signature.
   */
  (this: never, ...args: unknown[]): void;
}

/**
 * Runs the method under the lock named by `key`: a template such as `'order:<0>'` or
 * `'transfer:<1.from>'` (argument index, then property path, resolved after pipes) or a function of
 * the arguments. Reentrant within one call chain. Returns a Promise (or an Observable when the method
 * declares one).
 *
 * The decorator factory is called before the method's type is known, so a key function cannot take its
 * parameter types from the method: the types written on its parameters are checked against the method's,
 * and a parameter left without one is `unknown` (enough to interpolate, not to reach into).
 * `onTimeout: 'skip'` written in the options needs a method whose result admits undefined.
 */
export function Locked<A extends unknown[] = unknown[], S extends OnTimeout = 'throw'>(
  key: LockKeyTemplate<A>,
  options?: LockedOptions & { onTimeout?: S },
): LockedDecorator<A, S>;
export function Locked(key: LockKeyTemplate, options: LockedOptions = {}): MethodDecorator {
  return (target, propertyKey, descriptor) => {
    assertLegacyDecorator('@Locked()', propertyKey, descriptor);
    const where = describeMethod(target, propertyKey);
    const original = descriptor.value as unknown;
    if (typeof original !== 'function') {
      throw new LockUsageError(`@Locked() on ${where}: it can only decorate methods.`);
    }
    if (typeof target === 'function') {
      throw new LockUsageError(`@Locked() on ${where}: static methods have no instance to inject into.`);
    }
    const spec = compileSpec(key, options, where, target, propertyKey, original as Method);
    const property = interceptorProperty(spec.options.service);
    // Nest sets this property on every instance it creates of the class, whatever its scope.
    Inject(getLockInterceptorToken(spec.options.service))(target, property);
    const wrapper = function (this: Record<symbol, LockInterceptor | undefined>, ...args: unknown[]) {
      const interceptor = this?.[property];
      if (!interceptor) {
        const error = new LockUsageError(
          `@Locked() on ${where}: no LockInterceptor on this instance. Call the method on the instance ` +
            'Nest created, with RedisLockModule imported' +
            (spec.options.service ? ` (forRoot({ name: '${spec.options.service}' }))` : '') +
            '.',
        );
        return spec.observable ? new Observable((s) => s.error(error)) : Promise.reject(error);
      }
      return interceptor.run(spec, this, args, original as Method);
    };
    copyIdentity(original as Method, wrapper);
    Reflect.defineMetadata(LOCKED_METADATA, spec, wrapper);
    descriptor.value = wrapper as never;
    return descriptor;
  };
}

/**
 * Marks a route for LockInterceptor used as a Nest interceptor (`@UseInterceptors(LockInterceptor)`).
 * The template resolves against the handler's raw arguments, before pipes: for HTTP `<0>` is the
 * request, so `'order:<0.params.id>'`. The lock then also covers the route's other interceptors.
 *
 * Unlike @Locked, nothing is checked against the method's type: a key function takes the raw arguments,
 * not the method's parameters, and the method is not wrapped (a skip answers the request with no body),
 * so its own return type stays true.
 */
export function LockedRoute(
  key: LockKeyTemplate,
  options: Omit<LockedOptions, 'service'> = {},
): MethodDecorator {
  return (target, propertyKey, descriptor) => {
    assertLegacyDecorator('@LockedRoute()', propertyKey, descriptor);
    const where = describeMethod(target, propertyKey);
    if ('service' in options) {
      throw new LockUsageError(
        `@LockedRoute() on ${where}: choose the configuration with the interceptor you use instead of "service".`,
      );
    }
    const spec = compileSpec(key, options, where, target, propertyKey, descriptor.value as unknown as Method);
    return SetMetadata(LOCKED_ROUTE_METADATA, { ...spec, observable: true })(target, propertyKey, descriptor);
  };
}

function compileSpec(
  key: LockKeyTemplate,
  options: LockedOptions,
  where: string,
  target: object,
  propertyKey: string | symbol,
  method: Method,
): LockedSpec {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new LockUsageError(`@Locked() on ${where}: options must be an object.`);
  }
  try {
    checkKnownKeys(options, OPTION_NAMES, 'its options');
    checkDeclaredOptions(options);
  } catch (error) {
    throw new LockUsageError(`@Locked() on ${where}: ${(error as Error).message}`);
  }
  if (options.onTimeout !== undefined && options.onTimeout !== 'throw' && options.onTimeout !== 'skip') {
    throw new LockUsageError(`@Locked() on ${where}: onTimeout must be 'throw' or 'skip'.`);
  }
  if (options.service !== undefined && (typeof options.service !== 'string' || options.service === '')) {
    throw new LockUsageError(`@Locked() on ${where}: service must be the non-empty name given to forRoot.`);
  }
  checkKeyOptions(options, where, typeof key === 'function' || templateIndexes(key).length > 0);
  const returnType = Reflect.getMetadata('design:returntype', target, propertyKey);
  return {
    where,
    template: key,
    label: typeof key === 'function' ? where : Array.isArray(key) ? key.join(', ') : String(key),
    key: compileKeyTemplate(key, where),
    method,
    options: Object.freeze({ ...options }),
    observable: returnType === Observable,
  };
}

function describeMethod(target: object, propertyKey: string | symbol): string {
  const owner = typeof target === 'function' ? target.name : target.constructor?.name;
  return `${owner || 'anonymous class'}.${String(propertyKey)}`;
}

/** The wrapper must look like the method to Nest, Swagger and friends: name, length and metadata. */
function copyIdentity(original: Method, wrapper: Method): void {
  Object.defineProperty(wrapper, 'name', { value: original.name, configurable: true });
  Object.defineProperty(wrapper, 'length', { value: original.length, configurable: true });
  for (const key of Reflect.getOwnMetadataKeys(original)) {
    Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, original), wrapper);
  }
}

/** Applied as a TC39 standard decorator (value, context), a method decorator gets no descriptor. */
function assertLegacyDecorator(name: string, propertyKey: unknown, descriptor: unknown): void {
  if (descriptor !== undefined && typeof propertyKey !== 'object') return;
  throw new LockUsageError(
    `${name} needs TypeScript's "experimentalDecorators": true (and "emitDecoratorMetadata"), as every Nest ` +
      'decorator does. Set them in the tsconfig.json that compiles this file.',
  );
}
