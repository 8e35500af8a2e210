/**
 * The quorum store: a lock held on a majority of N independent Redis masters (Redlock, as the documents
 * this project grew from describe it), behind the same store interface as the single server.
 *
 * A grant takes two rounds, each sent to every node at once and decided as soon as the outcome is
 * certain (no waiting for a stopped node once a majority has answered):
 *   1. vote: each node takes the lock for the caller if it is free there, and names a fence floor;
 *   2. commit: the fence, the highest floor of the voters, is recorded on the voters that still hold.
 * The caller holds the lock when a majority committed and the validity left (ttl - elapsed - drift,
 * drift = 1 % of ttl + 2 ms, see validityDrift) is positive; otherwise its votes are released at once
 * and it waits. Fences strictly increase across grants as long as a majority of nodes keep their state
 * (quorum-commit.lua says why).
 *
 * Waiting: nodes keep no queue. A release publishes the key on every node; each process wakes its own
 * oldest waiter for that key (FIFO within a process), which tries again; others re-check when the hold
 * would run out (with a little jitter, so split votes do not repeat in step). Across processes the
 * first attempt to reach a majority wins: there is no FIFO between processes (docs/guarantees.md).
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { LockOptionsError } from '../errors/lock-options.error';
import { LockQuorumError, type NodeFailure } from '../errors/lock-quorum.error';
import { lockKeys, wakeChannelPrefix } from '../protocol/keys';
import type { RedisClient } from '../protocol/lock-scripts';
import { nodeName, QuorumNode } from '../protocol/quorum-node';
import type {
  AcquireMode,
  AcquireReply,
  LockSnapshot,
  LockStore,
  LockTicket,
  TicketMember,
  WakeHandlers,
} from './lock-store';
import { isIoredisClient } from './redis-store';
import { lockToken, memberToken } from './token';

export interface QuorumStoreOptions {
  prefix: string;
  fenceRetention: number;
  /** Longest wait for one node's reply, ms: well below the ttl. */
  nodeTimeout: number;
}

type Result<T> = { ok: true; value: T } | { ok: false; reason: string };

const now = (): number => performance.now();

const reasonOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

export class QuorumLockStore implements LockStore {
  readonly nodes: readonly QuorumNode[];
  readonly majority: number;
  private readonly instanceId = randomBytes(9).toString('base64url');
  private readonly channel: string;
  private sequence = 0;
  /** This process' waiters per key, oldest first: only the oldest is woken by a release. */
  private readonly waiting = new Map<string, LockTicket[]>();
  private subscribers: Redis[] = [];
  private subscribing: Promise<void> | undefined;
  private subscribed = false;
  private closed = false;

  constructor(
    clients: readonly RedisClient[],
    private readonly options: QuorumStoreOptions,
    private readonly handlers: WakeHandlers,
  ) {
    this.nodes = clients.map((client) => new QuorumNode(client, options.nodeTimeout));
    this.majority = Math.floor(clients.length / 2) + 1;
    this.channel = `${wakeChannelPrefix(options.prefix)}quorum`;
  }

  ticket(key: string, ttl: number, claimWindow: number, member?: TicketMember): LockTicket {
    return {
      key,
      token: member
        ? memberToken(member.of, member.index)
        : lockToken(this.instanceId, ++this.sequence, claimWindow),
      ttl,
      claimWindow,
    };
  }

  /** Clock drift allowed between the nodes and this process while a lease is held: 1 % of ttl + 2 ms. */
  validityDrift(ttl: number): number {
    return Math.floor(ttl / 100) + 2;
  }

