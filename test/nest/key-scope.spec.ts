// Scoped @Locked keys on real Redis: keys are global by default (two classes naming one key share its
// lock), `scope: true` gives each method its own `Class.method:` namespace (as murlock does), a named
// scope a prefix of its own, the module's `scope` (either kind) applies to every method that does not opt out;
// the lock held in Redis is the scoped key, and bad values are typed errors naming the method.
import { describe, expect, it } from '@jest/globals';
import { Inject, Injectable } from '@nestjs/common';
import { Locked, LockService, LockUsageError, RedisLockModule, type RedisLockModuleOptions } from '../../lib';
import { bootApp } from '../support/nest-apps';
import { useRedis } from '../support/redis-server';
import { connection, lockState, Meter } from './locked-fixtures';

const server = useRedis();

function classes(meter: Meter, scope: boolean | string | undefined) {
  const options = scope === undefined ? {} : { scope };
  @Injectable()
  class Users {
    @Locked('rename:<0>', options)
    rename(id: string): Promise<string> {
      return meter.pass(`users ${id}`);
    }
  }
  @Injectable()
  class Teams {
    @Locked('rename:<0>', options)
    rename(id: string): Promise<string> {
      return meter.pass(`teams ${id}`);
    }
  }
  return { Users, Teams };
}

async function start(
  meter: Meter,
  scope: boolean | string | undefined,
  module: Partial<RedisLockModuleOptions> = {},
) {
  const { Users, Teams } = classes(meter, scope);
  const app = await bootApp({
    imports: [RedisLockModule.forRoot({ ...connection(server()), ...module })],
    providers: [Users, Teams],
  });
  return { users: app.get(Users), teams: app.get(Teams), locks: app.get(LockService) };
}

describe('scoped @Locked keys', () => {
  it('by default, two classes naming one key share one lock', async () => {
    const meter = new Meter();
    const { users, teams, locks } = await start(meter, undefined);
    const first = users.rename('1');
    await meter.entries(1);
    const second = teams.rename('1');
    await lockState(locks, 'rename:1', (info) => info.queueLength === 1);
    expect(meter.running).toBe(1);
    meter.open();
    await expect(Promise.all([first, second])).resolves.toEqual(['users 1', 'teams 1']);
    expect(meter.max).toBe(1);
  });

  it('scope: true gives each method its own lock, held in Redis as Class.method:key', async () => {
    const meter = new Meter();
    const { users, teams, locks } = await start(meter, true);
    const calls = [users.rename('1'), teams.rename('1')];
    // Both are inside at once: neither waits for the other.
    await meter.entries(2);
    expect(meter.running).toBe(2);
    expect((await locks.inspect('Users.rename:rename:1')).held).toBe(true);
    expect((await locks.inspect('Teams.rename:rename:1')).held).toBe(true);
    expect((await locks.inspect('rename:1')).held).toBe(false);
    meter.open();
    await Promise.all(calls);
  });

  it("scope: 'name' prefixes the key with the name, shared by every method that gives it", async () => {
    const meter = new Meter();
    const { users, teams, locks } = await start(meter, 'directory');
    const first = users.rename('1');
    await meter.entries(1);
    expect((await locks.inspect('directory:rename:1')).held).toBe(true);
    const second = teams.rename('1');
    await lockState(locks, 'directory:rename:1', (info) => info.queueLength === 1);
    meter.open();
    await Promise.all([first, second]);
    expect(meter.max).toBe(1);
  });

  it('the module option scopes every method; a decorator opts out with scope: false', async () => {
    const meter = new Meter();
    @Injectable()
    class Shared {
      constructor(@Inject(LockService) readonly locks: LockService) {}

      @Locked('rename:<0>', { scope: false })
      rename(id: string): Promise<string> {
        return meter.pass(`shared ${id}`);
      }

      @Locked(['a:<0>', 'b:<0>'])
      both(id: string): Promise<string> {
        return meter.pass(`both ${id}`);
      }
    }
    const { Users } = classes(meter, undefined);
    const app = await bootApp({
      imports: [RedisLockModule.forRoot({ ...connection(server()), scope: true })],
      providers: [Users, Shared],
    });
    const locks = app.get(LockService);
    const calls = [app.get(Users).rename('1'), app.get(Shared).rename('1'), app.get(Shared).both('2')];
    await meter.entries(3);
    expect((await locks.inspect('Users.rename:rename:1')).held).toBe(true);
    expect((await locks.inspect('rename:1')).held).toBe(true);
    // Several keys: each scoped.
    expect((await locks.inspect('Shared.both:a:2')).held).toBe(true);
    expect((await locks.inspect('Shared.both:b:2')).held).toBe(true);
    meter.open();
    await Promise.all(calls);
  });

  it("the module's scope takes a name too: every method that sets none shares that prefix", async () => {
    const meter = new Meter();
    const { users, teams, locks } = await start(meter, undefined, { scope: 'directory' });
    const first = users.rename('1');
    await meter.entries(1);
    expect((await locks.inspect('directory:rename:1')).held).toBe(true);
    expect((await locks.inspect('rename:1')).held).toBe(false);
    const second = teams.rename('1');
    await lockState(locks, 'directory:rename:1', (info) => info.queueLength === 1);
    expect(meter.running).toBe(1);
    meter.open();
    await Promise.all([first, second]);
    expect(meter.max).toBe(1);
  });

  it('refuses a bad scope, on the decorator and on the module, naming what to give', async () => {
    const decorate = (scope: unknown) => {
      class Target {
        async run(_id: string): Promise<void> {}
      }
      const descriptor = Object.getOwnPropertyDescriptor(Target.prototype, 'run') as PropertyDescriptor;
      (Locked('k:<0>', { scope } as never) as MethodDecorator)(Target.prototype, 'run', descriptor);
    };
    for (const bad of ['', 'a{b}', 5, null, 'x'.repeat(257)]) {
      expect(() => decorate(bad)).toThrow(LockUsageError);
      expect(() => decorate(bad)).toThrow(/Target\.run: scope must be true/);
    }
    for (const bad of ['', 'a{b}', 5]) {
      await expect(
        bootApp({ imports: [RedisLockModule.forRoot({ ...connection(server()), scope: bad as never })] }),
      ).rejects.toThrow(
        /^scope must be true \(prefix Class.method\), false, or a name of 1 to 256 characters/,
      );
    }
  });
});
