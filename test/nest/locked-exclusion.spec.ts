// Who @Locked excludes, over real HTTP: nested and recursive calls on the key a request already holds go
// through (reentrancy), concurrent requests on one key run one at a time, on one application instance or
// across two sharing a Redis, and requests on different keys run side by side.
import { beforeEach, describe, expect, it } from '@jest/globals';
import { Controller, Inject, Injectable, Param, Post } from '@nestjs/common';
import request from 'supertest';
import { Locked, LockService, RedisLockModule } from '../../lib';
import { bootApp } from '../support/nest-apps';
import { useRedis } from '../support/redis-server';
import { connection, Meter, queued, send } from './locked-fixtures';

const server = useRedis();
let meter: Meter;

beforeEach(() => {
  meter = new Meter();
});

/**
 * Nested calls on a key the caller holds must not wait for it: with a short waitTimeout a deadlock would
 * show as a LockTimeoutError (409) within 2 s instead of hanging the test.
 */
const NESTED = { waitTimeout: 2_000 } as const;

@Injectable()
class Accounts {
  constructor(@Inject(LockService) readonly locks: LockService) {}

  @Locked('account:<0>', NESTED)
  async debit(id: string): Promise<number[]> {
    return this.audit(id, 3);
  }

  /** Calls itself `depth` times on the same key; returns the fence each level saw. */
  @Locked('account:<0>', NESTED)
  async audit(id: string, depth: number): Promise<number[]> {
    const fence = this.locks.currentLease()?.fence ?? -1;
    return depth === 0 ? [fence] : [fence, ...(await this.audit(id, depth - 1))];
  }
}

@Controller('accounts')
class AccountsController {
  constructor(
    private readonly accounts: Accounts,
    @Inject(LockService) private readonly locks: LockService,
  ) {}

  @Post(':id/transfer')
  @Locked('account:<0>')
  async transfer(@Param('id') id: string) {
    const outer = this.locks.currentLease()?.fence;
    await meter.pass(id);
    return { outer, nested: await this.accounts.debit(id) };
  }
}

async function instance() {
  const nest = await bootApp({
    imports: [RedisLockModule.forRoot({ ...connection(server()), prefix: 'exclusion:' })],
    controllers: [AccountsController],
    providers: [Accounts],
  });
  return { nest, locks: nest.get(LockService), http: () => request(nest.getHttpServer()) };
}

describe('@Locked reentrancy', () => {
  it('a @Locked handler calling @Locked methods on its own key, recursively, does not wait for itself', async () => {
    const { http } = await instance();
    meter.open();
    const response = await http().post('/accounts/a/transfer');
    expect(response.status).toBe(201);
    const { outer, nested } = response.body as { outer: number; nested: number[] };
    // Every level ran under the request's own lease: the same fence throughout.
    expect(nested).toEqual([outer, outer, outer, outer]);
  });

  it('a provider method calling itself recursively on its key does not wait for itself', async () => {
    const { nest, locks } = await instance();
    const fences = await nest.get(Accounts).audit('b', 5);
    expect(fences).toHaveLength(6);
    expect(new Set(fences).size).toBe(1);
    expect(fences[0]).toBeGreaterThan(0);
    expect((await locks.inspect('account:b')).held).toBe(false);
  });
});

describe('@Locked exclusion over HTTP', () => {
  it('concurrent requests on one key run one at a time, the others waiting in line', async () => {
    const { http, locks } = await instance();
    const responses = [send(http().post('/accounts/c/transfer'))];
    await meter.entries(1);
    responses.push(send(http().post('/accounts/c/transfer')), send(http().post('/accounts/c/transfer')));
    await queued(locks, 'account:c', 2);
    expect(meter.entered).toBe(1);
    meter.open();
    expect((await Promise.all(responses)).map((r) => r.status)).toEqual([201, 201, 201]);
    expect(meter.entered).toBe(3);
    expect(meter.max).toBe(1);
  });

  it('requests on different keys run side by side', async () => {
    const { http, locks } = await instance();
    const first = send(http().post('/accounts/d/transfer'));
    const second = send(http().post('/accounts/e/transfer'));
    // Both inside the critical section at once: with one lock for both, the second would wait here.
    await meter.entries(2);
    expect(meter.running).toBe(2);
    expect((await locks.inspect('account:d')).held).toBe(true);
    expect((await locks.inspect('account:e')).held).toBe(true);
    meter.open();
    expect([(await first).status, (await second).status]).toEqual([201, 201]);
  });

  it('two application instances on one Redis: concurrent requests to both on one key exclude each other', async () => {
    const [a, b] = [await instance(), await instance()];
    const responses = [send(a.http().post('/accounts/f/transfer'))];
    await meter.entries(1);
    responses.push(
      send(b.http().post('/accounts/f/transfer')),
      send(a.http().post('/accounts/f/transfer')),
      send(b.http().post('/accounts/f/transfer')),
    );
    await queued(b.locks, 'account:f', 3);
    expect(meter.entered).toBe(1);
    meter.open();
    expect((await Promise.all(responses)).map((r) => r.status)).toEqual([201, 201, 201, 201]);
    expect(meter.entered).toBe(4);
    expect(meter.max).toBe(1);
  });

  it('two application instances: different keys run side by side', async () => {
    const [a, b] = [await instance(), await instance()];
    const first = send(a.http().post('/accounts/g/transfer'));
    const second = send(b.http().post('/accounts/h/transfer'));
    await meter.entries(2);
    expect(meter.running).toBe(2);
    meter.open();
    expect([(await first).status, (await second).status]).toEqual([201, 201]);
  });
});
