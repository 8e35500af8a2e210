/**
 * The request a locked call serves, which the locked calls it makes serve too (lib/nest/request-scope.ts
 * makes it from an HTTP request). A room of its own, importing nothing: LockService's typings name it,
 * and they must not pull in the engine's (whose telemetry names an optional peer's types).
 */
export interface ServedRequest {
  /** Aborts when the request's client has gone. */
  readonly signal?: AbortSignal;
  /** When the request must be answered by, in ms since the epoch. */
  readonly deadline?: number;
}
