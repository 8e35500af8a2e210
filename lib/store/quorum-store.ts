/**
 * The quorum store: a lock held on a majority of N independent Redis masters (Redlock, as the documents
 * this project grew from describe it), behind the same store interface as the single server.
 *
 * A grant takes two rounds, each sent to every node at once and decided as soon as the outcome is
 * certain (no waiting for a stopped node once a majority has answered):
 *   1. vote: each node takes the lock for the caller if it is free there, and names a fence floor;
 *   2. commit: the fence, the highest floor of the voters, is recorded on the voters that still hold.
 * The caller holds the lock when a majority committed and the validity left (ttl - elapsed - drift,
 * drift = 1 % of ttl + 2 ms, see validityDrift) is more than the engine's safety margin (safetyMargin):
 * a grant never comes back lost already. Otherwise its votes are released at once and it waits.
 * Fences strictly increase across grants as long as a majority of nodes keep their state
 * (quorum-commit.lua says why).
 *
 * Waiting: a caller that finds the lock busy joins a line on each node, ordered by its arrival time,
 * which it sends alike to every node (its clock when it started waiting), so the nodes agree on the order
 * without talking to each other. A release hands the lock, on each node, to the first in that node's line
 * whose service still listens, with the next fence (the releaser's + 1), and tells that service. A
 * waiter handed the lock by a majority with one fence starts at once (quorum-handoffs.ts) and confirms
 * by a renewal; newcomers meanwhile find the lock held: first come, first served, across processes.
 * Nodes that disagree (one missed a waiter's arrival) only cost a failed attempt: the votes are given
 * back and the majority's choice goes on. A waiter whose wake-up was lost re-checks when the hold would
 * run out.
 */
import { performance } from 'node:perf_hooks';
import { connectionOf, isRedisClient, type RedisClient } from '../clients';
import { LockQuorumError, type NodeFailure } from '../errors/lock-quorum.error';
import { LockUsageError } from '../errors/lock-usage.error';
import type { Subscriber } from '../protocol/connection';
import { redisKeys, wakeChannelPrefix } from '../protocol/keys';
import { scanLockKeys } from '../protocol/lock-scan';
import { FENCE_RETENTION_MS } from '../protocol/lock-scripts';
import { QuorumNode, type Vote } from '../protocol/quorum-node';
import { CONNECTING } from '../protocol/script-runner';
import {
  type AcquireMode,
  type AcquireReply,
  CLOCK_RATE_DRIFT,
  type ExtendOutcome,
  type KeyList,
  type LockSnapshot,
  type LockStore,
  type LockTicket,
  safetyMargin,
  type TicketTerms,
  type WakeHandlers,
} from './lock-store';
import { QuorumAttempts } from './quorum-attempts';
import { QuorumHandoffs } from './quorum-handoffs';
import { type Owed, QuorumTakeBacks } from './quorum-take-backs';
import { storeInstanceId, ticketFields } from './token';

export interface QuorumStoreOptions {
  prefix: string;
  /** Put before the random id in tokens (LockServiceOptions.instanceName). */
  instanceName?: string;
  /** The least wait for one node's reply, ms: well below the ttl. */
  nodeTimeout: number;
  /** The longest it grows to while a node's replies are slow (reply-pace.ts), ms. */
  nodeTimeoutCap?: number;
}

type Result<T> = { ok: true; value: T } | { ok: false; reason: string };

const now = (): number => performance.now();

const reasonOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** Whether a node may hold the lock for the caller after its vote: it said yes, or it failed to answer. */
const mayHold = (vote: Result<Vote>): boolean => !vote.ok || vote.value.voted;

/** How long a try (tryAcquire) waits for the connections of a new service to open, and a wake-up
 * subscription for its own connection to open, at most (ms). */
const CONNECT_WAIT = 1_000;

export class QuorumLockStore implements LockStore {
  readonly nodes: readonly QuorumNode[];
  readonly majority: number;
  private readonly instanceId: string;
  readonly instance: string;
  /** A waiter of service I is told on channelPrefix + I, on whichever node hands it the lock. */
  private readonly channelPrefix: string;
  private readonly channel: string;
  private sequence = 0;
  /** When each ticket's caller started waiting (this process' clock, ms): the same for every node. */
  private readonly arrivals = new WeakMap<LockTicket, number>();
  /** What the nodes announce about hand-offs to this service's waiters. */
  private readonly handoffs: QuorumHandoffs;
  /** Which attempt of each caller is its latest: only its votes are given back when it fails. */
  private readonly attempts = new QuorumAttempts((token) => this.takeBacks.forget(token));
  /** Releases and cancels a node has not answered yet, sent to it again until it does. */
  private readonly takeBacks: QuorumTakeBacks;
  private subscribers: Subscriber[] = [];
  private subscribing: Promise<void> | undefined;
  private subscribed = false;
  private closed = false;

