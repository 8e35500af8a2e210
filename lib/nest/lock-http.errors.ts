/**
 * Lock errors as HTTP exceptions. In an HTTP request a lock held past the call's own waitTimeout is the
 * client's to retry (409 Conflict; 423 is WebDAV's), Redis out of reach or a wait refused for overload
 * (turned away at the door, or cut short by a standing line or the request's deadline) is ours (503
 * Service Unavailable), both with `Retry-After`, and a key that cannot be built from the request is the
 * client's mistake (400 Bad Request). They are thrown as Nest's own HttpException subclasses, so any exception filter, an
 * application's catch-all included, renders the right status; the typed lock error stays the `cause`.
 * Outside HTTP (microservices, WebSockets, GraphQL, plain providers) nothing is converted.
 */
import {
  BadRequestException,
  type CallHandler,
  ConflictException,
  type ExecutionContext,
  HttpException,
  type HttpServer,
  type NestInterceptor,
  ServiceUnavailableException,
} from '@nestjs/common';
import type { HttpAdapterHost } from '@nestjs/core';
import { catchError, type Observable, throwError } from 'rxjs';
import type { LockError } from '../errors/lock.error';
import { LockAbortedError } from '../errors/lock-aborted.error';
import { LockShedError } from '../errors/lock-shed.error';
import { LockTimeoutError } from '../errors/lock-timeout.error';
import { LockUsageError } from '../errors/lock-usage.error';
import { RedisUnavailableError } from '../errors/redis-unavailable.error';
import { RequestClosedError } from '../errors/request-closed.error';

/** The HTTP exception for a lock error, or undefined for any other error (left as it is). */
export function httpExceptionFor(error: unknown): HttpException | undefined {
  if (error instanceof LockTimeoutError && error.retryAfterMs !== undefined) {
    // Not the resource's business but the server's: its line is longer than the request can wait.
    return exception(503, error, overloadMessage(error));
  }
  if (error instanceof LockTimeoutError) {
    return exception(409, error, 'The resource is busy: another request holds its lock. Retry later.');
  }
  if (error instanceof RedisUnavailableError) {
    return exception(503, error, 'The lock service cannot reach Redis. Retry later.');
  }
  if (error instanceof LockUsageError && error.code === 'LOCK_INVALID_KEY') {
    // The typed error names the class, method and template: for the server's log (via `cause`), not
    // for the client, who learns which placeholder was missing or invalid, and why (its `detail`).
    const why = error.detail ?? 'a value it is made of is missing or invalid.';
    return exception(400, error, `The lock key could not be built from this request: ${why}`);
  }
  if (error instanceof LockAbortedError && error.cause instanceof RequestClosedError) {
    // Nobody reads it: a 4xx keeps Nest from logging each departure as a server error. 499 is the
    // status proxies (nginx) log for a client that closed its request.
    return exception(
      499,
      error,
      'The client closed the request while it waited for its lock; nothing ran for it.',
    );
  }
  return undefined;
}

const REASONS = {
  400: 'Bad Request',
  409: 'Conflict',
  499: 'Client Closed Request',
  503: 'Service Unavailable',
} as const;

/** Nest's own exception for `status` (its subclass where it has one), the lock error as its `cause`. */
function exception(status: keyof typeof REASONS, error: LockError, message: string): HttpException {
  const body = { statusCode: status, error: REASONS[status], code: error.code, message };
  const options = { cause: error };
  if (status === 400) return new BadRequestException(body, options);
  if (status === 409) return new ConflictException(body, options);
  if (status === 503) return new ServiceUnavailableException(body, options);
  return new HttpException(body, status, options);
}

/** What a 503 for a wait refused for overload tells the client. */
function overloadMessage(error: LockTimeoutError): string {
  if (error instanceof LockShedError) {
    return 'The line for this resource is longer than the request could wait through, so it was turned away at once; nothing ran for it. Retry after the time given.';
  }
  if (error.deadline) {
    return "The request's deadline would pass before its turn for the lock came, so it was answered now; nothing ran for it. Retry after the time given.";
  }
  return 'The resource has more requests than it can serve, so this one was turned away before its turn came; nothing ran for it. Retry after the time given.';
}

/**
 * `Retry-After` of a 409 and of Redis out of reach, in seconds: a lock's usual hold and a reconnect are
 * both well under it, and a client told more would wait for nothing.
 */
const RETRY_AFTER_SECONDS = 1;

/** What an HTTP response for a lock error is made of: status, body and headers (`Retry-After`). */
export interface LockErrorResponse {
  status: number;
  body: { statusCode: number; error: string; code: string; message: string };
  headers: Record<string, string>;
}

/**
 * The response the module's conversion would give a lock error, for an exception filter of your own
 * (with `httpErrors: false`, or outside Nest's HTTP layer): 409 for a lock held past the call's own
 * waitTimeout and 503 for Redis out of reach, both with `Retry-After: 1`; 503 for a wait refused for
 * overload, with `Retry-After` when its line would clear (LockTimeoutError.retryAfterMs, in whole
 * seconds, at least 1); 400 for a key the request cannot build; undefined for any other error.
 */
export function lockErrorResponse(error: unknown): LockErrorResponse | undefined {
  const exception = httpExceptionFor(error);
  if (!exception) return undefined;
  return {
    status: exception.getStatus(),
    body: exception.getResponse() as LockErrorResponse['body'],
    headers: retryable(exception) ? { 'Retry-After': String(retryAfter(exception)) } : {},
  };
}

/** Whether the exception asks the client to retry later (409 and 503 carry `Retry-After`). */
function retryable(exception: HttpException): boolean {
  return exception instanceof ConflictException || exception instanceof ServiceUnavailableException;
}

/** When to retry, in seconds: for a wait refused for overload, when its line would clear. */
function retryAfter(exception: HttpException): number {
  const { cause } = exception;
  return cause instanceof LockTimeoutError && cause.retryAfterMs !== undefined
    ? Math.max(1, Math.ceil(cause.retryAfterMs / 1000))
    : RETRY_AFTER_SECONDS;
}

/** Sets `Retry-After` on the response the exception will be rendered on, whichever filter renders it. */
export function setRetryAfter(
  adapter: HttpServer | undefined,
  response: unknown,
  exception: HttpException,
): void {
  if (!adapter || !retryable(exception)) return;
  adapter.setHeader(response, 'Retry-After', String(retryAfter(exception)));
}

/**
 * Registered app-wide by the module (unless `httpErrors: false`): converts lock errors leaving an HTTP
 * handler, from @Locked methods at any depth and from LockInterceptor on the route, before any
 * exception filter sees them.
 */
export class LockHttpErrorsInterceptor implements NestInterceptor {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType<string>() !== 'http') return next.handle();
    return next.handle().pipe(
      catchError((error: unknown) => {
        const exception = httpExceptionFor(error);
        if (!exception) return throwError(() => error);
        setRetryAfter(this.adapterHost.httpAdapter, context.switchToHttp().getResponse(), exception);
        return throwError(() => exception);
      }),
    );
  }
}
