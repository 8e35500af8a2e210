// Nest apps on the in-memory store and with a hand-written fake: overrideProvider(LockService) is what
// @Locked methods use (the interceptor takes the service through the container), LockService.inMemory()
// needs no Redis, and the health indicator says the store is in memory.
import { describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  type AcquireOptions,
  getLockServiceToken,
  type Lease,
  Locked,
  LockService,
  RedisLockHealthIndicator,
  RedisLockModule,
} from '../../lib';
import { sleep } from '../support/event-loop';
import { useRedis } from '../support/redis-server';

const server = useRedis();

@Injectable()
class Orders {
  @Locked('order:<0>', { ttl: 5_000, waitTimeout: 100 })
  async pay(id: number): Promise<string> {
    return `paid ${id}`;
  }

  @Locked('refund:<0>', { service: 'fast' })
  async refund(id: number): Promise<string> {
    return `refunded ${id}`;
  }
}

/** A fake lock service that records what @Locked asks of it and runs the work at once. */
function recordingFake() {
  const calls: Array<{ key: string; options?: AcquireOptions }> = [];
  const fake = {
    calls,
    async using<T>(key: string, fn: (lease: Lease) => T | Promise<T>, options?: AcquireOptions): Promise<T> {
      calls.push({ key, options });
      return fn({ key, token: 'fake', fence: 1 } as Lease);
    },
  };
  return fake;
}

/** An app with both configurations on the test server, the service behind `token` replaced by `fake`. */
async function appOverriding(token: unknown, fake: object) {
  const moduleRef = await Test.createTestingModule({
    imports: [
      RedisLockModule.forRoot({ url: server().url }),
      RedisLockModule.forRoot({ url: server().url, name: 'fast' }),
    ],
    providers: [Orders],
  })
    .overrideProvider(token as never)
    .useValue(fake)
    .compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return app;
}

describe('overriding the lock service in a Nest test', () => {
  it('overrideProvider(LockService) is what @Locked methods use', async () => {
    const fake = recordingFake();
    const app = await appOverriding(LockService, fake);
    try {
      expect(await app.get(Orders).pay(7)).toBe('paid 7');
      expect(fake.calls).toEqual([
        {
          key: 'order:7',
          // The declaration's template names the lock in metrics and spans.
          options: { ttl: 5_000, waitTimeout: 100, renew: undefined, minHold: undefined, label: 'order:<0>' },
        },
      ]);
      // Nothing reached the real Redis.
      expect(await server().keys('lock:*')).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it("a named configuration's token is overridden the same way", async () => {
    const fake = recordingFake();
    const app = await appOverriding(getLockServiceToken('fast'), fake);
    try {
      expect(await app.get(Orders).refund(3)).toBe('refunded 3');
      expect(fake.calls.map((call) => call.key)).toEqual(['refund:3']);
    } finally {
      await app.close();
    }
  });
});

describe('LockService.inMemory()', () => {
  it('locks without Redis: a second caller waits for the first', async () => {
    const locks = LockService.inMemory({ defaults: { waitTimeout: 1_000 } });
    const order: string[] = [];
    const first = locks.using('job', async () => {
      order.push('first in');
      await sleep(20);
      order.push('first out');
    });
    const second = locks.using('job', () => {
      order.push('second');
    });
    await Promise.all([first, second]);
    expect(order).toEqual(['first in', 'first out', 'second']);
    expect(await locks.tryAcquire('job', { ttl: 10 })).not.toBeNull();
    await locks.close();
    expect(() => locks.client).toThrow(/keeps its locks in memory: it has no Redis client/);
  });

  it('the health indicator reports a memory store up, and says so', async () => {
    const locks = LockService.inMemory();
    const indicator = new RedisLockHealthIndicator(locks);
    expect(await indicator.isHealthy()).toEqual({ 'redis-lock': { status: 'up', store: 'memory' } });
    await locks.close();
  });
});