  constructor(
    clients: readonly RedisClient[],
    private readonly options: QuorumStoreOptions,
    private readonly handlers: WakeHandlers,
  ) {
    this.instanceId = storeInstanceId(options.instanceName);
    this.instance = this.instanceId;
    this.nodes = clients.map(
      (client) => new QuorumNode(connectionOf(client), options.nodeTimeout, options.nodeTimeoutCap),
    );
    this.majority = Math.floor(clients.length / 2) + 1;
    this.handoffs = new QuorumHandoffs(
      clients.length,
      this.majority,
      (ttl) => this.validityDrift(ttl),
      (m) => {
        // Started on a hand-off: the votes of the attempt before are no longer its to give back.
        if (m.kind === 'grant') this.attempts.next(m.token);
        handlers.onWake(m);
      },
      options.nodeTimeout,
    );
    this.channelPrefix = wakeChannelPrefix(options.prefix);
    this.channel = this.channelPrefix + this.instanceId;
    this.takeBacks = new QuorumTakeBacks(
      this.nodes.length,
      (i, owed) => this.releaseOn(this.nodes[i], owed.ticket, true, owed.fence),
      now,
    );
  }

  /** A quorum has no semaphores (yet): a lock held on a majority is one owner's. */
  readonly semaphores = false;

  ticket(key: string, { ttl, claimWindow, member }: TicketTerms): LockTicket {
    // No kind: a quorum's lock is a mutex.
    const ticket = ticketFields(this.instanceId, ++this.sequence, key, { ttl, claimWindow, member });
    // Wall-clock time, to µs: comparable between the processes (and machines, as far as their clocks
    // agree) whose callers share a line.
    this.arrivals.set(ticket, Math.round((performance.timeOrigin + now()) * 1000) / 1000);
    return ticket;
  }

  /** Clock drift allowed between the nodes and this process while a lease is held: 1 % of ttl + 2 ms. */
  validityDrift(ttl: number): number {
    return Math.ceil(ttl * CLOCK_RATE_DRIFT) + 2;
  }

  async acquire(ticket: LockTicket, asked: AcquireMode, queueTtl: number): Promise<AcquireReply> {
    // The line is ordered by each caller's first arrival, which a waiter keeps when it joins again: a
    // late waiter goes back to its place without asking.
    const mode = asked === 'late' ? 'wait' : asked;
    const attempt = this.attempts.next(ticket.token);
    const handed = this.handoffs.take(ticket.token);
    if (mode === 'wait' && handed !== undefined) {
      const grant = await this.confirmHanded(ticket, handed);
      if (grant) return grant;
      // Too few nodes hold it for this caller (they disagree on who is next, or a hand-off has not
      // reached one yet): a full attempt follows.
    }
    const { key, token, ttl } = ticket;
    const keys = redisKeys(this.options.prefix, key);
    const waitFor = mode === 'try' ? 0 : Math.max(1, queueTtl);
    // A new service's connections may still be opening: nodeTimeout counts from when a node can answer,
    // so wait for them first, as a call on one server does: a call that may wait for half of its wait
    // (queueTtl is the wait left plus a claim window; a waiting call's first try brings it too), so that
    // nodes that never open still leave it the time to fail with a LockQuorumError naming them; a call
    // that may not (tryAcquire) for CONNECT_WAIT.
    if (this.nodes.some((node) => CONNECTING.has(node.connection.state))) {
      const waitLeft = queueTtl - ticket.claimWindow;
      const limit = waitLeft > 0 ? Math.max(this.options.nodeTimeout, waitLeft / 2) : CONNECT_WAIT;
      await Promise.all(this.nodes.map((node) => node.connected(limit)));
    }
    const started = now();
    const arrival = this.arrivals.get(ticket) ?? Date.now();
    // Votes that come in after the outcome was decided: given back too if the attempt failed.
    let failed = false;
    const late: QuorumNode[] = [];
    const votes = await this.gather(
      (node) =>
        node.vote(keys, token, ttl, waitFor, arrival).then((vote) => {
          this.handoffs.observeClock(this.nodes.indexOf(node), vote.serverUs, started);
          return vote;
        }),
      (vote) => vote.voted,
      this.nodes,
      (node, result) => {
        if (!mayHold(result)) return;
        if (!failed) late.push(node);
        else if (this.attempts.isLatest(token, attempt)) this.giveBack(ticket, mode, [node]);
      },
    );
    try {
      this.assertAnswered(votes, key);
    } catch (error) {
      // Too few nodes answered: the votes that did come in are given back before the call fails.
      if (this.attempts.isLatest(token, attempt)) this.releaseEverywhere(ticket, true).catch(() => {});
      throw error;
    }
    const voters: QuorumNode[] = [];
    let fence = 0;
    votes.forEach((r, i) => {
      if (!r?.ok || !r.value.voted) return;
      voters.push(this.nodes[i]);
      fence = Math.max(fence, r.value.floor);
    });
    if (voters.length >= this.majority) {
      const grant = await this.commit(ticket, voters, fence, started);
      if (grant) return grant;
    }
    // Not granted: give back every vote at once (sent after the votes on each connection, so in order),
    // on every node that voted or failed to answer, and on the late ones as their votes come in.
    failed = true;
    if (this.attempts.isLatest(token, attempt)) {
      this.giveBack(ticket, mode, [
        ...this.nodes.filter((_, i) => votes[i] !== undefined && mayHold(votes[i])),
        ...late,
      ]);
    }
    if (mode === 'try') this.attempts.done(token);
    const { retryIn, first } = this.retryAfter(votes, ttl);
    return { granted: false, ownerTtl: retryIn, serverMs: now(), isHead: first };
  }

