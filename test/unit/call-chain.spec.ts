// Reentrancy alone, on the in-memory store: inside `run` the chain's lease is current and a nested
// call on its key reuses it (same token, no second grant); outside it nothing is; a chain that holds
// several keys refuses one that sorts before them; settle() waits for running calls up to the grace.
import { describe, expect, it } from '@jest/globals';
import { CallChain } from '../../lib/engine/call-chain';
import type { OwnedLease } from '../../lib/engine/held-lease';
import { deferred } from '../support/deferred';
import { call, engine } from './engine-fixtures';

describe('CallChain on the memory store', () => {
  it('a nested call on a held key reuses the lease; outside the run nothing is current', async () => {
    const locks = engine();
    const chain = new CallChain(locks);
    const held = (await chain.obtain('k', call())) as OwnedLease;
    expect(chain.current()).toBeUndefined();
    await chain.run(held, async () => {
      expect(chain.current()?.token).toBe(held.token);
      expect(chain.current('k')?.fence).toBe(held.fence);
      expect(chain.current('other')).toBeUndefined();
      const nested = await chain.obtain('k', call({ waitTimeout: 0 }));
      expect(nested?.token).toBe(held.token);
      // Releasing the reused lease is a no-op: the lock stays held by the outer call.
      await nested?.release();
      expect((await locks.store.inspect('k')).owner).toBe(held.token);
    });
    expect(chain.current()).toBeUndefined();
    await held.release();
  });

  it('a nested call asking for another kind of lock on a held key is refused', async () => {
    const locks = engine();
    const chain = new CallChain(locks);
    const held = (await chain.obtain('k', call())) as OwnedLease;
    await chain.run(held, async () => {
      await expect(chain.obtain('k', call({ mode: 'read' }))).rejects.toMatchObject({ code: 'LOCK_KIND' });
    });
    await held.release();
  });

  it('holding several keys, a key that sorts before them is refused (LOCK_ORDER); one after is taken', async () => {
    const locks = engine();
    const chain = new CallChain(locks);
    const both = (await chain.obtainAll(['b', 'c'], call())) as OwnedLease;
    await chain.run(both, async () => {
      await expect(chain.obtain('a', call())).rejects.toMatchObject({ code: 'LOCK_ORDER' });
      const d = await chain.obtain('d', call());
      expect((await locks.store.inspect('d')).owner).toBe(d?.token);
      await d?.release();
      // Keys the chain holds are reused within a multi-key call too.
      const again = await chain.obtainAll(['b', 'c'], call({ waitTimeout: 0 }));
      expect(again?.tokens).toEqual(both.tokens);
    });
    await both.release();
  });

  it('settle() waits for a running call, and no longer than the grace', async () => {
    const locks = engine();
    const chain = new CallChain(locks);
    const held = (await chain.obtain('k', call())) as OwnedLease;
    const gate = deferred();
    let finished = false;
    const running = chain.run(held, async () => {
      await gate.promise;
      finished = true;
    });
    const started = performance.now();
    await chain.settle(50);
    expect(finished).toBe(false);
    expect(performance.now() - started).toBeGreaterThanOrEqual(49);
    gate.resolve();
    const settled = chain.settle(60_000);
    await settled;
    expect(finished).toBe(true);
    await running;
    await held.release();
  });
});
