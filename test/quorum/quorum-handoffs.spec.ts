// The hand-offs a quorum's nodes announce, as the waiter's service reads them: a majority with one fence
// is a grant, however far apart a busy machine spreads their messages within the time a node is given
// to answer; fewer than a majority by then is a try.

import { performance } from 'node:perf_hooks';
import { describe, expect, it } from '@jest/globals';
import type { WakeMessage } from '../../lib/store/lock-store';
import { QuorumHandoffs } from '../../lib/store/quorum-handoffs';
import { lockToken } from '../../lib/store/token';
import { sleep } from '../support/event-loop';
import { until } from '../support/lock-fixtures';

const NODES = 5;
const MAJORITY = 3;
// Far above the spacing below, so that a busy machine's late timers cannot close it.
const HANDED_WAIT = 1_000;
const CLAIM = 2_000;

/** Hand-offs whose nodes' clocks were bounded `ago` ms before `at` (now), as the same as this one's. */
const handoffs = (ago = 0, at = performance.now()) => {
  const wakes: WakeMessage[] = [];
  const h = new QuorumHandoffs(
    NODES,
    MAJORITY,
    () => 2,
    (m) => wakes.push(m),
    HANDED_WAIT,
  );
  for (let node = 0; node < NODES; node += 1) h.observeClock(node, (at - ago) * 1000, at - ago);
  return { h, wakes };
};

const handOff = (h: QuorumHandoffs, node: number, token: string, fence: number) =>
  h.onMessage(node, `${token} ${fence} ${Math.round(performance.now() * 1000)}`);

describe('quorum hand-offs', () => {
  it('a majority whose messages arrive tens of ms apart is one grant, and no try', async () => {
    const { h, wakes } = handoffs();
    const token = lockToken('svc', 1, CLAIM);
    handOff(h, 0, token, 8);
    await sleep(40);
    handOff(h, 1, token, 8);
    await sleep(40);
    expect(wakes).toEqual([]);
    handOff(h, 2, token, 8);
    expect(wakes).toEqual([expect.objectContaining({ kind: 'grant', token, fence: 8 })]);
    // The timer that would have sent the waiter to try again finds it granted.
    await sleep(HANDED_WAIT + 50);
    expect(wakes.map((w) => w.kind)).toEqual(['grant']);
    h.clear();
  });

  it('fewer than a majority by the time a node is given to answer: the waiter is told to try, once', async () => {
    const { h, wakes } = handoffs();
    const token = lockToken('svc', 2, CLAIM);
    const first = performance.now();
    handOff(h, 0, token, 8);
    handOff(h, 1, token, 8);
    await until(
      async () => wakes.length,
      (count) => count > 0,
    );
    expect(performance.now() - first).toBeGreaterThanOrEqual(HANDED_WAIT - 1);
    expect(wakes).toEqual([{ kind: 'head', token, holdMs: 0 }]);
    expect(h.take(token)).toBe(8);
    h.clear();
  });

  it('nodes whose clocks ran up to 1 % fast since their bounds were taken: the grant ends by the holds', () => {
    // Each node's clock bounded 10 s ago; since then it ran 0.9 % fast, so it reads 90 ms ahead now.
    // Each hands the lock over now: its hold ends a claim window from now.
    const at = performance.now();
    const ELAPSED = 10_000;
    const { h, wakes } = handoffs(ELAPSED, at);
    const token = lockToken('svc', 4, CLAIM);
    const nodeClock = at + 0.009 * ELAPSED;
    for (let node = 0; node < MAJORITY; node += 1)
      h.onMessage(node, `${token} 8 ${Math.round(nodeClock * 1000)}`);
    const grant = wakes.find((wake) => wake.kind === 'grant');
    if (grant?.kind !== 'grant') throw new Error('a majority handed over: a grant');
    // The wake says when the holds began, on this clock (the waiter adds the claim window).
    expect(grant.serverMs + CLAIM).toBeLessThanOrEqual(at + CLAIM);
    h.clear();
  });

  it('nodes that disagree on the fence are no grant', async () => {
    const { h, wakes } = handoffs();
    const token = lockToken('svc', 3, CLAIM);
    handOff(h, 0, token, 8);
    handOff(h, 1, token, 8);
    handOff(h, 2, token, 9);
    await until(
      async () => wakes.length,
      (count) => count > 0,
    );
    expect(wakes).toEqual([{ kind: 'head', token, holdMs: 0 }]);
    expect(h.take(token)).toBe(9);
    h.clear();
  });
});
