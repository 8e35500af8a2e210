// The arrival-order check shared by the single-server and quorum FIFO tests: waiters join one at a time
// from several agent processes, then every grant is released as it comes, and the grants are recorded.
import type { LockService } from '../../lib/core';
import type { AgentMessage } from '../workers/lock-agent.worker';
import { until } from './lock-fixtures';
import type { Worker } from './processes';

/**
 * While `holder` holds `key`, `count` waiters join, alternating between `agents`, each only once the
 * previous one is visibly queued (which fixes the arrival order); then `release` lets go and each grant
 * is released as soon as it arrives. Resolves with the arrival order, the grant order, and each
 * grant's fence (the order Redis made them in, when several can be granted at once: a semaphore).
 * `options`: more acquire options for every waiter (`permits`).
 */
export async function arrivalAndGrants(
  locks: LockService,
  agents: Worker<AgentMessage>[],
  key: string,
  count: number,
  release: () => Promise<unknown>,
  options: Record<string, unknown> = {},
): Promise<{ arrival: string[]; grants: string[]; fences: Map<string, number> }> {
  const arrival: string[] = [];
  for (let i = 0; i < count; i++) {
    const id = `w${i}`;
    agents[i % agents.length].send({ type: 'acquire', id, key, waitTimeout: 30_000, ...options });
    arrival.push(id);
    await until(
      () => locks.inspect(key),
      (info) => info.queueLength === i + 1,
    );
  }
  const grants: string[] = [];
  const fences = new Map<string, number>();
  // One outstanding next() per agent: a call that lost a race stays pending and is reused, since a
  // fresh call beside it would compete with it for the agent's next grant.
  const nextGrant = (a: number) =>
    agents[a]
      .next((m) => m.type === 'granted', 20_000)
      .then((m) => ({ a, id: m.id as string, fence: m.fence as number }));
  const serve = async () => {
    const pending = agents.map((_, a) => nextGrant(a));
    for (let i = 0; i < count; i++) {
      const { a, id, fence } = await Promise.race(pending);
      pending[a] = nextGrant(a);
      grants.push(id);
      fences.set(id, fence);
      agents[a].send({ type: 'release', id });
    }
    // The last calls never get a grant; keep their timeouts from failing the run.
    for (const p of pending) p.catch(() => {});
  };
  const served = serve();
  await release();
  await served;
  return { arrival, grants, fences };
}
