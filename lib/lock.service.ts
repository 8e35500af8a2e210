/**
 * LockService: the public face of the lock engine, usable with or without Nest
 * (`new LockService(redis, options)`; the Nest module injects the same class). It validates input,
 * keeps reentrancy per async call chain, and wires together waiters, leases and the store the locks
 * live in (lib/store/lock-store.ts). Everything Redis-specific is behind the Redis store.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { RedisClient } from './clients';
import { now, settledWithin, validFor } from './engine/clock';
import {
  alive,
  type GrantLinks,
  HeldLease,
  type LeaseHost,
  type LeaseTerms,
  type OwnedLease,
} from './engine/held-lease';
import { checkOrder, type KeyTaker, takeInOrder } from './engine/key-sequence';
import { lockInfo } from './engine/lock-info';
import { MultiLease } from './engine/multi-lease';
import { ReentrantLease } from './engine/reentrant-lease';
import { handOnLocally, queueLifetime, Waiter, type WaiterHost } from './engine/waiter';
import { LockAbortedError } from './errors/lock-aborted.error';
import { LockOptionsError } from './errors/lock-options.error';
import { LockServiceClosedError } from './errors/lock-service-closed.error';
import { LockTimeoutError } from './errors/lock-timeout.error';
import { RedisUnavailableError } from './errors/redis-unavailable.error';
import type { Lease, LockInfo } from './lease';
import { forceRelease, type ListLocksOptions, type LockList, listLocks, withWaits } from './lock-admin';
import { checkKindCall, checkReentry } from './lock-kind';
import {
  type AcquireOptions,
  claimWindowFor,
  type LockServiceOptions,
  type ResolvedAcquireOptions,
  type ResolvedServiceOptions,
  resolveAcquireOptions,
  resolveCheckTimeout,
  resolveGracePeriod,
  resolveServiceOptions,
  type TryAcquireOptions,
  validateKey,
  validateKeys,
} from './lock-options';
import {
  type AcquireReply,
  type LockBackend,
  type LockStore,
  type LockTicket,
  type TicketMember,
  type WakeHandlers,
  type WakeMessage,
} from './store/lock-store';
import { MemoryLockBackend } from './store/memory-store';
import { openStore, storeSource } from './store/open-store';
import { type ServerReport, ServerWatch } from './store/server-watch';
import { claimWindowOf } from './store/token';
import { type CallRecord, LockTelemetry, SKIPS_ON_TIMEOUT } from './telemetry/lock-telemetry';

interface LeaseScope {
  readonly byKey: ReadonlyMap<string, HeldLease>;
  readonly innermost: OwnedLease;
  /** Some lease of the chain holds several keys: new keys must then come in canonical order. */
  readonly multi: boolean;
}

/** One key, or several to hold together (all or nothing). */
export type LockKeys = string | readonly string[];

export class LockService {
  private readonly options: ResolvedServiceOptions;
  private readonly store: LockStore;
  private readonly waiters = new Map<string, Waiter<HeldLease>>();
  private readonly leases = new Set<HeldLease>();
  private readonly orphans = new Map<string, LockTicket>();
  /** Leases held by the current async call chain, by lock key: the basis of reentrancy. */
  private readonly scope = new AsyncLocalStorage<LeaseScope>();
  /** Calls of `using` whose function is still running: close() lets them finish first. */
  private readonly running = new Set<Promise<unknown>>();
  private readonly waitingSince = (token: string) => this.waiters.get(token)?.started;
  private closed = false;
  private closing: Promise<void> | undefined;

  private readonly leaseHost: LeaseHost;
  private readonly waiterHost: WaiterHost<HeldLease>;
  private readonly keyTaker: KeyTaker;

  /** The client, when the locks live in one Redis (single server or Cluster). */
  private readonly redis: RedisClient | undefined;
  /** The clients of a quorum's independent masters (Redlock), when the locks live there. */
  private readonly quorum: readonly RedisClient[] | undefined;
  /** Eviction, persistence and replication checks of the servers the locks live on. */
  private readonly watch: ServerWatch;
  /** Metrics, spans and events of its calls (nothing at all while nobody listens). */
  private readonly telemetry: LockTelemetry;

