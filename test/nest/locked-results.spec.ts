// What a @Locked method returns and how long it holds its lock: sync results and Promises come back as a
// Promise settled after the release; a declared Observable takes the lock on subscribe and holds it until
// it completes, errors or is unsubscribed; onTimeout 'skip' returns undefined without running, 'throw' (the
// default) is a LockTimeoutError, 409 over HTTP; and inside the method currentLease() is the held lease.
import { beforeEach, describe, expect, it } from '@jest/globals';
import { Controller, Get, Inject, Injectable, Param, Post } from '@nestjs/common';
import { Cron, ScheduleModule, SchedulerRegistry } from '@nestjs/schedule';
import { lastValueFrom, Observable, of, Subject, startWith, take } from 'rxjs';
import request from 'supertest';
import { type Lease, Locked, LockService, LockTimeoutError, RedisLockModule } from '../../lib';
import { lockService, outcome } from '../support/lock-fixtures';
import { bootApp } from '../support/nest-apps';
import { useRedis } from '../support/redis-server';
import { connection, type Deferred, deferred, lockState, Meter, queued, send } from './locked-fixtures';

const server = useRedis();
const PREFIX = 'results:';

let meter: Meter;
/** What the Observable methods return: the test drives it. */
let subject: Subject<number>;
/** Resolved each time an Observable method body runs. */
let invocations: number;
let invoked: Deferred<void>;

beforeEach(() => {
  meter = new Meter();
  subject = new Subject<number>();
  invocations = 0;
  invoked = deferred();
});

function invoke(): void {
  invocations++;
  invoked.resolve();
}

@Injectable()
class Results {
  runs = 0;

  constructor(@Inject(LockService) readonly locks: LockService) {}

  @Locked('sync')
  double(value: number): number {
    this.runs++;
    if (value < 0) throw new RangeError('negative');
    return value * 2;
  }

  @Locked('sync')
  heldKey(): string | undefined {
    return this.locks.currentLease()?.key;
  }

  /** Emits, from a later turn of the event loop, the lease currentLease() sees. */
  @Locked('observed:<0>')
  observedLease(_id: string): Observable<{ key?: string; fence?: number }> {
    return new Observable((subscriber) => {
      const timer = setTimeout(() => {
        const lease = this.locks.currentLease();
        subscriber.next({ key: lease?.key, fence: lease?.fence });
        subscriber.complete();
      }, 5);
      return () => clearTimeout(timer);
    });
  }

  @Locked('promise')
  async promise(): Promise<string> {
    this.runs++;
    return meter.pass('done');
  }

  @Locked('promise')
  async failing(error: Error): Promise<never> {
    this.runs++;
    await meter.pass(null);
    throw error;
  }

  @Locked('stream')
  stream(): Observable<number> {
    invoke();
    return subject.asObservable();
  }

  @Locked('stream')
  withInitial(): Observable<number> {
    invoke();
    return subject.pipe(startWith(0));
  }

  @Locked('stream')
  firstOnly(): Observable<number> {
    invoke();
    return subject.pipe(take(1));
  }

  // No declared return type: the Observable it returns is run to completion, its last value resolved.
  @Locked('undeclared')
  undeclared() {
    invoke();
    return subject.asObservable();
  }

  @Locked('busy:<0>', { waitTimeout: 0 })
  async busy(id: string): Promise<string> {
    this.runs++;
    return id;
  }

  /** Skips when its own lock is busy; `inner` takes another lock, which may time out while it runs. */
  @Locked('outer', { waitTimeout: 0, onTimeout: 'skip' })
  async outer(): Promise<string | undefined> {
    this.runs++;
    await this.busy('inner');
    return 'outer done';
  }

  @Locked('outer', { waitTimeout: 0, onTimeout: 'skip' })
  outerStream(): Observable<string> {
    invoke();
    return new Observable<string>((subscriber) => {
      this.busy('inner').then(
        () => subscriber.complete(),
        (error: unknown) => subscriber.error(error),
      );
    });
  }

  @Locked('stream', { waitTimeout: 0, onTimeout: 'skip' })
  streamOrSkip(): Observable<number> {
    invoke();
    return of(1);
  }
}

@Injectable()
class Jobs {
  constructor(@Inject(LockService) readonly locks: LockService) {}

  /** A job that must run on one instance only: the others skip it instead of queueing. */
  @Cron('0 0 1 1 *', { name: 'report', waitForCompletion: true })
  @Locked('job:report', { waitTimeout: 0, onTimeout: 'skip' })
  async report(): Promise<string | undefined> {
    return meter.pass('ran');
  }
}

