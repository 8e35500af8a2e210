// The check between a grant and the start of the work, made deterministic: the client's connection
// closes in the very turn its waiter is granted (the telemetry event of the grant closes it), so the
// waiter has no chance to leave the line first. The method must not run, the call rejects with
// LockAbortedError caused by RequestClosedError, and the lock is free for the next caller. The request
// is a stand-in with the two things read from a Node request (its socket and its response's close);
// test/nest/closed-requests.spec.ts closes real connections over Express and Fastify.
import { EventEmitter } from 'node:events';
import { describe, expect, it } from '@jest/globals';
import type { ExecutionContext } from '@nestjs/common';
import {
  LockAbortedError,
  Locked,
  LockInterceptor,
  LockService,
  lockErrorResponse,
  RequestClosedError,
} from '../../lib';
import { interceptorProperty } from '../../lib/nest/redis-lock.tokens';
import { DEFAULT_REQUEST_SETTINGS, RequestGuard } from '../../lib/nest/request-scope';
import { registerSdk, sum } from '../telemetry/otel-fixtures';

class Response extends EventEmitter {
  writableFinished = false;
  writableEnded = false;
  destroyed = false;
}

/** The route's handler, as Nest gives it: what the route's clients are learnt by. */
function route(): void {}

function httpContext(response: Response): ExecutionContext {
  const request = { socket: { destroyed: false }, headers: {} };
  return {
    getType: () => 'http',
    getHandler: () => route,
    switchToHttp: () => ({
      getRequest: () => request,
      getResponse: () => response,
      getNext: () => undefined,
    }),
  } as unknown as ExecutionContext;
}

/**
 * Runs `handler` as the module's guard runs a route's handler: in a turn of its own (an immediate), in
 * which the guard carries the request first.
 */
const inRequest = <T>(response: Response, handler: () => Promise<T>): Promise<T> =>
  new Promise((resolve, reject) =>
    setImmediate(() => {
      new RequestGuard(DEFAULT_REQUEST_SETTINGS).canActivate(httpContext(response));
      handler().then(resolve, reject);
    }),
  );

describe('a grant that reaches a request whose client left in the same turn', () => {
  it('runs nothing: the call rejects with LockAbortedError (RequestClosedError) and the lock is free', async () => {
    const response = new Response();
    const ran: string[] = [];
    const locks = LockService.inMemory({
      telemetry: {
        onEvent: (event) => {
          // The grant of the request's call, not the holder's: the connection closes right then.
          if (event.kind === 'granted' && event.name === 'order:<0>') response.emit('close');
        },
      },
    });
    class Orders {
      @Locked('order:<0>')
      async pay(id: string): Promise<string> {
        ran.push(id);
        return 'paid';
      }
    }
    const orders = new Orders() as Orders & Record<symbol, unknown>;
    orders[interceptorProperty()] = new LockInterceptor(locks);
    const holder = await locks.acquire('order:1');
    const answered = inRequest(response, () => orders.pay('1')).catch((error: unknown) => error);
    await holder.release();
    const error = await answered;
    expect(error).toBeInstanceOf(LockAbortedError);
    expect((error as LockAbortedError).cause).toBeInstanceOf(RequestClosedError);
    expect(ran).toEqual([]);
    const next = await locks.tryAcquire('order:1');
    expect(next?.fence).toBeGreaterThan(holder.fence);
    await next?.release();
    await locks.close();
  });

  it('answers 499 (Client Closed Request), which Nest does not log as a server error, with no Retry-After', () => {
    const response = lockErrorResponse(new LockAbortedError('order:1', new RequestClosedError()));
    expect(response).toMatchObject({ status: 499, body: { code: 'LOCK_ABORTED' }, headers: {} });
    // A caller's own signal is the application's business: no HTTP answer is made up for it.
    expect(lockErrorResponse(new LockAbortedError('order:1', new Error('shutting down')))).toBeUndefined();
  });

  it("a call whose client leaves while it waits counts as 'abandoned' in lock.acquisitions, not 'aborted'", async () => {
    const response = new Response();
    registerSdk();
    const locks = LockService.inMemory();
    class Reports {
      @Locked('report:<0>')
      async build(id: string): Promise<string> {
        return id;
      }
    }
    const reports = new Reports() as Reports & Record<symbol, unknown>;
    reports[interceptorProperty()] = new LockInterceptor(locks);
    const holder = await locks.acquire('report:1');
    const answered = inRequest(response, () => reports.build('1')).catch((error: unknown) => error);
    // In line behind the holder, then the client leaves.
    while ((await locks.inspect('report:1')).queueLength === 0) await new Promise((r) => setImmediate(r));
    response.emit('close');
    expect(await answered).toBeInstanceOf(LockAbortedError);
    expect(await sum('lock.acquisitions', { 'lock.name': 'report:<0>', 'lock.outcome': 'abandoned' })).toBe(
      1,
    );
    expect(await sum('lock.acquisitions', { 'lock.name': 'report:<0>', 'lock.outcome': 'aborted' })).toBe(0);
    await holder.release();
    await locks.close();
  });
});