  /**
   * @param client an ioredis `Redis` or `Cluster`, or a node-redis client or Cluster, connected (used for
   *   commands and duplicated once for the wake channel; never closed by the service); or an array of 3,
   *   5 or 7 such clients of independent masters (a quorum, Redlock: a lock is held on a majority of
   *   them); or a backend several services share, such as `new MemoryLockBackend()` for one process.
   */
  constructor(client: RedisClient | readonly RedisClient[] | LockBackend, options?: LockServiceOptions) {
    const source = storeSource(client);
    this.options = resolveServiceOptions(options);
    this.telemetry = new LockTelemetry(this.options.telemetry);
    const handlers: WakeHandlers = {
      onWake: (message) => this.onWake(message),
      onResubscribed: () => {
        for (const waiter of this.waiters.values()) waiter.onReconnect();
      },
      // The store is gone for good: none of a waiter's grants could be confirmed, so fail them now.
      onEnded: () => {
        for (const waiter of [...this.waiters.values()]) waiter.onConnectionEnded();
      },
    };
    this.store = openStore(source, this.options, handlers);
    this.redis = source.kind === 'redis' ? source.redis : undefined;
    const quorum = source.kind === 'quorum' ? source.quorum : undefined;
    this.quorum = quorum;
    const { commandTimeout, replicas } = this.options;
    this.watch = new ServerWatch(
      quorum ?? (this.redis ? [this.redis] : []),
      quorum !== undefined,
      commandTimeout,
      this.options.onWarning,
      replicas?.count,
    );
    const { store, leases, waiters } = this;
    this.leaseHost = {
      store,
      forget: (lease) => leases.delete(lease),
      validateTtl: (ttl) => resolveAcquireOptions(this.options, { ttl }, false).ttl,
      // The local hand-off (a store without transfer, or with replicas, never names followers).
      handOff: (handedOn, followers, validUntil) =>
        !this.closed && handOnLocally(waiters, handedOn, followers, validUntil),
      follow: (next, holdMs) => waiters.get(next.token)?.onHead(holdMs),
      recheck: (key) => {
        for (const waiter of waiters.values()) if (waiter.key === key) waiter.onReconnect();
      },
    };
    this.keyTaker = {
      store,
      isClosed: () => this.closed,
      take: (ticket, options, busyIsTimeout, claim, onQueued) =>
        this.take(ticket, options, busyIsTimeout, claim, onQueued),
    };
    this.waiterHost = {
      store,
      // With replicas, a pushed grant is confirmed, and acknowledged, before the waiter starts on it.
      startsOnPush: !replicas,
      waitsOnUnreplicated: replicas?.onTimeout === 'wait',
      register: (waiter) => waiters.set(waiter.token, waiter),
      unregister: (waiter) => waiters.delete(waiter.token),
      orphan: (ticket, lifetime) => this.adopt(ticket, lifetime),
      granted: (waiter, grant) =>
        this.lease(waiter.ticket, grant.fence, grant.validUntil, waiter.terms, grant.confirmed, grant),
    };
  }

  /**
   * A service whose locks live in this process (a MemoryLockBackend of its own): for unit tests of code
   * that uses LockService, with no Redis. To share locks between several services, give them one
   * `new MemoryLockBackend()` instead.
   */
  static inMemory(options?: LockServiceOptions): LockService {
    return new LockService(new MemoryLockBackend(), options);
  }

  /**
   * The client commands are sent on (ioredis or node-redis, as given; for health checks); the service never closes it. A
   * service on another backend (in memory) has none: reading it throws LockOptionsError.
   */
  get client(): RedisClient {
    if (!this.redis) {
      throw new LockOptionsError('This LockService keeps its locks in memory: it has no Redis client.');
    }
    return this.redis;
  }

  /** The client, or undefined when the locks are not in one Redis (for the health indicator). */
  get redisClient(): RedisClient | undefined {
    return this.redis;
  }

  /** The quorum's clients (Redlock over independent masters), or undefined for any other store. */
  get quorumClients(): readonly RedisClient[] | undefined {
    return this.quorum;
  }

