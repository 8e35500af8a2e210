// Lock errors over HTTP reach exception filters as Nest HttpExceptions with the typed lock error as
// their cause: an application-wide catch-all filter, registered as Nest's docs show, renders 409 (with
// Retry-After) for a lock held past the call's own waitTimeout, 400 for a key the request cannot build,
// and 503 (with Retry-After) when Redis is out of reach or a wait was refused for overload (then
// Retry-After says when the line would clear). Outside an HTTP request the same calls throw the typed
// errors.
import { describe, expect, it } from '@jest/globals';
import {
  type ArgumentsHost,
  Body,
  type CallHandler,
  type CanActivate,
  Catch,
  Controller,
  type ExceptionFilter,
  type ExecutionContext,
  HttpException,
  type INestApplication,
  Inject,
  Injectable,
  Module,
  Post,
  UseFilters,
  UseGuards,
} from '@nestjs/common';
import { type ApplicationConfig, HttpAdapterHost } from '@nestjs/core';
import { catchError, throwError } from 'rxjs';
import request from 'supertest';
import {
  LockError,
  Locked,
  LockService,
  LockShedError,
  LockTimeoutError,
  LockUsageError,
  lockErrorResponse,
  RedisLockModule,
  RedisUnavailableError,
} from '../../lib';
import { sleep } from '../support/event-loop';
import { lockService, until } from '../support/lock-fixtures';
import { bootApp } from '../support/nest-apps';
import { startRedis, useRedis } from '../support/redis-server';
import { shedRule } from '../support/shed-rule';

const server = useRedis();

/** Nest's documented catch-all: HttpExceptions with their status, everything else a 500. */
@Catch()
class AllExceptions implements ExceptionFilter {
  readonly seen: unknown[] = [];

  constructor(private adapterHost: HttpAdapterHost) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    this.seen.push(exception);
    const { httpAdapter } = this.adapterHost;
    const status = exception instanceof HttpException ? exception.getStatus() : 500;
    const cause = exception instanceof HttpException ? exception.cause : undefined;
    httpAdapter.reply(
      host.switchToHttp().getResponse(),
      {
        status,
        name: (exception as Error).name,
        cause: cause instanceof LockError ? cause.code : undefined,
      },
      status,
    );
  }
}

@Injectable()
class Orders {
  runs = 0;

  @Locked('order:<0.id>', { waitTimeout: 100 })
  async pay(_dto: { id?: number }): Promise<string> {
    this.runs++;
    return 'paid';
  }
}

/** A guard that takes a lock itself: it runs before any interceptor. */
@Injectable()
class OrderGuard implements CanActivate {
  constructor(@Inject(LockService) private readonly locks: LockService) {}

  async canActivate(): Promise<boolean> {
    await this.locks.using('guarded', () => undefined, { waitTimeout: 100 });
    return true;
  }
}

@Controller('orders')
class OrdersController {
  constructor(@Inject(Orders) private readonly orders: Orders) {}

  @Post('pay')
  pay(@Body() dto: { id?: number }) {
    return this.orders.pay(dto);
  }

  @Post('guarded')
  @UseGuards(OrderGuard)
  guarded() {
    return 'through';
  }
}

async function shop(
  url: string,
  catchAll: boolean,
): Promise<{ app: INestApplication; filter: AllExceptions }> {
  @Module({ controllers: [OrdersController], providers: [Orders, OrderGuard] })
  class Shop {}
  const app = await bootApp({ imports: [RedisLockModule.forRoot({ url }), Shop], init: false });
  const filter = new AllExceptions(app.get(HttpAdapterHost));
  if (catchAll) app.useGlobalFilters(filter);
  await app.init();
  return { app, filter };
}

