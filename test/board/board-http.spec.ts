// The lock board's page and JSON API on Express and on Fastify, against a real redis-server with two
// application instances: every live lock with its holder and its line in order, one lock, the guard,
// the headers that keep user data from running as script, the forced release (refused while
// read-only), and no SCAN, no event recording while nobody looks.
import { channel } from 'node:diagnostics_channel';
import { describe, expect, it } from '@jest/globals';
import { Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { LOCK_CHANNELS, LockUsageError, RedisLockBoardModule, RedisLockModule } from '../../lib';
import { until, whenAborted } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';
import { boardApp, type Platform, TokenGuard } from './board-apps';

const server = useRedis();

const queued = (locks: { inspect(key: string): Promise<{ queueLength: number }> }, key: string, n: number) =>
  until(
    () => locks.inspect(key),
    (info) => info.queueLength === n,
  );

describe.each<Platform>(['express', 'fastify'])('the lock board on %s', (platform) => {
  it('lists each live lock with its holder and its line in order, across two instances', async () => {
    const a = await boardApp(server().url, platform);
    const b = await boardApp(server().url, platform);
    const held = await a.locks.acquire('board:order:1');
    const waits = [];
    for (const [i, instance] of [a, b, a].entries()) {
      waits.push(instance.locks.acquire('board:order:1', { waitTimeout: 30_000 }));
      await queued(a.locks, 'board:order:1', i + 1);
    }
    const response = await request(a.server).get('/locks/api/locks').expect(200);
    expect(response.headers['cache-control']).toBe('no-store');
    const view = response.body;
    expect(view.instance).toBe(a.locks.instance);
    const lock = view.locks.find((l: { key: string }) => l.key === 'board:order:1');
    expect(lock).toMatchObject({
      holder: held.token,
      holderInstance: a.locks.instance,
      fence: held.fence,
      kind: 'mutex',
    });
    expect(lock.heldMs).toBeGreaterThanOrEqual(0);
    expect(lock.ttl).toBeGreaterThan(0);
    expect(lock.queue.map((w: { instance: string }) => w.instance)).toEqual([
      a.locks.instance,
      b.locks.instance,
      a.locks.instance,
    ]);
    expect(lock.queue.map((w: { mine: boolean }) => w.mine)).toEqual([true, false, true]);
    expect(lock.queue.map((w: { waitingExact: boolean }) => w.waitingExact)).toEqual([true, false, true]);
    // The first waiter has waited longer than the last.
    expect(lock.queue[0].waitingMs).toBeGreaterThanOrEqual(lock.queue[2].waitingMs);

    const one = await request(b.server)
      .get(`/locks/api/locks/${encodeURIComponent('board:order:1')}`)
      .expect(200);
    expect(one.body.queue.map((w: { waiter: string }) => w.waiter)).toEqual(
      lock.queue.map((w: { waiter: string }) => w.waiter),
    );
    // Asked of b, only b's own waiter has its exact wait.
    expect(one.body.queue.map((w: { waitingExact: boolean }) => w.waitingExact)).toEqual([
      false,
      true,
      false,
    ]);
    await request(a.server).get('/locks/api/locks/board%3Afree').expect(404);

    await held.release();
    const next = await waits[0];
    await until(
      async () => (await request(a.server).get('/locks/api/locks?filter=order').expect(200)).body,
      (body) => body.locks[0]?.holder === next.token && body.locks[0].queue.length === 2,
    );
    await next.release();
    await (await waits[1]).release();
    await (await waits[2]).release();
    expect((await request(a.server).get('/locks/api/locks').expect(200)).body.locks).toEqual([]);
  });

  it('serves the page and its assets under a policy that runs no inline script; keys stay data', async () => {
    const a = await boardApp(server().url, platform, { path: '/admin/locks/' });
    const page = await request(a.server).get('/admin/locks').expect(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.headers['content-security-policy']).not.toContain('unsafe-inline');
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect(page.text).toContain('/admin/locks/board.js');
    await request(a.server)
      .get('/admin/locks/board.js')
      .expect(200)
      .expect('content-type', /javascript/);
    await request(a.server)
      .get('/admin/locks/board.css')
      .expect(200)
      .expect('content-type', /text\/css/);

    const hostile = '<img src=x onerror=alert(1)>';
    const lease = await a.locks.acquire(hostile);
    const view = (await request(a.server).get('/admin/locks/api/locks').expect(200)).body;
    expect(view.locks.map((l: { key: string }) => l.key)).toEqual([hostile]);
    await request(a.server)
      .get(`/admin/locks/api/locks/${encodeURIComponent(hostile)}`)
      .expect(200);
    await request(a.server).get('/admin/locks/api/locks?filter=x&filter=y').expect(400);
    await request(a.server)
      .get(`/admin/locks/api/locks?filter=${'k'.repeat(201)}`)
      .expect(400);
    // A key with a slash, a space and a percent sign is one path segment once encoded.
    const odd = await a.locks.acquire('tenant/7 100%');
    const found = await request(a.server)
      .get(`/admin/locks/api/locks/${encodeURIComponent('tenant/7 100%')}`)
      .expect(200);
    expect(found.body.key).toBe('tenant/7 100%');
    await odd.release();
    await lease.release();
  });

  it('every response of the API, an error or a refusal too, is nosniff under a policy allowing nothing', async () => {
    const a = await boardApp(server().url, platform, { readOnly: false, guard: TokenGuard });
    const lease = await a.locks.acquire('<b>board:headers</b>');
    const auth = { authorization: 'Bearer s3cret' };
    const responses = [
      await request(a.server).get('/locks/api/locks').set(auth).expect(200),
      await request(a.server).get('/locks/api/locks/%3Cb%3Eboard%3Aheaders%3C%2Fb%3E').set(auth).expect(200),
      await request(a.server).get('/locks/api/locks/%3Cscript%3Enobody').set(auth).expect(404),
      await request(a.server)
        .get(`/locks/api/locks?filter=${'k'.repeat(201)}`)
        .set(auth)
        .expect(400),
      await request(a.server).post('/locks/api/locks/x/release').set(auth).send({}).expect(400),
      await request(a.server).get('/locks/api/locks').expect(403),
      await request(a.server).get('/locks/board.js').set(auth).expect(200),
    ];
    for (const response of responses) {
      expect(response.headers['x-content-type-options']).toBe('nosniff');
      expect(response.headers['content-security-policy']).toMatch(/^default-src 'none'/);
    }
    // The page keeps its own policy, which lets it load its script and style.
    const page = await request(a.server).get('/locks').set(auth).expect(200);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    await lease.release();
  });

  it('the guard protects the page, its assets and the API', async () => {
    for (const guard of [TokenGuard, new TokenGuard()]) {
      const a = await boardApp(server().url, platform, { guard });
      for (const path of ['/locks', '/locks/board.js', '/locks/api/locks', '/locks/api/locks/k']) {
        await request(a.server).get(path).expect(403);
        await request(a.server).get(path).set('authorization', 'Bearer wrong').expect(403);
      }
      await request(a.server).get('/locks').set('authorization', 'Bearer s3cret').expect(200);
      await request(a.server).get('/locks/api/locks').set('authorization', 'Bearer s3cret').expect(200);
    }
  });

  it('a forced release is refused while read-only; otherwise it serves the next waiter', async () => {
    const ro = await boardApp(server().url, platform);
    const held = await ro.locks.acquire('board:stuck', { ttl: 1_500 });
    await request(ro.server)
      .post('/locks/api/locks/board%3Astuck/release')
      .set('x-lock-board', '1')
      .send({ token: held.token })
      .expect(403);

    const rw = await boardApp(server().url, platform, { readOnly: false, path: 'ops/locks' });
    const waiting = rw.locks.acquire('board:stuck', { waitTimeout: 30_000 });
    await queued(rw.locks, 'board:stuck', 1);
    // Without the header a page of another site could not send, and without a token: refused.
    await request(rw.server).post('/locks/ops/locks/api/locks/board%3Astuck/release').send({}).expect(404);
    await request(rw.server)
      .post('/ops/locks/api/locks/board%3Astuck/release')
      .send({ token: held.token })
      .expect(400);
    await request(rw.server)
      .post('/ops/locks/api/locks/board%3Astuck/release')
      .set('x-lock-board', '1')
      .send({})
      .expect(400);
    const forced = await request(rw.server)
      .post('/ops/locks/api/locks/board%3Astuck/release')
      .set('x-lock-board', '1')
      .send({ token: held.token })
      .expect(200);
    expect(forced.body).toEqual({ released: true });
    const next = await waiting;
    expect(next.fence).toBeGreaterThan(held.fence);
    // The holder learns at its next renewal; the board that forced it lists the loss among its events.
    await whenAborted(held.signal);
    const { recent } = (await request(rw.server).get('/ops/locks/api/locks').expect(200)).body;
    expect(recent.find((event: { kind: string }) => event.kind === 'lost')).toMatchObject({
      keys: ['board:stuck'],
      token: held.token,
    });
    await next.release();
  });

  it("reads nothing while nobody looks; a viewer turns on this instance's recent timeouts and lost leases", async () => {
    const redis = server().client();
    await redis.config('RESETSTAT');
    const a = await boardApp(server().url, platform);
    const lease = await a.locks.acquire('board:quiet');
    await expect(a.locks.acquire('board:quiet', { waitTimeout: 50 })).rejects.toThrow();
    const stats = async () => String(await redis.info('commandstats'));
    expect(await stats()).not.toContain('cmdstat_scan');
    expect(channel(LOCK_CHANNELS.timeout).hasSubscribers).toBe(false);

    await request(a.server).get('/locks/api/locks').expect(200);
    expect(await stats()).toContain('cmdstat_scan');
    expect(channel(LOCK_CHANNELS.timeout).hasSubscribers).toBe(true);
    await expect(a.locks.acquire('board:quiet', { waitTimeout: 50, label: 'quiet' })).rejects.toThrow();
    const view = (await request(a.server).get('/locks/api/locks').expect(200)).body;
    expect(view.recent[0]).toMatchObject({ kind: 'timeout', name: 'quiet', keys: ['board:quiet'] });
    expect(view.recent[0].message).toMatch(/board:quiet/);
    await lease.release();
    await a.app.close();
    expect(channel(LOCK_CHANNELS.timeout).hasSubscribers).toBe(false);
    redis.disconnect();
  });
});

describe('lock board options', () => {
  it("history 'always' records from start-up, recentEvents 0 never", async () => {
    const always = await boardApp(server().url, 'express', { history: 'always' });
    expect(channel(LOCK_CHANNELS.lost).hasSubscribers).toBe(true);
    await always.app.close();
    expect(channel(LOCK_CHANNELS.lost).hasSubscribers).toBe(false);
    const never = await boardApp(server().url, 'express', { recentEvents: 0 });
    await request(never.server).get('/locks/api/locks').expect(200);
    expect(channel(LOCK_CHANNELS.lost).hasSubscribers).toBe(false);
  });

  it('forRootAsync: the path beside the factory, every other option from it, injected', async () => {
    const SETTINGS = Symbol('settings');
    @Module({ providers: [{ provide: SETTINGS, useValue: { write: true } }], exports: [SETTINGS] })
    class SettingsModule {}
    const ref = await Test.createTestingModule({
      imports: [
        RedisLockModule.forRoot({ url: server().url }),
        RedisLockBoardModule.forRootAsync({
          path: 'async/locks',
          imports: [SettingsModule],
          inject: [SETTINGS],
          useFactory: (settings: { write: boolean }) => ({
            readOnly: !settings.write,
            guard: new TokenGuard(),
          }),
        }),
      ],
    }).compile();
    const app = ref.createNestApplication({ logger: false });
    await app.init();
    try {
      await request(app.getHttpServer()).get('/async/locks/api/locks').expect(403);
      const view = await request(app.getHttpServer())
        .get('/async/locks/api/locks')
        .set('authorization', 'Bearer s3cret')
        .expect(200);
      expect(view.body.readOnly).toBe(false);
    } finally {
      await app.close();
    }

    // The factory runs as the application is compiled: the error stops it there.
    await expect(
      Test.createTestingModule({
        imports: [
          RedisLockModule.forRoot({ url: server().url }),
          RedisLockBoardModule.forRootAsync({ useFactory: () => ({ path: 'elsewhere' }) as never }),
        ],
      }).compile(),
    ).rejects.toThrow(/path beside useFactory/);
  });

  it('refuses bad options when the module is declared, with a typed error saying what to give', () => {
    const bad: unknown[] = [
      { path: '../etc' },
      { path: 'a b' },
      { path: 7 },
      { path: '' },
      { readOnly: 'no' },
      { guard: 'admin' },
      { limit: 0 },
      { limit: 1.5 },
      { recentEvents: -1 },
      { history: 'never' },
      { lockService: {} },
      { pathh: 'locks' },
    ];
    for (const options of bad) {
      expect(() => RedisLockBoardModule.forRoot(options as never)).toThrow(LockUsageError);
    }
    expect(() => RedisLockBoardModule.forRootAsync({} as never)).toThrow(LockUsageError);
  });
});
