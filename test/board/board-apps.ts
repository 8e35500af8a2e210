// Nest applications with the lock board mounted, on Express or Fastify, against one redis-server:
// several of them are the instances of one service. Closed after each test.
import {
  type CanActivate,
  ConsoleLogger,
  type ExecutionContext,
  type INestApplication,
  Injectable,
} from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import type request from 'supertest';
import {
  LockService,
  RedisLockBoardModule,
  type RedisLockBoardModuleOptions,
  RedisLockModule,
} from '../../lib';
import { bootApp } from '../support/nest-apps';

export type Platform = 'express' | 'fastify';

export interface BoardApp {
  app: INestApplication;
  locks: LockService;
  /** What supertest is given. */
  server: Parameters<typeof request>[0];
}

/** The guard of the board tests: lets through only `Authorization: Bearer s3cret`. */
@Injectable()
export class TokenGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const headers = context
      .switchToHttp()
      .getRequest<{ headers: Record<string, string | undefined> }>().headers;
    return headers.authorization === 'Bearer s3cret';
  }
}

/** An application instance on `platform` with the board at `options.path` (default 'locks'), initialised. */
export async function boardApp(
  url: string,
  platform: Platform,
  options: RedisLockBoardModuleOptions = {},
  listen = false,
): Promise<BoardApp & { address?: string }> {
  const fastify = platform === 'fastify';
  const app = await bootApp({
    imports: [RedisLockModule.forRoot({ url }), RedisLockBoardModule.forRoot(options)],
    adapter: fastify ? new FastifyAdapter() : undefined,
    // BOARD_LOG=1: the Express application logs to the console.
    logger: !fastify && process.env.BOARD_LOG ? new ConsoleLogger() : false,
    init: !listen,
  });
  let address: string | undefined;
  if (listen) {
    await app.listen(0, '127.0.0.1');
    address = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  } else if (fastify) {
    await app.getHttpAdapter().getInstance().ready();
  }
  return { app, locks: app.get(LockService), server: app.getHttpServer(), address };
}
