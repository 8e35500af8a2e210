/**
 * The HTTP request a locked call serves, so that a client who has gone leaves the line: its signal
 * aborts when the connection closes before the response is written, and a lock granted after that runs
 * nothing. Nest never tells a route's handler that its client left (it does not unsubscribe), so the
 * request is read from the connection itself. How a call finds its request:
 * - a @Locked handler receives it as one more argument, which the decorator declares (REQUEST_PARAM) and
 *   takes off before the method sees its arguments; a @LockedRoute reads it from its ExecutionContext;
 * - the locked calls those make find it in their call chain (lib/engine/call-chain.ts);
 * - with `closedRequests: 'all-routes'`, every request runs in a scope of its own (an AsyncLocalStorage,
 *   which Node 20 pays for on every promise while enabled), so @Locked service methods reached from a
 *   route with no lock find it too.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type CallHandler,
  createParamDecorator,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { Observable } from 'rxjs';
import { RequestClosedError } from '../errors/request-closed.error';

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

/** With `closedRequests: 'all-routes'`, app-wide: every request runs in its scope. */
export const REQUEST_SCOPE: NestInterceptor = { intercept: withinRequest };

/**
 * The argument a @Locked handler is given beyond its own: its request, whose signal is made only when
 * read (a module with `closedRequests: 'ignore'` never reads it).
 */
export class RequestArgument {
  constructor(private readonly context: ExecutionContext) {}

  get signal(): AbortSignal | undefined {
    return requestSignal(this.context);
  }
}
/** Those Nest made; told apart by identity, as a caller's argument (a revoked Proxy) may throw on any other check. */
const madeByNest = new WeakSet<object>();

/** The request's signal when `value` is the argument REQUEST_PARAM made, else undefined. */
export function requestArgument(value: unknown): RequestArgument | undefined {
  return typeof value === 'object' && value !== null && madeByNest.has(value)
    ? (value as RequestArgument)
    : undefined;
}

/**
 * Declared by @Locked after the method's own parameters: on a route Nest passes the request's signal
 * there (nothing is read elsewhere, and Nest reads no parameters of a method that is not a handler).
 */
export const REQUEST_PARAM = createParamDecorator((_data: unknown, context: ExecutionContext) => {
  const made = new RequestArgument(context);
  madeByNest.add(made);
  return made;
});

/** Fastify's request and reply wrap Node's; Express's are Node's own. */
function raw<T>(value: unknown): T | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  return ((value as { raw?: unknown }).raw ?? value) as T;
}
