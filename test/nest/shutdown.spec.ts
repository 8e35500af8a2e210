// Graceful shutdown of an application using RedisLockModule: which connections app.close() closes, what
// happens to running and waiting @Locked calls, what is left in Redis afterwards, and (in a child process)
// that nothing of the library keeps the process alive once the application is closed.
import { afterEach, describe, expect, it } from '@jest/globals';
import { type INestApplication, Inject, Injectable } from '@nestjs/common';
import {
  type Lease,
  Locked,
  LockService,
  LockServiceClosedError,
  RedisLockModule,
  type RedisLockModuleOptions,
} from '../../lib';
import { type Deferred, deferred } from '../support/deferred';
import { elapsedSince, lockService, outcome, until } from '../support/lock-fixtures';
import { bootApp } from '../support/nest-apps';
import { spawnWorker, type Worker, workerPath } from '../support/processes';
import { type RedisServer, startRedis, useRedis } from '../support/redis-server';
import type { Report } from '../workers/nest-shutdown.worker';
import type { Report as RefusedReport } from '../workers/refused-start.worker';

const server = useRedis();
const ownServers: RedisServer[] = [];
const workers: Worker<Report | RefusedReport>[] = [];

afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.kill()));
  await Promise.all(ownServers.splice(0).map((s) => s.dispose()));
});

/** Rejects with a clear message if `promise` has not settled within `ms` (instead of a jest timeout). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** One run of Jobs.run: the test learns when the method is inside (with its lease) and says when it ends. */
interface Step {
  entered: Deferred<Lease>;
  finish: Deferred<string>;
  /** Set as soon as the method body starts. */
  ran: boolean;
  /** A call the method makes on the same lock after its step is finished (reentry). */
  nested?: Step;
}

const step = (): Step => ({ entered: deferred<Lease>(), finish: deferred<string>(), ran: false });

@Injectable()
class Jobs {
  constructor(@Inject(LockService) private readonly locks: LockService) {}

  /** Holds `job:<id>` until the test finishes the step. ttl is long: the lock can only go by a release. */
  @Locked('job:<0>', { ttl: 30_000, waitTimeout: 30_000 })
  async run(id: string, s: Step): Promise<string> {
    s.ran = true;
    const lease = this.locks.currentLease();
    if (!lease) throw new Error('no lease inside @Locked');
    s.entered.resolve(lease);
    const outcome = await s.finish.promise;
    if (s.nested) return `${id} ${outcome} ${await this.run(id, s.nested)}`;
    return `${id} ${outcome}`;
  }
}

async function boot(options: RedisLockModuleOptions): Promise<{ app: INestApplication; jobs: Jobs }> {
  const app = await bootApp({ imports: [RedisLockModule.forRoot(options)], providers: [Jobs] });
  const client = app.get(LockService).client;
  if (client.status !== 'ready') await within(new Promise((r) => client.once('ready', r)), 10_000, 'connect');
  return { app, jobs: app.get(Jobs) };
}

/** Connections the server has open under `name` (CLIENT LIST), seen from a connection of the test's. */
async function connectionsNamed(s: RedisServer, name: string): Promise<number> {
  const admin = s.client();
  try {
    const list = (await admin.call('CLIENT', 'LIST')) as string;
    return list.split('\n').filter((line) => line.includes(` name=${name} `)).length;
  } finally {
    admin.disconnect();
  }
}

/** Takes `key` and has a second caller queue behind it, so the service also opens its wake connection. */
async function contend(locks: LockService, key: string): Promise<void> {
  const first = await locks.acquire(key);
  const second = locks.acquire(key, { waitTimeout: 10_000 });
  await until(
    () => locks.inspect(key),
    (info) => info.queueLength === 1,
  );
  await first.release();
  await (await second).release();
}

