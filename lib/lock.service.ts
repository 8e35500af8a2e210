/**
 * LockService: the public face of the lock engine, usable with or without Nest
 * (`new LockService(redis, options)`; the Nest module injects the same class). It validates input,
 * keeps reentrancy per async call chain, and wires together the protocol (LockScripts), the wake
 * channel, waiters and leases. Everything Redis-specific lives in ./protocol.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import { now } from './engine/clock';
import { HeldLease, type LeaseHost, type LeaseTerms } from './engine/held-lease';
import { ReentrantLease } from './engine/reentrant-lease';
import { Waiter, type WaiterHost } from './engine/waiter';
import { WakeListener, type WakeMessage } from './engine/wake-listener';
import { LockAbortedError } from './errors/lock-aborted.error';
import { LockOptionsError } from './errors/lock-options.error';
import { LockServiceClosedError } from './errors/lock-service-closed.error';
import { LockTimeoutError } from './errors/lock-timeout.error';
import { RedisUnavailableError } from './errors/redis-unavailable.error';
import type { Lease, LockInfo } from './lease';
import {
  type AcquireOptions,
  claimWindowFor,
  type LockServiceOptions,
  type ResolvedAcquireOptions,
  type ResolvedServiceOptions,
  resolveAcquireOptions,
  resolveGracePeriod,
  resolveServiceOptions,
  validateKey,
} from './lock-options';
import { lockKeys, wakeChannelPrefix } from './protocol/keys';
import { isCluster, LockScripts, type RedisClient, type ScriptContext } from './protocol/lock-scripts';

interface LeaseScope {
  readonly byKey: ReadonlyMap<string, HeldLease>;
  readonly innermost: HeldLease;
}

/** The duck type of an ioredis Redis or Cluster usable for locks (also checked by the Nest module). */
export function isIoredisClient(value: unknown): value is RedisClient {
  if (value === null || typeof value !== 'object') return false;
  const c = value as Record<string, unknown>;
  return (
    typeof c.defineCommand === 'function' &&
    typeof c.duplicate === 'function' &&
    typeof c.subscribe === 'function' &&
    typeof c.status === 'string'
  );
}

export class LockService {
  private readonly options: ResolvedServiceOptions;
  private readonly scripts: LockScripts;
  private readonly wake: WakeListener;
  private readonly instanceId = randomBytes(9).toString('base64url');
  private readonly channelPrefix: string;
  private readonly trustReceivers: boolean;
  private readonly waiters = new Map<string, Waiter<HeldLease>>();
  private readonly leases = new Set<HeldLease>();
  private readonly orphans = new Map<string, ScriptContext>();
  /** Leases held by the current async call chain, by Redis key: the basis of reentrancy. */
  private readonly scope = new AsyncLocalStorage<LeaseScope>();
  /** Calls of `using` whose function is still running: close() lets them finish first. */
  private readonly running = new Set<Promise<unknown>>();
  /** Fails the waiters once the command connection has ended for good (see the constructor). */
  private readonly onClientEnd = (): void => {
    for (const waiter of [...this.waiters.values()]) waiter.onConnectionEnded();
    this.wake.reset();
  };
  private sequence = 0;
  private closed = false;
  private closing: Promise<void> | undefined;

  private readonly leaseHost: LeaseHost;
  private readonly waiterHost: WaiterHost<HeldLease>;

  /**
   * @param client an ioredis `Redis` or `Cluster`; used for commands and duplicated once for the wake
   *   channel. The service never closes it.
   */
  constructor(
    /** The ioredis client commands are sent on (for health checks); the service never closes it. */
    readonly client: RedisClient,
    options?: LockServiceOptions,
  ) {
    if (!isIoredisClient(client)) {
      throw new LockOptionsError(
        'LockService needs an ioredis client (new Redis(...) or new Cluster(...)) as its first argument.',
      );
    }
    this.options = resolveServiceOptions(options);
    this.scripts = new LockScripts(client, this.options.commandTimeout);
    this.channelPrefix = wakeChannelPrefix(this.options.prefix);
    // On a Cluster, PUBLISH counts only the receivers on the node that ran the script.
    this.trustReceivers = !isCluster(client);
    this.wake = new WakeListener(
      client,
      this.channelPrefix + this.instanceId,
      (message) => this.onWake(message),
      () => {
        for (const waiter of this.waiters.values()) waiter.onReconnect();
      },
    );
    const { scripts, leases, waiters } = this;
    this.leaseHost = {
      scripts,
      forget: (lease) => leases.delete(lease),
      validateTtl: (ttl) => resolveAcquireOptions(this.options, { ttl }, false).ttl,
    };
    this.waiterHost = {
      scripts,
      claimWindow: this.options.claimWindow,
      register: (waiter) => waiters.set(waiter.token, waiter),
      unregister: (waiter) => waiters.delete(waiter.token),
      orphan: (ctx, lifetime) => this.adopt(ctx, lifetime),
      granted: (waiter, grant) =>
        this.lease(waiter.ctx, waiter.key, grant.fence, grant.validUntil, waiter.terms, grant.confirmed),
    };
    // The wake-up subscription is a connection of its own, so a waiter would go on waiting after the
    // application ended the command connection (disconnect(), quit(), or no more reconnecting): none of
    // its grants could be confirmed then, so it fails at once instead of at its waitTimeout. The
    // subscription goes too, so Redis skips this service's tokens still queued (their cancel could not
    // be sent) instead of granting them for a claim window; a reconnected client subscribes again.
    client.on('end', this.onClientEnd);
  }

