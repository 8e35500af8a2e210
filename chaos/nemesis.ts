/**
 * The nemesis: seeded choices of what to break, how and for how long. Each fault runs to completion
 * (injected, held, healed) before the next one; the host (chaos/run.ts) owns the processes, the servers
 * and the proxy and tells the nemesis who holds and who waits.
 */
import type Redis from 'ioredis';
import { hr, type Prng, sleep } from './common';
import type { ChaosProxy } from './proxy';

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

export class Nemesis {
  readonly faults: Fault[] = [];

  constructor(
    private readonly host: NemesisHost,
    private readonly prng: Prng,
  ) {}

  async inject(kind: FaultKind): Promise<Fault> {
    const fault: Fault = { id: this.faults.length + 1, kind, t0: hr(), t1: 0, detail: {} };
    this.faults.push(fault);
    try {
      await this.run(fault);
    } catch (error) {
      fault.detail.error = error instanceof Error ? error.message : String(error);
    }
    if (fault.t1 === 0) fault.t1 = hr();
    return fault;
  }

  private async run(fault: Fault): Promise<void> {
    const { host, prng } = this;
    const pauseFor = async (ms: number, heal: () => void): Promise<void> => {
      await sleep(ms);
      heal();
      fault.t1 = hr();
    };
    switch (fault.kind) {
      case 'gc-pause': {
        // Aim at a holder inside its work (between the twin's GET and SET) whose lock another
        // process is waiting for: the waiter takes over during the pause and the holder then resumes
        // and writes. Prefer the longer pieces of work, so the SIGSTOP lands before the write.
        const foreignWaiter = (h: Holder): boolean =>
          host.waiters().some((w) => w.key === h.key && w.slot !== h.slot);
        const victim =
          (await host.nextReader((h) => (h.workMs ?? 0) >= 50 && foreignWaiter(h), 3_000)) ??
          (await host.nextReader(() => true, 2_000));
        if (!victim) {
          fault.skipped = 'no holder in its work';
          return;
        }
        const ms = host.ttl + host.claimWindow + prng.int(300, 900);
        host.pause(victim.slot);
        fault.t0 = hr();
        fault.keys = [victim.key];
        fault.detail = { slot: victim.slot, pid: victim.pid, op: victim.op, key: victim.key, ms };
        return pauseFor(ms, () => host.resume(victim.slot));
      }
      case 'pause-any': {
        const slots = host.runningSlots();
        if (slots.length === 0) {
          fault.skipped = 'no running worker';
          return;
        }
        const slot = prng.pick(slots);
        const ms = prng.int(50, 2 * host.ttl);
        const held = host.holders().filter((h) => h.slot === slot);
        host.pause(slot);
        fault.t0 = hr();
        fault.keys = held.length > 0 ? held.map((h) => h.key) : undefined;
        fault.detail = { slot, ms, holding: held.map((h) => h.key) };
        return pauseFor(ms, () => host.resume(slot));
      }
      case 'kill-holder':
      case 'kill-waiter': {
        const candidates =
          fault.kind === 'kill-holder'
            ? host.holders()
            : host.waiters().filter((w) => !host.holders().some((h) => h.slot === w.slot));
        const pool = candidates.length > 0 ? candidates : fault.kind === 'kill-waiter' ? host.waiters() : [];
        if (pool.length === 0) {
          fault.skipped = fault.kind === 'kill-holder' ? 'no holder' : 'no waiter';
          return;
        }
        const target = prng.pick(pool);
        const restartAfterMs = prng.int(100, 800);
        fault.t0 = hr();
        fault.keys = [target.key];
        fault.detail = { slot: target.slot, pid: target.pid, key: target.key, restartAfterMs };
        await host.kill(target.slot, restartAfterMs);
        fault.t1 = hr();
        return;
      }
      case 'client-pause': {
        const ms = prng.int(200, 1_500);
        const mode = prng.chance(0.5) ? 'ALL' : 'WRITE';
        fault.t0 = hr();
        fault.detail = { ms, mode };
        await host.admin.call('CLIENT', 'PAUSE', String(ms), mode);
        await sleep(ms);
        fault.t1 = hr();
        return;
      }
      case 'client-kill-normal':
      case 'client-kill-pubsub': {
        const type = fault.kind === 'client-kill-normal' ? 'normal' : 'pubsub';
        fault.t0 = hr();
        // SKIPME yes (the default) spares the admin connection itself.
        const killed = await host.admin.call('CLIENT', 'KILL', 'TYPE', type);
        fault.t1 = hr();
        fault.detail = { type, killed };
        return;
      }
      case 'client-kill-addr': {
        const list = String(await host.admin.call('CLIENT', 'LIST'));
        const clients = list
          .split('\n')
          .map((line) =>
            Object.fromEntries(
              line
                .trim()
                .split(' ')
                .map((kv) => kv.split('=') as [string, string]),
            ),
          )
          .filter((c) => typeof c.name === 'string' && c.name.startsWith('chaos-w'));
        if (clients.length === 0) {
          fault.skipped = 'no worker connection';
          return;
        }
        const victim = prng.pick(clients);
        fault.t0 = hr();
        const killed = await host.admin
          .call('CLIENT', 'KILL', 'ADDR', victim.addr)
          .catch((e: Error) => e.message);
        fault.t1 = hr();
        fault.detail = {
          name: victim.name,
          addr: victim.addr,
          connection: victim.flags?.includes('P') ? 'wake (pub/sub)' : 'commands',
          killed,
        };
        return;
      }
      case 'redis-restart': {
        fault.t0 = hr();
        const { downMs } = await host.restartRedis();
        fault.t1 = hr();
        fault.detail = { downMs: Math.round(downMs) };
        return;
      }
      case 'proxy-latency': {
        const latency = prng.int(10, Math.round(host.ttl / 2));
        const ms = prng.int(500, 2_500);
        host.proxy.setLatency(latency);
        fault.t0 = hr();
        fault.detail = { latency, ms };
        return pauseFor(ms, () => host.proxy.setLatency(0));
      }
      case 'proxy-freeze': {
        const ms = prng.int(200, 1_500);
        host.proxy.freeze();
        fault.t0 = hr();
        fault.detail = { ms };
        return pauseFor(ms, () => host.proxy.thaw());
      }
      case 'proxy-drop': {
        fault.t0 = hr();
        fault.detail = { dropped: host.proxy.dropAll() };
        fault.t1 = hr();
        return;
      }
    }
  }
}
