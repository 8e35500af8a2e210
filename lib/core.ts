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
export type { Lease, LockHolder, LockInfo, LockNodeView, LockWaiter } from './lease';
export { type LockKeys, LockService } from './lock.service';
export type { ListLocksOptions, LockList } from './lock-admin';
export { type LockMode, MAX_PERMITS } from './lock-kind';
export {
  type AcquireOptions,
  DEFAULT_CLAIM_WINDOW,
  DEFAULT_PREFIX,
  DEFAULT_TTL,
  DEFAULT_WAIT_TIMEOUT,
  type LockDefaults,
  type LockServiceOptions,
  MAX_KEY_LENGTH,
  MAX_KEYS,
  type ReplicaOptions,
  type TryAcquireOptions,
} from './lock-options';
export type {
  AcquireMode,
  AcquireReply,
  ExtendOutcome,
  LockBackend,
  LockSnapshot,
  LockStore,
  LockTicket,
  WakeHandlers,
  WakeMessage,
} from './store/lock-store';
export { MemoryLockBackend } from './store/memory-store';
export type { ServerFacts, ServerReport, ServerRisk, ServerRiskCode } from './store/server-watch';
export { LOCK_CHANNELS, type LockEvent, type LockEventKind } from './telemetry/lock-events';
export type {
  LockOutcome,
  MeterProviderLike,
  TelemetryOptions,
  TracerProviderLike,
} from './telemetry/telemetry-options';
