/**
 * The nemesis' view of the run (NemesisHost): who holds and who waits, taken from the workers' reports;
 * the worker processes to pause and kill; and the topology's lock servers, whose restarts it records.
 */
import type { Holder, NemesisHost } from '../faults/kinds';
import type { History, OpRec } from '../history';
import type { Topology } from '../topologies/topology';
import type { WorkerPool } from './workers';

export function nemesisHost(
  pool: WorkerPool,
  topology: Topology,
  history: History,
  lease: { ttl: number; claimWindow: number; lockPrefix: string },
): NemesisHost {
  const view = (r: OpRec): Holder => ({ slot: r.slot, pid: r.pid, op: r.op, key: r.key, workMs: r.workMs });
  const runningSlots = () => [...pool.slots.values()].filter((s) => pool.running(s));
  const runningPids = (): Set<number> => new Set(runningSlots().map((s) => s.pid));
  return {
    ttl: lease.ttl,
    claimWindow: lease.claimWindow,
    nodes: topology.nodes,
    lockPrefix: lease.lockPrefix,
    replication: topology.replication,
    runningSlots: () => runningSlots().map((s) => s.slot),
    holders: () => {
      const pids = runningPids();
      return [...pool.open].filter((r) => r.tGrant !== undefined && pids.has(r.pid)).map(view);
    },
    waiters: () => {
      const pids = runningPids();
      return [...pool.open].filter((r) => r.tGrant === undefined && pids.has(r.pid)).map(view);
    },
    nextReader: (accept, timeoutMs) => pool.nextReader(accept, timeoutMs),
    pause: (slot) => pool.pause(slot),
    resume: (slot) => pool.resume(slot),
    kill: (slot, restartAfterMs) => pool.kill(slot, restartAfterMs),
    async restartNode(node, fault, downMs) {
      const times = await node.restart(downMs);
      // Back before the longest ttl had passed: a lease granted or renewed with its vote may still be
      // valid, and the node, now empty, may vote for someone else (the restart rule of a quorum).
      const early = downMs < lease.ttl;
      history.restarts.push({ ...times, node: node.name, early, faultId: fault.id });
      return { awayMs: times.t1 - times.t0, early };
    },
  };
}