  async acquire(ticket: LockTicket, mode: AcquireMode, queueTtl: number): Promise<AcquireReply> {
    const { key, token, ttl } = ticket;
    const keys = lockKeys(this.options.prefix, key);
    const started = now();
    const waitFor = mode === 'try' ? 0 : Math.max(1, queueTtl);
    const votes = await this.gather(
      (node) => node.vote(keys, token, ttl, waitFor),
      (vote) => vote.voted,
    );
    try {
      this.assertAnswered(votes, key);
    } catch (error) {
      // Too few nodes answered: the votes that did come in are given back before the call fails.
      this.releaseEverywhere(ticket, true).catch(() => {});
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
      const retention = Math.max(this.options.fenceRetention, ttl);
      const commits = await this.gather(
        (node) => node.commit(keys, token, fence, retention),
        (done) => done,
        voters,
      );
      const committed = commits.filter((r) => r?.ok && r.value).length;
      if (committed >= this.majority && ttl - (now() - started) - this.validityDrift(ttl) > 0) {
        // Off the line without waking the next waiter: the lock is held now, its release will.
        this.leave(ticket, false);
        return { granted: true, fence, serverMs: now() };
      }
    }
    // Not granted: give back every vote at once (sent after the votes on each connection, so in order).
    this.releaseEverywhere(ticket, mode === 'try').catch(() => {});
    if (mode !== 'try') this.join(ticket);
    const line = this.waiting.get(key);
    return {
      granted: false,
      ownerTtl: this.retryAfter(votes, ttl),
      serverMs: now(),
      isHead: line?.[0] === ticket,
    };
  }

  async release(ticket: LockTicket): Promise<boolean> {
    this.leave(ticket);
    return (await this.releaseEverywhere(ticket, true)) >= this.majority;
  }

  async releaseLater(ticket: LockTicket, holdMs: number): Promise<boolean> {
    return this.extend(ticket, holdMs);
  }

  async cancel(ticket: LockTicket): Promise<boolean> {
    this.leave(ticket);
    return (await this.releaseEverywhere(ticket, true)) > 0;
  }

  async extend(ticket: LockTicket, ttl: number): Promise<boolean> {
    const keys = lockKeys(this.options.prefix, ticket.key);
    const results = await this.gather(
      (node) => node.extend(keys, ticket.token, ttl),
      (done) => done,
    );
    if (results.filter((r) => r?.ok && r.value).length >= this.majority) return true;
    this.assertAnswered(results, ticket.key);
    return false;
  }

