// The arrival-order check shared by the single-server and quorum FIFO tests: waiters join one at a time
// from several agent processes, then every grant is released as it comes, and the grants are recorded.
import type { LockService } from '../../lib';
import { until } from './lock-fixtures';
import type { Worker } from './processes';

type AgentMessage = { type: string; id?: string };

/**
 * While `holder` holds `key`, `count` waiters join, alternating between `agents`, each only once the
 * previous one is visibly queued (which fixes the arrival order); then `release` lets go and each grant
 * is released as soon as it arrives. Resolves with the arrival order and the grant order.
 */
export async function arrivalAndGrants(
  locks: LockService,
  agents: Worker<AgentMessage>[],
  key: string,
  count: number,
  release: () => Promise<unknown>,
): Promise<{ arrival: string[]; grants: string[] }> {
  const arrival: string[] = [];
  for (let i = 0; i < count; i++) {
    const id = `w${i}`;
    agents[i % agents.length].send({ type: 'acquire', id, key, waitTimeout: 30_000 });
    arrival.push(id);
    await until(
      () => locks.inspect(key),
      (info) => info.queueLength === i + 1,
    );
  }
  const grants: string[] = [];
  // One outstanding next() per agent: a call that lost a race stays pending and is reused, since a
  // fresh call beside it would compete with it for the agent's next grant.
  const nextGrant = (a: number) =>
    agents[a].next((m) => m.type === 'granted', 20_000).then((m) => ({ a, id: m.id as string }));
  const serve = async () => {
    const pending = agents.map((_, a) => nextGrant(a));
    for (let i = 0; i < count; i++) {
      const { a, id } = await Promise.race(pending);
      pending[a] = nextGrant(a);
      grants.push(id);
      agents[a].send({ type: 'release', id });
    }
    // The last calls never get a grant; keep their timeouts from failing the run.
    for (const p of pending) p.catch(() => {});
  };
  const served = serve();
  await release();
  await served;
  return { arrival, grants };
}
