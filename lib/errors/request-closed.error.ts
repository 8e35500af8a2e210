/**
 * Why a locked call made for an HTTP request stopped waiting: its client closed the connection before
 * the response was written. It is the `cause` of the LockAbortedError the call rejects with (a call's
 * own signal gives its own reason instead), and telemetry counts such a call as `abandoned`.
 */
export class RequestClosedError extends Error {
  constructor() {
    super('The client closed the connection before the response was written: nobody is waiting for it.');
    this.name = 'RequestClosedError';
  }
}
