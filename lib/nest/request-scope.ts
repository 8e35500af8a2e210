/**
 * The HTTP request every locked call made while serving it follows, by default: a guard the module puts
 * on every route carries it (lib/engine/served-request.ts), so a @Locked service method called from a
 * route with no lock, a @Locked handler, a @LockedRoute and LockService.acquire or using all find it.
 * Its signal aborts when the connection closes before the response is written, so a waiter leaves the
 * line and a lock granted after that runs nothing; its deadline comes from lib/nest/request-deadline.ts.
 * Nest never tells a route's handler that its client left (it does not unsubscribe), so the request is
 * read from the connection itself. Both are made only when a locked call asks: a route that takes no
 * lock pays for one small object and the guard's turn.
 *
 * A guard, not a middleware or an interceptor: it runs after the body is read on Express and Fastify
 * alike (a middleware's context is lost across the body's stream events), and Nest calls it without
 * the Observables an interceptor pays for on every request.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { carriedRequest, enterRequest, type ServedRequest } from '../engine/served-request';
import { LockUsageError } from '../errors/lock-usage.error';
import { RequestClosedError } from '../errors/request-closed.error';
import { describeValue } from '../options/describe-value';
import { checkKnownKeys, integerIn, MAX_MS, read } from '../options/option-checks';
import { type ClientPatience, RoutePatience } from './client-patience';
import { arrivalOf, deadlineOf } from './request-deadline';

/**
 * The module option `requests`: whether the locked calls made for an HTTP request follow it, and a
 * budget for every request. `true` (the default): a call stops waiting when its client closes the
 * connection, and ends its wait in time for the deadline the client or a proxy sent (else for the patience
 * its route's clients showed). `{ budget }`: that, and every request is to be answered this many ms after
 * it arrived. `false`: nothing is taken from a request.
 */
export type RequestsOption = boolean | { budget: number };

/** What a module makes of the requests its locked calls serve, when it follows them. */
export interface RequestSettings {
  /** ms after its arrival by which every request is to be answered, if the module sets a budget. */
  readonly budget: number | undefined;
}

export const DEFAULT_REQUEST_SETTINGS: RequestSettings = { budget: undefined };

/** The `requests` option, checked: the settings, or undefined for requests not followed. */
export function checkRequests(value: unknown): RequestSettings | undefined {
  if (value === true) return DEFAULT_REQUEST_SETTINGS;
  if (value === false) return undefined;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new LockUsageError(
      `requests must be true (follow each request: its close and its deadline), false (take nothing from ` +
        `it) or { budget } (ms from a request's arrival), got ${describeValue(value)}.`,
    );
  }
  checkKnownKeys(value, ['budget'], 'requests');
  const budget = read(value as Record<string, unknown>, 'budget', 'requests.budget');
  return { budget: integerIn('requests.budget', budget, 1, MAX_MS, 'milliseconds') };
}

/** An HTTP request (Express's or Fastify's, by the Node objects under them) as its locked calls see it. */
class HttpServedRequest implements ServedRequest {
  private closed: AbortController | undefined;
  private deadlineRead = false;
  private deadlineAt: number | undefined;

  constructor(
    readonly request: IncomingMessage,
    private readonly response: ServerResponse,
    private readonly settings: RequestSettings,
    /** Every route's clients; this request's route. */
    private readonly routes: RoutePatience,
    private readonly handler: object,
  ) {}

  /** Its route's clients, looked up only when a locked call asks: a route that takes no lock pays nothing. */
  private get clients(): ClientPatience {
    return this.routes.of(this.handler);
  }

  get signal(): AbortSignal {
    this.closed ??= closeController(this.request, this.response, this.clients);
    return this.closed.signal;
  }

  get deadline(): number | undefined {
    if (!this.deadlineRead) {
      const patience = this.clients.of(Date.now());
      this.deadlineAt = deadlineOf(this.request, this.settings.budget, patience);
      this.deadlineRead = true;
    }
    return this.deadlineAt;
  }

  get answered(): boolean {
    return this.response.writableEnded;
  }
}

/**
 * Aborts when the client closes the connection before the response is written, and tells `clients` how
 * long after its arrival it left.
 */
function closeController(
  request: IncomingMessage,
  response: ServerResponse,
  clients: ClientPatience,
): AbortController {
  const controller = new AbortController();
  const closed = () => {
    if (response.writableFinished) return;
    const now = Date.now();
    const arrived = arrivalOf(request);
    if (arrived !== undefined) clients.departed(now - arrived, now);
    controller.abort(new RequestClosedError());
  };
  // The client may have left already, while guards, pipes or the handler ran: its close event is past.
  if (request.socket?.destroyed || response.destroyed) closed();
  else response.once('close', closed);
  return controller;
}

/**
 * Put app-wide by the module: carries each HTTP request to the locked calls made while serving it. With
 * several configurations the first one's settings apply to a request (the others find it carried).
 */
export class RequestGuard implements CanActivate {
  /** Each route's clients, learnt from their departures. */
  private readonly routes = new RoutePatience();

  constructor(private readonly settings: RequestSettings) {}

  canActivate(context: ExecutionContext): boolean {
    if (context.getType() !== 'http') return true;
    const http = context.switchToHttp();
    const request = raw<IncomingMessage>(http.getRequest());
    const response = raw<ServerResponse>(http.getResponse());
    if (!request?.headers || typeof response?.once !== 'function') return true;
    const carried = carriedRequest();
    if (carried instanceof HttpServedRequest && carried.request === request) return true;
    enterRequest(new HttpServedRequest(request, response, this.settings, this.routes, context.getHandler()));
    return true;
  }
}

/** Fastify's request and reply wrap Node's; Express's are Node's own. */
function raw<T>(value: unknown): T | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  return ((value as { raw?: unknown }).raw ?? value) as T;
}
