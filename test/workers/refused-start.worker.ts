// A Nest application whose start-up is refused by a @Locked declaration: '<1>' on a method that takes
// one parameter. Its bootstrap catches the error and reports it, as `bootstrap().catch(console.error)`
// does, and then does nothing more: the test checks that the process ends by itself, i.e. that the
// module let go of the Redis connection it had opened.
//
// No constructor injection by type here: esbuild (which bundles the workers) does not emit decorator
// metadata, so every injection names its token.
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockError, Locked, LockUsageError, RedisLockModule } from '../../lib';
import { send, workerArgs } from '../support/worker-runtime';

const { url } = workerArgs<{ url: string }>();

export interface Report {
  type: 'refused';
  usage: boolean;
  code: string | undefined;
  message: string;
}

@Injectable()
class Orders {
  @Locked('order:<1>')
  async ship(_id: string): Promise<string> {
    return 'shipped';
  }
}

@Module({ imports: [RedisLockModule.forRoot({ url })], providers: [Orders] })
class AppModule {}

async function bootstrap(): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  await app.close();
}

bootstrap().catch((error: unknown) => {
  const e = error as Error;
  send({
    type: 'refused',
    usage: error instanceof LockUsageError,
    code: error instanceof LockError ? error.code : undefined,
    message: e.message,
  } satisfies Report);
});