@Controller()
class ResultsController {
  runs = 0;

  constructor(@Inject(LockService) private readonly locks: LockService) {}

  @Get('stream')
  @Locked('http-stream')
  stream(): Observable<number> {
    invoke();
    return subject.asObservable();
  }

  @Post('busy/:id')
  @Locked('busy:<0>', { waitTimeout: 0 })
  busy(@Param('id') id: string) {
    this.runs++;
    return { id };
  }

  @Post('fenced/:id')
  @Locked('fenced:<0>')
  async fenced(@Param('id') id: string) {
    const lease = this.locks.currentLease() as Lease;
    const info = await this.locks.inspect(`fenced:${id}`);
    return {
      key: lease.key,
      fence: lease.fence,
      token: lease.token,
      signal: lease.signal instanceof AbortSignal && !lease.signal.aborted,
      inspected: { fence: info.fence, holder: info.holder },
    };
  }
}

async function app() {
  const nest = await bootApp({
    imports: [RedisLockModule.forRoot({ ...connection(server()), prefix: PREFIX })],
    controllers: [ResultsController],
    providers: [Results],
  });
  const results = nest.get(Results);
  return { nest, results, locks: results.locks, http: () => request(nest.getHttpServer()) };
}

const free = (locks: LockService, key: string) => lockState(locks, key, (info) => !info.held);

async function expectFree(locks: LockService, key: string): Promise<void> {
  expect((await locks.inspect(key)).held).toBe(false);
}

/** Subscribes and records what the Observable delivers; `done` settles on complete or error. */
function record(source: Observable<number>) {
  const values: number[] = [];
  const done = deferred<{ completed: boolean; error?: unknown }>();
  const subscription = source.subscribe({
    next: (value) => values.push(value),
    complete: () => done.resolve({ completed: true }),
    error: (error: unknown) => done.resolve({ completed: false, error }),
  });
  return { values, done: done.promise, subscription };
}

describe('@Locked results: sync and Promise', () => {
  it('a sync method returns a Promise of its result, run under the lock and released when it settles', async () => {
    const { results, locks } = await app();
    const result: unknown = results.double(21);
    expect(result).toBeInstanceOf(Promise);
    await expect(result).resolves.toBe(42);
    await expectFree(locks, 'sync');
    await expect(results.heldKey()).resolves.toBe('sync');
  });

  it('a sync throw becomes a rejected Promise, and the lock is released', async () => {
    const { results, locks } = await app();
    await expect(results.double(-1)).rejects.toThrow(RangeError);
    await expectFree(locks, 'sync');
  });

  it('a Promise result: the lock is held until it settles, then released before the caller resumes', async () => {
    const { results, locks } = await app();
    const result = results.promise();
    await meter.entries(1);
    expect((await locks.inspect('promise')).held).toBe(true);
    meter.open();
    await expect(result).resolves.toBe('done');
    await expectFree(locks, 'promise');
  });

  it('a rejected Promise: the caller gets the same error and the lock is released', async () => {
    const { results, locks } = await app();
    const boom = new Error('boom');
    const result = outcome(results.failing(boom));
    await meter.entries(1);
    expect((await locks.inspect('promise')).held).toBe(true);
    meter.open();
    expect((await result).error).toBe(boom);
    await expectFree(locks, 'promise');
  });

  it('an Observable from a method not declared as one runs to completion under the lock: its last value', async () => {
    const { results, locks } = await app();
    const result: unknown = results.undeclared();
    expect(result).toBeInstanceOf(Promise);
    await invoked.promise;
    subject.next(1);
    subject.next(2);
    expect((await locks.inspect('undeclared')).held).toBe(true);
    subject.complete();
    await expect(result).resolves.toBe(2);
    await expectFree(locks, 'undeclared');
  });
});

