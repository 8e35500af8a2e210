// @Locked on classes of every Nest scope, and with several module configurations: request-scoped and
// transient providers and a request-scoped controller get their interceptor like singletons do and exclude
// concurrent requests; `@Locked(key, { service })` takes its lock on the Redis of the configuration named.
import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from '@jest/globals';
import { Controller, Inject, Injectable, Param, Post, Scope } from '@nestjs/common';
import request from 'supertest';
import { InjectLockService, Locked, LockService, RedisLockModule } from '../../lib';
import { bootApp } from '../support/nest-apps';
import { type RedisServer, useRedis } from '../support/redis-server';
import { connection, Meter, queued, send } from './locked-fixtures';

const server = useRedis();
const other = useRedis();
let meter: Meter;

beforeEach(() => {
  meter = new Meter();
});

/** What each scoped handler answers: which instance ran it, and the key of the lease it held. */
async function work(instance: string, locks: LockService) {
  const key = locks.currentLease()?.key;
  await meter.pass(null);
  return { instance, key };
}

@Injectable({ scope: Scope.REQUEST })
class RequestLedger {
  readonly instance = randomUUID();

  constructor(@Inject(LockService) private readonly locks: LockService) {}

  @Locked('ledger:<0>')
  async write(_id: string) {
    return work(this.instance, this.locks);
  }
}

@Controller('ledger')
class LedgerController {
  constructor(private readonly ledger: RequestLedger) {}

  @Post(':id')
  write(@Param('id') id: string) {
    return this.ledger.write(id);
  }
}

@Injectable({ scope: Scope.TRANSIENT })
class TransientCounter {
  readonly instance = randomUUID();

  constructor(@Inject(LockService) private readonly locks: LockService) {}

  @Locked('counter:<0>')
  async bump(_id: string) {
    return work(this.instance, this.locks);
  }
}

@Controller('counters')
class CountersController {
  constructor(private readonly counter: TransientCounter) {}

  @Post(':id')
  bump(@Param('id') id: string) {
    return this.counter.bump(id);
  }
}

@Controller({ path: 'scoped', scope: Scope.REQUEST })
class RequestScopedController {
  readonly instance = randomUUID();

  constructor(@Inject(LockService) private readonly locks: LockService) {}

  @Post(':id')
  @Locked('scoped:<0>')
  async handle(@Param('id') _id: string) {
    return work(this.instance, this.locks);
  }
}

describe('@Locked in every scope', () => {
  async function app() {
    const nest = await bootApp({
      imports: [RedisLockModule.forRoot({ ...connection(server()), prefix: 'scopes:' })],
      controllers: [LedgerController, CountersController, RequestScopedController],
      providers: [RequestLedger, TransientCounter],
    });
    return { locks: nest.get(LockService), http: () => request(nest.getHttpServer()) };
  }

  it.each([
    ['a request-scoped provider', 'ledger', true],
    ['a transient provider', 'counters', false],
    ['a request-scoped controller', 'scoped', true],
  ])('%s: @Locked works and excludes concurrent requests on one key', async (_, path, perRequest) => {
    const { http, locks } = await app();
    const key = `${path === 'counters' ? 'counter' : path}:x`;
    const first = send(http().post(`/${path}/x`));
    await meter.entries(1);
    const second = send(http().post(`/${path}/x`));
    await queued(locks, key, 1);
    expect(meter.entered).toBe(1);
    meter.open();
    const responses = [await first, await second];
    expect(responses.map((r) => r.status)).toEqual([201, 201]);
    expect(responses.map((r) => r.body.key)).toEqual([key, key]);
    expect(meter.max).toBe(1);
    // The scope is real: a request-scoped class is a new instance per request, a transient one is not.
    const instances = new Set(responses.map((r) => r.body.instance));
    expect(instances.size).toBe(perRequest ? 2 : 1);
  });
});

@Injectable()
class Billing {
  constructor(
    @InjectLockService('orders') readonly orderLocks: LockService,
    @InjectLockService('payments') readonly paymentLocks: LockService,
  ) {}

  @Locked('invoice:<0>', { service: 'orders' })
  async order(_id: string) {
    return meter.pass(this.orderLocks.currentLease()?.key);
  }

  @Locked('invoice:<0>', { service: 'payments' })
  async pay(_id: string) {
    return meter.pass(this.paymentLocks.currentLease()?.key);
  }
}

describe('@Locked with named configurations on two Redis servers', () => {
  async function app() {
    const nest = await bootApp({
      imports: [
        RedisLockModule.forRoot({ ...connection(server()), name: 'orders' }),
        RedisLockModule.forRoot({ ...connection(other()), name: 'payments' }),
      ],
      providers: [Billing],
    });
    return nest.get(Billing);
  }

  it.each<[string, 'order' | 'pay', () => RedisServer, () => RedisServer]>([
    ['orders', 'order', () => server(), () => other()],
    ['payments', 'pay', () => other(), () => server()],
  ])(
    "{ service: '%s' } takes the lock through that configuration, on its Redis only",
    async (_, method, mine, theirs) => {
      const billing = await app();
      const [own, foreign] =
        method === 'order'
          ? [billing.orderLocks, billing.paymentLocks]
          : [billing.paymentLocks, billing.orderLocks];
      // A key of its own, so that no earlier test's fence key is around.
      const key = `invoice:${method}`;
      const call = billing[method](method);
      await meter.entries(1);
      expect((await own.inspect(key)).held).toBe(true);
      expect((await foreign.inspect(key)).held).toBe(false);
      expect(await mine().keys(`lock:{${key}}`)).toEqual([`lock:{${key}}`]);
      expect(await theirs().keys(`lock:{${key}}*`)).toEqual([]);
      meter.open();
      await expect(call).resolves.toBe(key);
      expect((await own.inspect(key)).held).toBe(false);
    },
  );

  it('the same key under two configurations is two different locks: both calls run at once', async () => {
    const billing = await app();
    const calls = [billing.order('2'), billing.pay('2')];
    await meter.entries(2);
    expect(meter.running).toBe(2);
    meter.open();
    expect(await Promise.all(calls)).toEqual(['invoice:2', 'invoice:2']);
  });
});