  /**
   * What the servers the locks live on say about eviction, persistence and replication (INFO only),
   * one report per server (each master of a Cluster, each node of a quorum; none for locks in memory),
   * with the risks found (docs/guarantees.md, "Eviction, persistence and replicas"). Risks not reported
   * before also go to `onWarning`. Rejects only for a bad `timeout`: a server that refuses INFO gets an
   * `unknown` risk; one that does not answer within `timeout` ms (default `commandTimeout`), or is
   * disconnected, gets an `error` or `unreachable` and no facts.
   */
  async checkServers(options?: { timeout?: number }): Promise<ServerReport[]> {
    return this.watch.check(resolveCheckTimeout(options));
  }

  /**
   * Takes the lock, waiting in line up to `waitTimeout` ms (FIFO). Rejects with LockTimeoutError,
   * LockAbortedError, RedisUnavailableError, LockKeyError or LockOptionsError. Given several keys, takes
   * them all (one lease) or none, key by key in canonical order, each in its own FIFO line, all within
   * `waitTimeout`; LockOrderError when the call chain holds a key that sorts after one of them.
   */
  acquire(key: LockKeys, options?: AcquireOptions): Promise<Lease> {
    let resolved: ResolvedAcquireOptions;
    try {
      resolved = resolveAcquireOptions(this.options, options, false);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.obtainKeys(key, resolved, true) as Promise<Lease>;
  }

  /**
   * Takes the lock (every key of it) if it is free and nobody is queued; resolves null otherwise, holding
   * nothing. Never waits.
   */
  async tryAcquire(key: LockKeys, options?: TryAcquireOptions): Promise<Lease | null> {
    const resolved = resolveAcquireOptions(this.options, options, false, true);
    return this.obtainKeys(key, { ...resolved, waitTimeout: 0 }, false);
  }

  /**
   * Runs `fn` while holding the lock (renewed every ttl/3 unless `renew: false`), then releases it.
   * Nested `using`/`acquire` of the same key inside `fn` reuse this lease. If the lease is lost while
   * `fn` runs, `lease.signal` aborts and the call rejects with LockLostError once `fn` settles.
   */
  async using<T>(key: LockKeys, fn: (lease: Lease) => T | Promise<T>, options?: AcquireOptions): Promise<T> {
    if (typeof fn !== 'function')
      throw new LockOptionsError('using() needs a function to run under the lock.');
    const resolved = resolveAcquireOptions(this.options, options, true);
    // The @Locked interceptor's mark: its timeouts are skips (onTimeout: 'skip'), as telemetry reports them.
    const skips = (options as { [SKIPS_ON_TIMEOUT]?: boolean } | undefined)?.[SKIPS_ON_TIMEOUT] === true;
    const lease = (await this.obtainKeys(key, resolved, true, skips)) as Lease;
    if (lease instanceof ReentrantLease) return fn(lease);
    const held = lease as OwnedLease;
    const outer = this.scope.getStore();
    const byKey = new Map(outer?.byKey);
    for (const part of held.parts) byKey.set(part.key, part);
    const multi = outer?.multi === true || held.parts.length > 1;
    let result: T;
    const record = resolved.observer as CallRecord | undefined;
    const run = this.scope.run({ byKey, innermost: held, multi }, async () =>
      record ? record.runHeld(held, () => fn(held)) : fn(held),
    );
    this.running.add(run);
    try {
      result = await run;
    } catch (error) {
      await held.release().catch(() => {});
      throw error;
    } finally {
      this.running.delete(run);
      // While enabled, an AsyncLocalStorage makes Node 20 run a hook for every promise the process
      // creates, locked or not (tens of µs per HTTP request). With no `using` running there is no
      // scope to carry: turn it off until the next `using` turns it back on (run() does that).
      if (this.running.size === 0) this.scope.disable();
    }
    const lost = held.lossReason;
    if (lost) {
      await held.release().catch(() => {});
      throw lost;
    }
    await held.release();
    return result;
  }

  /**
   * The lease the current async call chain holds through `using` (or `@Locked`): for `key` if given,
   * else the innermost one. Undefined outside any. Releasing it is a no-op: its `using` releases it.
   */
  currentLease(key?: string): Lease | undefined {
    // The key is checked even outside any scope, so a bad key fails the same way wherever it is asked.
    if (key !== undefined) validateKey(key);
    const scope = this.scope.getStore();
    if (!scope) return undefined;
    const held = key === undefined ? scope.innermost : scope.byKey.get(key);
    return held?.isHeld ? new ReentrantLease(held) : undefined;
  }

  /**
   * Checks call options against this service (types, ranges) without sending anything; throws
   * LockOptionsError. The Nest module runs it for every @Locked at start-up.
   */
  checkOptions(options: AcquireOptions | undefined): void {
    const { permits, mode } = resolveAcquireOptions(this.options, options, true);
    checkKindCall(permits, mode, 1, this.store.semaphores !== false);
  }

  /**
   * Reads the lock's state in one step: its holders (a semaphore's every one) with their ttl and fence,
   * the permits, the waiters in line order, the last fence.
   */
  async inspect(key: string): Promise<LockInfo> {
    validateKey(key);
    this.assertOpen(key);
    return withWaits(lockInfo(key, await this.store.inspect(key)), this.waitingSince);
  }

  /** The live locks (held or waited for) as `inspect` reports them, by key: a bounded SCAN, for dashboards. */
  list(options?: ListLocksOptions): Promise<LockList> {
    if (this.closed) return Promise.reject(new LockServiceClosedError());
    return listLocks(this.store, options, this.waitingSince);
  }

  /** An operator ends `token`'s hold on `key` as its release would (lib/lock-admin.ts); false if not held. */
  async forceRelease(key: string, token: string): Promise<boolean> {
    validateKey(key);
    this.assertOpen(key);
    return forceRelease(this.store, key, token);
  }

  /** This service's id: what its tokens start with (before the first `:`), in `inspect` and `list`. */
  get instance(): string {
    return this.store.instance ?? '';
  }

  /**
   * Stops the service: new calls and waiters reject with LockServiceClosedError (waiters leave their
   * queues), running `using` functions get up to `gracePeriod` ms (default 0) to finish, then every
   * lease still held is lost (its signal aborts with LockLostError) and released, renewals stop and
   * the wake connection closes. The client passed in
   * stays open. Calling it again waits for the same shutdown.
   */
  close(options?: { gracePeriod?: number }): Promise<void> {
    let grace: number;
    try {
      grace = resolveGracePeriod(options);
    } catch (error) {
      // A promise-returning method never throws synchronously, even for hostile options.
      return Promise.reject(error);
    }
    this.closing ??= this.shutdown(grace);
    return this.closing;
  }

  private async shutdown(grace: number): Promise<void> {
    this.closed = true;
    this.watch.close();
    const cancels = [...this.waiters.values()].map((waiter) => waiter.close());
    if (grace > 0 && this.running.size > 0) await settledWithin([...this.running], grace);
    // Calls still running past the grace period lose their lease first, so their signal aborts and
    // their `using` rejects with LockLostError instead of finishing as if it still held the lock.
    const held = [...this.leases];
    for (const lease of held) {
      lease.lose(
        'service-closed',
        'the lock service was closed before the call finished (its grace period ran out)',
      );
    }
    const releases = held.map((lease) => lease.release().catch(() => {}));
    // Cancels and releases need no wake-ups, so the store's wake-up stream closes alongside.
    await Promise.all([...cancels, ...releases, this.store.close()]);
  }

  /**
   * One key or several: validated, then reentry, order, and the keys not held yet taken; reported to
   * telemetry (when anything listens) from the call to its outcome, and through the lease's observer on.
   */
  private obtainKeys(
    input: unknown,
    options: ResolvedAcquireOptions,
    busyIsTimeout: boolean,
    skips = false,
  ): Promise<Lease | null> {
    let keys: string[];
    try {
      keys = validateKeys(input);
      checkKindCall(options.permits, options.mode, keys.length, this.store.semaphores !== false);
    } catch (error) {
      return Promise.reject(error);
    }
    const record = this.telemetry.begin(options.name, keys, skips);
    if (record) options.observer = record;
    const obtained = (
      Array.isArray(input)
        ? this.obtainAll(keys, options, busyIsTimeout)
        : this.obtain(keys[0], options, busyIsTimeout)
    ).then(alive);
    return record ? record.report(obtained) : obtained;
  }

  /**
   * Resolves with a lease; for a try-once call that found the lock taken, with null, or (when
   * `busyIsTimeout`) rejects with LockTimeoutError. Not async: a waiting call holds no suspended frames,
   * only its Waiter, so a thousand waiters stay small.
   */
  private obtain(
    key: string,
    options: ResolvedAcquireOptions,
    busyIsTimeout: boolean,
  ): Promise<Lease | null> {
    try {
      // Reentry is checked before closing: a call running out its grace period may nest another
      // call on the lock it already holds.
      const scope = this.scope.getStore();
      const outer = scope?.byKey.get(key);
      if (outer?.isHeld) {
        // A nested call reuses the lease held, if it asks for the same kind of lock (no upgrade).
        checkReentry(key, outer, options);
        return Promise.resolve(new ReentrantLease(outer));
      }
      if (scope?.multi) checkOrder([key], scope.byKey);
      return this.take(this.ticket(key, options), options, busyIsTimeout);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Several keys, all or none: the keys the call chain already holds are reused, the others taken in
   * canonical order under one token (takeInOrder), and the whole is one lease.
   */
  private async obtainAll(
    keys: readonly string[],
    options: ResolvedAcquireOptions,
    busyIsTimeout: boolean,
  ): Promise<Lease | null> {
    const scope = this.scope.getStore();
    const byKey = new Map<string, HeldLease>();
    for (const key of keys) {
      const outer = scope?.byKey.get(key);
      if (outer?.isHeld) byKey.set(key, outer);
    }
    const fresh = keys.filter((key) => !byKey.has(key));
    const together = (owned: HeldLease[]): OwnedLease =>
      keys.length === 1
        ? (byKey.get(keys[0]) as HeldLease)
        : new MultiLease(
            keys.map((key) => byKey.get(key) as HeldLease),
            owned,
          );
    if (fresh.length === 0) return new ReentrantLease(together([]));
    if (scope) checkOrder(fresh, scope.byKey);
    const owned = await takeInOrder(this.keyTaker, this.tickets(fresh, options), options, busyIsTimeout);
    if (owned === null) return null;
    for (const lease of owned) byKey.set(lease.key, lease);
    return together(owned);
  }

  /** One ticket per key of a multi-key call: the first key's token, and the later keys' derived from it. */
  private tickets(keys: readonly string[], options: ResolvedAcquireOptions): LockTicket[] {
    const first = this.ticket(keys[0], options);
    const later = keys.slice(1).map((key, i) => this.ticket(key, options, { of: first.token, index: i + 1 }));
    return [first, ...later];
  }

  /**
   * Takes one key the call chain does not hold, with `ticket` (its own, or one of a multi-key call's);
   * `claim`: the ticket holds a reservation on the key, to be served from.
   */
  private take(
    ticket: LockTicket,
    options: ResolvedAcquireOptions,
    busyIsTimeout: boolean,
    claim = false,
    onQueued?: () => void,
  ): Promise<HeldLease | null> {
    const { key } = ticket;
    this.assertOpen(key);
    if (options.signal?.aborted) throw new LockAbortedError(key, options.signal.reason);
    const started = now();
    if (claim) return this.claim(ticket, started, options, onQueued);
    const { wakeReady, joinsUnheard } = this.store;
    if (options.waitTimeout === 0 || !(wakeReady || joinsUnheard)) {
      return this.tryFirst(ticket, started, options, busyIsTimeout, onQueued);
    }
    // Joins at once, subscribed or not, so the line keeps the order calls came in (docs/protocol.md,
    // "The first wait"); one that finds itself in line opens the subscription if nobody has yet.
    return this.wait(ticket, started, options, 'join', onQueued, !wakeReady);
  }

  /** A ticket for one key: it carries this call's claim window (how long a grant to it stays reserved). */
  private ticket(key: string, options: ResolvedAcquireOptions, member?: TicketMember): LockTicket {
    const claimWindow = claimWindowFor(options.ttl, this.options.claimWindow);
    const { permits, mode } = options;
    return this.store.ticket(key, options.ttl, claimWindow, member, { permits, mode });
  }

  /** One attempt without queueing; then, for a waiting call, subscribe to pushes and queue. */
  private async tryFirst(
    ticket: LockTicket,
    started: number,
    options: ResolvedAcquireOptions,
    busyIsTimeout: boolean,
    onQueued?: () => void,
  ): Promise<HeldLease | null> {
    const { key } = ticket;
    // A try never queues; a waiting call's wait is passed on all the same (a quorum store bounds its
    // wait for connections still opening by it). Replicas, whose refused grant puts a waiting call in
    // line, are only on a store whose waiters join at once (take).
    const waitFor = options.waitTimeout === 0 ? 0 : queueLifetime(options.waitTimeout, ticket.claimWindow);
    const reply: AcquireReply = await this.store.acquire(ticket, 'try', waitFor);
    if (reply.granted) {
      const from = reply.from ?? started;
      return this.lease(ticket, reply.fence, from + validFor(this.store, options.ttl), options, true);
    }
    if (options.waitTimeout === 0) {
      if (busyIsTimeout) throw new LockTimeoutError(key, 0);
      return null;
    }
    // A store whose waiters cannot join unheard: pushes must flow before this one queues.
    await this.subscribe(key);
    return this.wait(ticket, started, options, 'join', onQueued);
  }

  /** A later key of a multi-key call, served from its reservation (never a plain try: it is in line). */
  private async claim(
    ticket: LockTicket,
    started: number,
    options: ResolvedAcquireOptions,
    onQueued?: () => void,
  ): Promise<HeldLease> {
    if (!this.store.wakeReady) await this.subscribe(ticket.key);
    return this.wait(ticket, started, options, 'wait', onQueued);
  }

  private async subscribe(key: string): Promise<void> {
    await this.store.subscribeWakes().catch((error: unknown) => {
      if (this.closed) throw new LockServiceClosedError(key);
      throw new RedisUnavailableError('could not subscribe to the wake channel', key, error);
    });
    this.assertOpen(key);
  }

  /** `listen`: the waiter joins before wake-ups flow, and subscribes once its reply says it is in line. */
  private wait(
    ticket: LockTicket,
    started: number,
    options: ResolvedAcquireOptions,
    first: 'join' | 'wait',
    onQueued?: () => void,
    listen = false,
  ): Promise<HeldLease> {
    const { waitTimeout, signal } = options;
    const waiter = new Waiter(this.waiterHost, ticket, started, waitTimeout, signal, options);
    const queued = () => {
      (options.observer as CallRecord | undefined)?.queued(ticket.token);
      // The subscription the waiter needs (the store retries it; the waiter's re-checks serve it meanwhile).
      if (listen) this.subscribe(ticket.key).catch((error: unknown) => waiter.onUnheard(error));
      onQueued?.();
    };
    return waiter.run(first, queued);
  }

  private lease(
    ticket: LockTicket,
    fence: number,
    validUntil: number,
    terms: LeaseTerms,
    confirmed: boolean,
    links?: GrantLinks,
  ): HeldLease {
    const lease = new HeldLease(this.leaseHost, ticket, fence, validUntil, terms, confirmed, links);
    this.leases.add(lease);
    if (this.closed) {
      // close() ran while this grant was in flight: do not leave it held.
      lease.release().catch(() => {});
      throw new LockServiceClosedError(ticket.key);
    }
    return lease;
  }

  private onWake(message: WakeMessage): void {
    // The waiter after the one granted is of this service, and was told nothing: relay the hold to it.
    if (message.kind === 'grant' && message.next) {
      this.waiters.get(message.next[0].token)?.onHead(claimWindowOf(message.token));
    }
    const waiter = this.waiters.get(message.token);
    if (waiter) {
      if (message.kind === 'grant') waiter.onGrant(message.fence, message.serverMs, message.next);
      else waiter.onHead(message.holdMs);
      return;
    }
    const orphan = this.orphans.get(message.token);
    if (orphan && message.kind === 'grant') {
      // Granted to a waiter that gave up while Redis was unreachable: pass the grant on now.
      this.orphans.delete(message.token);
      this.store.release(orphan).catch(() => {});
    }
  }

  /** A waiter gave up but could not leave its queue; remember it until its queue entry expires. */
  private adopt(ticket: LockTicket, lifetime: number): void {
    this.orphans.set(ticket.token, ticket);
    setTimeout(() => this.orphans.delete(ticket.token), lifetime).unref();
  }

  private assertOpen(key: string): void {
    if (this.closed) throw new LockServiceClosedError(key);
  }
}
