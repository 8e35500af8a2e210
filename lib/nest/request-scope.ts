/**
 * The HTTP request a locked call serves, so that a client who has gone leaves the line and a request's
 * deadline reaches the waiter: its signal aborts when the connection closes before the response is
 * written, and a lock granted after that runs nothing; its deadline comes from lib/nest/request-deadline.ts.
 * Nest never tells a route's handler that its client left (it does not unsubscribe), so the request is
 * read from the connection itself. How a call finds its request:
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
import type { ServedRequest } from '../engine/served-request';
import { RequestClosedError } from '../errors/request-closed.error';
import type { ClosedRequests } from './redis-lock-options.interface';
import { DEFAULT_REQUEST_DEADLINE, deadlineOf, type ResolvedRequestDeadline } from './request-deadline';

/** What a module makes of the requests its locked calls serve. */
export interface RequestSettings {
  readonly closedRequests: ClosedRequests;
  readonly deadline: ResolvedRequestDeadline;
}

export const DEFAULT_REQUEST_SETTINGS: RequestSettings = {
  closedRequests: 'locked-routes',
  deadline: DEFAULT_REQUEST_DEADLINE,
};

const scope = new AsyncLocalStorage<ServedRequest>();
/** Requests in the scope now: at 0 the scope is disabled, as Node 20 pays for an enabled one on every promise. */
let inFlight = 0;
/** One per response, whichever locked calls of the request ask. */
const served = new WeakMap<object, ServedRequest>();

/** The request the current call chain serves, if it runs inside one. */
export function currentRequest(): ServedRequest | undefined {
  return inFlight > 0 ? scope.getStore() : undefined;
}

/** What an HTTP context's request (Express or Fastify) gives its locked calls; undefined outside HTTP. */
export function servedRequest(
  context: ExecutionContext,
  settings: RequestSettings,
): ServedRequest | undefined {
  if (context.getType() !== 'http') return undefined;
  const http = context.switchToHttp();
  const response = raw<ServerResponse>(http.getResponse());
  const request = raw<IncomingMessage>(http.getRequest());
  if (!response || typeof response.once !== 'function' || !request?.headers) return undefined;
  let made = served.get(response);
  if (made) return made;
  made = {
    signal: settings.closedRequests === 'ignore' ? undefined : closeSignal(request, response),
    deadline: deadlineOf(request, settings.deadline),
  };
  served.set(response, made);
  return made;
}

/** Aborts when the client closes the connection before the response is written. */
function closeSignal(request: IncomingMessage, response: ServerResponse): AbortSignal {
  const controller = new AbortController();
  const closed = () => {
    if (!response.writableFinished) controller.abort(new RequestClosedError());
  };
  // The client may have left already, while guards or pipes ran: its close event is then past.
  if (request.socket?.destroyed || response.destroyed) closed();
  else response.once('close', closed);
  return controller.signal;
}

/**
 * With `closedRequests: 'all-routes'`, app-wide: every request runs in its scope, so a @Locked service
 * method reached from any route finds it.
 */
export function requestScope(settings: RequestSettings): NestInterceptor {
  return { intercept: (context, next) => withinRequest(servedRequest(context, settings), next) };
}

/** Runs the rest of the request (pipes, the handler and what it calls) inside the request's scope. */
function withinRequest(request: ServedRequest | undefined, next: CallHandler): Observable<unknown> {
  if (!request) return next.handle();
  return new Observable((subscriber) => {
    inFlight++;
    let left = false;
    const leave = () => {
      if (left) return;
      left = true;
      if (--inFlight === 0) scope.disable();
    };
    const inner = scope.run(request, () =>
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

/**
 * The argument a @Locked handler is given beyond its own: its request, read only when asked (a module
 * that neither ends waits on a close nor reads deadlines never asks).
 */
export class RequestArgument {
  constructor(private readonly context: ExecutionContext) {}

  served(settings: RequestSettings): ServedRequest | undefined {
    return servedRequest(this.context, settings);
  }
}
/** Those Nest made; told apart by identity, as a caller's argument (a revoked Proxy) may throw on any other check. */
const madeByNest = new WeakSet<object>();

/** The request when `value` is the argument REQUEST_PARAM made, else undefined. */
export function requestArgument(value: unknown): RequestArgument | undefined {
  return typeof value === 'object' && value !== null && madeByNest.has(value)
    ? (value as RequestArgument)
    : undefined;
}

/**
 * Declared by @Locked after the method's own parameters: on a route Nest passes the request there (nothing is read elsewhere, and Nest reads no parameters of a method that is not a handler).
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