  /**
   * Takes the lock, waiting in line up to `waitTimeout` ms (FIFO). Rejects with LockTimeoutError,
   * LockAbortedError, RedisUnavailableError, LockKeyError or LockOptionsError.
   */
  acquire(key: string, options?: AcquireOptions): Promise<Lease> {
    let resolved: ResolvedAcquireOptions;
    try {
      resolved = resolveAcquireOptions(this.options, options, false);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.obtain(key, resolved, true) as Promise<Lease>;
  }

  /** Takes the lock if it is free and nobody is queued; resolves null otherwise. Never waits. */
  async tryAcquire(key: string, options?: Omit<AcquireOptions, 'waitTimeout'>): Promise<Lease | null> {
    const resolved = resolveAcquireOptions(this.options, options, false);
    return this.obtain(key, { ...resolved, waitTimeout: 0 }, false);
  }

  /**
   * Runs `fn` while holding the lock (renewed every ttl/3 unless `renew: false`), then releases it.
   * Nested `using`/`acquire` of the same key inside `fn` reuse this lease. If the lease is lost while
   * `fn` runs, `lease.signal` aborts and the call rejects with LockLostError once `fn` settles.
   */
  async using<T>(key: string, fn: (lease: Lease) => T | Promise<T>, options?: AcquireOptions): Promise<T> {
    if (typeof fn !== 'function')
      throw new LockOptionsError('using() needs a function to run under the lock.');
    const lease = (await this.obtain(key, resolveAcquireOptions(this.options, options, true), true)) as Lease;
    if (lease instanceof ReentrantLease) return fn(lease);
    const held = lease as HeldLease;
    if (!held.isHeld) {
      // Its validity ran out before `fn` could start (the process was frozen after the grant).
      await held.release().catch(() => {});
      throw held.lossReason;
    }
    const byKey = new Map(this.scope.getStore()?.byKey);
    byKey.set(held.redisKey, held);
    let result: T;
    const run = this.scope.run({ byKey, innermost: held }, async () => fn(held));
    this.running.add(run);
    try {
      result = await run;
    } catch (error) {
      await held.release().catch(() => {});
      throw error;
    } finally {
      this.running.delete(run);
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
    const owner = key === undefined ? undefined : lockKeys(this.options.prefix, validateKey(key)).owner;
    const store = this.scope.getStore();
    if (!store) return undefined;
    const held = owner === undefined ? store.innermost : store.byKey.get(owner);
    return held?.isHeld ? new ReentrantLease(held) : undefined;
  }

  /**
   * Checks call options against this service (types, ranges) without sending anything; throws
   * LockOptionsError. The Nest module runs it for every @Locked at start-up.
   */
  checkOptions(options: AcquireOptions | undefined): void {
    resolveAcquireOptions(this.options, options, true);
  }

  /** Reads the lock's state in one step: holder, remaining ttl, queue length, last fence. */
  async inspect(key: string): Promise<LockInfo> {
    validateKey(key);
    this.assertOpen(key);
    const snapshot = await this.scripts.inspect(lockKeys(this.options.prefix, key));
    return {
      key,
      held: snapshot.owner !== null,
      holder: snapshot.owner,
      ttl: Math.max(0, snapshot.ownerTtl),
      queueLength: snapshot.queueLength,
      fence: snapshot.fence,
    };
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
    this.client.off('end', this.onClientEnd);
    const cancels = [...this.waiters.values()].map((waiter) => waiter.close());
    if (grace > 0 && this.running.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, grace);
      });
      const finished = Promise.allSettled([...this.running]).then(() => undefined);
      await Promise.race([finished, deadline]);
      clearTimeout(timer);
    }
    // Calls still running past the grace period lose their lease first, so their signal aborts and
    // their `using` rejects with LockLostError instead of finishing as if it still held the lock.
    const held = [...this.leases];
    for (const lease of held) {
      lease.lose('the lock service was closed before the call finished (its grace period ran out)');
    }
    const releases = held.map((lease) => lease.release().catch(() => {}));
    // Cancels and releases go over the command connection, so the wake connection closes alongside.
    await Promise.all([...cancels, ...releases, this.wake.close()]);
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
      validateKey(key);
      const keys = lockKeys(this.options.prefix, key);
      // Reentry is checked before closing: a call running out its grace period may nest another
      // call on the lock it already holds.
      const outer = this.scope.getStore()?.byKey.get(keys.owner);
      if (outer?.isHeld) return Promise.resolve(new ReentrantLease(outer));
      this.assertOpen(key);
      if (options.signal?.aborted) throw new LockAbortedError(key, options.signal.reason);
      const ctx = this.context(keys, options.ttl);
      const started = now();
      if (options.waitTimeout === 0 || !this.wake.ready) {
        return this.tryFirst(ctx, key, started, options, busyIsTimeout);
      }
      return this.wait(ctx, key, started, options);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** One attempt without queueing; then, for a waiting call, subscribe to pushes and queue. */
  private async tryFirst(
    ctx: ScriptContext,
    key: string,
    started: number,
    options: ResolvedAcquireOptions,
    busyIsTimeout: boolean,
  ): Promise<Lease | null> {
    const reply = await this.scripts.acquire(ctx, 'try', 0);
    if (reply.granted) return this.lease(ctx, key, reply.fence, started + options.ttl, options, true);
    if (options.waitTimeout === 0) {
      if (busyIsTimeout) throw new LockTimeoutError(key, 0);
      return null;
    }
    // First contention in this process: pushes must flow before we queue, or a grant could be missed.
    await this.wake.ensureSubscribed().catch((error: unknown) => {
      if (this.closed) throw new LockServiceClosedError(key);
      throw new RedisUnavailableError('could not subscribe to the wake channel', key, error);
    });
    this.assertOpen(key);
    return this.wait(ctx, key, started, options);
  }

