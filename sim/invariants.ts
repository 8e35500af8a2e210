/**
 * What must hold after every step of a run, checked then: never more valid holders of a key than its
 * permits (a writer alone), fences that only grow, every call settled within what the library
 * promises, no work started past its call's deadline, every key the lock writes expiring, each waiter
 * in a line once; at the end, no call left unsettled.
 */
import type { Lease } from '../lib/lease';
import { redisKeys, wakeChannelPrefix } from '../lib/protocol/keys';
import { instanceOf } from '../lib/store/token';
import type { OpPlan, Plan } from './plan';
import type { KeySnapshot } from './redis/sim-redis';
import type { Actor, Rng, Scheduler } from './scheduler';
import { scriptOf } from './sim-connection';
import type { SimServer } from './sim-server';

/** The services' key prefix: LockService's default, which the runs keep. */
const PREFIX = 'lock:';

export interface LeaseRecord {
  op: OpPlan;
  actor: Actor;
  lease: Lease;
  fence: number;
  released: boolean;
  /** When its acquire was called, virtual µs. */
  calledAt: number;
}

export interface CallRecord {
  what: string;
  actor: Actor;
  started: number;
  pausedBefore: number;
  boundUs: number;
  settled: boolean;
}

/** The engine's own view of a lease: its end of validity on its service's clock, and its loss. */
interface LeaseInternals {
  validUntil?: number;
  lossReason?: unknown;
}

export class Invariants {
  violation: string | undefined;
  private readonly leases: LeaseRecord[] = [];
  private readonly calls = new Set<CallRecord>();
  private readonly lastFence = new Map<string, number>();
  /**
   * When a key's holder state (owner key, grant hash, holder set) was last evicted, by lock key: on one
   * server, the server's clock then, µs, which a fence is never below when it is granted; on a quorum,
   * virtual time.
   */
  private readonly evictedAt = new Map<string, number>();
  /** When each token's hold was last affirmed by its server (observe), server clock µs. */
  private readonly affirmedAt = new Map<string, number>();

  constructor(
    private readonly plan: Plan,
    private readonly scheduler: Scheduler,
    private readonly servers: readonly SimServer[],
    private readonly log: (who: string, text: string) => void,
    /** Excuses no eviction: the holders it leaves without exclusion count, so a run with one fails. */
    private readonly strict = false,
  ) {}

  fail(violation: string): void {
    this.violation ??= violation;
  }

  /**
   * What the library promises for a call's settling: an acquire within its waitTimeout plus one
   * command's timeout and a claim window (a grant in flight at the deadline), a quorum's rounds on top;
   * a release within two commands' timeouts. A paused service's calls settle later by its pause.
   */
  callStarted(op: OpPlan, actor: Actor, what: 'acquire' | 'release' = 'acquire'): CallRecord {
    const { commandTimeout, claimWindow, topology } = this.plan;
    const rounds = topology === 'quorum' ? 4 * commandTimeout : 0;
    const wait = what === 'release' || op.how === 'try' ? 0 : op.waitTimeout;
    const boundMs = wait + 2 * commandTimeout + claimWindow + rounds;
    const call = {
      what: `op${op.id} ${what}`,
      actor,
      started: this.scheduler.now,
      pausedBefore: actor.pausedFor,
      boundUs: boundMs * 1000,
      settled: false,
    };
    this.calls.add(call);
    return call;
  }

  callSettled(call: CallRecord): void {
    call.settled = true;
    this.calls.delete(call);
  }

  obtained(op: OpPlan, actor: Actor, lease: Lease, call: CallRecord): LeaseRecord {
    const record = { op, actor, lease, fence: lease.fence, released: false, calledAt: call.started };
    const internals = lease as unknown as LeaseInternals;
    if (typeof internals.validUntil !== 'number') this.fail(`op${op.id}: a lease without validUntil`);
    // One owner at a time: each one's fence above every earlier one's. A holder whose grant lost its
    // key to an eviction may learn of it after a later grant: its lower fence is what lets a fenced
    // resource refuse it (docs/guarantees.md, "What an eviction does").
    if (this.excused(record)) {
      // neither checked nor raising the bar
    } else if (this.plan.kind === 'mutex') {
      const last = this.lastFence.get(op.key) ?? -1;
      if (!(lease.fence > last)) this.fail(`op${op.id} fence ${lease.fence} not above ${last} on ${op.key}`);
      this.lastFence.set(op.key, lease.fence);
    } else if (this.leases.some((l) => l.op.key === op.key && l.fence === lease.fence)) {
      this.fail(`op${op.id} fence ${lease.fence} given twice on ${op.key}`);
    }
    this.leases.push(record);
    this.check();
    return record;
  }

