export { InjectLockService, InjectRedisLockHealth } from './inject.decorators';
export type { LockKeyFunction, LockKeyTemplate } from './key-template';

export { type LockedMethodRunner, LockInterceptor } from './lock.interceptor';
export { type LockErrorResponse, lockErrorResponse } from './lock-http.errors';
export { Locked, LockedRoute } from './locked.decorator';
export {
  RedisLockHealthIndicator,
  type RedisLockHealthOptions,
  type RedisLockHealthResult,
  type RedisLockHealthStatus,
} from './redis-lock.health';
export { RedisLockModule } from './redis-lock.module';
export { getLockBackendToken, getLockServiceToken } from './redis-lock.tokens';
export type {
  KeyScope,
  LockedKeyWarning,
  LockedOptions,
  LockWarning,
  RedisLockModuleExtras,
  RedisLockModuleOptions,
} from './redis-lock-options.interface';
