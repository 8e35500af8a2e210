// RedisLockModule on a quorum of 5 masters: forRoot({ url: [...] }) and forRootAsync({ client: [...] }), @Locked
// across two app instances, and the health indicator reporting each node (up while a majority answers).
import { describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Locked, LockService, RedisLockHealthIndicator, RedisLockModule } from '../../lib';
import { sleep } from '../support/event-loop';
import { bootApp } from '../support/nest-apps';
import { useQuorum } from './quorum-fixtures';

const quorum = useQuorum();

/** Calls inside pay() right now, across both applications, and the most ever seen at once. */
const seen = { inside: 0, most: 0 };

@Injectable()
class Orders {
  @Locked('order:<0>', { waitTimeout: 10_000 })
  async pay(id: string): Promise<string> {
    seen.inside++;
    seen.most = Math.max(seen.most, seen.inside);
    await sleep(5);
    seen.inside--;
    return id;
  }
}

describe('RedisLockModule on a quorum (Redlock)', () => {
  it('forRoot({ url: [...] }) and forRootAsync({ client: [...] }): @Locked excludes across both apps', async () => {
    const one = await bootApp({
      imports: [RedisLockModule.forRoot({ url: quorum().urls() })],
      providers: [Orders],
    });
    const two = await bootApp({
      imports: [RedisLockModule.forRootAsync({ useFactory: () => ({ client: quorum().clients() }) })],
      providers: [Orders],
    });
    // The module's own connections are up before the first lock call (the default nodeTimeout, 100 ms,
    // also bounds a call made while they still connect).
    for (const app of [one, two])
      await Promise.all((app.get(LockService).quorumClients ?? []).map((c) => c.ping()));
    const [a, b] = [one.get(Orders), two.get(Orders)];
    const paid = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).pay('7')));
    expect(paid).toEqual(Array(10).fill('7'));
    expect(seen.most).toBe(1);
    expect(one.get(LockService).quorumClients).toHaveLength(5);
  });

  it('health: up with every node listed; down, naming the count, when 3 of 5 stop answering', async () => {
    const app = await bootApp({ imports: [RedisLockModule.forRoot({ url: quorum().urls() })] });
    await Promise.all((app.get(LockService).quorumClients ?? []).map((c) => c.ping())); // every node connected
    const health = app.get(RedisLockHealthIndicator);
    const up = (await health.isHealthy())['redis-lock'];
    expect(up.status).toBe('up');
    expect(Object.keys(up.nodes ?? {})).toHaveLength(5);
    for (const node of Object.values(up.nodes ?? {})) expect(node.status).toBe('up');
    const stopped = quorum().servers.slice(0, 3);
    for (const server of stopped) server.pause();
    const down = (await health.isHealthy('redis-lock', { timeout: 200 }))['redis-lock'];
    expect(down).toMatchObject({ status: 'down', message: '2 of 5 nodes answered, a majority needs 3' });
    for (const server of stopped) {
      expect(down.nodes?.[`127.0.0.1:${server.port}`]).toMatchObject({ status: 'down' });
    }
  });

  it("refuses a quorum of 4 URLs, and a quorum's URLs beside a client, at start-up", async () => {
    const four = quorum().urls().slice(0, 4);
    await expect(bootApp({ imports: [RedisLockModule.forRoot({ url: four })] })).rejects.toThrow(
      /needs 3, 5 or 7 clients of independent Redis masters, got 4/,
    );
    await expect(
      bootApp({ imports: [RedisLockModule.forRoot({ url: quorum().urls(), client: quorum().clients() })] }),
    ).rejects.toThrow(/needs one connection: `client` .* Got client and url\./);
  });

  it('refuses urls and clients as unknown options, listing url and client', async () => {
    await expect(
      bootApp({ imports: [RedisLockModule.forRoot({ urls: quorum().urls() } as never)] }),
    ).rejects.toThrow(/Unknown option "urls" in the RedisLockModule options \(known: client, url, redis,/);
    await expect(
      bootApp({ imports: [RedisLockModule.forRoot({ clients: quorum().clients() } as never)] }),
    ).rejects.toThrow(/Unknown option "clients" in the RedisLockModule options \(known: client, url, redis,/);
  });
});
