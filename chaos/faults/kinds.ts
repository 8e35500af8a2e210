/**
 * The fault kinds the nemesis knows, how often the random schedule picks each, the plan quick mode
 * follows, and what the nemesis needs from the run (NemesisHost). A fault kind is implemented in one of
 * process-faults.ts, server-faults.ts or network-faults.ts, and registered in nemesis.ts.
 */
import type Redis from 'ioredis';
import { hr, type Prng, sleep } from '../common';
import type { ChaosProxy } from '../proxy';

export const FAULT_KINDS = [
  'gc-pause', // SIGSTOP a holder in the middle of its work for longer than its ttl, then SIGCONT
  'pause-any', // SIGSTOP any worker (holder or waiter) for a short random time
  'kill-holder', // SIGKILL a worker that holds a lock, start a new one in its slot
  'kill-waiter', // SIGKILL a worker that waits for a lock, start a new one in its slot
  'client-pause', // CLIENT PAUSE ms ALL|WRITE on the lock Redis
  'client-kill-normal', // CLIENT KILL TYPE normal: every command connection
  'client-kill-pubsub', // CLIENT KILL TYPE pubsub: every wake (subscriber) connection
  'client-kill-addr', // CLIENT KILL ADDR of one worker connection (command or wake) from CLIENT LIST
  'redis-restart', // SIGKILL redis-server and start it again on the same port: every lock vanishes
  'proxy-latency', // the proxy delays every chunk both ways for a while
  'proxy-freeze', // the proxy forwards nothing for a while (a partition that heals)
  'proxy-drop', // the proxy resets every connection
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
};

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
}

export interface Holder {
  slot: number;
  pid: number;
  op: string;
  key: string;
  workMs?: number;
}

export interface NemesisHost {
  readonly ttl: number;
  readonly claimWindow: number;
  readonly proxy: ChaosProxy;
  /** A direct (not proxied) admin connection to the lock Redis. */
  readonly admin: Redis;
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
  restartRedis(): Promise<{ downMs: number }>;
}

export function randomKind(prng: Prng): FaultKind {
  const total = FAULT_KINDS.reduce((sum, kind) => sum + WEIGHTS[kind], 0);
  let r = prng.next() * total;
  for (const kind of FAULT_KINDS) {
    r -= WEIGHTS[kind];
    if (r < 0) return kind;
  }
  return 'gc-pause';
}

/** Quick mode: a GC pause first (it must be seen), then every kind once in a seeded order. */
export function quickPlan(prng: Prng): FaultKind[] {
  return ['gc-pause', ...prng.shuffle(FAULT_KINDS.filter((kind) => kind !== 'gc-pause')), 'gc-pause'];
}

/** How a fault kind is carried out: inject, hold, heal; it fills in `fault` (t0, t1, keys, detail, skipped). */
export type FaultAction = (fault: Fault, host: NemesisHost, prng: Prng) => Promise<void>;

/** Sleeps `ms`, heals, and marks the fault healed. */
export async function holdThenHeal(fault: Fault, ms: number, heal: () => void): Promise<void> {
  await sleep(ms);
  heal();
  fault.t1 = hr();
}
