/**
 * One Nest application of the Nest benchmarks (bench/nest-cpu.ts, bench/nest-load.ts), forked once per
 * variant with the variant's lock library. `POST /pay/:id` calls a service method that does GET, 2 ms,
 * SET under the variant's decorator (no decorator in the `none` and `module` variants); `POST /plain/:id` does the same
 * work and never locks, to show what importing a module costs a route that takes no lock. Compiled with
 * tsc (decorator metadata), run as plain Node, as an application runs in production.
 *
 * Variants, each configured as its README shows:
 * - none: no lock module;
 * - module: RedisLockModule imported, no @Locked anywhere;
 * - ours: RedisLockModule and `@Locked('order:<0>', { ttl: 5000 })`;
 * - ours-board: `ours` with the lock board mounted (RedisLockBoardModule), nobody looking at it;
 * - ours-handler: `@Locked('order:<0>')` on the route's handler itself rather than on a service method
 *   (the shape that followed its request before every locked call did);
 * - ours-all-routes: `ours` with `requests: true` written out, which is the default
 *   (kept so that older runs can be repeated on a baseline build, where it was not);
 * - nest-redlock: RedlockModule.register and `@Redlock((_, id) => \`order:${id}\`, 5000)`;
 * - murlock: MurLockModule.forRoot and `@MurLock(5000, 'id')`;
 * - ours-baseline: `ours` on another build of this library (BENCH_DIST), to compare two builds.
 *
 * How long a call may wait for a busy lock, for the load benchmark (unset: each library's defaults):
 * - BENCH_WAIT_TIMEOUT (ms): `ours` gets it as `waitTimeout`, its own bound on the wait;
 * - BENCH_NO_DEADLINE=1: ours takes nothing from a request (requests: false);
 * - BENCH_NO_SHED=1: ours turns nobody away at the door (shed: false);
 * - BENCH_SHED_DOOR=1: ours keeps the door but no standing-line rule ('door' under the shed hook);
 * - BENCH_SHED_PLACES (places): ours paces the standing-line rule's target so ({ places } under it);
 * - BENCH_STANDING_LINE (ms): ours fixes the standing-line rule's target so ({ target } under it);
 * - BENCH_WORK_MS (ms): the critical section's work between its GET and SET (default 2);
 * - BENCH_RETRY_MS (ms): nest-redlock and murlock retry at this fixed interval instead of their
 *   defaults, as many times as fit in BENCH_WAIT_TIMEOUT (they have a retry count, not a deadline).
 * BENCH_SECTIONS=1 counts requests in the `/pay` handler and completed critical sections per id, which
 * the harness reads over IPC to tell lost updates from work done for a client that stopped waiting.
 * BENCH_QUIET=1 turns Nest's logger off.
 */
