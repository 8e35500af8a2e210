/**
 * LockService: the public face of the lock, usable with or without Nest (`new LockService(redis,
 * options)`; the Nest module injects the same class). It checks each call's input, hands it to the call
 * chain (reentrancy, lib/engine/call-chain.ts) and the engine (waiters and leases over the store,
 * lib/engine/lock-engine.ts), reports it to telemetry, and shuts both down on close().
 */

import type { RedisClient } from './clients';
import { engineCall } from './engine/call';
import { CallChain } from './engine/call-chain';
import { alive, type OwnedLease } from './engine/held-lease';
import { LockEngine } from './engine/lock-engine';
import { lockInfo } from './engine/lock-info';
import { ReentrantLease } from './engine/reentrant-lease';
import { currentRequest, type ServedRequest } from './engine/served-request';
import { LockAbortedError } from './errors/lock-aborted.error';
import { LockServiceClosedError } from './errors/lock-service-closed.error';
import { LockUsageError } from './errors/lock-usage.error';
import type { Lease, LockInfo } from './lease';
import { forceRelease, type ListLocksOptions, type LockList, listLocks, withWaits } from './lock-admin';
import { checkKindCall } from './lock-kind';
import {
  type AcquireOptions,
  type ResolvedAcquireOptions,
  resolveAcquireOptions,
  type TryAcquireOptions,
} from './options/call-options';
import { validateKey, validateKeys } from './options/lock-keys';
import {
  type LockServiceOptions,
  type ResolvedServiceOptions,
  resolveCheckTimeout,
  resolveGracePeriod,
  resolveServiceOptions,
} from './options/service-options';
import { type LockBackend } from './store/lock-store';
import { MemoryLockBackend } from './store/memory-store';
import { storeSource } from './store/open-store';
import { type ServerReport, ServerWatch } from './store/server-watch';
import { type CallRecord, LockTelemetry } from './telemetry/lock-telemetry';

/** One key, or several to hold together (all or nothing). */
export type LockKeys = string | readonly string[];

/**
 * `using` for a `@Locked` declaration with `onTimeout: 'skip'`, whose timeouts telemetry reports as
 * skips: a function of this module, not a method, so that it is no part of LockService's API.
 */
export let usingSkippable: <T>(
  service: LockService,
  key: LockKeys,
  fn: (lease: Lease) => T | Promise<T>,
  options: AcquireOptions,
) => Promise<T>;

