/**
 * Faults on a Sentinel-managed master and its replica (the sentinel topology): the master SIGKILLed, so
 * that the sentinels promote the replica, and the replica SIGSTOPped for a while, so that no grant or
 * renewal is acknowledged. Both leave the lock's state where it was, on a server that holds it: an
 * overlap across either is a violation, never excused (chaos/checks/validity-windows.ts).
 */
import { hr } from '../common';
import { type FaultAction, holdThenHeal } from './kinds';

export const killMaster: FaultAction = async (fault, host) => {
  const replication = host.replication;
  if (!replication) {
    fault.skipped = 'no Sentinel-managed master in this topology';
    return;
  }
  const failover = await replication.killMaster();
  fault.t0 = failover.killedAt;
  fault.t1 = hr();
  fault.detail = {
    from: failover.from,
    to: failover.to,
    failoverMs: Math.round(failover.promotedAt - failover.killedAt),
    rejoinMs: Math.round(failover.rejoinedAt - failover.promotedAt),
    waitedForReplicaMs: Math.round(failover.waitedMs),
  };
};

/**
 * Shorter or longer than the sentinels' down-after-milliseconds (500 ms): either way only grants and
 * renewals stop being acknowledged, since nothing fails over a replica.
 */
export const pauseReplica: FaultAction = async (fault, host, prng) => {
  const replication = host.replication;
  if (!replication) {
    fault.skipped = 'no replica in this topology';
    return;
  }
  const ms = prng.int(200, 1_500);
  const replica = replication.pauseReplica();
  fault.t0 = hr();
  fault.detail = { replica, ms };
  return holdThenHeal(fault, ms, () => replication.resumeReplica());
};