  /**
   * Granted before its holder state was evicted (on one server its fence says when, even for a grant
   * read later or handed on locally; on a quorum, its call began before) and not affirmed since: the
   * docs say its work is no longer exclusive.
   */
  private excused(record: LeaseRecord): boolean {
    if (this.strict) return false;
    const evicted = this.evictedAt.get(record.op.key);
    if (evicted === undefined) return false;
    if (this.plan.topology !== 'single') return record.calledAt <= evicted;
    // Until Redis affirms the hold again (a confirmation, a renewal, a recorded hand-off): from then on
    // it counts, as the semaphore-eviction spec counts it.
    return record.fence <= evicted && (this.affirmedAt.get(record.lease.token) ?? -1) <= evicted;
  }

  /**
   * Every command a server ran: a script that told a token it holds (an acquire's grant or
   * confirmation, a renewal, a recorded hand-off) affirms its hold, at the server's clock, µs.
   */
  observe(server: SimServer, args: readonly (string | number)[], outcome: unknown): void {
    const name = scriptOf(args);
    if (name === undefined) return;
    const affirmed =
      name === 'extend' || name === 'semaphoreExtend'
        ? outcome === 1
        : (name === 'acquire' || name === 'semaphoreAcquire' || name === 'transfer') &&
          Array.isArray(outcome) &&
          outcome[0] === 1;
    if (affirmed) this.affirmedAt.set(tokenOf(args), server.actor.clockAt(this.scheduler.now));
  }

  crashed(actor: Actor): void {
    for (const call of this.calls) if (call.actor === actor) this.calls.delete(call);
  }

  check(): void {
    if (this.violation) return;
    const now = this.scheduler.now;
    this.checkHolders(now);
    // One read of each server's keys per step, for every check of them.
    const keys = this.servers.map((server) => server.redis.snapshot());
    if (this.plan.topology === 'single' && this.plan.kind === 'mutex')
      this.checkLines(this.servers[0], keys[0]);
    for (const call of this.calls) {
      const paused = call.actor.pausedFor - call.pausedBefore;
      if (now - call.started > call.boundUs + paused) {
        this.fail(`${call.what} of ${call.actor.name} unsettled after ${(now - call.started) / 1000} ms`);
      }
    }
    for (const [i, server] of this.servers.entries()) {
      for (const entry of keys[i]) {
        if (entry.pexpireAt === undefined) this.fail(`${entry.key} on ${server.name} has no TTL`);
        // One place in line per waiter: a call sent twice (a resend after a reconnect) joins once.
        if (entry.type === 'list') {
          const line = entry.value as string[];
          if (new Set(line).size !== line.length) {
            this.fail(`${entry.key} on ${server.name} lists a waiter twice: ${line.join(' ')}`);
          }
        }
      }
    }
  }

  /**
   * FIFO, as the one server's state shows it, after each command: the lock goes to the first waiter in
   * line (none left ahead of it), and a waiter leaves the line only by its own service's call or by a
   * grant, or unheard (its service no longer subscribed), or with the whole line's expiry. A mutex on
   * one server: the semaphore's and the quorum's lines are not checked this way.
   */
  private checkLines(server: SimServer, keys: readonly KeySnapshot[]): void {
    const args = server.lastCommand;
    server.lastCommand = undefined;
    const before = this.lines;
    const owners = this.owners;
    this.lines = new Map();
    this.owners = new Map();
    const expiry = new Map<string, number | undefined>();
    for (const entry of keys) {
      if (entry.type === 'list') this.lines.set(entry.key, entry.value as string[]);
      else if (entry.type === 'string' && !entry.key.includes('}:'))
        this.owners.set(entry.key, entry.value as string);
      expiry.set(entry.key, entry.pexpireAt);
    }
    if (!args) return;
    const caller = instanceOf(tokenOf(args));
    const serverMs = server.actor.clockAt(this.scheduler.now) / 1000;
    for (const [key, line] of before) {
      // An evicted line loses its order (docs/guarantees.md, "What an eviction does"): no FIFO to check.
      if (this.linesEvicted.has(key)) continue;
      const owner = key.slice(0, -':q'.length);
      const after = this.lines.get(key) ?? [];
      if (!this.lines.has(key) && (this.expiries.get(key) ?? Number.POSITIVE_INFINITY) <= serverMs) continue;
      const newOwner = this.owners.get(owner);
      if (newOwner !== undefined && newOwner !== owners.get(owner) && line.includes(newOwner)) {
        const ahead = line
          .slice(0, line.indexOf(newOwner))
          .filter((e) => !e.startsWith('^') && after.includes(e));
        if (ahead.length > 0) this.fail(`${owner} granted to ${newOwner} ahead of ${ahead.join(', ')}`);
      }
      for (const entry of line) {
        if (entry.startsWith('^') || after.includes(entry) || entry === newOwner) continue;
        const instance = instanceOf(entry);
        if (instance === caller) continue;
        if (server.listeners(wakeChannelPrefix(PREFIX) + instance) > 0) {
          this.fail(
            `${entry}, heard, left ${key} by another service's ${scriptOf(args) ?? String(args[0])} (${tokenOf(args)})`,
          );
        }
      }
    }
    this.expiries = expiry;
  }