  /**
   * Second round of a grant: records the fence (the highest floor of the nodes holding the lock for the
   * caller) on those nodes and renews their holds to the full ttl. Granted when a majority did, with
   * validity left after both rounds, counted from `started`, before the first.
   */
  private async commit(
    ticket: LockTicket,
    holders: readonly QuorumNode[],
    fence: number,
    started: number,
  ): Promise<AcquireReply | undefined> {
    const { token, ttl } = ticket;
    const keys = redisKeys(this.options.prefix, ticket.key);
    const retention = Math.max(FENCE_RETENTION_MS, ttl);
    const commits = await this.gather(
      (node) => node.commit(keys, token, fence, retention, ttl),
      (done) => done,
      holders,
    );
    const committed = commits.filter((r) => r?.ok && r.value).length;
    if (committed >= this.majority && ttl - (now() - started) - this.validityDrift(ttl) > safetyMargin(ttl)) {
      return { granted: true, fence, serverMs: now(), from: started };
    }
    return undefined;
  }

  /**
   * Nodes handed the lock to this waiter (quorum-release.lua), each with the next fence (the releaser's
   * + 1, so normally the same from all): the vote round is already done, the commit alone makes the
   * grant. It goes to every node, not only those heard from: the others have most likely handed the lock
   * over too, their messages still on the way, and the more nodes hold it, the more of them may lose it
   * before a second caller could be granted. A node that knows a higher fence refuses the commit. If too
   * few commit, the holds renewed stay the caller's, and the full attempt that follows renews them again.
   * `fence`: the highest the nodes handed over.
   */
  private confirmHanded(ticket: LockTicket, fence: number): Promise<AcquireReply | undefined> {
    return this.commit(ticket, this.nodes, fence, now()).catch(() => undefined);
  }

  /** Gives back the votes of a failed attempt on `nodes`. A waiter keeps its place in line; a try was never in it. */
  private giveBack(ticket: LockTicket, mode: AcquireMode, nodes: readonly QuorumNode[]): void {
    if (nodes.length > 0) this.releaseEverywhere(ticket, mode === 'try', nodes).catch(() => {});
  }

  async release(ticket: LockTicket, fence = 0): Promise<boolean> {
    this.attempts.done(ticket.token);
    return (await this.releaseEverywhere(ticket, true, this.nodes, fence)) >= this.majority;
  }

  async releaseLater(ticket: LockTicket, holdMs: number): Promise<boolean> {
    return (await this.extend(ticket, holdMs)) === 'extended';
  }

  async cancel(ticket: LockTicket): Promise<boolean> {
    this.attempts.done(ticket.token);
    return (await this.releaseEverywhere(ticket, true)) > 0;
  }

