// A Nest application context with RedisLockModule whose @Locked method (renew: true, short ttl so that
// renewals really run) holds a lock, with a second call queued behind it, when app.close() is called.
// It reports what happened and then does nothing more: the test checks that the process exits by itself,
// i.e. that no timer or socket of the library outlives app.close().
//
// `finish`: 'within-grace' lets the running call finish once the queued call has been turned away (inside
// the grace period); 'never' leaves it pending forever, so that the grace period runs out.
//
// No constructor injection by type here: esbuild (which bundles the workers) does not emit decorator metadata, so every
// injection names its token.
import { Inject, Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Redis } from 'ioredis';
import { LockError, Locked, LockService, RedisLockModule } from '../../lib';
import { deferred } from '../support/deferred';
import { sleep } from '../support/event-loop';
import { send, workerArgs } from '../support/worker-runtime';

interface Args {
  url: string;
  key: string;
  ttl: number;
  claimWindow: number;
  grace: number;
  finish: 'within-grace' | 'never';
}

export type Report =
  | { type: 'running'; token: string; renewals: number }
  | {
      type: 'closed';
      closeMs: number;
      waiter: string;
      call: string;
    };

const args = workerArgs<Args>();

const entered = deferred<string>();
const finish = deferred<string>();

@Injectable()
class Job {
  constructor(@Inject(LockService) private readonly locks: LockService) {}

  @Locked('job:<0>', { ttl: args.ttl, renew: true, waitTimeout: 60_000 })
  async run(id: string): Promise<string> {
    entered.resolve(this.locks.currentLease()?.token ?? 'no lease');
    return finish.promise.then((value) => `${id} ${value}`);
  }
}

@Module({
  imports: [
    RedisLockModule.forRoot({
      url: args.url,
      claimWindow: args.claimWindow,
      gracePeriod: args.grace,
    }),
  ],
  providers: [Job],
})
class AppModule {}

/** What a promise settled with, as text: the value, the error's code, or 'pending' (never settled). */
function track(promise: Promise<unknown>): () => string {
  let state = 'pending';
  promise.then(
    (value) => {
      state = `resolved ${String(value)}`;
    },
    (error: unknown) => {
      state = `rejected ${error instanceof LockError ? error.code : String(error)}`;
    },
  );
  return () => state;
}

/** Polls `probe` every few ms until `predicate` holds (the worker's own view of Redis). */
async function until<T>(probe: () => Promise<T>, predicate: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await probe();
    if (predicate(value)) return value;
    if (Date.now() > deadline) throw new Error('condition not reached within 10 s');
    await sleep(5);
  }
}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  const locks = app.get(LockService);
  const job = app.get(Job);
  const client = locks.client as Redis;
  if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));

  const call = job.run(args.key);
  const callState = track(call);
  const token = await entered.promise;
  // A second call queues behind the first (and opens the wake subscription, a second socket).
  const waiter = job.run(args.key);
  const waiterState = track(waiter);
  const lockKey = `job:${args.key}`;
  await until(
    () => locks.inspect(lockKey),
    (info) => info.queueLength === 1,
  );
  // Renewals are running: the lease's remaining time goes back up at least twice.
  const owner = `lock:{${lockKey}}`;
  let renewals = 0;
  let last = await client.pttl(owner);
  await until(
    () => client.pttl(owner),
    (ttl) => {
      if (ttl > last) renewals++;
      last = ttl;
      return renewals >= 2;
    },
  );
  send({ type: 'running', token, renewals } satisfies Report);

  const started = performance.now();
  const closing = app.close();
  if (args.finish === 'within-grace') {
    // The queued call is turned away at once; the running one then finishes inside the grace period.
    waiter.catch(() => finish.resolve('finished'));
  }
  // The outcome of the waiter is read from waiterState; this only keeps its rejection handled.
  waiter.catch(() => {});
  await closing;
  const closeMs = performance.now() - started;
  // Let the call's own continuation (its release, its result) run before reporting on it.
  await new Promise((resolve) => setImmediate(resolve));
  send({ type: 'closed', closeMs, waiter: waiterState(), call: callState() } satisfies Report);
  // Nothing else: from here on the process must end by itself.
}

void main();
