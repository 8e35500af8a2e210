/**
 * The nemesis: seeded choices of what to break, how and for how long. Each fault runs to completion
 * (injected, held, healed) before the next one; the host (chaos/coordinator/host.ts) owns the
 * processes, the servers and the proxies and tells the nemesis who holds and who waits. A fault that
 * hits a server hits one node; with several, the node is drawn first (a one-node topology draws
 * nothing for it, so its seeds replay the same faults whatever other topologies add).
 *
 * To add a fault kind: name it in FAULT_KINDS with a weight (kinds.ts), list it for the topologies it
 * applies to, write its FaultAction next to its peers, and register it below.
 */
import { hr, type Prng } from '../common';
import { type Fault, type FaultAction, type FaultKind, hitsNode, type NemesisHost } from './kinds';
import { memoryPressure } from './memory-pressure';
import { proxyDrop, proxyFreeze, proxyLatency } from './network-faults';
import { deleteLockKeys, redisRestartLate, redisSigstop } from './node-faults';
import { gcPause, killWorker, pauseAny, pauseWaiter } from './process-faults';
import { killMaster, pauseReplica } from './sentinel-faults';
import { clientKillAddr, clientKillType, clientPause, redisRestart } from './server-faults';

const ACTIONS: Record<FaultKind, FaultAction> = {
  'gc-pause': gcPause,
  'pause-any': pauseAny,
  'kill-holder': killWorker,
  'kill-waiter': killWorker,
  'client-pause': clientPause,
  'client-kill-normal': clientKillType,
  'client-kill-pubsub': clientKillType,
  'client-kill-addr': clientKillAddr,
  'redis-restart': redisRestart,
  'proxy-latency': proxyLatency,
  'proxy-freeze': proxyFreeze,
  'proxy-drop': proxyDrop,
  'redis-restart-late': redisRestartLate,
  'redis-sigstop': redisSigstop,
  'delete-lock-keys': deleteLockKeys,
  'memory-pressure': memoryPressure,
  'kill-master': killMaster,
  'pause-replica': pauseReplica,
  'pause-waiter': pauseWaiter,
};

export class Nemesis {
  readonly faults: Fault[] = [];

  constructor(
    private readonly host: NemesisHost,
    private readonly prng: Prng,
  ) {}

  async inject(kind: FaultKind): Promise<Fault> {
    const fault: Fault = { id: this.faults.length + 1, kind, t0: hr(), t1: 0, detail: {} };
    this.faults.push(fault);
    const { nodes } = this.host;
    const node = hitsNode(kind) && nodes.length > 1 ? this.prng.pick(nodes) : nodes[0];
    try {
      await ACTIONS[kind](fault, this.host, this.prng, node);
    } catch (error) {
      fault.detail.error = error instanceof Error ? error.message : String(error);
    }
    if (hitsNode(kind)) fault.detail = { node: node.name, ...fault.detail };
    if (fault.t1 === 0) fault.t1 = hr();
    return fault;
  }
}
