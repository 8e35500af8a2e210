/**
 * `nestjs-redis-lock/testing`: what a unit test needs to run code that locks, without Redis.
 * LockService.inMemory() and MemoryLockBackend come from the main entry; they are repeated here so one
 * import serves a test file.
 */
export { LockService } from '../lock.service';
export type { LockedMethodRunner } from '../nest/lock.interceptor';
export { getLockBackendToken } from '../nest/redis-lock.tokens';
export { MemoryLockBackend } from '../store/memory-store';
export { RedisLockTestingModule, type RedisLockTestingOptions } from './redis-lock-testing.module';
