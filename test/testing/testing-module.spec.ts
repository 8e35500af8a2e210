// RedisLockTestingModule with no Redis anywhere: @Locked methods on a service and on a controller keep
// their promises on the in-memory store (exclusion, FIFO, waitTimeout, onTimeout 'skip', reentrancy,
// increasing fences), with RedisLockModule's tokens, named configurations, validation and typed errors.
// scripts/no-redis-check.sh runs this directory with redis-server hidden, REDIS_URL unset and no
// network, under --detectOpenHandles.
import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Controller, Inject, Injectable, Param, Post, type Type } from '@nestjs/common';
import {
  getLockServiceToken,
  InjectLockService,
  type Lease,
  Locked,
  LockInterceptor,
  LockTimeoutError,
  LockUsageError,
  RedisLockHealthIndicator,
  RedisLockModule,
} from 'nestjs-redis-lock';
import { LockService, MemoryLockBackend, RedisLockTestingModule } from 'nestjs-redis-lock/testing';
import request from 'supertest';
import { REDIS_LOCK_TESTING_MODULE_OPTIONS } from '../../lib/testing/redis-lock-testing.module';
import { type Deferred, deferred } from '../support/deferred';
import { until } from '../support/lock-fixtures';
import { bootApp } from '../support/nest-apps';

/** What the locked methods below do while they hold the lock: tests open and close it. */
const gates = new Map<string, Deferred<void>>();
const gate = (id: string) => gates.get(id)?.promise;

@Injectable()
class Ledger {
  balance = 0;
  readonly served: string[] = [];

  constructor(@Inject(LockService) readonly locks: LockService) {}

  /** Read, await, write: loses updates unless calls on one account run one at a time. */
  @Locked('account:<0>', { ttl: 5_000, waitTimeout: 10_000 })
  async deposit(_account: string, amount: number): Promise<number> {
    const before = this.balance;
    await nextTurn();
    this.balance = before + amount;
    return this.balance;
  }

  /** Records the order it was served in; holds the lock until the test opens `gate(label)`. */
  @Locked('queue:<0>', { waitTimeout: 10_000 })
  async serve(_queue: string, label: string): Promise<number> {
    this.served.push(label);
    await gate(label);
    return this.locks.currentLease()?.fence ?? -1;
  }

  @Locked('queue:<0>', { waitTimeout: 50 })
  async impatient(_queue: string): Promise<string> {
    return 'ran';
  }

  @Locked('queue:<0>', { waitTimeout: 0, onTimeout: 'skip' })
  async onceOnly(_queue: string): Promise<string | undefined> {
    return 'ran';
  }

  /** Calls itself on the key it holds: the nested calls must not wait for it. */
  @Locked('account:<0>', { waitTimeout: 1_000 })
  async audit(account: string, depth: number): Promise<Array<string | undefined>> {
    const token = this.locks.currentLease(`account:${account}`)?.token;
    return depth === 0 ? [token] : [token, ...(await this.audit(account, depth - 1))];
  }
}

/** On the named configuration 'payments' only. */
@Injectable()
class Refunds {
  constructor(@InjectLockService('payments') readonly locks: LockService) {}

  @Locked('refund:<0>', { service: 'payments', waitTimeout: 0 })
  async refund(_id: string): Promise<string | undefined> {
    return this.locks.currentLease()?.key;
  }
}

@Controller('orders')
class OrdersController {
  paid = 0;

  @Post(':id/pay')
  @Locked('order:<0>', { waitTimeout: 50 })
  async pay(@Param('id') id: string) {
    const before = this.paid;
    await gate(`pay:${id}`);
    this.paid = before + 1;
    return { id, paid: this.paid };
  }
}

afterEach(() => {
  for (const id of [...gates.keys()]) gates.get(id)?.resolve();
  gates.clear();
});

const boot = (imports = [RedisLockTestingModule.forRoot()], providers: Type[] = [Ledger]) =>
  bootApp({ imports, providers, controllers: [OrdersController] });

/** How long a test waits for a lock state it brought about (in memory it takes a few turns). */
const WAIT = 2_000;

const queueLength = async (locks: LockService, key: string) => (await locks.inspect(key)).queueLength;

