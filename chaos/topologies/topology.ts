/**
 * What a fault run runs against. A topology starts the lock's Redis servers (each behind a TCP proxy
 * the nemesis controls) and the resource server (the application's database, reached directly and never
 * faulted), tells the workers where to connect, names the nodes a fault can hit, and stops everything.
 *
 * To add a topology (a Redlock quorum, Sentinel): implement this interface in a file beside
 * single-server.ts, give the workers what they need to connect through `lockPorts`, and select it in
 * chaos/run.ts. Faults aimed at "the server" take a node from `nodes`.
 */
import type Redis from 'ioredis';
import type { RedisServer } from '../../test/support/redis-server';
import type { KeySnapshot } from '../checks/key-hygiene';
import type { Restart } from '../history';
import type { ChaosProxy } from '../proxy';

/** One lock server a fault can hit. */
export interface LockNode {
  readonly name: string;
  /** A direct (not proxied) admin connection. */
  readonly admin: Redis;
  /** The proxy the workers reach this node through. */
  readonly proxy: ChaosProxy;
  /** SIGKILL and start again on the same port, without persistence: every lock on it vanishes. */
  restart(): Promise<Restart>;
  /** Every key on the node, with its TTL in seconds (-1: none). */
  keys(): Promise<Array<{ key: string; ttl: number }>>;
}

export interface Topology {
  readonly name: string;
  /** Starts the servers and proxies. */
  start(): Promise<void>;
  /** The lock servers, in a fixed order. */
  readonly nodes: readonly LockNode[];
  /** The ports workers connect to for locks: one proxy per node, in the order of `nodes`. */
  lockPorts(): number[];
  /** The resource server: the workloads' values live there. */
  readonly resource: RedisServer;
  /** Every node's keys and the resource's, for the key-hygiene check. */
  snapshotKeys(keptPrefixes: readonly string[]): Promise<KeySnapshot>;
  /** Heals the network faults still in force (end of the nemesis phase). */
  heal(): void;
  /** Closes the proxies and stops every server. */
  stop(): Promise<void>;
}