  /**
   * Extended on a majority, or else what most of the other nodes that answered found: the key gone
   * (restarted, evicted or deleted there) or taken by another caller.
   */
  async extend(ticket: LockTicket, ttl: number): Promise<ExtendOutcome> {
    this.attempts.next(ticket.token);
    const keys = redisKeys(this.options.prefix, ticket.key);
    // Nodes that lost the key (restarted empty, evicted) get it back while a majority still records the
    // holder: a rolling restart of the nodes then never takes the lease below a majority.
    let held = false;
    const restore = (node: QuorumNode, result: Result<ExtendOutcome>): void => {
      if (result.ok && result.value === 'missing') node.restore(keys, ticket.token, ttl).catch(() => {});
    };
    const results = await this.gather(
      (node) => node.extend(keys, ticket.token, ttl),
      (done) => done === 'extended',
      this.nodes,
      (node, result) => {
        if (held) restore(node, result);
      },
    );
    const found = (outcome: ExtendOutcome): number =>
      results.filter((r) => r?.ok && r.value === outcome).length;
    if (found('extended') >= this.majority) {
      held = true;
      results.forEach((result, i) => {
        if (result) restore(this.nodes[i], result);
      });
      return 'extended';
    }
    this.assertAnswered(results, ticket.key);
    return found('missing') >= found('taken') ? 'missing' : 'taken';
  }

  async inspect(key: string): Promise<LockSnapshot> {
    const keys = redisKeys(this.options.prefix, key);
    const results = await this.gather((node) => node.inspect(keys));
    this.assertAnswered(results, key);
    const snapshots = results.flatMap((r) => (r?.ok ? [r.value] : []));
    const counts = new Map<string, number[]>();
    for (const s of snapshots)
      if (s.owner !== null) counts.set(s.owner, [...(counts.get(s.owner) ?? []), s.ownerTtl]);
    const held = [...counts].find(([, ttls]) => ttls.length >= this.majority);
    return {
      owner: held ? held[0] : null,
      // Held until fewer than a majority of its nodes keep it.
      ownerTtl: held ? held[1].sort((a, b) => b - a)[this.majority - 1] : -2,
      // Waiters of every process, as the nodes record them (the most any node counts).
      queueLength: Math.max(0, ...snapshots.map((s) => s.queueLength)),
      reserved: 0,
      fence: Math.max(0, ...snapshots.map((s) => s.fence)),
      serverMs: Math.max(0, ...snapshots.map((s) => s.serverMs ?? 0)),
      nodes: results.map((r, i) => {
        const node = this.nodes[i].name;
        if (!r?.ok) return { node, error: r ? r.reason : 'no answer in time' };
        const { owner, ownerTtl, queueLength, fence } = r.value;
        return { node, owner, ownerTtl, queueLength, fence };
      }),
    };
  }

  list(limit: number, filter?: string): Promise<KeyList> {
    return scanLockKeys(
      this.nodes.map((node) => node.connection),
      this.options.prefix,
      limit,
      filter,
    );
  }

  get wakeReady(): boolean {
    return this.subscribed;
  }

  subscribeWakes(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the lock service is closed'));
    this.subscribing ??= this.subscribe().catch((error: unknown) => {
      this.subscribing = undefined;
      throw error;
    });
    return this.subscribing;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.handoffs.clear();
    const subscribers = this.subscribers;
    this.subscribers = [];
    // Dropped, not quit: a node that does not answer must not hold the shutdown.
    for (const sub of subscribers) sub.drop();
    await this.takeBacks.close();
  }