describe('RedisLockTestingModule.forRoot() on a service', () => {
  it('provides the same tokens as RedisLockModule, on the memory store', async () => {
    const app = await boot();
    const locks = app.get(LockService);
    expect(locks).toBeInstanceOf(LockService);
    expect(app.get(Ledger).locks).toBe(locks);
    expect(app.get(LockInterceptor)).toBeInstanceOf(LockInterceptor);
    expect(() => locks.client).toThrow(/keeps its locks in memory/);
    expect(await app.get(RedisLockHealthIndicator).isHealthy()).toEqual({
      'redis-lock': { status: 'up', store: 'memory' },
    });
  });

  it('excludes: 50 concurrent deposits with an await inside lose no update', async () => {
    const app = await boot();
    const ledger = app.get(Ledger);
    await Promise.all(Array.from({ length: 50 }, () => ledger.deposit('1', 2)));
    expect(ledger.balance).toBe(100);
    // The same code without the lock loses updates: what the lock is shown to prevent.
    const unlocked = { balance: 0 };
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        const before = unlocked.balance;
        await nextTurn();
        unlocked.balance = before + 2;
      }),
    );
    expect(unlocked.balance).toBeLessThan(100);
  });

  it('serves waiters in the order they asked (FIFO), each with a greater fence', async () => {
    const app = await boot();
    const ledger = app.get(Ledger);
    const locks = app.get(LockService);
    const labels = ['first', 'w1', 'w2', 'w3', 'w4', 'w5'];
    for (const label of labels) gates.set(label, deferred());
    const calls: Promise<number>[] = [];
    for (const [i, label] of labels.entries()) {
      calls.push(ledger.serve('q', label));
      // Each caller is in line before the next one asks.
      await until(
        () => queueLength(locks, 'queue:q'),
        (n) => n === i,
        WAIT,
      );
    }
    for (const label of labels) gates.get(label)?.resolve();
    const fences = await Promise.all(calls);
    expect(ledger.served).toEqual(labels);
    for (let i = 1; i < fences.length; i++) expect(fences[i]).toBeGreaterThan(fences[i - 1]);
  });

  it('waitTimeout rejects with LockTimeoutError; onTimeout skip returns undefined without running', async () => {
    const app = await boot();
    const ledger = app.get(Ledger);
    gates.set('holder', deferred());
    const holder = ledger.serve('busy', 'holder');
    await until(
      () => app.get(LockService).inspect('queue:busy'),
      (info) => info.held,
      WAIT,
    );
    const started = Date.now();
    await expect(ledger.impatient('busy')).rejects.toBeInstanceOf(LockTimeoutError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    await expect(ledger.onceOnly('busy')).resolves.toBeUndefined();
    gates.get('holder')?.resolve();
    await holder;
    await expect(ledger.onceOnly('busy')).resolves.toBe('ran');
  });

  it('is reentrant: nested calls on a held key run under the same lease', async () => {
    const app = await boot();
    const tokens = await app.get(Ledger).audit('7', 3);
    expect(tokens).toHaveLength(4);
    expect(tokens[0]).toEqual(expect.any(String));
    expect(new Set(tokens).size).toBe(1);
  });
});

describe('RedisLockTestingModule on a controller, over HTTP', () => {
  it('runs one request at a time per key; a timed-out one gets 409 with Retry-After', async () => {
    const app = await boot();
    const server = app.getHttpServer();
    gates.set('pay:9', deferred());
    const first = request(server).post('/orders/9/pay');
    const firstDone = first.then((response) => response);
    const locks = app.get(LockService);
    await until(
      () => locks.inspect('order:9'),
      (info) => info.held,
      WAIT,
    );
    const second = await request(server).post('/orders/9/pay');
    expect(second.status).toBe(409);
    expect(second.headers['retry-after']).toBe('1');
    gates.get('pay:9')?.resolve();
    expect((await firstDone).body).toEqual({ id: '9', paid: 1 });
    expect((await request(server).post('/orders/10/pay')).body).toEqual({ id: '10', paid: 2 });
  });
});