  async inspect(key: string): Promise<LockSnapshot> {
    const keys = lockKeys(this.options.prefix, key);
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
    };
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
    this.waiting.clear();
    const subscribers = this.subscribers;
    this.subscribers = [];
    // Dropped, not quit: a node that does not answer must not hold the shutdown.
    for (const sub of subscribers) sub.disconnect();
  }

  /**
   * One wake-up connection per node; ready as soon as a majority listens (a release on any node wakes
   * its waiters), failed once too many nodes could not subscribe within the node timeout for a majority
   * to. The others go on subscribing in the background.
   */
  private subscribe(): Promise<void> {
    const { nodes, majority } = this;
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
          for (const sub of this.subscribers.splice(0)) sub.disconnect();
          reject(new LockQuorumError(ok, nodes.length, failures));
        }
      };
      for (const node of nodes) {
        const sub = (node.client as Redis).duplicate();
        sub.on('error', () => {});
        this.subscribers.push(sub);
        let first = true;
        sub.on('ready', () => {
          if (!first) this.handlers.onResubscribed();
          first = false;
        });
        sub.on('message', (_channel: string, key: string) => this.wake(key));
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<never>((_, fail) => {
          timer = setTimeout(
            () => fail(new Error(`no reply to SUBSCRIBE within ${this.options.nodeTimeout} ms`)),
            this.options.nodeTimeout,
          );
        });
        const subscribed = sub.subscribe(this.channel);
        subscribed.catch(() => {}).finally(() => clearTimeout(timer));
        Promise.race([subscribed, late]).then(
          () => settle(node),
          (error: unknown) => settle(node, error),
        );
      }
    });
  }

  private wake(key: string): void {
    const head = this.waiting.get(key)?.[0];
    if (head) this.handlers.onWake({ kind: 'head', token: head.token, holdMs: 0 });
  }

  private join(ticket: LockTicket): void {
    const line = this.waiting.get(ticket.key) ?? [];
    if (!line.includes(ticket)) line.push(ticket);
    this.waiting.set(ticket.key, line);
  }

  /** Takes `ticket` off this process' line; `wakeNext`: the next waiter, now first, tries at once. */
  private leave(ticket: LockTicket, wakeNext = true): void {
    const line = this.waiting.get(ticket.key);
    if (!line) return;
    const at = line.indexOf(ticket);
    if (at < 0) return;
    line.splice(at, 1);
    if (line.length === 0) this.waiting.delete(ticket.key);
    else if (at === 0 && wakeNext) this.handlers.onWake({ kind: 'head', token: line[0].token, holdMs: 0 });
  }

  /**
   * Releases the caller's hold on every node; resolves with how many nodes it held. `leaving`: it no
   * longer waits either (off the waiters), rather than giving back the votes of a failed attempt.
   */
  private async releaseEverywhere(ticket: LockTicket, leaving: boolean): Promise<number> {
    const keys = lockKeys(this.options.prefix, ticket.key);
    const results = await this.gather((node) =>
      node.release(keys, ticket.token, this.channel, ticket.key, leaving),
    );
    const released = results.filter((r) => r?.ok && r.value).length;
    if (released === 0) this.assertAnswered(results, ticket.key);
    return released;
  }

  /**
   * When to try again: once enough refusing nodes' holds run out for a majority to be free (votes of
   * this attempt, released now, and unanswered nodes count as free), plus jitter so that two processes
   * whose votes split do not collide again.
   */
  private retryAfter(
    votes: ReadonlyArray<Result<{ voted: boolean; pttl?: number }> | undefined>,
    ttl: number,
  ): number {
    const busy = votes
      .flatMap((r) => (r?.ok && !r.value.voted ? [Math.max(0, r.value.pttl ?? 0)] : []))
      .sort((a, b) => a - b);
    const need = this.majority - (votes.length - busy.length);
    const jitter = 1 + Math.floor(Math.random() * Math.max(5, Math.min(50, ttl / 20)));
    return (need > 0 ? busy[need - 1] : 0) + jitter;
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
   * Results are per node (in `this.nodes` order); a node not heard from by then is undefined.
   */
  private gather<T>(
    call: (node: QuorumNode) => Promise<T>,
    yes?: (value: T) => boolean,
    only: readonly QuorumNode[] = this.nodes,
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
        if (finished) return;
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
 * at least 3, so that one node may fail), each a plain ioredis client (not a Cluster), no two the same
 * client or the same server. Throws LockOptionsError saying what to change.
 */
export function checkQuorum(clients: readonly unknown[]): RedisClient[] {
  const count = clients.length;
  if (count < 3 || count > 7 || count % 2 === 0) {
    throw new LockOptionsError(
      `A quorum (Redlock) needs 3, 5 or 7 clients of independent Redis masters, got ${count}. ` +
        (count < 3
          ? 'For one server pass its client alone.'
          : 'An even count adds no safety over the odd count below it: use 3, 5 or 7.'),
    );
  }
  const servers = new Map<string, number>();
  clients.forEach((client, i) => {
    if (!isIoredisClient(client)) {
      throw new LockOptionsError(`Quorum client [${i}] is not an ioredis client (new Redis(...)).`);
    }
    if ((client as { isCluster?: boolean }).isCluster === true) {
      throw new LockOptionsError(
        `Quorum client [${i}] is a Cluster client: a quorum needs independent masters, one plain ` +
          'client each (a Cluster replicates within itself and is one failure domain).',
      );
    }
    const before = clients.indexOf(client);
    if (before !== i)
      throw new LockOptionsError(`Quorum clients [${before}] and [${i}] are the same client.`);
    const server = `${nodeName(client)}/${(client as { options?: { db?: number } }).options?.db ?? 0}`;
    const same = servers.get(server);
    if (same !== undefined) {
      throw new LockOptionsError(
        `Quorum clients [${same}] and [${i}] both reach ${server}: each must be a different, independent master.`,
      );
    }
    servers.set(server, i);
  });
  return clients as RedisClient[];
}
