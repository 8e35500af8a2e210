// The waiter's states, one transition at a time (lib/engine/waiter.ts, WaiterState): waiting → calling
// as a call is sent, calling → waiting as it is answered, → done as it is granted or gives up. The store
// is the in-memory one; each call to it is recorded with its mode and can be held at a gate, so a test
// sees the state while a call is on its way and what is sent after it.
import { describe, expect, it } from '@jest/globals';
import { now } from '../../lib/engine/clock';
import type { HeldLease } from '../../lib/engine/held-lease';
import { LockEngine } from '../../lib/engine/lock-engine';
import { Waiter } from '../../lib/engine/waiter';
import { RedisUnavailableError } from '../../lib/errors/redis-unavailable.error';
import type { AcquireOptions } from '../../lib/options/call-options';
import { resolveServiceOptions } from '../../lib/options/service-options';
import type { AcquireMode } from '../../lib/store/lock-store';
import { MemoryLockBackend } from '../../lib/store/memory-store';
import { type Deferred, deferred } from '../support/deferred';
import { call, engine, wrappedBackend } from './engine-fixtures';

/**
 * An engine whose store records the mode of every acquire call (`modes`) and holds each at `gate` while
 * one is set; `failNext` makes the next call fail once it passes the gate. `observer`: another engine on
 * the same locks.
 */
function recording() {
  const memory = new MemoryLockBackend();
  const modes: AcquireMode[] = [];
  const control: { gate?: Deferred<void>; failNext?: Error } = {};
  const backend = wrappedBackend(memory, (store) => ({
    acquire: async (...args) => {
      modes.push(args[1]);
      const gate = control.gate;
      if (gate) await gate.promise;
      const failure = control.failNext;
      if (failure) {
        control.failNext = undefined;
        throw failure;
      }
      return store.acquire(...args);
    },
  }));
  const locks = new LockEngine({ kind: 'backend', backend }, resolveServiceOptions({}));
  const observer = engine({}, memory);
  const waiterOn = (key: string, options?: AcquireOptions): Waiter<HeldLease> => {
    const made = call(options);
    const ticket = locks.store.ticket(key, {
      ttl: made.options.ttl,
      claimWindow: 1_000,
      kind: { permits: 1, mode: undefined },
    });
    return new Waiter(locks, ticket, now(), made);
  };
  /** Resolves once `count` calls were made (each is recorded as it is sent). */
  const calls = async (count: number) => {
    while (modes.length < count) await new Promise((resolve) => setImmediate(resolve));
  };
  /** Resolves once the waiter is in state `is`. */
  const reaches = async (waiter: Waiter<HeldLease>, is: Waiter<HeldLease>['is']) => {
    while (waiter.is !== is) await new Promise((resolve) => setImmediate(resolve));
  };
  /** A waiter in line behind a holder of another engine; `finish` lets both go and closes the engine. */
  const inLine = async () => {
    const holder = await observer.takeOne('k', call());
    const one = waiterOn('k', { waitTimeout: 5_000 });
    const granted = one.run('join');
    await reaches(one, 'waiting');
    const finish = async () => {
      await holder?.release();
      await (await granted).release();
      await locks.close(async () => {});
    };
    return { one, finish };
  };
  return { locks, observer, modes, control, waiterOn, calls, reaches, inLine };
}

/** Lets the call held at the gate go; later calls pass at once. */
function opened(control: { gate?: Deferred<void> }): void {
  control.gate?.resolve();
  control.gate = undefined;
}

/** A grant told so late that nobody could start on it: its server time is long past. */
const TOO_LATE = -1e9;

