/**
 * The request a call serves: one carrier from where the application receives the request (the Nest
 * module's guard, lib/nest/request-scope.ts) to the waiter. Every lock call made while serving it (a
 * @Locked method at any depth, LockService.acquire or using) reads it here, and takes the client's
 * departure and the request's deadline from it. A room of its own, importing only Node: LockService
 * reads it without knowing of Nest or HTTP.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface ServedRequest {
  /** Aborts when the request's client has gone (RequestClosedError); undefined when not followed. */
  readonly signal: AbortSignal | undefined;
  /** When the request must be answered by, in ms since the epoch; undefined for none. */
  readonly deadline: number | undefined;
  /**
   * Its response has been written: a call made after that (work the request left running) no longer
   * serves it, and is neither cut by its deadline nor ended by its client's departure.
   */
  readonly answered: boolean;
}

const carrier = new AsyncLocalStorage<ServedRequest>();

/**
 * Carries `request` for the rest of the current call chain: what runs after this in the same
 * synchronous turn, and every callback and promise made from it. enterWith, not run: a guard cannot wrap
 * the handler it guards, and a Nest interceptor that could costs far more (rxjs) per request.
 */
export function enterRequest(request: ServedRequest): void {
  carrier.enterWith(request);
}

/** The request the current call chain serves and has not answered yet, if any. */
export function currentRequest(): ServedRequest | undefined {
  const request = carrier.getStore();
  return request === undefined || request.answered ? undefined : request;
}

/** The request carried now, answered or not (so that a second entry of the same request is skipped). */
export function carriedRequest(): ServedRequest | undefined {
  return carrier.getStore();
}
