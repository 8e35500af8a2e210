/**
 * The nemesis' view of the run (NemesisHost): who holds and who waits, taken from the workers' reports;
 * the worker processes to pause and kill; and the lock server and proxy of the topology's node.
 */
import type { Holder, NemesisHost } from '../faults/kinds';
import type { History, OpRec } from '../history';
import type { Topology } from '../topologies/topology';
import type { WorkerPool } from './workers';

export function nemesisHost(
  pool: WorkerPool,
  topology: Topology,
  history: History,
  lease: { ttl: number; claimWindow: number },
): NemesisHost {
  const view = (r: OpRec): Holder => ({ slot: r.slot, pid: r.pid, op: r.op, key: r.key, workMs: r.workMs });
  const runningSlots = () => [...pool.slots.values()].filter((s) => pool.running(s));
  const runningPids = (): Set<number> => new Set(runningSlots().map((s) => s.pid));
  // Faults on "the server" hit the topology's first node: the only one of a single-server run.
  const node = topology.nodes[0];
  return {
    ttl: lease.ttl,
    claimWindow: lease.claimWindow,
    proxy: node.proxy,
    admin: node.admin,
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
    async restartRedis() {
      const restart = await node.restart();
      history.restarts.push(restart);
      return { downMs: restart.t1 - restart.t0 };
    },
  };
}
