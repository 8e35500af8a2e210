// Invalid @Locked declarations never reach a first call: wrong types, unknown names, a bad onTimeout or a
// malformed template throw when the class is defined (before any application can start); each message
// names Class.method. Any ttl from 10 ms is valid with every configuration: short leases shorter than
// the claim window start and serve.
import { describe, expect, it } from '@jest/globals';
import { Controller, Inject, Injectable, Post, Scope } from '@nestjs/common';
import request from 'supertest';
import {
  Locked,
  type LockedOptions,
  LockedRoute,
  LockService,
  LockUsageError,
  RedisLockModule,
} from '../../lib';
import { bootApp } from '../support/nest-apps';
import { useRedis } from '../support/redis-server';
import { thrown } from '../support/thrown';
import { connection } from './locked-fixtures';

const server = useRedis();

/** Defines a class with one @Locked method; throws whatever the decorator throws. */
function defineReports(options: unknown, template = 'report:<0>') {
  class Reports {
    @Locked(template, options as LockedOptions)
    run(_id: string) {}
  }
  return Reports;
}

describe('@Locked options checked when the class is defined', () => {
  it.each<[string, unknown, RegExp]>([
    [
      'an unknown option',
      { timeout: 5_000 },
      /@Locked\(\) on .*: Unknown option "timeout" in its options \(known: ttl, waitTimeout/,
    ],
    ['a negative ttl', { ttl: -1 }, /ttl must be an integer/],
    ['a NaN ttl', { ttl: Number.NaN }, /ttl must be an integer.*NaN/],
    ['a fractional ttl', { ttl: 1.5 }, /ttl must be an integer/],
    ['a negative waitTimeout', { waitTimeout: -1 }, /waitTimeout must be an integer/],
    ['a renew that is not a boolean', { renew: 'yes' }, /renew must be true or false/],
    ['a bad onTimeout', { onTimeout: 'ignore' }, /onTimeout must be 'throw' or 'skip'/],
    ['an empty service name', { service: '' }, /service must be the non-empty name/],
    ['options that are not an object', 'fast', /options must be an object/],
  ])('%s is a LockUsageError naming Reports.run', (_, options, why) => {
    let error: unknown;
    try {
      defineReports(options);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(LockUsageError);
    expect((error as Error).message).toContain('@Locked() on Reports.run');
    expect((error as Error).message).toMatch(why);
  });

  it.each([
    ['an empty template', ''],
    ['a placeholder without an argument index', 'report:<id>'],
    ['an unbalanced <', 'report:<0'],
    ['braces', '{report}:<0>'],
  ])('%s is a key error (LOCK_INVALID_KEY) naming Reports.run', (_, template) => {
    expect(thrown(() => defineReports({}, template))).toMatchObject({ code: 'LOCK_INVALID_KEY' });
    expect(() => defineReports({}, template)).toThrow(/Reports\.run/);
  });

  it.each([
    ['@Locked', Locked('report:<0>')],
    ['@LockedRoute', LockedRoute('report:<0>')],
  ])('%s applied as a standard (TC39) decorator says to turn on experimentalDecorators', (_, decorator) => {
    // A standard method decorator is called with (method, context) and no descriptor.
    const standard = decorator as unknown as (value: unknown, context: object) => unknown;
    expect(() => standard(() => 0, { kind: 'method', name: 'run' })).toThrow(LockUsageError);
    expect(() => standard(() => 0, { kind: 'method', name: 'run' })).toThrow(/experimentalDecorators/);
  });

  it('valid options define the class', () => {
    expect(() =>
      defineReports({ ttl: 5_000, waitTimeout: 0, renew: false, onTimeout: 'skip' }),
    ).not.toThrow();
  });
});

@Injectable()
class ShortLease {
  runs = 0;

  @Locked('short', { ttl: 1_000 })
  async run() {
    this.runs++;
  }
}

@Injectable()
class LongLease {
  @Locked('long', { ttl: 60_000 })
  async run() {}
}

@Controller('short')
class ShortLeaseController {
  @Post()
  @Locked('short-route', { ttl: 1_000 })
  handle() {
    return { served: true };
  }
}

@Injectable({ scope: Scope.REQUEST })
class RequestScopedShortLease {
  @Locked('short-request', { ttl: 1_000 })
  async run() {
    return 'ran';
  }
}

@Injectable()
class NamedShortLease {
  @Locked('short-named', { ttl: 500, service: 'fast' })
  async run() {}
}

@Injectable()
class UnknownConfiguration {
  @Locked('nowhere', { service: 'missing' })
  async run() {}
}

describe('@Locked options checked against the configuration at start-up', () => {
  it('a ttl of 1 000 ms (below the default claim window of 2 000 ms) on a provider starts, and the method runs', async () => {
    const app = await bootApp({
      imports: [RedisLockModule.forRoot({ ...connection(server()), prefix: 'short-provider:' })],
      providers: [ShortLease],
    });
    await app.get(ShortLease).run();
    await app.get(ShortLease).run();
    expect(app.get(ShortLease).runs).toBe(2);
    // The lease was taken with ttl 1 000 and released: only the fencing counter is left.
    expect(await server().keys('short-provider:*')).toEqual(['short-provider:{short}:fence']);
  });

  it('a ttl of 1 000 ms on a controller starts, and the route serves over HTTP', async () => {
    const app = await bootApp({
      imports: [RedisLockModule.forRoot({ ...connection(server()), prefix: 'short-route:' })],
      controllers: [ShortLeaseController],
    });
    for (let i = 0; i < 3; i++) {
      const response = await request(app.getHttpServer()).post('/short');
      expect(response.status).toBe(201);
      expect(response.body).toEqual({ served: true });
    }
    expect(await server().keys('short-route:*')).toEqual(['short-route:{short-route}:fence']);
  });

  it('a ttl of 1 000 ms on a request-scoped provider starts, and the method runs', async () => {
    const app = await bootApp({
      imports: [RedisLockModule.forRoot({ ...connection(server()) })],
      providers: [RequestScopedShortLease],
    });
    const scoped = await app.resolve(RequestScopedShortLease);
    expect(await scoped.run()).toBe('ran');
  });

  it('a ttl longer than the module defaults.maxHold makes app.init() reject, naming the method', async () => {
    const app = await bootApp({
      imports: [RedisLockModule.forRoot({ ...connection(server()), defaults: { maxHold: 30_000 } })],
      providers: [LongLease],
      init: false,
    });
    const error = await app.init().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(LockUsageError);
    expect((error as Error).message).toMatch(
      /^@Locked\(\) on LongLease\.run: maxHold \(from defaults\) \(30000 ms\) must not be shorter than ttl \(60000 ms\)/,
    );
  });

  it('@Locked with a maxHold below its own ttl is refused where it is declared (class definition), naming both', () => {
    expect(() => Locked('capped', { ttl: 5_000, maxHold: 4_000 })({}, 'run', { value: () => {} })).toThrow(
      /maxHold \(4000 ms\) must not be shorter than ttl \(5000 ms\)/,
    );
  });

  it('a short ttl starts under every named configuration, whatever its claim window', async () => {
    const unnamed = RedisLockModule.forRoot({ ...connection(server()) });
    const fast = RedisLockModule.forRoot({ ...connection(server()), name: 'fast', claimWindow: 100 });
    const wide = RedisLockModule.forRoot({ ...connection(server()), name: 'fast', claimWindow: 10_000 });
    for (const named of [fast, wide]) {
      const app = await bootApp({ imports: [unnamed, named], providers: [NamedShortLease] });
      await expect(app.get(NamedShortLease).run()).resolves.toBeUndefined();
    }
  });

  it('a service name no configuration has fails at start-up, naming the class and the configuration', async () => {
    const attempt = bootApp({
      imports: [RedisLockModule.forRoot({ ...connection(server()) })],
      providers: [UnknownConfiguration],
    });
    // Nest's own dependency error: it names the class, and its tokens name the forRoot that is missing.
    await expect(attempt).rejects.toThrow(/UnknownConfiguration[\s\S]*@Locked\(\{ service: 'missing' \}\)/);
    await expect(attempt).rejects.toThrow("RedisLockModule.forRoot({ name: 'missing' })");
  });
});

@Injectable()
class BeyondArguments {
  @Locked('order:<3.id>')
  async pay(_dto: { id: number }) {}
}

@Injectable()
class NoArguments {
  @Locked('job:<0>')
  async run() {}
}

@Injectable()
class WithinArguments {
  runs: unknown[][] = [];

  @Locked('a:<1>')
  async defaulted(a: string, b = 'b') {
    this.runs.push([a, b]);
  }

  @Locked('a:<4>')
  async rest(...args: string[]) {
    this.runs.push(args);
  }

  @Locked('a:<0>:<1.id>')
  async exact(a: string, b: { id: number }) {
    this.runs.push([a, b.id]);
  }
}

describe('@Locked templates checked against the method at start-up', () => {
  it.each<[string, new () => object, RegExp]>([
    [
      'BeyondArguments',
      BeyondArguments,
      /^@Locked\('order:<3\.id>'\) on BeyondArguments\.pay: <3> reads argument 4, but the method declares 1 parameter\. Point at an argument it receives \(<0> to <0>\)/,
    ],
    [
      'NoArguments',
      NoArguments,
      /^@Locked\('job:<0>'\) on NoArguments\.run: <0> reads argument 1, but the method declares no parameters/,
    ],
  ])('an index the method cannot receive stops %s from starting', async (_, provider, message) => {
    const app = await bootApp({
      imports: [RedisLockModule.forRoot({ ...connection(server()), prefix: 'beyond:' })],
      providers: [provider],
      init: false,
    });
    const error = await app.init().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toMatchObject({ code: 'LOCK_INVALID_KEY' });
    expect((error as Error).message).toMatch(message);
    expect(await server().keys('beyond:*')).toEqual([]);
  });

  it('default and rest parameters count: those templates start and resolve', async () => {
    const app = await bootApp({
      imports: [RedisLockModule.forRoot({ ...connection(server()) })],
      providers: [WithinArguments],
    });
    const methods = app.get(WithinArguments);
    await methods.defaulted('x', 'y');
    await methods.rest('a', 'b', 'c', 'd', 'e');
    await methods.exact('x', { id: 7 });
    expect(methods.runs).toEqual([
      ['x', 'y'],
      ['a', 'b', 'c', 'd', 'e'],
      ['x', 7],
    ]);
  });
});

@Injectable()
class Injected {
  constructor(@Inject(LockService) readonly locks: LockService) {}
}

describe('@Locked outside Nest', () => {
  it('an instance Nest did not create rejects with a LockUsageError saying how to fix it', async () => {
    await bootApp({ imports: [RedisLockModule.forRoot({ ...connection(server()) })], providers: [Injected] });
    const error = await new ShortLease().run().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(LockUsageError);
    expect((error as Error).message).toMatch(/ShortLease\.run: no LockInterceptor on this instance/);
  });
});