  private readonly linesEvicted = new Set<string>();
  private lines = new Map<string, string[]>();
  private owners = new Map<string, string>();
  private expiries = new Map<string, number | undefined>();

  private checkHolders(now: number): void {
    const byKey = new Map<string, LeaseRecord[]>();
    for (const record of this.leases) {
      if (record.released || record.actor.crashed) continue;
      if (this.excused(record)) continue;
      const internals = record.lease as unknown as LeaseInternals;
      if (internals.lossReason !== undefined) continue;
      const validUntil = internals.validUntil as number;
      if (record.actor.clockAt(now) / 1000 >= validUntil) continue;
      byKey.set(record.op.key, [...(byKey.get(record.op.key) ?? []), record]);
    }
    for (const [key, valid] of byKey) {
      const names = () => valid.map((r) => `op${r.op.id}${r.op.mode ? `(${r.op.mode})` : ''}`).join(', ');
      if (this.plan.kind === 'rw') {
        if (valid.length > 1 && valid.some((r) => r.op.mode === 'write')) {
          this.fail(`a writer not alone on ${key}: ${names()}`);
        }
      } else if (valid.length > this.plan.permits) {
        this.fail(`${valid.length} valid holders of ${key} with ${this.plan.permits} permit(s): ${names()}`);
      }
    }
  }

  /**
   * Evicts one of the lock's keys (docs/guarantees.md, "What an eviction does"). The queue and a single
   * server's fence counter are lost without a broken promise. The holder state (a mutex's owner key, a
   * semaphore's grant hash or holder set) is lost with its holders' exclusion, as documented: their
   * leases no longer count, but every grant made after it must keep the bound. On a quorum, one node's
   * is a node's lost state, which Redlock survives only when the node stays away a ttl (docs/guarantees.md,
   * "Several masters"): the same holds. On a quorum a node's
   * fence counter is a node's state: its loss is a restart's, which point 3 of the quorum's guarantees
   * covers only with a majority's clocks ahead of the last fence, so it is not evicted there.
   */
  evictOne(server: SimServer, rng: Rng): string | undefined {
    const fences = this.plan.topology === 'single';
    const candidates = server.redis
      .snapshot()
      .map((e) => e.key)
      .filter((key) => /\{k\d+\}/.test(key) && (fences || !key.endsWith(':fence')));
    if (candidates.length === 0) return undefined;
    const key = rng.pick(candidates);
    server.redis.evict(key);
    if (key.endsWith(':q')) this.linesEvicted.add(key);
    const lock = /\{(k\d+)\}/.exec(key)?.[1] as string;
    if (!key.endsWith(':q') && !key.endsWith(':fence')) {
      this.evictedAt.set(lock, fences ? server.actor.clockAt(this.scheduler.now) : this.scheduler.now);
    }
    return key;
  }

  /**
   * `server` restarted empty. On one server that is every key's holder state and line lost, as an
   * eviction of them: documented, excused for the holders granted before it. A quorum node that stays
   * down a ttl (the rule docs/guarantees.md gives) excuses nothing.
   */
  lostAll(server: SimServer): void {
    for (const key of new Set(this.plan.ops.map((op) => op.key))) {
      if (this.plan.topology === 'single') this.evictedAt.set(key, server.actor.clockAt(this.scheduler.now));
      this.linesEvicted.add(redisKeys(PREFIX, key).queue);
    }
  }

  /** Once every service closed: no call left unsettled, and nothing but expiring keys left. */
  atEnd(): void {
    for (const call of this.calls) {
      if (!call.actor.crashed) this.fail(`${call.what} of ${call.actor.name} never settled`);
    }
    this.log('=', `end: ${this.leases.length} grants`);
  }
}

/** The token a command carries: a script's ARGV[1], or nothing. */
function tokenOf(args: readonly (string | number)[]): string {
  const name = String(args[0]).toUpperCase();
  if (name !== 'EVALSHA' && name !== 'EVAL') return '';
  return String(args[3 + Number(args[2])] ?? '');
}
