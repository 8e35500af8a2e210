/**
 * The HTTP request a locked call serves, so that a client who has gone leaves the line: its signal
 * aborts when the connection closes before the response is written, and a lock granted after that runs
 * nothing. Nest never tells a route's handler that its client left (it does not unsubscribe), so the
 * request is read from the connection itself. The scope that carries it is an AsyncLocalStorage, set on
 * locked routes (the method of @Locked or @LockedRoute is the handler) and, with `requests: 'all-routes'`,
 * on every route, so that @Locked on a service method reached from any controller sees it too.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CallHandler, ExecutionContext, NestInterceptor } from '@nestjs/common';
import { Observable } from 'rxjs';

/** Why a request's signal aborted: the `cause` of the LockAbortedError its locked call rejects with. */
export class RequestClosedError extends Error {
  constructor() {
    super('The client closed the connection before the response was written: nobody is waiting for it.');
    this.name = 'RequestClosedError';
  }
}

const scope = new AsyncLocalStorage<AbortSignal>();
/** Requests in the scope now: at 0 the scope is disabled, as Node 20 pays for an enabled one on every promise. */
let inFlight = 0;
/** One signal per response, whichever locked calls of the request ask. */
const signals = new WeakMap<object, AbortSignal>();

/** The signal of the request the current call chain serves, if it runs inside one. */
export function currentRequestSignal(): AbortSignal | undefined {
  return inFlight > 0 ? scope.getStore() : undefined;
}

/** The signal of an HTTP context's request (Express or Fastify); undefined outside HTTP. */
export function requestSignal(context: ExecutionContext): AbortSignal | undefined {
  if (context.getType() !== 'http') return undefined;
  const http = context.switchToHttp();
  const response = raw<ServerResponse>(http.getResponse());
  const request = raw<IncomingMessage>(http.getRequest());
  if (!response || typeof response.once !== 'function') return undefined;
  let signal = signals.get(response);
  if (signal) return signal;
  const controller = new AbortController();
  signal = controller.signal;
  signals.set(response, signal);
  const closed = () => {
    if (!response.writableFinished) controller.abort(new RequestClosedError());
  };
  // The client may have left already, while guards or pipes ran: its close event is then past.
  if (request?.socket?.destroyed || response.destroyed) closed();
  else response.once('close', closed);
  return signal;
}

/** Runs the rest of the request (pipes, the handler and what it calls) inside the request's scope. */
export function withinRequest(context: ExecutionContext, next: CallHandler): Observable<unknown> {
  const signal = requestSignal(context);
  if (!signal) return next.handle();
  return new Observable((subscriber) => {
    inFlight++;
    let left = false;
    const leave = () => {
      if (left) return;
      left = true;
      if (--inFlight === 0) scope.disable();
    };
    const inner = scope.run(signal, () =>
      next.handle().subscribe({
        next: (value) => subscriber.next(value),
        error: (error: unknown) => {
          leave();
          subscriber.error(error);
        },
        complete: () => {
          leave();
          subscriber.complete();
        },
      }),
    );
    return () => {
      leave();
      inner.unsubscribe();
    };
  });
}

/** Put on the method of each @Locked declaration: on a route, its handler runs in the request's scope. */
export const REQUEST_SCOPE: NestInterceptor = { intercept: withinRequest };

/** Fastify's request and reply wrap Node's; Express's are Node's own. */
function raw<T>(value: unknown): T | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  return ((value as { raw?: unknown }).raw ?? value) as T;
}
