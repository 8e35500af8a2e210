/**
 * Maps lock errors to HTTP responses: LockTimeoutError → 409 Conflict (the resource is busy; 423 is
 * WebDAV's), RedisUnavailableError → 503 Service Unavailable, both with `Retry-After`. Registered by the
 * module unless `httpErrors: false`. In any other context (microservices, WebSockets, GraphQL) the
 * typed error goes on unchanged, so callers there can match on its `code`.
 */
import { type ArgumentsHost, Catch, type ExceptionFilter, HttpStatus } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { throwError } from 'rxjs';
import type { LockError } from '../errors/lock.error';
import { LockTimeoutError } from '../errors/lock-timeout.error';
import { RedisUnavailableError } from '../errors/redis-unavailable.error';

@Catch(LockTimeoutError, RedisUnavailableError)
export class LockHttpExceptionFilter implements ExceptionFilter {
  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly retryAfterSeconds: number,
  ) {}

  catch(exception: LockError, host: ArgumentsHost): unknown {
    const type = host.getType<string>();
    if (type === 'rpc') return throwError(() => exception);
    if (type !== 'http') throw exception;
    const adapter = this.adapterHost.httpAdapter;
    const response = host.switchToHttp().getResponse();
    const timeout = exception instanceof LockTimeoutError;
    const status = timeout ? HttpStatus.CONFLICT : HttpStatus.SERVICE_UNAVAILABLE;
    adapter.setHeader(response, 'Retry-After', String(this.retryAfterSeconds));
    adapter.reply(
      response,
      {
        statusCode: status,
        error: timeout ? 'Conflict' : 'Service Unavailable',
        code: exception.code,
        message: timeout
          ? 'The resource is busy: another request holds its lock. Retry later.'
          : 'The lock service cannot reach Redis. Retry later.',
      },
      status,
    );
    return undefined;
  }
}
