// Lock events without OpenTelemetry, against real Redis: the diagnostics channels publish queued,
// granted, timeout, aborted, released, renewed and lost with their documented payloads; a service's
// `onEvent` gets the same events (and what it throws is ignored); `telemetry.logger` (here a Nest Logger,
// in the module) logs timeouts and lost leases, and a skip is not logged; `logEvents` is refused as an
// unknown option.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Injectable, Logger, type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  LOCK_CHANNELS,
  type LockEvent,
  Locked,
  LockLostError,
  LockService,
  LockTimeoutError,
  LockUsageError,
  RedisLockModule,
} from '../../lib';
import { connection, lockState } from '../nest/locked-fixtures';
import { lockService, outcome } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';

const server = useRedis();

/** Every event published on the channels while subscribed. */
const seen: LockEvent[] = [];
/** Tests waiting for an event, resolved by the listener when it comes. */
const waiting: Array<{ matches: (event: LockEvent) => boolean; resolve: () => void }> = [];
const listener = (message: unknown) => {
  const event = message as LockEvent;
  seen.push(event);
  for (const waiter of waiting.filter((w) => w.matches(event))) waiter.resolve();
};

/** Resolves once an event of `kind` for lock `name` has been published. */
function published(kind: LockEvent['kind'], name: string): Promise<void> {
  if (of(kind, name).length > 0) return Promise.resolve();
  return new Promise((resolve) =>
    waiting.push({ matches: (e) => e.kind === kind && e.name === name, resolve }),
  );
}
const subscribed: string[] = [];

function listen(): void {
  for (const name of Object.values(LOCK_CHANNELS)) {
    subscribe(name, listener);
    subscribed.push(name);
  }
}

afterEach(() => {
  for (const name of subscribed.splice(0)) unsubscribe(name, listener);
  seen.length = 0;
  waiting.length = 0;
});

const of = (kind: LockEvent['kind'], name: string) => seen.filter((e) => e.kind === kind && e.name === name);

describe('diagnostics channels', () => {
  it('publish each event of a contended lock with its payload', async () => {
    listen();
    const locks = lockService(server());
    // Renewed every 500 ms: a busy machine stalls far less than the 1.5 s that would lose it first.
    const first = await locks.acquire('chan:1', { label: 'chan', ttl: 1_500, renew: true });
    const second = locks.acquire('chan:1', { label: 'chan', waitTimeout: 10_000 });
    await lockState(locks, 'chan:1', (info) => info.queueLength === 1);
    // A renewal comes every ttl/3.
    await published('renewed', 'chan');
    await first.release();
    const lease = await second;
    await lease.release();

    const [queued] = of('queued', 'chan');
    expect(queued).toMatchObject({ keys: ['chan:1'], token: lease.token });
    const granted = of('granted', 'chan');
    expect(granted.map((e) => e.fence)).toEqual([first.fence, lease.fence]);
    expect(granted[1].waitedMs).toBeGreaterThan(0);
    expect(of('renewed', 'chan')[0]).toMatchObject({ token: first.token, fence: first.fence });
    const released = of('released', 'chan');
    expect(released.map((e) => e.token)).toEqual([first.token, lease.token]);
    expect(released[0].heldMs).toBeGreaterThan(0);
  });

  it('publish timeouts, aborts and losses with the error and reason', async () => {
    listen();
    const locks = lockService(server());
    const holder = await locks.acquire('chan:2', { ttl: 5_000 });
    await outcome(locks.acquire('chan:2', { label: 'two', waitTimeout: 20 }));
    const abort = new AbortController();
    const waiting = locks.acquire('chan:2', { label: 'two', signal: abort.signal });
    await lockState(locks, 'chan:2', (info) => info.queueLength === 1);
    abort.abort();
    await outcome(waiting);
    await server().admin((redis) => redis.del('lock:{chan:2}'));
    await expect(holder.extend()).rejects.toThrow();

    expect(of('timeout', 'two')[0].error).toBeInstanceOf(LockTimeoutError);
    expect(of('timeout', 'two')[0].waitedMs).toBeGreaterThanOrEqual(20);
    expect(of('aborted', 'two')).toHaveLength(1);
    const [lost] = of('lost', 'unnamed');
    expect(lost).toMatchObject({ keys: ['chan:2'], reason: 'key-missing', token: holder.token });
    expect(lost.error).toBeInstanceOf(LockLostError);
  });

  it('a lease taken while nothing listened tells its loss to a subscriber that came since (a board opened later)', async () => {
    const locks = lockService(server());
    const holder = await locks.acquire('chan:4', { label: 'late', ttl: 5_000 });
    const unheard = await locks.acquire('chan:5', { label: 'late', ttl: 5_000 });
    listen();
    await unheard.release();
    await server().admin((redis) => redis.del('lock:{chan:4}'));
    await expect(holder.extend()).rejects.toThrow();
    const [lost] = of('lost', 'late');
    expect(lost).toMatchObject({
      keys: ['chan:4'],
      reason: 'key-missing',
      token: holder.token,
      fence: holder.fence,
    });
    expect(lost.error).toBeInstanceOf(LockLostError);
    // Only the loss: a release of such a lease is not told.
    expect(seen.filter((e) => e.name === 'late').map((e) => e.kind)).toEqual(['lost']);
  });

  it("a service's onEvent gets the events, and what it throws is ignored", async () => {
    const events: LockEvent['kind'][] = [];
    const locks = lockService(server(), {
      telemetry: {
        onEvent: (event) => {
          events.push(event.kind);
          throw new Error('a broken observer');
        },
      },
    });
    await (await locks.acquire('chan:3')).release();
    expect(events).toEqual(['granted', 'released']);
  });
});

