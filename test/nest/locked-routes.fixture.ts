// The application the closed-request and deadline suites send real HTTP requests to, on Express or
// Fastify: a @Locked handler, a @LockedRoute, a @Locked handler that calls a @Locked service method, and a
// route with no lock that calls it. `ran` records each body that ran, so a suite can tell that nothing ran
// for a request that had gone or missed its deadline. Every application started here is closed after its
// test.
import type { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  Controller,
  Injectable,
  Param,
  Post,
  type Provider,
  Res,
  type Type,
  UseInterceptors,
} from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import {
  Locked,
  LockedRoute,
  LockInterceptor,
  LockService,
  RedisLockModule,
  type RedisLockModuleExtras,
  type RedisLockModuleOptions,
} from '../../lib';
import { bootApp } from '../support/nest-apps';

/** Bodies that ran, by route: a body that runs for a request nobody reads is the waste these suites measure. */
export const ran: string[] = [];

@Injectable()
export class Stock {
  @Locked('stock:<0>')
  async reserve(id: string): Promise<string> {
    ran.push(`service ${id}`);
    return 'reserved';
  }
}

@Controller('orders')
export class Orders {
  constructor(
    private readonly stock: Stock,
    private readonly locks: LockService,
  ) {}

  @Post(':id/pay')
  @Locked('order:<0>')
  async pay(@Param('id') id: string): Promise<string> {
    ran.push(`handler ${id}`);
    return 'paid';
  }

  @Post(':id/ship')
  @UseInterceptors(LockInterceptor)
  @LockedRoute('shipment:<0.params.id>')
  async ship(@Param('id') id: string): Promise<string> {
    ran.push(`route ${id}`);
    return 'shipped';
  }

  /** Its own lock, then the service's, whose wait the request's end (or deadline) ends too. */
  @Post(':id/settle')
  @Locked('settle:<0>')
  async settle(@Param('id') id: string): Promise<string> {
    await new Promise((resolve) => setImmediate(resolve));
    return this.stock.reserve(id);
  }

  /** No lock of its own: the service's @Locked method is reached after an await. */
  @Post(':id/reserve')
  async reserve(@Param('id') id: string): Promise<string> {
    await new Promise((resolve) => setImmediate(resolve));
    return this.stock.reserve(id);
  }

  /** LockService itself, with no decorator anywhere. */
  @Post(':id/count')
  async count(@Param('id') id: string): Promise<string> {
    await new Promise((resolve) => setImmediate(resolve));
    return this.locks.using(`count:${id}`, () => {
      ran.push(`using ${id}`);
      return 'counted';
    });
  }

  /**
   * Answers at once and leaves the service's call running: made after the response was written, it no
   * longer serves the request.
   */
  @Post(':id/later')
  later(@Param('id') id: string, @Res({ passthrough: true }) reply: { raw?: ServerResponse }): string {
    const response = (reply.raw ?? reply) as ServerResponse;
    response.once('finish', () => {
      this.stock.reserve(id).catch(() => ran.push(`failed ${id}`));
    });
    return 'accepted';
  }
}

export type Platform = 'express' | 'fastify';

/**
 * The application on `platform`, its locks on the Redis at `url`, listening on a free port. Every wait
 * lasts far longer than a test (waitTimeout 120 s), so a wait that ended before the holder let go ended
 * because its client left or its deadline came. `options` are the module's, extras included; `more` adds
 * controllers and providers of a suite's own.
 */
export async function startLockedApp(
  url: string,
  platform: Platform,
  options: Partial<RedisLockModuleOptions & RedisLockModuleExtras> = {},
  more: { controllers?: Type[]; providers?: Provider[] } = {},
): Promise<{ locks: LockService; port: number }> {
  const app = await bootApp({
    imports: [RedisLockModule.forRoot({ url, defaults: { waitTimeout: 120_000 }, ...options })],
    controllers: [Orders, ...(more.controllers ?? [])],
    providers: [Stock, ...(more.providers ?? [])],
    adapter: platform === 'fastify' ? new FastifyAdapter() : undefined,
    init: false,
  });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  return { locks: app.get(LockService), port };
}