describe('@Locked results: declared Observables', () => {
  it('the lock is taken on subscribe, not on call', async () => {
    const { results, locks } = await app();
    const stream = results.stream();
    expect(stream).toBeInstanceOf(Observable);
    expect(invocations).toBe(0);
    await expectFree(locks, 'stream');
    const { subscription } = record(stream);
    await invoked.promise;
    expect((await locks.inspect('stream')).held).toBe(true);
    subscription.unsubscribe();
  });

  it('the lock is held while the Observable is open, after values, and released when it completes', async () => {
    const { results, locks } = await app();
    const { values, done } = record(results.stream());
    await invoked.promise;
    subject.next(1);
    subject.next(2);
    expect(values).toEqual([1, 2]);
    expect((await locks.inspect('stream')).held).toBe(true);
    subject.complete();
    expect(await done).toEqual({ completed: true });
    await expectFree(locks, 'stream');
  });

  it('the lock is released when the Observable errors, and the subscriber gets the error', async () => {
    const { results, locks } = await app();
    const { done } = record(results.stream());
    await invoked.promise;
    expect((await locks.inspect('stream')).held).toBe(true);
    const boom = new Error('boom');
    subject.error(boom);
    expect(await done).toEqual({ completed: false, error: boom });
    await expectFree(locks, 'stream');
  });

  it('the lock is released when the subscriber unsubscribes, and the source is unsubscribed too', async () => {
    const { results, locks } = await app();
    const { subscription } = record(results.stream());
    await invoked.promise;
    expect((await locks.inspect('stream')).held).toBe(true);
    subscription.unsubscribe();
    expect(subject.observed).toBe(false);
    await free(locks, 'stream');
  });

  it('take(1) downstream: the lock is released once the first value has been taken', async () => {
    const { results, locks } = await app();
    const { values, done } = record(results.stream().pipe(take(1)));
    await invoked.promise;
    subject.next(7);
    expect(await done).toEqual({ completed: true });
    expect(values).toEqual([7]);
    expect(subject.observed).toBe(false);
    await free(locks, 'stream');
  });

  it('take(1) downstream of a source that emits on subscribe: the source is unsubscribed too', async () => {
    const { results, locks } = await app();
    const { values, done } = record(results.withInitial().pipe(take(1)));
    expect(await done).toEqual({ completed: true });
    expect(values).toEqual([0]);
    await free(locks, 'stream');
    expect(subject.observed).toBe(false);
  });

  it('unsubscribing while waiting in line leaves the queue, and the method never runs', async () => {
    const { results, locks } = await app();
    const first = record(results.stream());
    await invoked.promise;
    const second = record(results.stream());
    await queued(locks, 'stream', 1);
    second.subscription.unsubscribe();
    await lockState(locks, 'stream', (info) => info.held && info.queueLength === 0);
    subject.complete();
    expect(await first.done).toEqual({ completed: true });
    await expectFree(locks, 'stream');
    expect(invocations).toBe(1);
  });

  it('take(1) inside the method: the lock is released when the first value completes it', async () => {
    const { results, locks } = await app();
    const { values, done } = record(results.firstOnly());
    await invoked.promise;
    expect((await locks.inspect('stream')).held).toBe(true);
    subject.next(7);
    expect(await done).toEqual({ completed: true });
    expect(values).toEqual([7]);
    await expectFree(locks, 'stream');
  });

  it('a second subscriber waits in line until the first Observable completes', async () => {
    const { results, locks } = await app();
    const first = record(results.stream());
    await invoked.promise;
    const second = record(results.stream());
    await queued(locks, 'stream', 1);
    expect(invocations).toBe(1);
    subject.complete();
    await first.done;
    expect(await second.done).toEqual({ completed: true });
    expect(invocations).toBe(2);
  });

  it("onTimeout 'skip' on an Observable completes it empty while the lock is busy, without running", async () => {
    const { results } = await app();
    const holder = record(results.stream());
    await invoked.promise;
    const skipped = record(results.streamOrSkip());
    expect(await skipped.done).toEqual({ completed: true });
    expect(skipped.values).toEqual([]);
    expect(invocations).toBe(1);
    holder.subscription.unsubscribe();
  });

  it('over HTTP an Observable handler holds the lock until it completes and answers its last value', async () => {
    const { locks, http } = await app();
    const response = send(http().get('/stream'));
    await invoked.promise;
    subject.next(1);
    expect((await locks.inspect('http-stream')).held).toBe(true);
    subject.next(2);
    subject.complete();
    const { status, text } = await response;
    expect(status).toBe(200);
    expect(text).toBe('2');
    await expectFree(locks, 'http-stream');
  });
});

