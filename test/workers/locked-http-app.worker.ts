// One instance of a Nest HTTP app (Express or Fastify) with a @Locked handler, for the suites about
// requests that several processes send to several instances. The handler's body is the critical section:
// it counts who is inside (a second one there is an overlap) and appends the request's call id to a Redis
// list, so the test reads the order in which the instances served the line from Redis itself.
//
// No constructor injection by type here: esbuild (which bundles the workers) does not emit decorator metadata.
import type { AddressInfo } from 'node:net';
import { Controller, Headers, Module, Param, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Redis } from 'ioredis';
import { Locked, RedisLockModule } from '../../lib';
import { onMessage, send, workerArgs } from '../support/worker-runtime';

interface Args {
  url: string;
  platform: 'express' | 'fastify';
  /** Redis keys the bodies write: the list of calls served, and the count of bodies inside. */
  served: string;
  inside: string;
}

export type AppReport =
  | { type: 'listening'; port: number }
  | { type: 'ran'; call: string; overlap: boolean }
  | { type: 'stopped' };

const args = workerArgs<Args>();
const redis = new Redis(args.url);

@Controller('orders')
class Orders {
  @Post(':id/pay')
  @Locked('order:<0>', { waitTimeout: 120_000 })
  async pay(@Param('id') _id: string, @Headers('x-call') call: string): Promise<string> {
    const overlap = (await redis.incr(args.inside)) !== 1;
    await redis.rpush(args.served, call);
    send({ type: 'ran', call, overlap } satisfies AppReport);
    await redis.decr(args.inside);
    return 'paid';
  }
}

@Module({ imports: [RedisLockModule.forRoot({ url: args.url })], controllers: [Orders] })
class AppModule {}

async function main(): Promise<void> {
  const app =
    args.platform === 'fastify'
      ? await NestFactory.create(AppModule, new FastifyAdapter(), { logger: false })
      : await NestFactory.create(AppModule, { logger: false });
  await app.listen(0, '127.0.0.1');
  onMessage(async (message: { type: string }) => {
    if (message.type !== 'stop') return;
    await app.close();
    redis.disconnect();
    send({ type: 'stopped' } satisfies AppReport);
  });
  send({ type: 'listening', port: (app.getHttpServer().address() as AddressInfo).port } satisfies AppReport);
}

void main();
