/**
 * Lock errors become HTTP exceptions where Nest hands a failed HTTP request to its exception filters:
 * the router's ExceptionsHandler, whose `next()` picks the filter (route, controller or global) and
 * falls back to Nest's own. Converting there, before the filter is picked, gives every filter (an
 * application's catch-all, a `@Catch(HttpException)`, Nest's default) the `HttpException`, from a
 * handler, an interceptor, a guard, a pipe or middleware alike, and costs a request that does not fail
 * nothing at all: an app-wide interceptor would run rxjs and Nest's interceptor chain on every request
 * of the application, locked or not.
 *
 * The hook is installed once per process on Nest's class and converts only for the HTTP adapters of
 * applications whose lock module asked for it (`httpErrors`, on by default), each with its own
 * `Retry-After`. Where the class is not found (a Nest that moved it), the module registers
 * LockHttpErrorsInterceptor app-wide instead, as it did before.
 */
import type { ArgumentsHost, HttpServer, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { HttpAdapterHost } from '@nestjs/core';
import * as handlerModule from '@nestjs/core/exceptions/exceptions-handler';
import { LockError } from '../errors/lock.error';
import { httpExceptionFor, setRetryAfter } from './lock-http.errors';

type Next = (exception: unknown, host: ArgumentsHost) => void;

interface HandlerPrototype {
  next: Next;
}

/** `Retry-After` seconds, by the HTTP adapter of each application that converts. */
const converting = new WeakSet<object>();
/** Per copy of this library: a second copy (another version in the same process) hooks its own errors. */
const HOOKED = Symbol('nestjs-redis-lock.http-conversion');

function handlerPrototype(): (HandlerPrototype & { [HOOKED]?: true }) | undefined {
  const handler = (handlerModule as { ExceptionsHandler?: { prototype?: HandlerPrototype } })
    .ExceptionsHandler;
  const prototype = handler?.prototype;
  return typeof prototype?.next === 'function' ? prototype : undefined;
}

/** Whether lock errors can be converted without an interceptor in this version of Nest. */
export function canConvertWithoutInterceptor(): boolean {
  return handlerPrototype() !== undefined;
}

/**
 * Converts lock errors of the application served by `adapter` from now on, until the returned function
 * is called. The first configuration of an application to ask sets its `Retry-After`.
 */
export function convertLockErrors(adapter: HttpServer): () => void {
  hook();
  converting.add(adapter);
  return () => converting.delete(adapter);
}

function hook(): void {
  const prototype = handlerPrototype();
  if (!prototype || prototype[HOOKED]) return;
  const next = prototype.next;
  // The class is shared by every application in the process: an error that is no lock error, or of an
  // application that did not ask, goes on untouched.
  prototype.next = function (this: { applicationRef?: HttpServer }, exception, host) {
    if (exception instanceof LockError) {
      const adapter = this.applicationRef;
      if (adapter !== undefined && converting.has(adapter) && host.getType() === 'http') {
        const http = httpExceptionFor(exception);
        if (http) {
          setRetryAfter(adapter, host.getArgByIndex(1), http);
          return next.call(this, http, host);
        }
      }
    }
    return next.call(this, exception, host);
  };
  Object.defineProperty(prototype, HOOKED, { value: true });
}

/**
 * The module's provider that turns the conversion on for its application once the HTTP adapter is
 * known (a testing module gets it only with createNestApplication) and off when the application closes.
 * An application context without HTTP has no adapter: nothing is converted.
 */
export class LockHttpErrorsHook implements OnModuleInit, OnApplicationShutdown {
  private stop: (() => void) | undefined;

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  onModuleInit(): void {
    const adapter = this.adapterHost.httpAdapter;
    if (adapter) this.stop ??= convertLockErrors(adapter);
  }

  onApplicationShutdown(): void {
    this.stop?.();
    this.stop = undefined;
  }
}
