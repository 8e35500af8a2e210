// A whole application, as it is written for production (RedisLockModule.forRoot / forRootAsync with a
// Redis URL), tested with no Redis: the documented overrides run its locks in memory and open no
// connection, and the override that cannot work (overrideModule(RedisLockModule)) fails loudly and
// promptly instead of hanging. "Redis" here is a TCP server that counts the connections it is offered
// and turns each away with an error, so "no connection attempt" is observed, not assumed. scripts/no-redis-check.sh
// runs this file with no Redis anywhere, under --detectOpenHandles.
import { once } from 'node:events';
import { createServer, type Server } from 'node:net';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { type INestApplication, Inject, Injectable, type LoggerService, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  getLockServiceToken,
  Locked,
  LockService,
  LockUsageError,
  RedisLockModule,
  RedisUnavailableError,
} from 'nestjs-redis-lock';
import { getLockBackendToken, MemoryLockBackend, RedisLockTestingModule } from 'nestjs-redis-lock/testing';
import { bootApp } from '../support/nest-apps';

/** Refuses every connection it accepts, counting them: what a module that connects would reach. */
let server: Server;
let connections = 0;
let url = '';

beforeAll(async () => {
  server = createServer((socket) => {
    connections += 1;
    // An error reply to whatever comes first (the ready check), then the door shuts.
    socket.on('error', () => {});
    socket.end('-ERR this is not Redis\r\n', () => socket.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no TCP address');
  url = `redis://127.0.0.1:${address.port}`;
});

afterAll(async () => {
  server.close();
  await once(server, 'close');
});

afterEach(() => {
  connections = 0;
});

@Injectable()
class Wallet {
  balance = 0;

  /** Read, await, write: loses updates unless calls run one at a time. */
  @Locked('wallet:<0>', { ttl: 5_000, waitTimeout: 5_000 })
  async deposit(_id: string, amount: number): Promise<number> {
    const before = this.balance;
    await nextTurn();
    this.balance = before + amount;
    return this.balance;
  }
}

@Injectable()
class Billing {
  constructor(@Inject(getLockServiceToken('billing')) readonly locks: LockService) {}

  @Locked('invoice:<0>', { service: 'billing', waitTimeout: 5_000 })
  async issue(id: string): Promise<string> {
    return `${id} under ${this.locks.currentLease()?.key}`;
  }
}

/** The lock configuration as an application would keep it: a constant, so a test can name it. */
const locks = () => RedisLockModule.forRootAsync({ useFactory: () => ({ url, defaults: { ttl: 10_000 } }) });

function appModule(lockModule = locks()) {
  @Module({
    imports: [lockModule, RedisLockModule.forRoot({ name: 'billing', url: url })],
    providers: [Wallet, Billing],
  })
  class AppModule {}
  return AppModule;
}

/** Lines the application logged; `logged(text)` resolves once a line contains `text`. */
class CapturingLogger implements LoggerService {
  readonly lines: string[] = [];
  private readonly watchers: Array<{ text: string; found: () => void }> = [];
  log(message: unknown) {
    this.add(message);
  }
  error(message: unknown) {
    this.add(message);
  }
  warn(message: unknown) {
    this.add(message);
  }
  logged(text: string): Promise<void> {
    if (this.lines.some((line) => line.includes(text))) return Promise.resolve();
    return new Promise((found) => this.watchers.push({ text, found }));
  }
  private add(message: unknown) {
    const line = String(message);
    this.lines.push(line);
    for (const watcher of this.watchers) if (line.includes(watcher.text)) watcher.found();
  }
}

/** Two deposits at once, twice: exact only if the lock excluded them. */
async function depositsAreExclusive(app: INestApplication): Promise<void> {
  const wallet = app.get(Wallet);
  await Promise.all([wallet.deposit('w1', 10), wallet.deposit('w1', 5), wallet.deposit('w1', 1)]);
  expect(wallet.balance).toBe(16);
}

describe('a whole application tested without Redis', () => {
  it('overrideProvider(getLockBackendToken(...)) runs every configuration in memory, with no connection', async () => {
    const app = await bootApp({
      imports: [appModule()],
      configure: (builder) =>
        builder
          .overrideProvider(getLockBackendToken())
          .useValue(new MemoryLockBackend())
          .overrideProvider(getLockBackendToken('billing'))
          .useValue(new MemoryLockBackend()),
    });
    await depositsAreExclusive(app);
    await expect(app.get(Billing).issue('i1')).resolves.toBe('i1 under invoice:i1');
    // The application's own options still apply (defaults.ttl from its factory).
    const service = app.get(LockService);
    const held = await service.acquire('probe');
    expect((await service.inspect('probe')).ttl).toBeGreaterThan(5_000);
    await held.release();
    expect(connections).toBe(0);
  });

  it('overrideModule matches the forRoot result the application kept, not RedisLockModule itself', async () => {
    const kept = locks();
    const app = await bootApp({
      imports: [appModule(kept)],
      configure: (builder) =>
        builder
          .overrideModule(kept)
          .useModule(RedisLockTestingModule.forRoot())
          .overrideProvider(getLockBackendToken('billing'))
          .useValue(new MemoryLockBackend()),
    });
    await depositsAreExclusive(app);
    expect(connections).toBe(0);
  });

  it('refuses a replacement that is not a lock backend, saying what to give', async () => {
    const builder = Test.createTestingModule({ imports: [appModule()] })
      .overrideProvider(getLockBackendToken())
      .useValue({ acquire: () => undefined });
    await expect(builder.compile()).rejects.toThrow(LockUsageError);
    await expect(builder.compile()).rejects.toThrow(/useValue\(new MemoryLockBackend\(\)\)/);
    expect(connections).toBe(0);
  });

  it('overrideModule(RedisLockModule) matches nothing: the app connects, and its lock calls fail fast with a hint', async () => {
    const logger = new CapturingLogger();
    const app = await bootApp({
      imports: [appModule()],
      configure: (builder) =>
        builder.overrideModule(RedisLockModule).useModule(RedisLockTestingModule.forRoot()).setLogger(logger),
      logger,
    });
    // The call fails (it does not wait for a Redis that will never answer) with the typed error; jest's
    // own test timeout is the bound on "promptly".
    await expect(app.get(Wallet).deposit('w1', 1)).rejects.toThrow(RedisUnavailableError);
    expect(connections).toBeGreaterThan(0);
    // The log says what was missing, in the words of the fix (jest's timeout bounds the wait).
    await logger.logged('overrideProvider(getLockBackendToken())');
    expect(logger.lines.find((line) => line.includes('getLockBackendToken'))).toMatch(
      /^Redis connection error/,
    );
  });
});