describe('the waiter as one state machine', () => {
  it('run(): calling while its first call (join) is on its way, then done when it is granted', async () => {
    const { locks, control, modes, waiterOn, calls } = recording();
    control.gate = deferred();
    const one = waiterOn('k');
    const granted = one.run('join');
    await calls(1);
    expect(one.is).toBe('calling');
    expect(modes).toEqual(['join']);
    control.gate.resolve();
    const lease = await granted;
    expect(one.is).toBe('done');
    await lease.release();
    await locks.close(async () => {});
  });

  it('calling → waiting when the join says it is in line; a re-check (head note) sends one wait call', async () => {
    const { locks, observer, modes, waiterOn, reaches, calls } = recording();
    const holder = await observer.takeOne('k', call());
    const one = waiterOn('k', { waitTimeout: 5_000 });
    let queued = 0;
    const granted = one.run('join', () => queued++);
    await reaches(one, 'waiting');
    expect(queued).toBe(1);
    one.onHead(0);
    expect(one.is).toBe('calling');
    await calls(2);
    expect(modes).toEqual(['join', 'wait']);
    await reaches(one, 'waiting');
    expect(queued).toBe(1);
    await holder?.release();
    await (await granted).release();
    await locks.close(async () => {});
  });

  it('a check asked for while a call is on its way is sent once that call is answered, not beside it', async () => {
    const { modes, control, reaches, calls, inLine } = recording();
    const { one, finish } = await inLine();
    control.gate = deferred();
    one.onReconnect();
    one.onReconnect();
    one.onHead(0);
    await calls(2);
    // Three asked for while one is held at the gate: still one call on its way.
    expect(modes).toEqual(['join', 'wait']);
    opened(control);
    // Answered: the check asked for meanwhile goes now, one call for all three.
    await calls(3);
    await reaches(one, 'waiting');
    expect(modes).toEqual(['join', 'wait', 'wait']);
    await finish();
  });

  it('a grant read too late: waiting → a late call; once it is answered, the checks are plain again', async () => {
    const { modes, reaches, calls, inLine } = recording();
    const { one, finish } = await inLine();
    one.onGrant(1, TOO_LATE);
    expect(one.is).toBe('calling');
    await calls(2);
    await reaches(one, 'waiting');
    one.onHead(0);
    await calls(3);
    expect(modes).toEqual(['join', 'late', 'wait']);
    await reaches(one, 'waiting');
    await finish();
  });

  it('a grant read too late while a call is on its way: the next call is the late one', async () => {
    const { modes, control, reaches, calls, inLine } = recording();
    const { one, finish } = await inLine();
    control.gate = deferred();
    one.onHead(0);
    await calls(2);
    one.onGrant(1, TOO_LATE);
    opened(control);
    await calls(3);
    await reaches(one, 'waiting');
    expect(modes).toEqual(['join', 'wait', 'late']);
    await finish();
  });

  it('a late call that fails is sent again as a late call', async () => {
    const { modes, control, reaches, calls, inLine } = recording();
    const { one, finish } = await inLine();
    control.failNext = new Error('connection is reconnecting');
    one.onGrant(1, TOO_LATE);
    // It fails; the waiter stays in line and retries (after 100 ms) as it was: late.
    await calls(3);
    expect(modes).toEqual(['join', 'late', 'late']);
    await reaches(one, 'waiting');
    await finish();
  });

  it('a first call that fails is final: calling → done, with its error, and nothing more is sent', async () => {
    const { locks, control, modes, waiterOn } = recording();
    control.failNext = new RedisUnavailableError('the connection is closed', 'k');
    const one = waiterOn('k', { waitTimeout: 5_000 });
    await expect(one.run('join')).rejects.toBeInstanceOf(RedisUnavailableError);
    expect(one.is).toBe('done');
    expect(modes).toEqual(['join']);
    await locks.close(async () => {});
  });

  it('done is final: a head note, a reconnect or a grant that reach it afterwards send nothing', async () => {
    const { locks, observer, modes, waiterOn, reaches } = recording();
    const holder = await observer.takeOne('k', call());
    const one = waiterOn('k', { waitTimeout: 5_000 });
    const waiting = one.run('join');
    await reaches(one, 'waiting');
    await one.close();
    await expect(waiting).rejects.toThrow();
    expect(one.is).toBe('done');
    one.onHead(0);
    one.onReconnect();
    one.onGrant(1, TOO_LATE);
    await new Promise((resolve) => setImmediate(resolve));
    expect(modes).toEqual(['join']);
    await holder?.release();
    await locks.close(async () => {});
  });
});
