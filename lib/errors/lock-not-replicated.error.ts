import { quote } from './log-text';
import { RedisUnavailableError } from './redis-unavailable.error';

/** What a `replicas` acknowledgement was asked for: a grant (or confirmed hand-off), or a renewal. */
export type ReplicatedWrite = 'grant' | 'renewal';

/**
 * Fewer replicas than `replicas.count` acknowledged a grant or a renewal within `replicas.timeout`
 * (WAIT; WAITAOF with `replicas.aof`). A grant so refused was released before this was thrown: the
 * caller never held it. A failover could have promoted a replica that never saw the write, so the lock
 * is not trusted. A subclass of RedisUnavailableError (same code, HTTP 503), so code that retries an
 * unreachable Redis retries this too.
 */
export class LockNotReplicatedError extends RedisUnavailableError {
  /** Replicas that acknowledged in time. */
  readonly acknowledged: number;
  /** Replicas asked for (`replicas.count`). */
  readonly required: number;
  /** The wait asked for, ms (`replicas.timeout`). */
  readonly timeout: number;
  /** Which write went unacknowledged. */
  readonly write: ReplicatedWrite;

  constructor(
    key: string,
    write: ReplicatedWrite,
    acknowledged: number,
    required: number,
    timeout: number,
    detail?: string,
  ) {
    const what = write === 'grant' ? 'the grant' : 'the renewal';
    const after = write === 'grant' ? ', so it was released' : '';
    super(
      detail ??
        `${acknowledged} of the ${required} replicas asked for (replicas.count) acknowledged ${what} of ` +
          `${quote(key)} within ${timeout} ms${after}. Check the replicas' links to the master ` +
          '(INFO replication), or lower replicas.count',
      key,
    );
    this.acknowledged = acknowledged;
    this.required = required;
    this.timeout = timeout;
    this.write = write;
  }
}