describe('telemetry options', () => {
  it('a bad telemetry option or lock label is a typed error saying what to give, and nothing is sent', async () => {
    const client = server().client();
    try {
      for (const [telemetry, message] of [
        ['yes', /telemetry must be an object/],
        [{ onevent: () => {} }, /Unknown option "onevent" in telemetry: did you mean "onEvent"\?/],
        [{ meterProvider: {} }, /^Unknown option "meterProvider" in telemetry \(known: onEvent, logger\)\.$/],
        [{ onEvent: 'log' }, /onEvent must be a function/],
      ] as const) {
        expect(() => new LockService(client, { telemetry } as never)).toThrow(LockUsageError);
        expect(() => new LockService(client, { telemetry } as never)).toThrow(message);
      }
      const locks = lockService(server());
      for (const label of ['', 'x'.repeat(257), 42]) {
        await expect(locks.acquire('named', { label } as never)).rejects.toThrow(
          /label must be a non-empty string/,
        );
      }
      expect((await locks.inspect('named')).held).toBe(false);
    } finally {
      client.disconnect();
    }
  });
});

describe('telemetry.logger in the Nest module', () => {
  class Capture implements LoggerService {
    readonly lines: string[] = [];
    log() {}
    warn(message: unknown) {
      this.lines.push(`warn ${String(message)}`);
    }
    error(message: unknown) {
      this.lines.push(`error ${String(message)}`);
    }
  }

  @Injectable()
  class Jobs {
    @Locked('job:<0>', { waitTimeout: 0, onTimeout: 'skip' })
    async runOnce(_id: string): Promise<void> {}

    @Locked('job:<0>', { waitTimeout: 20 })
    async runAfter(_id: string): Promise<void> {}
  }

  it('logs a timeout (warn) and a lost lease (error), not a skip', async () => {
    const logger = new Capture();
    const ref = await Test.createTestingModule({
      imports: [
        RedisLockModule.forRoot({
          ...connection(server()),
          telemetry: { logger: new Logger('Locks') },
        }),
      ],
      providers: [Jobs],
    })
      .setLogger(logger)
      .compile();
    const app = ref.createNestApplication({ logger });
    await app.init();
    try {
      const locks = app.get(LockService);
      const holder = await locks.acquire('job:1', { ttl: 5_000 });
      await app.get(Jobs).runOnce('1');
      await expect(app.get(Jobs).runAfter('1')).rejects.toBeInstanceOf(LockTimeoutError);
      await server().admin((redis) => redis.del('lock:{job:1}'));
      await expect(holder.extend()).rejects.toThrow();
      const lockLines = logger.lines.filter((line) => line.includes('Lock "'));
      expect(lockLines).toHaveLength(2);
      expect(lockLines[0]).toMatch(/^warn Lock "job:<0>" \("job:1"\): not granted within \d+ ms$/);
      expect(lockLines[1]).toMatch(/^error Lock "unnamed" \("job:1"\) lost after \d+ ms: .*key/);
    } finally {
      await app.close();
    }
  });

  it('refuses logEvents and shutdownGracePeriod as unknown options, listing the known ones', async () => {
    const start = (options: object) =>
      Test.createTestingModule({
        imports: [RedisLockModule.forRoot({ ...connection(server()), ...options })],
      }).compile();
    await expect(start({ logEvents: true })).rejects.toThrow(
      /Unknown option "logEvents" in the RedisLockModule options \(known: .*telemetry/,
    );
    await expect(start({ shutdownGracePeriod: 1 })).rejects.toThrow(
      /Unknown option "shutdownGracePeriod" in the RedisLockModule options \(known: .*gracePeriod/,
    );
  });

  it('refuses a logger without warn and error', () => {
    expect(() => new LockService(server().client(), { telemetry: { logger: {} as never } })).toThrow(
      LockUsageError,
    );
  });
});
