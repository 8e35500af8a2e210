export { InjectLockService, InjectRedisLockHealth } from './inject.decorators';
export type { KeyResolver, LockKeyFunction, LockKeyTemplate } from './key-template';

export { type LockedMethodRunner, LockInterceptor } from './lock.interceptor';
export {
  httpExceptionFor,
  type LockErrorResponse,
  LockHttpErrorsInterceptor,
  lockErrorResponse,
} from './lock-http.errors';
export { LockHttpExceptionFilter } from './lock-http.filter';
export { Locked, type LockedDecorator, LockedRoute } from './locked.decorator';
export {
  RedisLockHealthIndicator,
  type RedisLockHealthOptions,
  type RedisLockHealthResult,
  type RedisLockHealthStatus,
} from './redis-lock.health';
export { RedisLockModule } from './redis-lock.module';
export { REDIS_LOCK_MODULE_OPTIONS } from './redis-lock.module-definition';
export {
  getLockBackendToken,
  getLockInterceptorToken,
  getLockServiceToken,
  getRedisLockHealthToken,
} from './redis-lock.tokens';
export type {
  KeyScope,
  LockedKeyWarning,
  LockedKeyWarningCode,
  LockedOptions,
  LockWarning,
  RedisLockModuleExtras,
  RedisLockModuleOptions,
} from './redis-lock-options.interface';
