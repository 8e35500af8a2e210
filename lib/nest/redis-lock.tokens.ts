/**
 * Injection tokens of the Nest module. The unnamed configuration uses the classes
 * themselves as tokens (inject `LockService` directly); a named one (`forRoot({ name })`) uses the
 * string tokens below, so several configurations can live in one application.
 */
import { LockService } from '../lock.service';
import { LockInterceptor } from './lock.interceptor';
import { RedisLockHealthIndicator } from './redis-lock.health';

type Token = string | (abstract new (...args: never[]) => unknown);

// Nest's "can't resolve dependencies" error quotes the token: it says which forRoot is missing.
const named = (what: string, name: string): string =>
  `${what} of RedisLockModule.forRoot({ name: '${name}' })`;

/** The injection token of the LockService of configuration `name` (LockService itself when unnamed). */
export function getLockServiceToken(name?: string): Token {
  return name === undefined ? LockService : named('LockService', name);
}

/** The injection token of the LockInterceptor of configuration `name`. */
export function getLockInterceptorToken(name?: string): Token {
  return name === undefined ? LockInterceptor : named('LockInterceptor', name);
}

/** The injection token of the health indicator of configuration `name`. */
export function getRedisLockHealthToken(name?: string): Token {
  return name === undefined ? RedisLockHealthIndicator : named('RedisLockHealthIndicator', name);
}

/**
 * The injection token of the lock store of configuration `name`. A test of the whole application
 * replaces it to run every lock in memory, with no connection attempted:
 * `.overrideProvider(getLockBackendToken()).useValue(new MemoryLockBackend())`. Left alone, the
 * configuration uses the store its options name.
 */
export function getLockBackendToken(name?: string): string {
  return name === undefined ? 'LockBackend of RedisLockModule.forRoot()' : named('LockBackend', name);
}

/** The value of getLockBackendToken() until a test replaces it: the store the options name. */
export const CONFIGURED_BACKEND = Symbol.for('nestjs-redis-lock: the store the options name');

/** The instance property through which a @Locked method reaches its interceptor (property injection). */
export function interceptorProperty(name?: string): symbol {
  return Symbol.for(
    name === undefined
      ? 'nestjs-redis-lock: @Locked()'
      : `nestjs-redis-lock: @Locked({ service: '${name}' })`,
  );
}