describe('lock errors through an application-wide catch-all filter', () => {
  it('a busy lock is 409 with Retry-After, an HttpException whose cause is the LockTimeoutError', async () => {
    const { app, filter } = await shop(server().url, true);
    const holder = await lockService(server()).acquire('order:1');
    const response = await request(app.getHttpServer()).post('/orders/pay').send({ id: 1 });
    expect(response.status).toBe(409);
    expect(response.headers['retry-after']).toBe('1');
    expect(response.body).toEqual({ status: 409, name: 'ConflictException', cause: 'LOCK_TIMEOUT' });
    const seen = filter.seen[0] as HttpException;
    expect(seen).toBeInstanceOf(HttpException);
    expect(seen.cause).toBeInstanceOf(LockTimeoutError);
    expect(app.get(Orders).runs).toBe(0);
    await holder.release();
    expect((await request(app.getHttpServer()).post('/orders/pay').send({ id: 1 })).status).toBe(201);
  });

  it('a key the request cannot build (no body) is 400, whose cause is the key error', async () => {
    const { app, filter } = await shop(server().url, true);
    const response = await request(app.getHttpServer()).post('/orders/pay');
    expect(response.status).toBe(400);
    expect(response.headers['retry-after']).toBeUndefined();
    expect(response.body).toEqual({ status: 400, name: 'BadRequestException', cause: 'LOCK_INVALID_KEY' });
    const cause = (filter.seen[0] as HttpException).cause as LockUsageError;
    expect(cause).toMatchObject({ code: 'LOCK_INVALID_KEY' });
    expect(cause.message).toContain("@Locked('order:<0.id>') on Orders.pay");
    expect(app.get(Orders).runs).toBe(0);
    expect(await server().keys('*undefined*')).toEqual([]);
  });

  it('Redis out of reach is 503 with Retry-After, whose cause is the RedisUnavailableError', async () => {
    const own = await startRedis();
    try {
      const { app, filter } = await shop(own.url, true);
      expect((await request(app.getHttpServer()).post('/orders/pay').send({ id: 2 })).status).toBe(201);
      await own.stop();
      const response = await request(app.getHttpServer()).post('/orders/pay').send({ id: 2 });
      expect(response.status).toBe(503);
      expect(response.headers['retry-after']).toBe('1');
      expect(response.body).toEqual({
        status: 503,
        name: 'ServiceUnavailableException',
        cause: 'LOCK_REDIS_UNAVAILABLE',
      });
      expect((filter.seen.at(-1) as HttpException).cause).toBeInstanceOf(RedisUnavailableError);
    } finally {
      await own.dispose();
    }
  });
});

describe('under overload', () => {
  const TARGET = 20;
  const INTERVAL = 50;
  const HOLD = 5 * TARGET;

  it("a wait its key's standing line cut is 503 with Retry-After from the line; a lock held past the call's own waitTimeout stays 409", async () => {
    @Module({ controllers: [OrdersController], providers: [Orders, OrderGuard] })
    class Shop {}
    const app = await bootApp({
      imports: [
        // Through a factory: forRoot passes on only the options' named keys, not the test hook.
        RedisLockModule.forRootAsync({
          useFactory: () => ({ url: server().url, ...shedRule({ target: TARGET, interval: INTERVAL }) }),
        }),
        Shop,
      ],
      init: false,
    });
    const filter = new AllExceptions(app.get(HttpAdapterHost));
    app.useGlobalFilters(filter);
    await app.init();
    const locks = app.get(LockService);
    const others = lockService(server());
    // The app's service is served from order:1's line after a hold of 5 targets, twice, an interval
    // apart: the line stands, and its pace is at least 5 targets a place.
    for (const pause of [2 * INTERVAL, 0]) {
      const holder = await others.acquire('order:1');
      const waiting = locks.acquire('order:1', { waitTimeout: 10_000 });
      await until(
        () => locks.inspect('order:1'),
        (info) => info.queueLength === 1,
      );
      await sleep(HOLD); // the hold it waits through
      await holder.release();
      await (await waiting).release();
      await sleep(pause); // so the next serve closes an interval
    }

    const holders = [await others.acquire('order:1'), await others.acquire('order:2')];
    // The request's wait (100 ms) is cut to half the target: turned away for overload.
    const cut = await request(app.getHttpServer()).post('/orders/pay').send({ id: 1 });
    expect(cut.status).toBe(503);
    expect(cut.body).toEqual({ status: 503, name: 'ServiceUnavailableException', cause: 'LOCK_TIMEOUT' });
    const refused = (filter.seen.at(-1) as HttpException).cause as LockTimeoutError;
    expect(refused).toBeInstanceOf(LockTimeoutError);
    expect(refused.retryAfterMs).toBeGreaterThanOrEqual(HOLD);
    // When the line would clear, in whole seconds.
    expect(cut.headers['retry-after']).toBe(
      String(Math.max(1, Math.ceil((refused.retryAfterMs ?? 0) / 1000))),
    );

    // order:2's line does not stand: the request waits its whole 100 ms while the lock is held.
    const busy = await request(app.getHttpServer()).post('/orders/pay').send({ id: 2 });
    expect(busy.status).toBe(409);
    expect(busy.headers['retry-after']).toBe('1');
    expect(((filter.seen.at(-1) as HttpException).cause as LockTimeoutError).retryAfterMs).toBeUndefined();
    expect(app.get(Orders).runs).toBe(0);
    for (const holder of holders) await holder.release();
  });

  it('lockErrorResponse: every refusal for overload is 503 with Retry-After from the line, a plain timeout 409', () => {
    const standing = new LockTimeoutError('k', 10, { retryAfterMs: 2_300, waitTimeout: 5_000 });
    const deadline = new LockTimeoutError('k', 80, {
      retryAfterMs: 400,
      deadline: { leftMs: 100, holdMs: 20 },
    });
    const shed = new LockShedError('k', 12, 250, 1_000);
    expect(lockErrorResponse(standing)).toMatchObject({ status: 503, headers: { 'Retry-After': '3' } });
    expect(lockErrorResponse(deadline)).toMatchObject({ status: 503, headers: { 'Retry-After': '1' } });
    expect(lockErrorResponse(shed)).toMatchObject({ status: 503, headers: { 'Retry-After': '3' } });
    expect(lockErrorResponse(new LockTimeoutError('k', 0))).toMatchObject({
      status: 409,
      headers: { 'Retry-After': '1' },
    });
    expect(standing.message).toMatch(/turned away for overload/);
    expect(lockErrorResponse(standing)?.body.message).not.toMatch(/another request holds its lock/);
  });
});