  /**
   * One wake-up connection per node; ready as soon as a majority listens (a release on any node wakes
   * its waiters), failed once too many nodes could not open and subscribe in time for a majority to.
   * The others go on subscribing in the background.
   */
  private subscribe(): Promise<void> {
    const { nodes, majority } = this;
    const subscribers: Subscriber[] = [];
    this.subscribers = subscribers;
    let abandoned = false;
    return new Promise((resolve, reject) => {
      let ok = 0;
      const failures: NodeFailure[] = [];
      const settle = (node: QuorumNode, error?: unknown): void => {
        if (error === undefined) ok++;
        else failures.push({ node: node.name, reason: reasonOf(error) });
        if (ok === majority) {
          this.subscribed = true;
          resolve();
        } else if (failures.length === nodes.length - majority + 1) {
          // Dropped, so that the next attempt starts from fresh connections rather than adding to these.
          abandoned = true;
          for (const sub of subscribers.splice(0)) sub.drop();
          reject(new LockQuorumError(ok, nodes.length, failures));
        }
      };
      // Each subscription opens a connection of its own: nodeTimeout counts from when it can answer, as
      // it does for every other call, so the opening gets CONNECT_WAIT on top (a loaded machine takes
      // more than 100 ms to connect, check readiness and subscribe).
      const limit = CONNECT_WAIT + this.options.nodeTimeout;
      nodes.forEach((node, index) => {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<never>((_, fail) => {
          timer = setTimeout(
            () => fail(new Error(`no reply to SUBSCRIBE within ${limit} ms of opening its connection`)),
            limit,
          );
        });
        const subscribed = node.connection.subscriber().then((sub) => {
          if (abandoned || this.closed) {
            sub.drop();
            throw new Error('the wake-up subscription was dropped');
          }
          subscribers.push(sub);
          sub.onResubscribed(() => this.handlers.onResubscribed());
          return sub.subscribe(this.channel, (message) => this.handoffs.onMessage(index, message));
        });
        subscribed.catch(() => {}).finally(() => clearTimeout(timer));
        Promise.race([subscribed, late]).then(
          () => settle(node),
          (error: unknown) => settle(node, error),
        );
      });
    });
  }

  /**
   * Releases the caller's hold on every node (or `only` those); resolves with how many nodes it held.
   * `leaving`: it no longer waits either (out of every line; each node it held hands the lock to the
   * next in its line, numbering the next grant from `fence`, the lease's), rather than giving back the
   * votes of a failed attempt.
   */
  private async releaseEverywhere(
    ticket: LockTicket,
    leaving: boolean,
    only: readonly QuorumNode[] = this.nodes,
    fence = 0,
  ): Promise<number> {
    const keys = redisKeys(this.options.prefix, ticket.key);
    const results = await this.gather(
      (node) => this.releaseOn(node, ticket, leaving, fence, keys),
      undefined,
      only,
    );
    if (leaving) {
      // A node that did not answer may still hold the lock or the place for the caller, until its ttl.
      const owed: Owed = { ticket, fence, until: now() + ticket.ttl + ticket.claimWindow };
      for (const node of only) {
        const i = this.nodes.indexOf(node);
        if (!results[i]?.ok) this.takeBacks.add(i, owed);
      }
    }
    const released = results.filter((r) => r?.ok && r.value).length;
    if (released === 0) this.assertAnswered(results, ticket.key);
    return released;
  }

  /** The release (or give-back) of `ticket` on one node; `keys` are its lock's, named once per call. */
  private releaseOn(
    node: QuorumNode,
    ticket: LockTicket,
    leaving: boolean,
    fence: number,
    keys = redisKeys(this.options.prefix, ticket.key),
  ): Promise<boolean> {
    const retention = Math.max(FENCE_RETENTION_MS, ticket.ttl);
    return node.release(keys, ticket.token, this.channelPrefix, leaving, fence, retention);
  }

  /**
   * When to try again if no wake-up comes first. If another caller holds (or was handed) the lock on a
   * majority of the nodes (as far as they answered), once enough of its holds run out for a majority to be free
   * (nodes that voted for this attempt, released now, and unanswered nodes count as free); `first` when
   * this caller is first in line on a node. If no one holds a majority (votes split between callers,
   * each giving its votes back), after a short random delay, so that the next attempts do not collide.
   */
  private retryAfter(
    votes: ReadonlyArray<Result<Vote> | undefined>,
    ttl: number,
  ): { retryIn: number; first: boolean } {
    const jitter = 1 + Math.floor(Math.random() * Math.max(5, Math.min(50, ttl / 20)));
    const refusals = votes.flatMap((r) => (r?.ok && !r.value.voted ? [r.value] : []));
    const holds = new Map<string, number>();
    for (const refusal of refusals) holds.set(refusal.owner, (holds.get(refusal.owner) ?? 0) + 1);
    // Nodes not heard from (the outcome was decided without them) may side with any owner.
    const unheard = votes.filter((r) => r === undefined).length;
    if (Math.max(0, ...holds.values()) + unheard < this.majority) return { retryIn: jitter, first: true };
    const busy = refusals.map((refusal) => Math.max(0, refusal.pttl)).sort((a, b) => a - b);
    const need = this.majority - (votes.length - busy.length);
    return {
      retryIn: (need > 0 ? busy[need - 1] : 0) + jitter,
      first: refusals.some((refusal) => refusal.first),
    };
  }