describe('shutdown: connections', () => {
  it('app.close() closes every connection the module opened for forRoot({ url })', async () => {
    const { app } = await boot({ url: server().url, redis: { connectionName: 'owned' } });
    const locks = app.get(LockService);
    await contend(locks, 'owned');
    // The command connection and the wake subscription (a duplicate, same name).
    expect(await connectionsNamed(server(), 'owned')).toBe(2);
    await app.close();
    expect(locks.client.status).toBe('end');
    // The server drops a connection when it reads the client's FIN: wait for it to have done so.
    await until(
      () => connectionsNamed(server(), 'owned'),
      (n) => n === 0,
    );
  });

  it('app.close() leaves a client given as `client` open and usable, closing only its own wake connection', async () => {
    const client = server().client({ connectionName: 'given' });
    const { app } = await boot({ client });
    await contend(app.get(LockService), 'given');
    expect(await connectionsNamed(server(), 'given')).toBe(2);
    await app.close();
    expect(client.status).toBe('ready');
    expect(await client.ping()).toBe('PONG');
    // Still good for locks: a new service on it takes and releases one.
    const again = new LockService(client);
    const lease = await again.acquire('given:after');
    expect(await client.get('lock:{given:after}')).toBe(lease.token);
    await lease.release();
    await again.close();
    await until(
      () => connectionsNamed(server(), 'given'),
      (n) => n === 1,
    );
  });

  it('app.close() with Redis stopped returns promptly instead of waiting for a close that never comes', async () => {
    const own = await startRedis();
    ownServers.push(own);
    const { app } = await boot({ url: own.url });
    const client = app.get(LockService).client;
    const lost = within(new Promise((r) => client.once('close', r)), 10_000, 'close of the connection');
    await own.stop();
    await lost;
    const started = performance.now();
    await app.close();
    // Nothing to wait for: no socket is open between reconnection attempts.
    expect(elapsedSince(started)).toBeLessThan(500);
  });

  it('app.close() with Redis frozen (SIGSTOP) returns in bounded time although QUIT is never answered', async () => {
    const own = await startRedis();
    ownServers.push(own);
    const { app } = await boot({ url: own.url, commandTimeout: 500 });
    const locks = app.get(LockService);
    // Contention opens the wake connection, whose QUIT is never answered either.
    await contend(locks, 'frozen-wake');
    // A held lease: shutdown tries to release it and gets no reply either (commandTimeout).
    await locks.acquire('frozen');
    own.pause();
    try {
      const started = performance.now();
      await within(app.close(), 15_000, 'app.close()');
      // 0.5 s for the release, 1 s for each QUIT, then ioredis destroys the half-closed socket after 2 s.
      expect(elapsedSince(started)).toBeLessThan(5_000);
      expect(locks.client.status).toBe('end');
    } finally {
      own.resume();
    }
  });
});

describe('shutdown: locked calls', () => {
  it('a running call finishes within the grace period, then its lock is gone from Redis', async () => {
    const grace = 10_000;
    const { app, jobs } = await boot({ url: server().url, gracePeriod: grace });
    const inspector = lockService(server());
    const running = step();
    const call = jobs.run('a', running);
    const lease = await running.entered.promise;

    const started = performance.now();
    let closed = false;
    const closing = app.close().then(() => {
      closed = true;
    });
    // The grace period is on: the call still holds its lock in Redis and close() waits for it.
    const during = await inspector.inspect('job:a');
    expect(during.holder).toBe(lease.token);
    expect(closed).toBe(false);

    running.finish.resolve('done');
    await expect(call).resolves.toBe('a done');
    await within(closing, 5_000, 'app.close()');
    // It returned because the call ended, not because the grace period ran out.
    expect(elapsedSince(started)).toBeLessThan(grace / 2);
    const after = server().client();
    expect(await after.exists('lock:{job:a}', 'lock:{job:a}:q')).toBe(0);
  });

  it('callers queued at close time reject with LockServiceClosedError without running, and leave the queue', async () => {
    const { app, jobs } = await boot({ url: server().url, gracePeriod: 10_000 });
    const inspector = lockService(server());
    const running = step();
    const call = jobs.run('b', running);
    await running.entered.promise;
    const queued = [step(), step()];
    const waiting = queued.map((s) => outcome(jobs.run('b', s)));
    await until(
      () => inspector.inspect('job:b'),
      (info) => info.queueLength === 2,
    );

    const closing = app.close();
    // Turned away while the running call still holds the lock: they do not wait for the grace period.
    const results = await within(Promise.all(waiting), 2_000, 'the queued calls');
    for (const { error } of results) {
      expect(error).toBeInstanceOf(LockServiceClosedError);
      expect((error as LockServiceClosedError).code).toBe('LOCK_SERVICE_CLOSED');
    }
    expect(queued.map((s) => s.ran)).toEqual([false, false]);
    // Their cancels were sent when they were turned away; seen from another connection a moment later.
    await until(
      () => inspector.inspect('job:b'),
      (info) => info.queueLength === 0,
    );

    running.finish.resolve('done');
    await call;
    await closing;
  });

  it('a call that outlives the grace period has its lease released in Redis when the grace period ends', async () => {
    const grace = 400;
    const { app, jobs } = await boot({ url: server().url, gracePeriod: grace });
    const inspector = lockService(server());
    const running = step();
    const call = outcome(jobs.run('c', running));
    const lease = await running.entered.promise;

    const started = performance.now();
    const closing = app.close();
    expect((await inspector.inspect('job:c')).holder).toBe(lease.token);
    await within(closing, grace + 5_000, 'app.close()');
    const closeMs = elapsedSince(started);
    expect(closeMs).toBeGreaterThanOrEqual(grace - 20);
    expect(closeMs).toBeLessThan(grace + 1_000);
    // ttl is 30 s: the key can only be gone because it was released, not because it expired.
    const after = server().client();
    expect(await after.exists('lock:{job:c}')).toBe(0);
    // The call finishing late (after its lease was released, the connection closed) settles without any
    // unhandled rejection (the suite's setup fails the test on one).
    // Its lease was lost when the grace period ended: the signal says so while it still runs, and the
    // call rejects with LockLostError rather than reporting success for work done without the lock.
    expect(lease.signal.aborted).toBe(true);
    expect(lease.signal.reason).toMatchObject({ code: 'LOCK_LOST' });
    running.finish.resolve('late');
    const late = await within(call, 2_000, 'the late call');
    expect(late.error).toMatchObject({ code: 'LOCK_LOST', key: 'job:c' });
  });

  it('a call running in the grace period can still nest calls on the lock it holds', async () => {
    const { app, jobs } = await boot({ url: server().url, gracePeriod: 10_000 });
    const nested = step();
    nested.finish.resolve('inner');
    const running = { ...step(), nested };
    const call = jobs.run('e', running);
    const outer = await running.entered.promise;
    const closing = app.close();
    // The call goes on after close() began and re-enters its own lock: reentry reuses its lease instead
    // of being turned away as a new call is.
    running.finish.resolve('outer');
    await expect(within(call, 2_000, 'the call')).resolves.toBe('e outer e inner');
    expect((await nested.entered.promise).fence).toBe(outer.fence);
    await within(closing, 2_000, 'app.close()');
  });

  it('a call made after close() has started rejects at once with LockServiceClosedError', async () => {
    const { app, jobs } = await boot({ url: server().url, gracePeriod: 10_000 });
    const running = step();
    const call = jobs.run('d', running);
    await running.entered.promise;
    const closing = app.close();
    const late = await within(outcome(jobs.run('d-other', step())), 1_000, 'the late call');
    expect(late.error).toBeInstanceOf(LockServiceClosedError);
    running.finish.resolve('done');
    await call;
    await closing;
  });
});

