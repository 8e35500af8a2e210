/**
 * The fallback for lock errors thrown over HTTP where no interceptor runs (a guard, a pipe or
 * middleware that takes a lock): renders them as LockHttpErrorsInterceptor would convert them, 409 /
 * 503 with `Retry-After`, 400 for a bad key. Registered by the module unless `httpErrors: false`. In
 * any other context (microservices, WebSockets,
 * GraphQL) the typed error goes on unchanged, so callers there can match on its `code`.
 */
import { type ArgumentsHost, Catch, type ExceptionFilter } from '@nestjs/common';
import type { HttpAdapterHost } from '@nestjs/core';
import { throwError } from 'rxjs';
import type { LockError } from '../errors/lock.error';
import { LockTimeoutError } from '../errors/lock-timeout.error';
import { InvalidKeyError } from '../errors/lock-usage.error';
import { RedisUnavailableError } from '../errors/redis-unavailable.error';
import { httpExceptionFor, setRetryAfter } from './lock-http.errors';

@Catch(LockTimeoutError, RedisUnavailableError, InvalidKeyError)
export class LockHttpExceptionFilter implements ExceptionFilter {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: LockError, host: ArgumentsHost): unknown {
    const type = host.getType<string>();
    if (type === 'rpc') return throwError(() => exception);
    const http = type === 'http' ? httpExceptionFor(exception) : undefined;
    if (!http) throw exception;
    const response = host.switchToHttp().getResponse();
    setRetryAfter(this.adapterHost.httpAdapter, response, http);
    this.adapterHost.httpAdapter.reply(response, http.getResponse(), http.getStatus());
    return undefined;
  }
}