import 'reflect-metadata';
import { Redlock as RedlockDecorator, RedlockModule } from '@anchan828/nest-redlock';
import { Controller, type DynamicModule, Injectable, Module, Param, Post, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import Redis from 'ioredis';
import { MurLock, MurLockModule } from 'murlock';
import type * as Library from 'nestjs-redis-lock';

/**
 * This library as built (`dist/`), or another build of it (`BENCH_DIST`, a directory inside the
 * project), so that two builds can be compared in one run.
 */
const { Locked, RedisLockBoardModule, RedisLockModule }: typeof Library = require(
  process.env.BENCH_DIST ?? 'nestjs-redis-lock',
);

/** `ours-baseline` is `ours` on the build in BENCH_DIST. */
const variant = (process.env.BENCH_VARIANT ?? 'none').replace(/-baseline$/, '');
const redisPort = Number(process.env.BENCH_REDIS_PORT);
const redisUrl = `redis://127.0.0.1:${redisPort}`;
const waitTimeout = process.env.BENCH_WAIT_TIMEOUT ? Number(process.env.BENCH_WAIT_TIMEOUT) : undefined;
const retryMs = process.env.BENCH_RETRY_MS ? Number(process.env.BENCH_RETRY_MS) : undefined;
/** Retries at `retryMs` that cover the wait bound (10 s, our default, when none is given). */
const retries = retryMs ? Math.ceil((waitTimeout ?? 10_000) / retryMs) : 0;

/** Requests inside the `/pay` handler, and critical sections completed (SET done) per id. */
const sections = process.env.BENCH_SECTIONS ? { inflight: 0, done: new Map<string, number>() } : undefined;

/** The application's own data connection (the same in every variant). */
const data = new Redis(redisPort, { lazyConnect: false });
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const WORK_MS = Number(process.env.BENCH_WORK_MS ?? 2);

/** GET, 2 ms of "work" (BENCH_WORK_MS), SET: the critical section of every variant. */
async function work(id: string): Promise<number> {
  // Not `order:<id>`: nest-redlock and murlock use the key as given, which would be the lock itself.
  const key = `balance:${id}`;
  const seen = Number((await data.get(key)) ?? 0);
  await sleep(WORK_MS);
  await data.set(key, String(seen + 1));
  sections?.done.set(id, (sections.done.get(id) ?? 0) + 1);
  return seen + 1;
}

@Injectable()
class PlainService {
  async pay(id: string): Promise<number> {
    return work(id);
  }
}

@Injectable()
class OursService {
  @Locked('order:<0>', waitTimeout === undefined ? { ttl: 5000 } : { ttl: 5000, waitTimeout })
  async pay(id: string): Promise<number> {
    return work(id);
  }
}

@Injectable()
class RedlockService {
  @RedlockDecorator<RedlockService['pay']>((_target, id: string) => `order:${id}`, 5000)
  async pay(id: string): Promise<number> {
    return work(id);
  }
}

@Injectable()
class MurlockService {
  @MurLock(5000, 'id')
  async pay(id: string): Promise<number> {
    return work(id);
  }
}

/**
 * murlock with a fixed retry interval: the decorator's own `wait` (its README's "fixed wait strategy per
 * method"). The module's `wait` alone would not do: without a decorator `wait`, murlock sleeps
 * `wait × attempt`, a linear back-off.
 */
@Injectable()
class MurlockFixedRetryService {
  @MurLock(5000, retryMs ?? 0, 'id')
  async pay(id: string): Promise<number> {
    return work(id);
  }
}

/** What a route calls: the service of the variant. */
abstract class PayService {
  abstract pay(id: string): Promise<number>;
}

@Controller()
class PayController {
  constructor(
    private readonly service: PayService,
    private readonly plain: PlainService,
  ) {}

  @Post('pay/:id')
  async pay(@Param('id') id: string): Promise<{ paid: number }> {
    if (!sections) return { paid: await this.service.pay(id) };
    // Counted here rather than per socket: a handler goes on after its client has hung up.
    sections.inflight++;
    try {
      return { paid: await this.service.pay(id) };
    } finally {
      sections.inflight--;
    }
  }

  @Post('plain/:id')
  async unlocked(@Param('id') id: string): Promise<{ paid: number }> {
    return { paid: await this.plain.pay(id) };
  }
}

/**
 * What ours is told beyond its connection: BENCH_NO_DEADLINE=1, take nothing from a request
 * (its deadline, its close); BENCH_NO_SHED=1, turn nobody away at the door (each option's other side). Only what is set,
 * so that a build without these options (`-baseline`) starts.
 */
// The other overload rules are no options: they are set under the library's test hook, by its name.
const SHED_RULE = Symbol.for('nestjs-redis-lock.shed-rule');
const shedRule = process.env.BENCH_SHED_DOOR
  ? 'door'
  : process.env.BENCH_SHED_PLACES
    ? { places: Number(process.env.BENCH_SHED_PLACES) }
    : process.env.BENCH_STANDING_LINE
      ? { target: Number(process.env.BENCH_STANDING_LINE), interval: 100 }
      : undefined;
const extraOptions = {
  ...(process.env.BENCH_NO_DEADLINE ? { requests: false } : {}),
  ...(process.env.BENCH_NO_SHED ? { shed: false } : {}),
  ...(shedRule ? { [SHED_RULE]: shedRule } : {}),
};

function lockImports(): DynamicModule[] {
  switch (variant) {
    case 'module':
    case 'ours':
    case 'ours-handler':
      return [
        // Through a factory: forRoot passes on only the options' named keys, not the shed hook.
        RedisLockModule.forRootAsync({
          useFactory: () => ({ url: redisUrl, ...extraOptions }),
          httpErrors: !process.env.BENCH_NO_HTTP,
        }),
      ];
    case 'ours-all-routes':
      return [
        RedisLockModule.forRoot({
          url: redisUrl,
          httpErrors: !process.env.BENCH_NO_HTTP,
          requests: true,
          ...extraOptions,
        }),
      ];
    case 'ours-board':
      return [
        RedisLockModule.forRoot({ url: redisUrl, httpErrors: !process.env.BENCH_NO_HTTP }),
        RedisLockBoardModule.forRoot(),
      ];
    case 'nest-redlock':
      return [
        RedlockModule.register({
          clients: [new Redis(redisPort)],
          duration: 5000,
          // redlock's defaults otherwise: 10 retries, 200 ms ± 100 ms apart.
          ...(retryMs
            ? { settings: { retryDelay: retryMs, retryJitter: retryMs / 2, retryCount: retries } }
            : {}),
        }),
      ];
    case 'murlock':
      return [
        MurLockModule.forRoot({
          redisOptions: { url: redisUrl },
          wait: retryMs ?? 1000,
          maxAttempts: retryMs ? retries : 3,
          logLevel: 'none',
          ignoreUnlockFail: false,
          failFastOnRedisError: false,
          blocking: false,
        }),
      ];
    default:
      return [];
  }
}

const services: Record<string, Type<PayService>> = {
  ours: OursService,
  'ours-board': OursService,
  'ours-all-routes': OursService,
  'nest-redlock': RedlockService,
  murlock: retryMs ? MurlockFixedRetryService : MurlockService,
};

/** ours-handler: the lock on the controller's handler, with the same two routes. */
@Controller()
class LockedHandlerController {
  constructor(private readonly plain: PlainService) {}

  @Post('pay/:id')
  @Locked('order:<0>', waitTimeout === undefined ? { ttl: 5000 } : { ttl: 5000, waitTimeout })
  async pay(@Param('id') id: string): Promise<{ paid: number }> {
    if (!sections) return { paid: await work(id) };
    sections.inflight++;
    try {
      return { paid: await work(id) };
    } finally {
      sections.inflight--;
    }
  }

  @Post('plain/:id')
  async unlocked(@Param('id') id: string): Promise<{ paid: number }> {
    return { paid: await this.plain.pay(id) };
  }
}

@Module({})
class AppModule {
  static create(): DynamicModule {
    return {
      module: AppModule,
      imports: lockImports(),
      controllers: [variant === 'ours-handler' ? LockedHandlerController : PayController],
      providers: [PlainService, { provide: PayService, useClass: services[variant] ?? PlainService }],
    };
  }
}

let directId = 0;

/**
 * The service method called directly, without HTTP, `count` times with `concurrency` calls in flight:
 * the process's CPU per call, µs.
 */
async function direct(service: PayService, count: number, concurrency: number): Promise<number> {
  let started = 0;
  const loop = async () => {
    while (started < count) {
      started++;
      await service.pay(`d${++directId}`);
    }
  };
  const before = process.cpuUsage();
  await Promise.all(Array.from({ length: concurrency }, loop));
  const used = process.cpuUsage(before);
  return (used.user + used.system) / count;
}

/**
 * The unlocked service method called back to back on one id for `ms`: how fast one hot id can go when
 * nothing but the critical section itself stands between two calls.
 */
async function serial(service: PlainService, ms: number): Promise<{ count: number; ms: number }> {
  const start = performance.now();
  let count = 0;
  while (performance.now() - start < ms) {
    await service.pay('serial');
    count++;
  }
  return { count, ms: performance.now() - start };
}

interface Message {
  type: 'cpu' | 'direct' | 'serial' | 'sections' | 'stop';
  count: number;
  concurrency: number;
  locked: boolean;
  ms: number;
}

async function main(): Promise<void> {
  // BENCH_QUIET: no Nest logging at all. Under overload the peers log a stack trace per failed request
  // (redlock's with every attempt's client in it), and the logging would be what the run measures.
  const app = await NestFactory.create(AppModule.create(), {
    logger: process.env.BENCH_QUIET ? false : ['error', 'warn'],
  });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  // The harness reads this process's own CPU time before and after a batch of requests.
  process.on('message', (message: Message) => {
    if (message.type === 'cpu') process.send?.({ type: 'cpu', usage: process.cpuUsage() });
    if (message.type === 'serial') {
      serial(app.get(PlainService), message.ms).then((result) =>
        process.send?.({ type: 'serial', ...result }),
      );
    }
    if (message.type === 'sections') {
      process.send?.({
        type: 'sections',
        inflight: sections?.inflight ?? 0,
        done: Object.fromEntries(sections?.done ?? []),
      });
    }
    if (message.type === 'direct') {
      const service = message.locked ? app.get(PayService) : app.get(PlainService);
      direct(service, message.count, message.concurrency).then((cpu) =>
        process.send?.({ type: 'direct', cpu }),
      );
    }
    if (message.type === 'stop') {
      app.close().then(
        () => {
          data.disconnect();
          process.exit(0);
        },
        () => process.exit(1),
      );
    }
  });
  process.send?.({ type: 'ready', port });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
