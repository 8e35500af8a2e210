/**
 * What a fault run runs against. A topology starts the lock's Redis servers (each behind a TCP proxy
 * the nemesis controls) and the resource server (the application's database, reached directly and never
 * faulted), tells the workers where to connect, names the nodes a fault can hit and the fault kinds
 * that apply, and stops everything.
 *
 * To add a topology (a quorum of another size, ...): implement this interface in a file beside
 * single-server.ts, redlock.ts and sentinel.ts, give the workers what they need to connect through
 * `lockPorts` (or `sentinel`), and name it in chaos/topologies/index.ts. A fault aimed at "a server" hits
 * one node of `nodes`, picked by the nemesis when there are several.
 */
import type Redis from 'ioredis';
import type { RedisServer } from '../../test/support/redis-server';
import type { KeySnapshot } from '../checks/key-hygiene';
import type { Prng } from '../common';
import type { FaultKind, ReplicationControl } from '../faults/kinds';
import type { RestartTimes } from '../history';
import type { ChaosProxy } from '../proxy';

/** One lock server a fault can hit. */
export interface LockNode {
  readonly name: string;
  /** A direct (not proxied) admin connection. */
  readonly admin: Redis;
  /** The proxy the workers reach this node through. */
  readonly proxy: ChaosProxy;
  /**
   * SIGKILL, wait `downMs` (0: none), and start again on the same port without persistence: every
   * lock on it vanishes.
   */
  restart(downMs?: number): Promise<RestartTimes>;
  /** SIGSTOP the redis-server: it keeps its connections and answers nothing until cont(). */
  stop(): void;
  /** SIGCONT, if stopped. */
  cont(): void;
  /** Every key on the node, with its TTL in seconds (-1: none). */
  keys(): Promise<Array<{ key: string; ttl: number }>>;
}

export interface Topology {
  readonly name: TopologyName;
  /** The fault kinds the nemesis draws from, in a fixed order (the seeded draws depend on it). */
  readonly faults: readonly FaultKind[];
  /** Starts the servers and proxies. */
  start(): Promise<void>;
  /** The lock servers, in a fixed order. */
  readonly nodes: readonly LockNode[];
  /**
   * The ports workers connect to for locks: one proxy per node, in the order of `nodes`. None when they
   * find the master through Sentinel (`sentinel`).
   */
  lockPorts(): number[];
  /** Where workers find a Sentinel-managed master, and the acknowledgement they ask of its replica. */
  sentinel?(): SentinelConnection;
  /** The master and replica the sentinel faults act on. */
  readonly replication?: ReplicationControl;
  /** Quick mode's plan, when the generic one (every kind once, shuffled) does not fit the topology. */
  quickPlan?(prng: Prng): FaultKind[];
  /** The resource server: the workloads' values live there. */
  readonly resource: RedisServer;
  /** Every node's keys and the resource's, for the key-hygiene check. */
  snapshotKeys(keptPrefixes: readonly string[]): Promise<KeySnapshot>;
  /**
   * Heals the faults still in force (end of the nemesis phase): proxies back to pipes, nodes running
   * (with Sentinel: a master and its replica, linked).
   */
  heal(): void | Promise<void>;
  /** Closes the proxies and stops every server. */
  stop(): Promise<void>;
  /** What the run did that no check reads, for the report (the sentinels' own failovers). */
  notes?(): string[];
}

/** What a worker needs for an ioredis Sentinel client and the `replicas` option. */
export interface SentinelConnection {
  sentinels: Array<{ host: string; port: number }>;
  /** The master's name in the sentinels' configuration. */
  name: string;
  /** `host:port` the sentinels report, to the proxy workers reach that server through (ioredis natMap). */
  natMap: Record<string, { host: string; port: number }>;
  replicas: { count: number; timeout: number; unacknowledged: 'fail' | 'requeue' };
}

export const TOPOLOGIES = ['single', 'redlock', 'sentinel'] as const;
export type TopologyName = (typeof TOPOLOGIES)[number];
