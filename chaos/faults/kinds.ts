/**
 * The fault kinds the nemesis knows, how often the random schedule picks each, which kinds each
 * topology uses, the plan quick mode follows, and what the nemesis needs from the run (NemesisHost). A
 * fault kind is implemented in one of process-faults.ts, server-faults.ts, node-faults.ts,
 * network-faults.ts, memory-pressure.ts or sentinel-faults.ts, and registered in nemesis.ts.
 */
import { hr, type Prng, sleep } from '../common';
import type { LockNode } from '../topologies/topology';

export const FAULT_KINDS = [
  'gc-pause', // SIGSTOP a holder in the middle of its work for longer than its ttl, then SIGCONT
  'pause-any', // SIGSTOP any worker (holder or waiter) for a short random time
  'kill-holder', // SIGKILL a worker that holds a lock, start a new one in its slot
  'kill-waiter', // SIGKILL a worker that waits for a lock, start a new one in its slot
  'client-pause', // CLIENT PAUSE ms ALL|WRITE on a lock Redis
  'client-kill-normal', // CLIENT KILL TYPE normal: every command connection
  'client-kill-pubsub', // CLIENT KILL TYPE pubsub: every wake (subscriber) connection
  'client-kill-addr', // CLIENT KILL ADDR of one worker connection (command or wake) from CLIENT LIST
  'redis-restart', // SIGKILL a lock redis-server, start it again at once on the same port, empty
  'proxy-latency', // the proxy delays every chunk both ways for a while
  'proxy-freeze', // the proxy forwards nothing for a while (a partition that heals)
  'proxy-drop', // the proxy resets every connection
  // Quorum (several nodes) only:
  'redis-restart-late', // SIGKILL a node, start it again only after the longest ttl (the restart rule)
  'redis-sigstop', // SIGSTOP a node's redis-server for a while, then SIGCONT
  'delete-lock-keys', // DEL every lock owner key on a node (its state for those locks is lost)
  // Both topologies; last, so that the kinds above keep their places in every list:
  'memory-pressure', // small maxmemory, allkeys-lru, a writer fills the server: lock keys get evicted
  // Sentinel (a master and its replica) only:
  'kill-master', // SIGKILL the master, Sentinel promotes the replica, the old master returns as its replica
  'pause-replica', // SIGSTOP the replica for a while (no grant is acknowledged), then SIGCONT
  // Every topology; last, so that the seeds of the kinds above keep their draws:
  'pause-waiter', // SIGSTOP a process waiting on a lock another holds, 20 to 200 ms, as the holder works
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** Relative frequency in the random (full) schedule. */
const WEIGHTS: Record<FaultKind, number> = {
  'gc-pause': 3,
  'pause-any': 2,
  'kill-holder': 2,
  'kill-waiter': 2,
  'client-pause': 1,
  'client-kill-normal': 1,
  'client-kill-pubsub': 1,
  'client-kill-addr': 2,
  'redis-restart': 1,
  'proxy-latency': 2,
  'proxy-freeze': 1,
  'proxy-drop': 1,
  'redis-restart-late': 1,
  'redis-sigstop': 2,
  'delete-lock-keys': 1,
  'memory-pressure': 1,
  'kill-master': 2,
  'pause-replica': 2,
  'pause-waiter': 2,
};

/** The kinds that hit one lock server (`node`: with several, the nemesis picks one per fault). */
const NODE_KINDS: ReadonlySet<FaultKind> = new Set<FaultKind>([
  'client-pause',
  'client-kill-normal',
  'client-kill-pubsub',
  'client-kill-addr',
  'redis-restart',
  'proxy-latency',
  'proxy-freeze',
  'proxy-drop',
  'redis-restart-late',
  'redis-sigstop',
  'delete-lock-keys',
  'memory-pressure',
]);

export const hitsNode = (kind: FaultKind): boolean => NODE_KINDS.has(kind);

/**
 * One server: the first twelve kinds, then memory-pressure and pause-waiter, in this order (its seeded
 * draws, so its seeds, depend on it: a kind added here goes at the end).
 */
export const SINGLE_SERVER_FAULTS: readonly FaultKind[] = [
  ...FAULT_KINDS.slice(0, 12),
  'memory-pressure',
  'pause-waiter',
];
/**
 * A quorum: every kind up to memory-pressure (the Sentinel kinds after it are another topology's), then
 * pause-waiter, last so that its seeds replay; `redis-restart` is then the early restart the restart
 * rule forbids.
 */
export const QUORUM_FAULTS: readonly FaultKind[] = [
  ...FAULT_KINDS.slice(0, FAULT_KINDS.indexOf('memory-pressure') + 1),
  'pause-waiter',
];
/**
 * A Sentinel-managed master and its replica: the workers' processes, their connections to the master
 * (through its proxy), and the two Sentinel kinds. Not the kinds that would also hit the sentinels'
 * own links to the master (CLIENT KILL by type, CLIENT PAUSE: a pause past down-after-milliseconds is a
 * failover of a live master, another test), nor those that erase the master's data in place (a restart
 * without persistence, key deletion, eviction), whose overlaps the replicas cannot prevent.
 */
export const SENTINEL_FAULTS: readonly FaultKind[] = [
  'gc-pause',
  'pause-any',
  'kill-holder',
  'kill-waiter',
  'client-kill-addr',
  'proxy-latency',
  'proxy-freeze',
  'proxy-drop',
  'kill-master',
  'pause-replica',
  'pause-waiter',
];

export interface Fault {
  id: number;
  kind: FaultKind;
  /** Injected (shared monotonic clock, ms). */
  t0: number;
  /** Healed. */
  t1: number;
  /** Keys the fault aims at; undefined when it hits every key. */
  keys?: string[];
  detail: Record<string, unknown>;
  /** Why nothing was injected (no holder at the time, ...). */
  skipped?: string;
  /** memory-pressure: the lock keys the server evicted, in the order its notifications came. */
  evictions?: Eviction[];
}

/**
 * A lock key a server evicted, from its keyspace notification. The notification carries no time, so the
 * eviction is only known to lie between `after` (when a PING went out whose answer arrived before the
 * notification: the server evicted after answering it) and `by` (when the notification arrived), both on
 * the shared monotonic clock.
 */
export interface Eviction {
  key: string;
  /** The lock the key belongs to. */
  lock: string;
  /**
   * Which of the lock's keys: its owner key `<prefix>{<lock>}`, a waiters' line (a mutex's or a
   * semaphore's), its fence counter, or a semaphore's holders (`:s`, the set that counts the permits held).
   */
  part: 'owner' | 'queue' | 'fence' | 'holders';
  after: number;
  by: number;
}

export interface Holder {
  slot: number;
  pid: number;
  op: string;
  key: string;
  workMs?: number;
}

export interface NemesisHost {
  /** The longest ttl any call uses. */
  readonly ttl: number;
  readonly claimWindow: number;
  /** The lock servers; a fault that hits a server is given one of them. */
  readonly nodes: readonly LockNode[];
  /** The lock prefix: owner keys are `<prefix>{<lock>}`. */
  readonly lockPrefix: string;
  /** Workers neither paused nor dead. */
  runningSlots(): number[];
  /** Locks held right now by running workers. */
  holders(): Holder[];
  /** Calls waiting right now in running workers. */
  waiters(): Holder[];
  /** Resolves with the next holder that reports it read the twin (is in its work), or undefined. */
  nextReader(accept: (h: Holder) => boolean, timeoutMs: number): Promise<Holder | undefined>;
  pause(slot: number): void;
  resume(slot: number): void;
  /** SIGKILL, then a new worker in the same slot after `restartAfterMs` (in the background). */
  kill(slot: number, restartAfterMs: number): Promise<void>;
  /**
   * SIGKILL `node`, start it again empty `downMs` after (0: at once), and record the restart in the
   * history for `fault`. Resolves with how long the node was away, kill to ready.
   */
  restartNode(node: LockNode, fault: Fault, downMs: number): Promise<{ awayMs: number; early: boolean }>;
  /** The master and replica a Sentinel topology runs (the sentinel faults act on them), if any. */
  readonly replication?: ReplicationControl;
}

/**
 * A Sentinel-managed master and its one replica, as the sentinel faults drive them. The roles swap at
 * each failover, so the faults ask for "the master" and "the replica" rather than for a server.
 */
export interface ReplicationControl {
  /**
   * Waits until the sentinels could promote the replica, SIGKILLs the master, waits for the sentinels to
   * promote the replica, then starts the old master's process again as the new master's replica and
   * waits until its link is up. Rejects if the sentinels do not fail over in time.
   */
  killMaster(): Promise<Failover>;
  /** SIGSTOPs the replica; returns its name. */
  pauseReplica(): string;
  /** SIGCONTs the replica paused by pauseReplica(). */
  resumeReplica(): void;
}

/** One failover, on the shared monotonic clock (ms). */
export interface Failover {
  /** The servers' names: the master killed, the replica promoted. */
  from: string;
  to: string;
  /** Before the master was killed, once the sentinels could promote the replica. */
  killedAt: number;
  /** Every sentinel named the promoted replica, and it answered ROLE master. */
  promotedAt: number;
  /** The old master's process ran again as the new master's replica, its link up. */
  rejoinedAt: number;
  /** How long the sentinels took to see the replica as promotable before the kill. */
  waitedMs: number;
}

/** A kind of `kinds` (a topology's list), drawn by weight. */
export function randomKind(prng: Prng, kinds: readonly FaultKind[]): FaultKind {
  const total = kinds.reduce((sum, kind) => sum + WEIGHTS[kind], 0);
  let r = prng.next() * total;
  for (const kind of kinds) {
    r -= WEIGHTS[kind];
    if (r < 0) return kind;
  }
  return 'gc-pause';
}

/** Quick mode: a GC pause first (it must be seen), then every kind once in a seeded order. */
export function quickPlan(prng: Prng, kinds: readonly FaultKind[]): FaultKind[] {
  return ['gc-pause', ...prng.shuffle(kinds.filter((kind) => kind !== 'gc-pause')), 'gc-pause'];
}

/**
 * Quick mode on Sentinel: the master killed and the replica paused right after the first GC pause, since
 * a failover is the slowest fault and the plan may not be finished when quick mode's nemesis ends; then
 * the other kinds, and a second kill that promotes the first master back (it returned as the replica).
 */
export function sentinelQuickPlan(prng: Prng, kinds: readonly FaultKind[]): FaultKind[] {
  const sentinel: FaultKind[] = ['kill-master', 'pause-replica'];
  const others = kinds.filter((kind) => kind !== 'gc-pause' && !sentinel.includes(kind));
  return ['gc-pause', ...sentinel, ...prng.shuffle(others), 'kill-master', 'gc-pause'];
}

/**
 * How a fault kind is carried out: inject, hold, heal; it fills in `fault` (t0, t1, keys, detail,
 * skipped). `node`: the server a server or network fault hits (unused by process faults).
 */
export type FaultAction = (fault: Fault, host: NemesisHost, prng: Prng, node: LockNode) => Promise<void>;

/** Sleeps `ms`, heals, and marks the fault healed. */
export async function holdThenHeal(fault: Fault, ms: number, heal: () => void): Promise<void> {
  await sleep(ms);
  heal();
  fault.t1 = hr();
}
