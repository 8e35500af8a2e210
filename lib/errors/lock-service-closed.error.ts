import { LockError } from './lock.error';

/** The LockService was closed (application shutdown) before or while the call ran. */
export class LockServiceClosedError extends LockError {
  constructor(key?: string) {
    super(
      'LOCK_SERVICE_CLOSED',
      'The lock service is closed: no lock can be taken or waited for. Stop calling it after close() ' +
        '(or application shutdown), or create a new LockService.',
      { key },
    );
  }
}
