/**
 * Faults on one node of a quorum that cost it its state or its answers, while a majority keeps
 * running: a restart after the longest ttl (the restart rule: safe), a SIGSTOP of its redis-server,
 * and the loss of its lock owner keys. The early restart is `redis-restart` (server-faults.ts).
 */
import { hr } from '../common';
import { type FaultAction, holdThenHeal } from './kinds';

/** Down for longer than the longest ttl, so no lease granted or renewed with its vote is still valid. */
export const redisRestartLate: FaultAction = async (fault, host, prng, node) => {
  const downMs = host.ttl + prng.int(200, 800);
  fault.t0 = hr();
  const { awayMs, early } = await host.restartNode(node, fault, downMs);
  fault.t1 = hr();
  fault.detail = { downMs: Math.round(awayMs), early };
};

export const redisSigstop: FaultAction = async (fault, _host, prng, node) => {
  const ms = prng.int(200, 1_500);
  node.stop();
  fault.t0 = hr();
  fault.detail = { ms };
  return holdThenHeal(fault, ms, () => node.cont());
};

/**
 * DEL of every owner key (`<prefix>{<lock>}`) on the node: it forgets who holds what, as after an
 * eviction. The fence counters and the waiters' lines are left: this fault is about a second holder,
 * and a node that lost part of its line (it puts a waiter later than the others do) is tested on its own
 * in test/quorum/quorum-fifo.spec.ts.
 */
export const deleteLockKeys: FaultAction = async (fault, host, _prng, node) => {
  const owner = new RegExp(`^${host.lockPrefix.replace(/[.*+?^$()|[\]\\]/g, '\\$&')}\\{([^}]*)\\}$`);
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await node.admin.scan(cursor, 'MATCH', `${host.lockPrefix}{*`, 'COUNT', 1000);
    cursor = next;
    found.push(...batch.filter((key) => owner.test(key)));
  } while (cursor !== '0');
  fault.t0 = hr();
  const deleted = found.length > 0 ? await node.admin.del(...found) : 0;
  fault.t1 = hr();
  const locks = [...new Set(found.map((key) => owner.exec(key)?.[1] as string))];
  fault.keys = locks.length > 0 ? locks : [];
  fault.detail = { deleted, locks };
};