describe('where the lock error is thrown, and which filter renders it', () => {
  it('a lock taken in a guard reaches the application catch-all as a 409 HttpException', async () => {
    const { app, filter } = await shop(server().url, true);
    const holder = await lockService(server()).acquire('guarded');
    const response = await request(app.getHttpServer()).post('/orders/guarded');
    expect(response.status).toBe(409);
    expect(response.headers['retry-after']).toBe('1');
    expect(response.body).toEqual({ status: 409, name: 'ConflictException', cause: 'LOCK_TIMEOUT' });
    expect((filter.seen[0] as HttpException).cause).toBeInstanceOf(LockTimeoutError);
    await holder.release();
  });

  it("a controller's own catch-all filter gets the HttpException too, and the application's interceptors the typed error", async () => {
    const seenByInterceptor: unknown[] = [];
    const filter = new AllExceptions({ httpAdapter: undefined } as unknown as HttpAdapterHost);

    @Controller('scoped')
    @UseFilters(filter)
    class ScopedController {
      constructor(@Inject(Orders) private readonly orders: Orders) {}

      @Post('pay')
      pay(@Body() dto: { id?: number }) {
        return this.orders.pay(dto);
      }
    }
    @Module({ controllers: [ScopedController], providers: [Orders] })
    class Scoped {}
    const app = await bootApp({
      imports: [RedisLockModule.forRoot({ url: server().url }), Scoped],
      init: false,
    });
    Object.assign(filter, { adapterHost: app.get(HttpAdapterHost) });
    app.useGlobalInterceptors({
      intercept: (_context: ExecutionContext, next: CallHandler) =>
        next.handle().pipe(
          catchError((error: unknown) => {
            seenByInterceptor.push(error);
            return throwError(() => error);
          }),
        ),
    });
    await app.init();
    const holder = await lockService(server()).acquire('order:9');
    const response = await request(app.getHttpServer()).post('/scoped/pay').send({ id: 9 });
    expect(response.status).toBe(409);
    expect(response.headers['retry-after']).toBe('1');
    expect(response.body).toEqual({ status: 409, name: 'ConflictException', cause: 'LOCK_TIMEOUT' });
    expect(seenByInterceptor).toHaveLength(1);
    expect(seenByInterceptor[0]).toBeInstanceOf(LockTimeoutError);
    await holder.release();
  });
});