describe('configurations of the testing module', () => {
  it('named configurations have their own service, reached by @Locked({ service })', async () => {
    const app = await boot(
      [
        RedisLockTestingModule.forRoot(),
        RedisLockTestingModule.forRoot({ name: 'payments', prefix: 'pay:' }),
      ],
      [Ledger, Refunds],
    );
    const payments = app.get<LockService>(getLockServiceToken('payments'));
    expect(payments).toBeInstanceOf(LockService);
    expect(payments).not.toBe(app.get(LockService));
    expect(app.get(Refunds).locks).toBe(payments);
    expect(await app.get(Refunds).refund('5')).toBe('refund:5');
    // Held on the named configuration's store, not the default one.
    const lease = (await payments.tryAcquire('refund:5')) as Lease;
    expect(lease).not.toBeNull();
    await expect(app.get(Refunds).refund('5')).rejects.toBeInstanceOf(LockTimeoutError);
    expect(await app.get(LockService).tryAcquire('refund:5')).not.toBeNull();
    await lease.release();
  });

  it('forRootAsync works as RedisLockModule.forRootAsync does', async () => {
    const app = await boot([
      RedisLockTestingModule.forRootAsync({ useFactory: async () => ({ defaults: { ttl: 4_000 } }) }),
    ]);
    const locks = app.get(LockService);
    const lease = await locks.acquire('a');
    expect((await locks.inspect('a')).ttl).toBeLessThanOrEqual(4_000);
    expect((await locks.inspect('a')).ttl).toBeGreaterThan(3_000);
    await lease.release();
    expect(app.get(REDIS_LOCK_TESTING_MODULE_OPTIONS)).toEqual({ defaults: { ttl: 4_000 } });
  });

  it("accepts the application's own options object; its connection is ignored", async () => {
    const app = await boot([
      RedisLockTestingModule.forRoot({ url: 'redis://no-such-host.invalid:6379', prefix: 'app:' }),
    ]);
    expect(await app.get(Ledger).deposit('1', 1)).toBe(1);
    expect(await app.get(RedisLockHealthIndicator).isHealthy()).toEqual({
      'redis-lock': { status: 'up', store: 'memory' },
    });
  });

  it('two applications on one MemoryLockBackend exclude each other, as two instances on one Redis', async () => {
    const backend = new MemoryLockBackend();
    const a = await boot([RedisLockTestingModule.forRoot({ client: backend })]);
    const b = await boot([RedisLockTestingModule.forRoot({ client: backend })]);
    gates.set('a', deferred());
    const held = a.get(Ledger).serve('shared', 'a');
    await until(
      () => b.get(LockService).inspect('queue:shared'),
      (info) => info.held,
      WAIT,
    );
    await expect(b.get(Ledger).impatient('shared')).rejects.toBeInstanceOf(LockTimeoutError);
    gates.get('a')?.resolve();
    await held;
    await expect(b.get(Ledger).impatient('shared')).resolves.toBe('ran');
  });

  it('the same validation and typed errors as RedisLockModule', async () => {
    await expect(boot([RedisLockTestingModule.forRoot({ defaults: { ttl: 5 } })])).rejects.toThrow(
      /ttl must be an integer number of milliseconds between 10 and/,
    );
    await expect(boot([RedisLockTestingModule.forRoot({ prefx: 'x' } as never)])).rejects.toBeInstanceOf(
      LockUsageError,
    );
    await expect(
      boot([RedisLockTestingModule.forRoot({ client: { openStore: () => ({}) } } as never)]),
    ).rejects.toThrow(/client must be a MemoryLockBackend/);
    expect(() => RedisLockTestingModule.forRoot(null as never)).toThrow(LockUsageError);
    expect(() => RedisLockTestingModule.forRoot({ name: '' })).toThrow(/name must be a non-empty string/);
    expect(() => RedisLockTestingModule.forRootAsync({} as never)).toThrow(
      /RedisLockTestingModule.forRootAsync\(\) needs exactly one of useFactory/,
    );
  });

  it('a @Locked template naming an argument the method never gets stops the application at start-up', async () => {
    @Injectable()
    class Bad {
      @Locked('job:<1>')
      async run(_id: string): Promise<void> {}
    }
    const app = await bootApp({ imports: [RedisLockTestingModule.forRoot()], providers: [Bad], init: false });
    await expect(app.init()).rejects.toThrow(/Bad\.run/);
  });
});

describe('overriding, on the testing module', () => {
  it('overrideProvider(LockService) with a recording fake is what @Locked uses', async () => {
    const calls: string[] = [];
    const fake = {
      async using<T>(key: string, fn: (lease: Lease) => T | Promise<T>): Promise<T> {
        calls.push(key);
        return fn({ key, token: 'fake', fence: 1 } as Lease);
      },
    };
    const app = await bootApp({
      imports: [RedisLockTestingModule.forRoot()],
      providers: [Ledger],
      configure: (builder) => builder.overrideProvider(LockService).useValue(fake),
    });
    expect(await app.get(Ledger).deposit('3', 5)).toBe(5);
    expect(calls).toEqual(['account:3']);
  });
});

describe('RedisLockModule beside it', () => {
  it('RedisLockModule.forRoot({ client: backend }) runs on a memory backend too', async () => {
    const app = await boot([RedisLockModule.forRoot({ client: new MemoryLockBackend() })]);
    expect(await app.get(Ledger).deposit('1', 3)).toBe(3);
    expect(await app.get(RedisLockHealthIndicator).isHealthy()).toEqual({
      'redis-lock': { status: 'up', store: 'memory' },
    });
  });

  it('RedisLockModule refuses a backend beside a url, something that is neither client nor backend, and an unknown option', async () => {
    await expect(
      boot([RedisLockModule.forRoot({ client: new MemoryLockBackend(), url: 'redis://127.0.0.1:1' })]),
    ).rejects.toThrow(/needs one connection.*Got client and url\./);
    await expect(boot([RedisLockModule.forRoot({ client: {} as never })])).rejects.toThrow(
      /client must be an ioredis Redis or Cluster .* or a lock backend such as new MemoryLockBackend\(\); got/,
    );
    await expect(
      boot([RedisLockModule.forRoot({ backend: new MemoryLockBackend() } as never)]),
    ).rejects.toThrow(/Unknown option "backend" in the RedisLockModule options \(known: client, url, redis,/);
  });
});
