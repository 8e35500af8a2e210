// RedisLockModule with a node-redis client: forRoot({ client }) and forRootAsync, @Locked across two
// application instances (each its own client, as two processes would have), the health indicator, and
// the client left open at shutdown (the module never closes a client it was given).
import { afterEach, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { createClient } from 'redis';
import { Locked, LockService, RedisLockHealthIndicator, RedisLockModule } from '../../lib';
import { RedisLockTestingModule } from '../../lib/testing';
import { bootApp } from '../support/nest-apps';
import { useRedis } from '../support/redis-server';

const server = useRedis();

/** Closes a client at once: destroy() on node-redis 5 and 6, disconnect() on 4 (the node-redis-4 project). */
function end(client: object): void {
  const c = client as { destroy?(): void; disconnect(): Promise<void> };
  if (c.destroy) c.destroy();
  else c.disconnect().catch(() => {});
}

const clients: object[] = [];
afterEach(() => {
  for (const client of clients.splice(0)) end(client);
});

/** A connected node-redis client, as an application makes it; destroyed after the test. */
async function connected() {
  const client = createClient({ url: server().url });
  client.on('error', () => {});
  clients.push(client);
  await client.connect();
  return client;
}

it('runs on the node-redis of its project: 4 in node-redis-4 (no destroy(), which 5 added), else 6', async () => {
  const client = await connected();
  const expected = process.env.LOCK_TEST_NODE_REDIS === '4' ? 'undefined' : 'function';
  expect(typeof (client as { destroy?: unknown }).destroy).toBe(expected);
});

/** Records how many calls are inside the locked section at once (across both applications). */
const inside = { now: 0, most: 0, calls: 0 };

@Injectable()
class Payments {
  @Locked('payment:<0>', { waitTimeout: 20_000 })
  async pay(order: string): Promise<string> {
    inside.now++;
    inside.most = Math.max(inside.most, inside.now);
    // Several turns of the event loop inside: the other application's call would get in if it could.
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    inside.now--;
    inside.calls++;
    return order;
  }
}

describe('RedisLockModule on node-redis', () => {
  it('@Locked excludes across two applications, each on its own node-redis client', async () => {
    const a = await bootApp({
      imports: [RedisLockModule.forRoot({ client: await connected() })],
      providers: [Payments],
    });
    const b = await bootApp({
      imports: [
        RedisLockModule.forRootAsync({
          useFactory: async () => ({ client: await connected() }),
        }),
      ],
      providers: [Payments],
    });
    inside.now = 0;
    inside.most = 0;
    inside.calls = 0;
    const calls = Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).get(Payments).pay('42'));
    expect(await Promise.all(calls)).toEqual(Array(20).fill('42'));
    expect(inside.calls).toBe(20);
    expect(inside.most).toBe(1);
  });

  it('reports health up while the client answers, down once it is closed', async () => {
    const client = await connected();
    const app = await bootApp({
      imports: [RedisLockModule.forRoot({ client })],
      providers: [RedisLockHealthIndicator],
    });
    const health = app.get(RedisLockHealthIndicator);
    const up = await health.isHealthy('locks');
    expect(up.locks.status).toBe('up');
    expect(up.locks.servers?.[`127.0.0.1:${server().port}`]).toMatchObject({ role: 'master' });
    end(client);
    const down = await health.isHealthy('locks');
    expect(down.locks.status).toBe('down');
    expect(down.locks.message).toMatch(/connect/);
  });

  it('leaves the client open when the application shuts down', async () => {
    const client = await connected();
    const app = await bootApp({ imports: [RedisLockModule.forRoot({ client })], providers: [Payments] });
    await app.get(Payments).pay('7');
    await app.close();
    expect(client.isOpen).toBe(true);
    expect(await client.ping()).toBe('PONG');
  });

  it('the testing module takes the same options with a node-redis client, and never touches it', async () => {
    // Never connected: the testing module keeps its locks in memory, so the client is not used.
    const client = createClient({ url: server().url });
    const app = await bootApp({
      imports: [RedisLockTestingModule.forRoot({ client })],
      providers: [Payments],
    });
    expect(await app.get(Payments).pay('9')).toBe('9');
    expect(app.get(LockService).redisClient).toBeUndefined();
    expect(client.isOpen).toBe(false);
  });
});