export class LockService {
  private readonly options: ResolvedServiceOptions;
  private readonly engine: LockEngine;
  private readonly chain: CallChain;
  private closing: Promise<void> | undefined;
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
    this.engine = new LockEngine(source, this.options);
    this.chain = new CallChain(this.engine);
    this.redis = source.kind === 'redis' ? source.redis : undefined;
    this.quorum = source.kind === 'quorum' ? source.quorum : undefined;
    const { commandTimeout, replicas, onWarning } = this.options;
    this.watch = new ServerWatch(
      this.quorum ?? (this.redis ? [this.redis] : []),
      this.quorum !== undefined,
      commandTimeout,
      onWarning,
      replicas?.count,
    );
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
   * service on another backend (in memory) has none: reading it throws LockUsageError.
   */
  get client(): RedisClient {
    if (!this.redis) {
      throw new LockUsageError('This LockService keeps its locks in memory: it has no Redis client.');
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
   * LockAbortedError, RedisUnavailableError or LockUsageError. Given several keys, takes
   * them all (one lease) or none, key by key in canonical order, each in its own FIFO line, all within
   * `waitTimeout`; LockUsageError `LOCK_ORDER` when the call chain holds a key that sorts after one of them.
   */
  acquire(key: LockKeys, options?: AcquireOptions): Promise<Lease> {
    let resolved: ResolvedAcquireOptions;
    try {
      resolved = resolveAcquireOptions(this.options.defaults, options, false);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.call(key, resolved, true).obtained as Promise<Lease>;
  }

  /**
   * Takes the lock (every key of it) if it is free and nobody is queued; resolves null otherwise, holding
   * nothing. Never waits.
   */
  async tryAcquire(key: LockKeys, options?: TryAcquireOptions): Promise<Lease | null> {
    const resolved = resolveAcquireOptions(this.options.defaults, options, false, true);
    return this.call(key, { ...resolved, waitTimeout: 0 }, false).obtained;
  }

  /**
   * Runs `fn` while holding the lock (renewed every ttl/3 unless `renew: false`), then releases it.
   * Nested `using`/`acquire` of the same key inside `fn` reuse this lease. If the lease is lost while
   * `fn` runs, `lease.signal` aborts and the call rejects with LockLostError once `fn` settles.
   */
  using<T>(key: LockKeys, fn: (lease: Lease) => T | Promise<T>, options?: AcquireOptions): Promise<T> {
    return this.usingAs(key, fn, options, false);
  }

  static {
    usingSkippable = (service, key, fn, options) => service.usingAs(key, fn, options, true);
  }

  /**
   * The lease the current async call chain holds through `using` (or `@Locked`): for `key` if given,
   * else the innermost one. Undefined outside any. Releasing it is a no-op: its `using` releases it.
   */
  currentLease(key?: string): Lease | undefined {
    // The key is checked even outside any scope, so a bad key fails the same way wherever it is asked.
    if (key !== undefined) validateKey(key);
    return this.chain.current(key);
  }

  /**
   * Checks call options against this service (types, ranges) without sending anything; throws
   * LockUsageError. The Nest module runs it for every @Locked at start-up.
   */
  checkOptions(options: AcquireOptions | undefined): void {
    const { permits, mode } = resolveAcquireOptions(this.options.defaults, options, true);
    checkKindCall(permits, mode, 1, this.engine.store.semaphores !== false);
  }

  /**
   * Reads the lock's state in one step: its holders (a semaphore's every one) with their ttl and fence,
   * the permits, the waiters in line order, the last fence.
   */
  async inspect(key: string): Promise<LockInfo> {
    validateKey(key);
    this.engine.assertOpen(key);
    const { store, waitingSince } = this.engine;
    return withWaits(lockInfo(key, await store.inspect(key)), waitingSince);
  }

  /** The live locks (held or waited for) as `inspect` reports them, by key: a bounded SCAN, for dashboards. */
  list(options?: ListLocksOptions): Promise<LockList> {
    if (this.engine.isClosed()) return Promise.reject(new LockServiceClosedError());
    return listLocks(this.engine.store, options, this.engine.waitingSince);
  }

  /** An operator ends `token`'s hold on `key` as its release would (lib/lock-admin.ts); false if not held. */
  async forceRelease(key: string, token: string): Promise<boolean> {
    validateKey(key);
    this.engine.assertOpen(key);
    return forceRelease(this.engine.store, key, token);
  }

  /** This service's id: what its tokens start with (before the first `:`), in `inspect` and `list`. */
  get instance(): string {
    return this.engine.store.instance ?? '';
  }

  /**
   * Stops the service: new calls and waiters reject with LockServiceClosedError (waiters leave their
   * queues), running `using` functions get up to `gracePeriod` ms (default 5 000, as on the module's
   * shutdown) to finish, then every lease still held is lost (its signal aborts with LockLostError) and
   * released, renewals stop and the wake connection closes. The client passed in stays open. Calling it again waits for the same
   * shutdown.
   */
  close(options?: { gracePeriod?: number }): Promise<void> {
    let grace: number;
    try {
      grace = resolveGracePeriod(options);
    } catch (error) {
      // A promise-returning method never throws synchronously, even for hostile options.
      return Promise.reject(error);
    }
    this.closing ??= (async () => {
      this.watch.close();
      await this.engine.close(() => this.chain.settle(grace));
      this.telemetry.close();
    })();
    return this.closing;
  }

  private async usingAs<T>(
    key: LockKeys,
    fn: (lease: Lease) => T | Promise<T>,
    options: AcquireOptions | undefined,
    skips: boolean,
  ): Promise<T> {
    if (typeof fn !== 'function') throw new LockUsageError('using() needs a function to run under the lock.');
    const resolved = resolveAcquireOptions(this.options.defaults, options, true);
    const { obtained, record, request } = this.call(key, resolved, true, skips);
    const lease = (await obtained) as Lease;
    if (lease instanceof ReentrantLease) return fn(lease);
    const held = lease as OwnedLease;
    // A grant can reach the call in the same turn as its client's departure: run nothing for nobody.
    const gone = request?.signal;
    if (gone?.aborted) {
      await held.release().catch(() => {});
      throw new LockAbortedError(held.key, gone.reason);
    }
    let result: T;
    try {
      result = await this.chain.run(held, () => (record ? record.runHeld(held, () => fn(held)) : fn(held)));
    } catch (error) {
      await held.release().catch(() => {});
      throw error;
    }
    const lost = held.lossReason;
    if (lost) {
      await held.release().catch(() => {});
      throw lost;
    }
    // A lease lost as its release went out is reported as the loss it was, not as a release refused.
    await held.release().catch((error: unknown) => {
      throw held.lossReason ?? error;
    });
    return result;
  }

  /**
   * One call on one key or several: validated, then reentry, order, and the keys not held yet taken;
   * reported to telemetry (when anything listens) from the call to its outcome, and through the lease's
   * observer on. A call made while serving a request (served-request.ts) stops waiting when its client
   * leaves and is done by its deadline. The record and the request are returned too: `using` reports the
   * hold through the one, and starts nothing for a request that has gone.
   */
  private call(
    input: unknown,
    given: ResolvedAcquireOptions,
    busyIsTimeout: boolean,
    skips = false,
  ): { obtained: Promise<Lease | null>; record?: CallRecord; request?: ServedRequest } {
    const request = currentRequest();
    const options = request ? servingOptions(given, request) : given;
    let keys: string[];
    try {
      keys = validateKeys(input);
      checkKindCall(options.permits, options.mode, keys.length, this.engine.store.semaphores !== false);
    } catch (error) {
      return { obtained: Promise.reject(error) };
    }
    const record = this.telemetry.begin(options.label, keys, skips);
    const observer = record ?? this.telemetry.unrecorded(options.label);
    const call = engineCall(options, busyIsTimeout, record, request !== undefined, observer);
    const obtained = (
      Array.isArray(input) ? this.chain.obtainAll(keys, call) : this.chain.obtain(keys[0], call)
    ).then(alive);
    return {
      obtained: record ? record.report(obtained, (lease) => lease instanceof ReentrantLease) : obtained,
      record,
      request,
    };
  }
}

/** A call's options with its request's departure and deadline added to its own. */
function servingOptions(options: ResolvedAcquireOptions, request: ServedRequest): ResolvedAcquireOptions {
  const { signal: gone, deadline: due } = request;
  const signal = gone && options.signal ? AbortSignal.any([options.signal, gone]) : (options.signal ?? gone);
  const deadline =
    due === undefined || (options.deadline !== undefined && options.deadline <= due) ? options.deadline : due;
  return signal === options.signal && deadline === options.deadline
    ? options
    : { ...options, signal, deadline };
}
