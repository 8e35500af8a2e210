// The package's API without its Nest parts (the module, the decorator, the lock board): what a program
// that uses LockService on its own needs, and loads without Nest.

export { isRedisClient, type RedisClient } from './clients';
export * from './errors';
export {
  FencedStore,
  type FencedStoreOptions,
  type FencedValue,
  type FencedWriteResult,
} from './fencing/fenced-store';
export type { Lease, LockInfo } from './lease';
export { type LockKeys, LockService } from './lock.service';
export type { ListLocksOptions, LockList } from './lock-admin';
export type { LockMode } from './lock-kind';
export type { AcquireOptions, TryAcquireOptions } from './options/call-options';
export { MAX_KEYS } from './options/lock-keys';
export type { LockServiceOptions } from './options/service-options';
export type { LockBackend } from './store/lock-store';
export { MemoryLockBackend } from './store/memory-store';
export type { ServerReport, ServerRisk } from './store/server-watch';
export { LOCK_CHANNELS, type LockEvent } from './telemetry/lock-events';
export type {
  LockLogger,
  TelemetryOptions,
} from './telemetry/telemetry-options';
