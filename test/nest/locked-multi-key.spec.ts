// @Locked on several keys: an array of templates or a key function returning an array locks every key
// (all or nothing, canonical order), nested calls on a subset re-enter, and bad arrays are refused where
// they are written (decoration or start-up) or on the call that produced them. On the testing module's
// in-memory store: the engine's multi-key properties on Redis are in test/api/multi-key.spec.ts.
import { describe, expect, it } from '@jest/globals';
import { Inject, Injectable, type Type } from '@nestjs/common';
import { Locked, LockService } from '../../lib';
import { RedisLockTestingModule } from '../../lib/testing';
import { bootApp } from '../support/nest-apps';
import { thrown } from '../support/thrown';

interface Transfer {
  from: string;
  to: string;
  amount: number;
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

@Injectable()
class Bank {
  readonly balances = new Map<string, number>([
    ['1', 100],
    ['2', 100],
    ['3', 100],
  ]);
  seen: Array<readonly string[]> = [];

  constructor(@Inject(LockService) readonly locks: LockService) {}

  /** Read, await, write on both accounts: loses money unless both are held for the whole call. */
  @Locked(['account:<0.from>', 'account:<0.to>'], { waitTimeout: 10_000 })
  async transfer(t: Transfer): Promise<void> {
    const from = this.balances.get(t.from) ?? 0;
    const to = this.balances.get(t.to) ?? 0;
    await tick();
    this.balances.set(t.from, from - t.amount);
    this.balances.set(t.to, to + t.amount);
    this.seen.push(this.locks.currentLease()?.keys ?? []);
    await this.audit(t.from);
  }

  /** The same, with a key function returning the keys. */
  @Locked((t: Transfer) => [`account:${t.to}`, `account:${t.from}`], { waitTimeout: 10_000 })
  async transferByFunction(t: Transfer): Promise<void> {
    const from = this.balances.get(t.from) ?? 0;
    await tick();
    this.balances.set(t.from, from - t.amount);
    this.balances.set(t.to, (this.balances.get(t.to) ?? 0) + t.amount);
  }

  /** Called under transfer's lease: a subset of its keys re-enters. */
  @Locked('account:<0>', { waitTimeout: 0 })
  async audit(id: string): Promise<number> {
    return this.balances.get(id) ?? 0;
  }

  @Locked((ids: unknown[]) => ids as string[])
  async raw(_ids: unknown[]): Promise<void> {}
}

const boot = (providers: Type[] = [Bank]) =>
  bootApp({ imports: [RedisLockTestingModule.forRoot()], providers });

describe('@Locked on several keys', () => {
  it('an array of templates holds both accounts: 60 concurrent transfers lose nothing', async () => {
    const bank = (await boot()).get(Bank);
    const pairs: Array<[string, string]> = [
      ['1', '2'],
      ['2', '3'],
      ['3', '1'],
      ['2', '1'],
    ];
    await Promise.all(
      Array.from({ length: 60 }, (_, i) => {
        const [from, to] = pairs[i % pairs.length];
        return i % 2
          ? bank.transfer({ from, to, amount: 1 })
          : bank.transferByFunction({ from, to, amount: 1 });
      }),
    );
    const total = [...bank.balances.values()].reduce((a, b) => a + b, 0);
    expect(total).toBe(300);
    // 15 transfers each of 1→2, 2→3, 3→1 and 2→1.
    expect(Object.fromEntries(bank.balances)).toEqual({ '1': 115, '2': 85, '3': 100 });
    // The lease of each call covers both keys, in canonical order.
    expect(bank.seen).toHaveLength(30);
    for (const keys of bank.seen) expect(keys).toEqual([...new Set(keys)].sort());
    expect(new Set(bank.seen.map((keys) => keys.length))).toEqual(new Set([2]));
  });

  it('a key function returning an array with undefined is a key error (LOCK_INVALID_KEY) on that call, nothing held', async () => {
    const app = await boot();
    const bank = app.get(Bank);
    await expect(bank.raw(['account:1', undefined])).rejects.toThrow(
      /@Locked\(fn\) on Bank.raw: the key function returned an array whose element \[1\] is undefined/,
    );
    await expect(bank.raw([])).rejects.toThrow(/returned an empty array of keys/);
    await expect(bank.raw(['account:{1}'])).rejects.toMatchObject({ code: 'LOCK_INVALID_KEY' });
    expect((await app.get(LockService).inspect('account:1')).held).toBe(false);
  });

  it('refuses an empty array or a non-string element when the class is defined', () => {
    const decorate = (key: unknown) => () => {
      class Defined {
        async run(_t: Transfer): Promise<void> {}
      }
      const descriptor = Object.getOwnPropertyDescriptor(Defined.prototype, 'run') as PropertyDescriptor;
      (Locked(key as string) as MethodDecorator)(Defined.prototype, 'run', descriptor);
    };
    expect(decorate([])).toThrow(/@Locked\(\[\]\) on Defined.run: the array of key templates is empty/);
    expect(decorate(['account:<0.from>', 7])).toThrow(/element \[1\] must be a template string/);
    expect(thrown(decorate(['account:<0.from>', 'bad:<x>']))).toMatchObject({ code: 'LOCK_INVALID_KEY' });
  });

  it('a template in the array naming an argument the method never gets stops the start-up', async () => {
    @Injectable()
    class Wrong {
      @Locked(['account:<0>', 'account:<1>'])
      async run(_id: string): Promise<void> {}
    }
    await expect(boot([Wrong])).rejects.toThrow(/Wrong\.run/);
  });
});