describe('without a filter of the application', () => {
  it('the same statuses, with the lock error code in the body', async () => {
    const { app } = await shop(server().url, false);
    const holder = await lockService(server()).acquire('order:3');
    const busy = await request(app.getHttpServer()).post('/orders/pay').send({ id: 3 });
    expect(busy.status).toBe(409);
    expect(busy.headers['retry-after']).toBe('1');
    expect(busy.body).toMatchObject({ statusCode: 409, code: 'LOCK_TIMEOUT' });
    const bad = await request(app.getHttpServer()).post('/orders/pay');
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ statusCode: 400, code: 'LOCK_INVALID_KEY' });
    await holder.release();
  });

  it('a lock taken in a guard (before any interceptor) is 409 with Retry-After', async () => {
    const { app } = await shop(server().url, false);
    const holder = await lockService(server()).acquire('guarded');
    const response = await request(app.getHttpServer()).post('/orders/guarded');
    expect(response.status).toBe(409);
    expect(response.headers['retry-after']).toBe('1');
    expect(response.body).toMatchObject({ statusCode: 409, code: 'LOCK_TIMEOUT' });
    await holder.release();
    expect((await request(app.getHttpServer()).post('/orders/guarded')).status).toBe(201);
  });
});

describe('outside an HTTP request', () => {
  it('the same provider calls throw the typed lock errors, unconverted', async () => {
    const { app } = await shop(server().url, true);
    const orders = app.get(Orders);
    const holder = await lockService(server()).acquire('order:4');
    await expect(orders.pay({ id: 4 })).rejects.toBeInstanceOf(LockTimeoutError);
    await expect(orders.pay({})).rejects.toMatchObject({ code: 'LOCK_INVALID_KEY' });
    await holder.release();
    await expect(orders.pay({ id: 4 })).resolves.toBe('paid');
  });

  it('in an application context without HTTP, too', async () => {
    @Module({ providers: [Orders] })
    class Jobs {}
    const app = await bootApp({ imports: [RedisLockModule.forRoot({ url: server().url }), Jobs] });
    const holder = await lockService(server()).acquire('order:5');
    const error = await app
      .get(Orders)
      .pay({ id: 5 })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect(error).not.toBeInstanceOf(HttpException);
    await holder.release();
  });
});

describe('a route that takes no lock', () => {
  it('runs no interceptor of the module: nothing of it is on the path of a request that succeeds', async () => {
    const { app } = await shop(server().url, true);
    const config = (app as unknown as { config: ApplicationConfig }).config;
    expect(config.getGlobalInterceptors()).toEqual([]);
    expect(config.getGlobalRequestInterceptors()).toEqual([]);
  });
});

/** A filter of the application's own that renders lock errors with the library's mapping. */
@Catch()
class OwnLockFilter implements ExceptionFilter {
  constructor(private adapterHost: HttpAdapterHost) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const { httpAdapter } = this.adapterHost;
    const response = host.switchToHttp().getResponse();
    const mapped = lockErrorResponse(exception);
    if (!mapped) {
      httpAdapter.reply(response, { status: 500 }, 500);
      return;
    }
    for (const [name, value] of Object.entries(mapped.headers)) httpAdapter.setHeader(response, name, value);
    httpAdapter.reply(response, mapped.body, mapped.status);
  }
}

describe('with httpErrors: false, a filter of your own renders lock errors with lockErrorResponse', () => {
  it('a lock taken in a guard: 409 with Retry-After and the same body the module gives', async () => {
    @Module({ controllers: [OrdersController], providers: [Orders, OrderGuard] })
    class Shop {}
    const app = await bootApp({
      imports: [RedisLockModule.forRoot({ url: server().url, httpErrors: false }), Shop],
      init: false,
    });
    app.useGlobalFilters(new OwnLockFilter(app.get(HttpAdapterHost)));
    await app.init();
    const holder = await lockService(server()).acquire('guarded');
    const busy = await request(app.getHttpServer()).post('/orders/guarded');
    expect(busy.status).toBe(409);
    expect(busy.headers['retry-after']).toBe('1');
    expect(busy.body).toEqual({
      statusCode: 409,
      error: 'Conflict',
      code: 'LOCK_TIMEOUT',
      message: 'The resource is busy: another request holds its lock. Retry later.',
    });
    await holder.release();
    expect((await request(app.getHttpServer()).post('/orders/guarded')).status).toBe(201);
  });

  it('maps each lock error, and nothing else', () => {
    expect(lockErrorResponse(new LockTimeoutError('k', 100))?.status).toBe(409);
    expect(lockErrorResponse(new RedisUnavailableError('down', 'k'))).toMatchObject({
      status: 503,
      headers: { 'Retry-After': '1' },
    });
    expect(lockErrorResponse(new LockUsageError('no id', { code: 'LOCK_INVALID_KEY' }))).toMatchObject({
      status: 400,
      headers: {},
    });
    expect(lockErrorResponse(new Error('other'))).toBeUndefined();
  });
});