  private wait(
    ctx: ScriptContext,
    key: string,
    started: number,
    options: ResolvedAcquireOptions,
  ): Promise<HeldLease> {
    const { waitTimeout, signal } = options;
    return new Waiter(this.waiterHost, ctx, key, started, waitTimeout, signal, options).run();
  }

  private lease(
    ctx: ScriptContext,
    key: string,
    fence: number,
    validUntil: number,
    terms: LeaseTerms,
    confirmed: boolean,
  ): HeldLease {
    const lease = new HeldLease(this.leaseHost, ctx, key, fence, validUntil, terms, confirmed);
    this.leases.add(lease);
    if (this.closed) {
      // close() ran while this grant was in flight: do not leave it held.
      lease.release().catch(() => {});
      throw new LockServiceClosedError(key);
    }
    return lease;
  }

  private context(keys: ReturnType<typeof lockKeys>, ttl: number): ScriptContext {
    // The token carries this call's claim window, so whoever hands the lock on reserves it for exactly
    // the time this waiter counts its validity from (common.lua, claim_of).
    const claimWindow = claimWindowFor(ttl, this.options.claimWindow);
    return {
      keys,
      token: `${this.instanceId}:${(++this.sequence).toString(36)}~${claimWindow}`,
      ttl,
      claimWindow,
      channelPrefix: this.channelPrefix,
      trustReceivers: this.trustReceivers,
      fenceRetention: this.options.fenceRetention,
    };
  }

  private onWake(message: WakeMessage): void {
    const waiter = this.waiters.get(message.token);
    if (waiter) {
      if (message.kind === 'grant') waiter.onGrant(message.fence, message.serverMs);
      else waiter.onHead(message.holdMs);
      return;
    }
    const orphan = this.orphans.get(message.token);
    if (orphan && message.kind === 'grant') {
      // Granted to a waiter that gave up while Redis was unreachable: pass the grant on now.
      this.orphans.delete(message.token);
      this.scripts.release(orphan).catch(() => {});
    }
  }

  /** A waiter gave up but could not leave its queue; remember it until its queue entry expires. */
  private adopt(ctx: ScriptContext, lifetime: number): void {
    this.orphans.set(ctx.token, ctx);
    setTimeout(() => this.orphans.delete(ctx.token), lifetime).unref();
  }

  private assertOpen(key: string): void {
    if (this.closed) throw new LockServiceClosedError(key);
  }
}
