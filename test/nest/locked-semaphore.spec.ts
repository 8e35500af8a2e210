// @Locked with `permits` on real Redis: two app instances share one semaphore (at most `permits` calls
// run at once, the others wait in line and run as permits come back), a route through the interceptor
// the same, another number of permits on the same key is a LockPermitsError, and a bad value is refused
// when the decorator is applied or at start-up, never at the first request.
import { describe, expect, it } from '@jest/globals';
import { Controller, Get, Injectable, UseInterceptors } from '@nestjs/common';
import request from 'supertest';
import {
  Locked,
  LockedRoute,
  LockInterceptor,
  LockService,
  LockUsageError,
  RedisLockModule,
} from '../../lib';
import { bootApp } from '../support/nest-apps';
import { useRedis } from '../support/redis-server';
import { connection, lockState, Meter } from './locked-fixtures';

const server = useRedis();

function exportService(meter: Meter) {
  @Injectable()
  class Exports {
    @Locked('export', { permits: 2 })
    run(id: number): Promise<number> {
      return meter.pass(id);
    }

    @Locked('export', { permits: 3 })
    runWider(id: number): Promise<number> {
      return meter.pass(id);
    }
  }
  return Exports;
}

describe('@Locked with permits', () => {
  it('two instances share the permits: 2 run at once, the rest wait in line and all finish', async () => {
    const meter = new Meter();
    const Exports = exportService(meter);
    const apps = await Promise.all(
      [0, 1].map(() =>
        bootApp({ imports: [RedisLockModule.forRoot(connection(server()))], providers: [Exports] }),
      ),
    );
    const [a, b] = apps.map((app) => app.get(Exports));
    const locks = apps[0].get(LockService);
    const calls = [0, 1, 2, 3, 4, 5].map((i) => (i % 2 ? a : b).run(i));
    await meter.entries(2);
    const info = await lockState(locks, 'export', (state) => state.queueLength === 4);
    expect(info).toMatchObject({ permits: 2, queueLength: 4 });
    expect(info.holders).toHaveLength(2);
    expect(meter.running).toBe(2);
    meter.open();
    expect((await Promise.all(calls)).sort()).toEqual([0, 1, 2, 3, 4, 5]);
    expect(meter.max).toBe(2);
    // Another number of permits on the same key, while it is in use, is refused and never runs.
    const held = await locks.acquire('export', { permits: 2 });
    await expect(a.runWider(7)).rejects.toMatchObject({ code: 'LOCK_KIND' });
    await held.release();
    expect(meter.entered).toBe(6);
  });

  it('a route with permits runs through the interceptor with the same bound', async () => {
    const meter = new Meter();
    @Controller()
    class Reports {
      @LockedRoute('report', { permits: 3 })
      @UseInterceptors(LockInterceptor)
      @Get('report')
      report(): Promise<string> {
        return meter.pass('ok');
      }
    }
    const app = await bootApp({
      imports: [RedisLockModule.forRoot(connection(server()))],
      controllers: [Reports],
    });
    const locks = app.get(LockService);
    const http = request(app.getHttpServer());
    const responses = Array.from({ length: 5 }, () => http.get('/report').then((r) => r.status));
    try {
      await meter.entries(3);
      await lockState(locks, 'report', (state) => state.queueLength === 2);
      expect(meter.running).toBe(3);
    } finally {
      meter.open();
    }
    expect(await Promise.all(responses)).toEqual([200, 200, 200, 200, 200]);
    expect(meter.max).toBe(3);
  });

  it('bad permits are refused where the decorator is applied', () => {
    for (const permits of [0, -1, 1.5, Number.NaN, 1e9, '3']) {
      expect(() => {
        class Bad {
          @Locked('x', { permits: permits as number })
          run(): Promise<void> {
            return Promise.resolve();
          }
        }
        return Bad;
      }).toThrow(LockUsageError);
    }
  });
});
