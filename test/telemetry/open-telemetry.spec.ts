// OpenTelemetry with the real SDK (a MeterProvider read by an in-memory reader, a tracer provider writing
// to an in-memory exporter, the async-hooks context manager) against real Redis: every metric and span
// the README lists appears with the right values under contention, a timeout, a busy try, an abort, a
// Redis error and a lost lease (its key deleted), through LockService and through @Locked, whose
// `lock.name` is its key template; a reentrant call is not counted; the global providers are used when
// none is given, and none is used while the application registered no SDK.
import { describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { context, metrics, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import {
  LockAbortedError,
  type LockError,
  Locked,
  LockLostError,
  LockService,
  LockTimeoutError,
  RedisLockModule,
} from '../../lib';
import { OpenTelemetry } from '../../lib/telemetry/open-telemetry';
import { connection, lockState, Meter } from '../nest/locked-fixtures';
import { lockService, outcome, until, whenAborted } from '../support/lock-fixtures';
import { bootApp } from '../support/nest-apps';
import { useRedis } from '../support/redis-server';
import {
  finished,
  histogram,
  meterProvider,
  parentOf,
  points,
  registerSdk,
  sum,
  tracerProvider,
} from './otel-fixtures';

const server = useRedis();

describe('OpenTelemetry metrics and spans through LockService', () => {
  it('contention: waits, holds, waiters and held, and the spans in the caller trace', async () => {
    registerSdk();
    const locks = lockService(server());
    const tracer = tracerProvider.getTracer('test');
    const first = await locks.acquire('order:1', { label: 'order', ttl: 5_000 });
    const request = tracer.startSpan('request');
    const second = context.with(trace.setSpan(context.active(), request), () =>
      locks.acquire('order:1', { label: 'order', ttl: 5_000, waitTimeout: 10_000 }),
    );
    await lockState(locks, 'order:1', (info) => info.queueLength === 1);
    // While the second waits: one waiter, one lease held, by name (the key itself is no attribute).
    expect(await sum('lock.waiters', { 'lock.name': 'order' })).toBe(1);
    expect(await sum('lock.held', { 'lock.name': 'order' })).toBe(1);
    expect((await points('lock.held')).every((p) => !('lock.key' in p.attributes))).toBe(true);
    await first.release();
    const lease = await second;
    await lease.release();
    request.end();

    expect(await sum('lock.acquisitions', { 'lock.name': 'order', 'lock.outcome': 'acquired' })).toBe(2);
    expect(await sum('lock.waiters', { 'lock.name': 'order' })).toBe(0);
    expect(await sum('lock.held', { 'lock.name': 'order' })).toBe(0);
    const waits = await histogram('lock.wait.duration', { 'lock.name': 'order', 'lock.outcome': 'acquired' });
    expect(waits.count).toBe(2);
    expect((await histogram('lock.hold.duration', { 'lock.name': 'order' })).count).toBe(2);

    const acquires = finished('lock.acquire order');
    expect(acquires).toHaveLength(2);
    const queued = acquires.find((s) => s.attributes['lock.queued'] === true);
    expect(queued?.attributes).toMatchObject({
      'lock.name': 'order',
      'lock.key': 'order:1',
      'lock.outcome': 'acquired',
      'lock.fence': lease.fence,
    });
    // The queued wait is a child of the request it held up, and lasted at least what it waited for.
    expect(parentOf(queued as ReadableSpan)).toBe(request.spanContext().spanId);
    expect(queued?.attributes['lock.wait.duration']).toBeGreaterThan(0);
  });

  it('outcomes: timeout, busy try (skipped), overload, aborted, error; each counted and timed', async () => {
    registerSdk();
    const locks = lockService(server());
    const holder = await locks.acquire('busy', { ttl: 5_000 });
    await expect(locks.acquire('busy', { label: 'busy', waitTimeout: 30 })).rejects.toBeInstanceOf(
      LockTimeoutError,
    );
    await expect(locks.tryAcquire('busy', { label: 'busy' })).resolves.toBeNull();
    // Cut by its deadline: refused for overload (a 503 over HTTP), not a wait that ran out (a 409).
    const cut = await outcome(locks.acquire('busy', { label: 'cut', deadline: Date.now() + 40 }));
    expect((cut.error as LockTimeoutError).retryAfterMs).toBeGreaterThan(0);
    const abort = new AbortController();
    const aborted = locks.acquire('busy', { label: 'busy', signal: abort.signal, waitTimeout: 10_000 });
    await lockState(locks, 'busy', (info) => info.queueLength === 1);
    abort.abort();
    await expect(aborted).rejects.toBeInstanceOf(LockAbortedError);
    await holder.release();
    // A key of another Redis type: the script refuses it (LOCK_REDIS_ERROR), an error outcome.
    await server().admin((redis) => redis.sadd('lock:{foreign}', 'x'));
    const { error } = await outcome(locks.acquire('foreign', { label: 'foreign' }));
    expect((error as LockError).code).toBe('LOCK_REDIS_ERROR');

    for (const [name, result] of [
      ['busy', 'timeout'],
      ['busy', 'skipped'],
      ['cut', 'overload'],
      ['busy', 'aborted'],
      ['foreign', 'error'],
    ]) {
      expect(await sum('lock.acquisitions', { 'lock.name': name, 'lock.outcome': result })).toBe(1);
      expect(
        (await histogram('lock.wait.duration', { 'lock.name': name, 'lock.outcome': result })).count,
      ).toBe(1);
    }
    // A timeout waited about its waitTimeout (the library's bound), not less.
    expect((await histogram('lock.wait.duration', { 'lock.outcome': 'timeout' })).sum).toBeGreaterThanOrEqual(
      0.03,
    );
    // The call without a name is counted under the documented fixed name.
    expect(await sum('lock.acquisitions', { 'lock.name': 'unnamed', 'lock.outcome': 'acquired' })).toBe(1);
    expect(await sum('lock.waiters', {})).toBe(0);
    const outcomes = finished('lock.acquire busy').map((s) => s.attributes['lock.outcome']);
    expect(outcomes.sort()).toEqual(['aborted', 'skipped', 'timeout']);
    const failed = finished('lock.acquire foreign')[0];
    expect(failed.status.code).toBe(2); // SpanStatusCode.ERROR
  });

  it('a lost lease: lock.lost by reason, the hold ended, the hold span marked', async () => {
    registerSdk();
    const locks = lockService(server());
    const result = locks.using(
      'lost-1',
      async (lease) => {
        await server().admin((redis) => redis.del('lock:{lost-1}'));
        // The next renewal (every ttl/3) finds the key gone.
        await whenAborted(lease.signal);
      },
      { label: 'lost', ttl: 300 },
    );
    await expect(result).rejects.toBeInstanceOf(LockLostError);
    expect(await sum('lock.lost', { 'lock.name': 'lost', 'lock.lost.reason': 'key-missing' })).toBe(1);
    expect(await sum('lock.held', { 'lock.name': 'lost' })).toBe(0);
    expect((await histogram('lock.hold.duration', { 'lock.name': 'lost' })).count).toBe(1);
    const hold = finished('lock.hold lost')[0];
    expect(hold.attributes['lock.lost.reason']).toBe('key-missing');
    expect(hold.status.code).toBe(2);
  });

  it('using: the work runs inside lock.hold, a child of the caller span; a reentrant call is not counted', async () => {
    registerSdk();
    const locks = lockService(server());
    const tracer = tracerProvider.getTracer('test');
    await tracer.startActiveSpan('job', async (job) => {
      await locks.using(
        'report',
        async () => {
          tracer.startSpan('query').end();
          // Reentrant: the chain holds 'report' already.
          await locks.using('report', async () => {}, { label: 'report' });
        },
        { label: 'report' },
      );
      job.end();
    });
    const [job] = finished('job');
    const [hold] = finished('lock.hold report');
    const [query] = finished('query');
    expect(parentOf(hold)).toBe(job.spanContext().spanId);
    expect(parentOf(query)).toBe(hold.spanContext().spanId);
    expect(await sum('lock.acquisitions', { 'lock.name': 'report' })).toBe(1);
    const acquires = finished('lock.acquire report');
    expect(acquires.map((s) => s.attributes['lock.reentrant'] === true).sort()).toEqual([false, true]);
  });

  it('several keys: one call, one acquisition, held until its last key is released', async () => {
    registerSdk();
    const locks = lockService(server());
    const lease = await locks.acquire(['a', 'b', 'c'], { label: 'transfer' });
    expect(await sum('lock.held', { 'lock.name': 'transfer' })).toBe(1);
    await lease.release();
    expect(await sum('lock.held', { 'lock.name': 'transfer' })).toBe(0);
    expect(await sum('lock.acquisitions', { 'lock.name': 'transfer', 'lock.outcome': 'acquired' })).toBe(1);
    expect(finished('lock.acquire transfer')[0].attributes['lock.keys']).toEqual(['a', 'b', 'c']);
  });

  it('the API installed with no SDK records nothing; a provider registered later, or either one alone, is followed', async () => {
    const otel = new OpenTelemetry();
    expect(otel.api).toBeDefined();
    expect(otel.recording).toBeUndefined();
    const locks = lockService(server());
    await (await locks.acquire('unheard', { label: 'unheard' })).release();
    const given = meterProvider();
    trace.setGlobalTracerProvider(tracerProvider);
    try {
      expect(otel.recording).toBeDefined();
      await (await locks.acquire('traced', { label: 'traced' })).release();
      expect(finished('lock.acquire traced')).toHaveLength(1);
    } finally {
      trace.disable();
    }
    expect(otel.recording).toBeUndefined();
    metrics.setGlobalMeterProvider(given);
    try {
      expect(otel.recording).toBeDefined();
      await (await locks.acquire('metered', { label: 'metered' })).release();
      expect(await sum('lock.acquisitions', { 'lock.name': 'metered', 'lock.outcome': 'acquired' })).toBe(1);
    } finally {
      metrics.disable();
    }
  });
});

describe('OpenTelemetry through @Locked', () => {
  it('lock.name is the key template; a skip is counted as skipped', async () => {
    const meter = new Meter();
    @Injectable()
    class Orders {
      @Locked('order:<0>', { waitTimeout: 10_000 })
      pay(id: string): Promise<string> {
        return meter.pass(id);
      }

      @Locked('order:<0>', { waitTimeout: 0, onTimeout: 'skip' })
      async payIfFree(_id: string): Promise<string | undefined> {
        return 'ran';
      }
    }
    registerSdk();
    const app = await bootApp({
      imports: [RedisLockModule.forRoot(connection(server()))],
      providers: [Orders],
    });
    const orders = app.get(Orders);
    const locks = app.get(LockService);
    const calls = [orders.pay('7'), orders.pay('7')];
    await meter.entries(1);
    await lockState(locks, 'order:7', (info) => info.queueLength === 1);
    await expect(orders.payIfFree('7')).resolves.toBeUndefined();
    meter.open();
    await Promise.all(calls);
    await until(
      () => sum('lock.held', { 'lock.name': 'order:<0>' }),
      (held) => held === 0,
    );
    expect(await sum('lock.acquisitions', { 'lock.name': 'order:<0>', 'lock.outcome': 'acquired' })).toBe(2);
    expect(await sum('lock.acquisitions', { 'lock.name': 'order:<0>', 'lock.outcome': 'skipped' })).toBe(1);
    expect(await sum('lock.acquisitions', { 'lock.name': 'order:<0>', 'lock.outcome': 'timeout' })).toBe(0);
    expect(finished('lock.hold order:<0>')).toHaveLength(2);
    // The resolved keys never became metric attributes.
    expect(
      (await points('lock.acquisitions')).some((p) => JSON.stringify(p.attributes).includes('order:7')),
    ).toBe(false);
  });
});