describe('@Locked onTimeout', () => {
  it("'skip' with waitTimeout 0: a concurrent second call returns undefined at once, without running or queueing", async () => {
    const nest = await bootApp({
      imports: [RedisLockModule.forRoot({ ...connection(server()), prefix: PREFIX })],
      providers: [Jobs],
    });
    const jobs = nest.get(Jobs);
    const first = jobs.report();
    await meter.entries(1);
    await expect(jobs.report()).resolves.toBeUndefined();
    expect(meter.entered).toBe(1);
    expect(await jobs.locks.inspect('job:report')).toMatchObject({ held: true, queueLength: 0 });
    meter.open();
    await expect(first).resolves.toBe('ran');
  });

  it("'skip': a @Cron job fired on two instances at once runs on one, the other skips it", async () => {
    const instance = () =>
      bootApp({
        imports: [
          RedisLockModule.forRoot({ ...connection(server()), prefix: PREFIX }),
          ScheduleModule.forRoot(),
        ],
        providers: [Jobs],
      });
    const [a, b] = [await instance(), await instance()];
    const job = (nest: typeof a) => nest.get(SchedulerRegistry).getCronJob('report');
    // waitForCompletion: fireOnTick resolves once the method (or its skip) is done.
    const first = job(a).fireOnTick();
    await meter.entries(1);
    await job(b).fireOnTick();
    expect(meter.entered).toBe(1);
    meter.open();
    await first;
    // With the lock free again, the other instance runs it.
    await job(b).fireOnTick();
    expect(meter.entered).toBe(2);
  });

  it("'skip' covers only its own lock: a LockTimeoutError of another lock taken inside still rejects", async () => {
    const { results } = await app();
    const holder = await lockService(server(), { prefix: PREFIX }).acquire('busy:inner');
    const { value, error } = await outcome(results.outer());
    expect(results.runs).toBe(1);
    expect(value).toBeUndefined();
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect((error as LockTimeoutError).key).toBe('busy:inner');
    await holder.release();
  });

  it("'skip' covers only its own lock: an Observable erroring with another lock's timeout errors", async () => {
    const { results } = await app();
    const holder = await lockService(server(), { prefix: PREFIX }).acquire('busy:inner');
    const error = await new Promise((resolve) =>
      results.outerStream().subscribe({ error: resolve, complete: () => resolve('completed') }),
    );
    expect(invocations).toBe(1);
    expect(error).toBeInstanceOf(LockTimeoutError);
    await holder.release();
  });

  it("'throw' is the default: a busy lock is a LockTimeoutError for a direct call", async () => {
    const { results, locks } = await app();
    const holder = await lockService(server(), { prefix: PREFIX }).acquire('busy:1');
    const { error } = await outcome(results.busy('1'));
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect((error as LockTimeoutError).key).toBe('busy:1');
    expect(results.runs).toBe(0);
    await holder.release();
    await expect(results.busy('1')).resolves.toBe('1');
    await expectFree(locks, 'busy:1');
  });

  it("'throw' over HTTP: 409 Conflict with Retry-After and the LOCK_TIMEOUT code, without running", async () => {
    const { nest, http } = await app();
    const holder = await lockService(server(), { prefix: PREFIX }).acquire('busy:2');
    const response = await http().post('/busy/2');
    expect(response.status).toBe(409);
    expect(response.headers['retry-after']).toBe('1');
    expect(response.body).toMatchObject({ statusCode: 409, code: 'LOCK_TIMEOUT' });
    expect(nest.get(ResultsController).runs).toBe(0);
    await holder.release();
    expect((await http().post('/busy/2')).status).toBe(201);
  });
});

describe('currentLease() inside a @Locked method', () => {
  it('is the held lease: its key, token and fence are what Redis records, its signal live', async () => {
    const { http, locks } = await app();
    expect(locks.currentLease()).toBeUndefined();
    const response = await http().post('/fenced/a');
    expect(response.status).toBe(201);
    const body = response.body as {
      key: string;
      fence: number;
      token: string;
      signal: boolean;
      inspected: { fence: number; holder: string };
    };
    expect(body.key).toBe('fenced:a');
    expect(body.signal).toBe(true);
    expect(body.fence).toBeGreaterThan(0);
    expect(body.fence).toBe(body.inspected.fence);
    expect(body.token).toBe(body.inspected.holder);
  });

  it('an Observable method that waited in line sees, from a later turn, the lease it was handed', async () => {
    const { results, locks } = await app();
    const holder = await lockService(server(), { prefix: PREFIX }).acquire('observed:x');
    const seen = lastValueFrom(results.observedLease('x'));
    await queued(locks, 'observed:x', 1);
    await holder.release();
    const lease = await seen;
    expect(lease.key).toBe('observed:x');
    expect(lease.fence).toBeGreaterThan(holder.fence);
    await expectFree(locks, 'observed:x');
    expect((await locks.inspect('observed:x')).fence).toBe(lease.fence);
  });

  it('fences increase across successive calls', async () => {
    const { http } = await app();
    const fences: number[] = [];
    for (let call = 0; call < 4; call++) {
      fences.push((await http().post('/fenced/b')).body.fence);
    }
    for (let i = 1; i < fences.length; i++) expect(fences[i]).toBeGreaterThan(fences[i - 1]);
  });
});
