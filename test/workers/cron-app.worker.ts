// One instance of a Nest app whose scheduler fires two jobs every second (@nestjs/schedule), each under
// @Locked with waitTimeout 0 and onTimeout 'skip', the README's pattern for a job that must run on one
// instance only: 'minHold' holds its lock for `minHold` ms, 'plain' does not. Each job does nothing but
// report that it ran, with the wall-clock time, so the test can count runs per tick across instances.
//
// No constructor injection by type here: esbuild (which bundles the workers) does not emit decorator metadata.
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Cron, ScheduleModule } from '@nestjs/schedule';
import { Locked, RedisLockModule } from '../../lib';
import { onMessage, ready, send, workerArgs } from '../support/worker-runtime';

interface Args {
  url: string;
  minHold: number;
}

export type CronReport =
  | { type: 'ran'; job: 'minHold' | 'plain'; at: number }
  | { type: 'ready' | 'stopped' };

const args = workerArgs<Args>();

@Injectable()
class Jobs {
  @Cron('* * * * * *')
  @Locked('job:with-min-hold', { waitTimeout: 0, onTimeout: 'skip', minHold: args.minHold })
  async withMinHold(): Promise<void> {
    send({ type: 'ran', job: 'minHold', at: Date.now() } satisfies CronReport);
  }

  @Cron('* * * * * *')
  @Locked('job:without-min-hold', { waitTimeout: 0, onTimeout: 'skip' })
  async plain(): Promise<void> {
    send({ type: 'ran', job: 'plain', at: Date.now() } satisfies CronReport);
  }
}

@Module({
  imports: [ScheduleModule.forRoot(), RedisLockModule.forRoot({ url: args.url })],
  providers: [Jobs],
})
class AppModule {}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  await app.init();
  onMessage(async (message: { type: string }) => {
    if (message.type !== 'stop') return;
    await app.close();
    send({ type: 'stopped' } satisfies CronReport);
  });
  ready();
}

void main();
