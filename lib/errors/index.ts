// The error classes: runtime ones by what happened, usage ones in one class whose `code` says what to fix.
// Their detail types (a loss's reason, a refusal's figures) are read through the classes' fields.
export { LockError, type LockErrorCode } from './lock.error';
export { LockAbortedError } from './lock-aborted.error';
export { LockLostError } from './lock-lost.error';
export { LockNotHeldError } from './lock-not-held.error';
export { LockNotReplicatedError } from './lock-not-replicated.error';
export { LockQuorumError } from './lock-quorum.error';
export { LockServiceClosedError } from './lock-service-closed.error';
export { LockShedError } from './lock-shed.error';
export { LockTimeoutError } from './lock-timeout.error';
export { type LockUsageCode, LockUsageError } from './lock-usage.error';
export { RedisUnavailableError } from './redis-unavailable.error';
export { RequestClosedError } from './request-closed.error';