describe('a refused start: the process', () => {
  it('ends by itself after catching the error, the connection the module opened let go', async () => {
    const worker = spawnWorker<RefusedReport>(workerPath('refused-start'), { url: server().url });
    workers.push(worker);
    const refused = await worker.next((m) => m.type === 'refused', 20_000);
    expect(refused).toMatchObject({ usage: true, code: 'LOCK_INVALID_KEY' });
    expect(refused.message).toMatch(/<1> reads argument 2, but the method declares 1 parameter/);
    // Never killed here: it has to end by itself (afterEach kills it if it did not).
    expect(await within(worker.exit, 3_000, 'the worker process exit')).toEqual({ code: 0, signal: null });
  });
});

describe('shutdown: the process', () => {
  /** Runs the worker to the end and returns what it reported and how it exited. */
  async function runWorker(finish: 'within-grace' | 'never', key: string) {
    const grace = 600;
    const worker = spawnWorker<Report>(workerPath('nest-shutdown'), {
      url: server().url,
      key,
      // Renewed every 100 ms: several renewals run before and during the grace period.
      ttl: 300,
      claimWindow: 100,
      grace,
      finish,
    });
    workers.push(worker);
    const running = await worker.next((m) => m.type === 'running', 20_000);
    const closed = await worker.next((m) => m.type === 'closed', 10_000);
    // Read at once: with a 300 ms ttl renewed until the end, only a release can have removed it this soon.
    const exists = await server().client().exists(`lock:{job:${key}}`);
    // The worker is never killed here: it has to end by itself (afterEach kills it if it did not).
    const exit = await within(worker.exit, 3_000, 'the worker process exit');
    return { running, closed, exists, exit, grace };
  }

  it('after app.close() with a renewing @Locked call finished in the grace period, the process exits with 0', async () => {
    const { running, closed, exists, exit, grace } = await runWorker('within-grace', 'proc:a');
    expect(running.type === 'running' && running.renewals).toBeGreaterThanOrEqual(2);
    expect(closed).toMatchObject({
      type: 'closed',
      waiter: 'rejected LOCK_SERVICE_CLOSED',
      call: 'resolved proc:a finished',
    });
    // close() returned when the call ended, before the grace period was over.
    expect(closed.type === 'closed' && closed.closeMs).toBeLessThan(grace);
    expect(exists).toBe(0);
    expect(exit).toEqual({ code: 0, signal: null });
  });

  it('after app.close() with a renewing @Locked call still running past the grace period, the process exits with 0', async () => {
    const { closed, exists, exit, grace } = await runWorker('never', 'proc:b');
    expect(closed).toMatchObject({ type: 'closed', waiter: 'rejected LOCK_SERVICE_CLOSED', call: 'pending' });
    expect(closed.type === 'closed' && closed.closeMs).toBeGreaterThanOrEqual(grace - 20);
    expect(exists).toBe(0);
    expect(exit).toEqual({ code: 0, signal: null });
  });
});