  /**
   * Throws LockQuorumError when so many nodes failed that a majority cannot have answered. A node not
   * heard from yet (the outcome was decided without it) is not a failure.
   */
  private assertAnswered(results: ReadonlyArray<Result<unknown> | undefined>, key: string): void {
    const failed = results.filter((r) => r !== undefined && !r.ok).length;
    if (failed <= this.nodes.length - this.majority) return;
    const answered = results.filter((r) => r?.ok).length;
    const failures: NodeFailure[] = results.flatMap((r, i) =>
      r?.ok ? [] : [{ node: this.nodes[i].name, reason: r ? r.reason : 'no reply yet' }],
    );
    throw new LockQuorumError(answered, this.nodes.length, failures, key);
  }

  /**
   * Calls every node (or `only` those) at once; resolves once all have answered, or, given `yes`, as soon
   * as the outcome is certain: a majority said yes, or too many said no or failed for a majority to.
   * Results are per node (in `this.nodes` order); a node not heard from by then is undefined, and its
   * result goes to `late` when it comes.
   */
  private gather<T>(
    call: (node: QuorumNode) => Promise<T>,
    yes?: (value: T) => boolean,
    only: readonly QuorumNode[] = this.nodes,
    late?: (node: QuorumNode, result: Result<T>) => void,
  ): Promise<Array<Result<T> | undefined>> {
    return new Promise((resolve) => {
      const results: Array<Result<T> | undefined> = this.nodes.map(() => undefined);
      let left = only.length;
      let ayes = 0;
      let nays = 0;
      let finished = false;
      const settle = (i: number, result: Result<T>): void => {
        results[i] = result;
        left--;
        if (yes && result.ok && yes(result.value)) ayes++;
        else nays++;
        if (finished) {
          late?.(this.nodes[i], result);
          return;
        }
        const decided = yes !== undefined && (ayes >= this.majority || nays > only.length - this.majority);
        if (left === 0 || decided) {
          finished = true;
          resolve([...results]);
        }
      };
      if (only.length === 0) resolve(results);
      for (const node of only) {
        const i = this.nodes.indexOf(node);
        call(node).then(
          (value) => settle(i, { ok: true, value }),
          (error: unknown) => settle(i, { ok: false, reason: reasonOf(error) }),
        );
      }
    });
  }
}

/**
 * The clients of a quorum: 3, 5 or 7 (an odd number, so that two majorities always share a node, and
 * at least 3, so that one node may fail), each a plain client (not a Cluster), no two the same
 * client or the same server. Throws LockUsageError saying what to change.
 */
export function checkQuorum(clients: readonly unknown[]): RedisClient[] {
  const count = clients.length;
  if (count < 3 || count > 7 || count % 2 === 0) {
    throw new LockUsageError(
      `A quorum (Redlock) needs 3, 5 or 7 clients of independent Redis masters, got ${count}. ` +
        (count < 3
          ? 'For one server pass its client alone.'
          : 'An even count adds no safety over the odd count below it: use 3, 5 or 7.'),
    );
  }
  const servers = new Map<string, number>();
  clients.forEach((client, i) => {
    if (!isRedisClient(client)) {
      throw new LockUsageError(
        `Quorum client [${i}] is not a Redis client (ioredis new Redis(...), or node-redis createClient()).`,
      );
    }
    if (connectionOf(client).cluster) {
      throw new LockUsageError(
        `Quorum client [${i}] is a Cluster client: a quorum needs independent masters, one plain ` +
          'client each (a Cluster replicates within itself and is one failure domain).',
      );
    }
    const before = clients.indexOf(client);
    if (before !== i) throw new LockUsageError(`Quorum clients [${before}] and [${i}] are the same client.`);
    const options = (client as { options?: { db?: number; database?: number } }).options;
    const server = `${connectionOf(client).name}/${options?.db ?? options?.database ?? 0}`;
    const same = servers.get(server);
    if (same !== undefined) {
      throw new LockUsageError(
        `Quorum clients [${same}] and [${i}] both reach ${server}: each must be a different, independent master.`,
      );
    }
    servers.set(server, i);
  });
  return clients as RedisClient[];
}
