// The engine on the in-memory store, with no Redis and no LockService in front: what the fast unit tier
// (test/unit/) builds its cases from. Every engine made here is closed after its test.
import { afterEach } from '@jest/globals';
import { type EngineCall, engineCall } from '../../lib/engine/call';
import { LockEngine } from '../../lib/engine/lock-engine';
import { type AcquireOptions, resolveAcquireOptions } from '../../lib/options/call-options';
import { type LockServiceOptions, resolveServiceOptions } from '../../lib/options/service-options';
import type { LockBackend, LockStore } from '../../lib/store/lock-store';
import { MemoryLockBackend } from '../../lib/store/memory-store';
import { sleep } from '../support/event-loop';

const open: LockEngine[] = [];

afterEach(async () => {
  await Promise.allSettled(open.splice(0).map((engine) => engine.close(async () => {})));
});

/** An engine on `backend` (a fresh one unless given: engines that share one share their locks). */
export function engine(
  options?: LockServiceOptions,
  backend: LockBackend = new MemoryLockBackend(),
): LockEngine {
  const made = new LockEngine({ kind: 'backend', backend }, resolveServiceOptions(options));
  open.push(made);
  return made;
}

/**
 * A backend whose stores are `memory`'s with some calls replaced (`wrap` receives the real store and
 * returns the replacements), to hold back or fail one reply; engines on `memory` itself see the same locks.
 */
export function wrappedBackend(
  memory: MemoryLockBackend,
  wrap: (store: LockStore) => Partial<LockStore>,
): LockBackend {
  return {
    openStore: (handlers, name) => {
      const store = memory.openStore(handlers, name);
      return Object.assign(Object.create(store) as LockStore, wrap(store));
    },
  };
}

/**
 * A call as LockService would make it (`using` defaults: renewed), with no telemetry listening;
 * `serving`: as made for a request.
 */
export function call(options?: AcquireOptions, busyIsTimeout = true, serving = false): EngineCall {
  return engineCall(
    resolveAcquireOptions(resolveServiceOptions({}).defaults, options, true),
    busyIsTimeout,
    undefined,
    serving,
  );
}

/**
 * A waiter on `key` served after a hold of about `ms`, `times` times: what teaches `locks` the pace of
 * the key's line. `options` are the calls' (a semaphore's permits, a writer), `holders` how many fill it.
 */
export async function servedAfter(
  locks: LockEngine,
  key: string,
  ms: number,
  { times = 1, options, holders = 1 }: { times?: number; options?: AcquireOptions; holders?: number } = {},
): Promise<void> {
  for (let i = 0; i < times; i++) {
    const held: Awaited<ReturnType<typeof locks.takeOne>>[] = [];
    for (let h = 0; h < holders; h++) held.push(await locks.takeOne(key, call(options)));
    const waiting = locks.takeOne(key, call({ ...options, waitTimeout: 60_000 }));
    while ((await locks.store.inspect(key)).queueLength < 1) await new Promise((r) => setImmediate(r));
    await sleep(ms); // the hold the waiter waits through
    await Promise.all(held.map((holder) => holder?.release()));
    await (await waiting)?.release();
  }
}
