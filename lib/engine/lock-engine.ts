/**
 * The acquisition machine of one LockService: it opens the store, turns tickets into leases (try once,
 * join the line, claim a reservation, wait for a push), keeps this service's waiters and leases, routes
 * each wake-up to its waiter, takes back what Redis may hold for a call that failed or a waiter that
 * gave up while Redis was unreachable (take-back.ts), and shuts waiters and leases down. The waiter,
 * the held lease and the multi-key sequence call it directly through the narrow interfaces they declare
 * (WaiterHost, LeaseHost, KeyTaker).
 */
import { LockAbortedError } from '../errors/lock-aborted.error';
import { LockServiceClosedError } from '../errors/lock-service-closed.error';
import type { LockTimeoutError } from '../errors/lock-timeout.error';
import { RedisUnavailableError } from '../errors/redis-unavailable.error';
import { resolveAcquireOptions } from '../options/call-options';
import { claimWindowFor, type ResolvedServiceOptions } from '../options/service-options';
import type {
  AcquireReply,
  HandedOn,
  JoinDoor,
  LockStore,
  LockTicket,
  Successor,
  TicketMember,
  WakeHandlers,
  WakeMessage,
} from '../store/lock-store';
import { openStore, type StoreSource } from '../store/open-store';
import { claimWindowOf } from '../store/token';
import { Admission } from './admission';
import type { EngineCall } from './call';
import { now, validFor } from './clock';
import { type GrantLinks, HeldLease, type LeaseHost } from './held-lease';
import { type KeyTaker, takeInOrder } from './key-sequence';
import { mayHaveRun, TakeBacks } from './take-back';
import { type Granted, handOnLocally, queueLifetime, Waiter, type WaiterHost } from './waiter';

export class LockEngine implements WakeHandlers, LeaseHost, WaiterHost<HeldLease>, KeyTaker {
  readonly store: LockStore;
  /** With replicas, a pushed grant is confirmed, and acknowledged, before the waiter starts on it. */
  readonly startsOnPush: boolean;
  readonly waitsOnUnreplicated: boolean;
  private readonly waiters = new Map<string, Waiter<HeldLease>>();
  private readonly leases = new Set<HeldLease>();
  private readonly takeBacks: TakeBacks;
  private readonly admission: Admission;
  private closed = false;
  /** LeaseHost.ownGrants. */
  ownGrants = 0;

  constructor(
    source: StoreSource,
    private readonly options: ResolvedServiceOptions,
  ) {
    const { replicas } = options;
    this.startsOnPush = !replicas;
    this.waitsOnUnreplicated = replicas?.unacknowledged === 'requeue';
    this.admission = new Admission(options);
    this.store = openStore(source, options, this);
    this.takeBacks = new TakeBacks(this.store);
  }

  /** When the waiter holding `token` of this service joined its line (for `inspect` and `list`). */
  readonly waitingSince = (token: string): number | undefined => this.waiters.get(token)?.started;

  isClosed(): boolean {
    return this.closed;
  }

  assertOpen(key: string): void {
    if (this.closed) throw new LockServiceClosedError(key);
  }

  /** One key the call chain does not hold: a lease, or null for a try-once call that found it busy. */
  takeOne(key: string, call: EngineCall): Promise<HeldLease | null> {
    return this.take(this.ticket(key, call), call);
  }

  /** Several keys, in canonical order under one token (key-sequence.ts): their leases, or null. */
  takeAll(keys: readonly string[], call: EngineCall): Promise<HeldLease[] | null> {
    return takeInOrder(this, this.tickets(keys, call), call);
  }

  /**
   * Takes one key with `ticket` (its own, or one of a multi-key call's); `claim`: the ticket holds a
   * reservation on the key, to be served from.
   */
  take(
    ticket: LockTicket,
    call: EngineCall,
    claim = false,
    onQueued?: () => void,
  ): Promise<HeldLease | null> {
    const { key } = ticket;
    this.assertOpen(key);
    const { signal } = call.options;
    if (signal?.aborted) throw new LockAbortedError(key, signal.reason);
    const started = now();
    const admitted = this.admission.admit(key, call, started);
    if (admitted === null) return Promise.resolve(null);
    if (!('options' in admitted)) return Promise.reject(admitted);
    return this.takeFrom(ticket, admitted, started, claim, onQueued).then((lease) => {
      if (lease) {
        const at = now();
        this.admission.served(key, admitted, at - started, lease.grantedFrom, at);
      }
      return lease;
    });
  }

  private takeFrom(
    ticket: LockTicket,
    call: EngineCall,
    started: number,
    claim: boolean,
    onQueued?: () => void,
  ): Promise<HeldLease | null> {
    const { waitTimeout } = call.options;
    if (claim) return this.claim(ticket, started, call, onQueued);
    const { wakeReady, joinsUnheard } = this.store;
    if (waitTimeout === 0 || !(wakeReady || joinsUnheard)) {
      return this.tryFirst(ticket, started, call, onQueued);
    }
    // Joins at once, subscribed or not, so the line keeps the order calls came in (docs/protocol.md,
    // "The first wait"); one that finds itself in line opens the subscription if nobody has yet.
    return this.wait(ticket, started, call, 'join', onQueued, !wakeReady);
  }

  /**
   * Stops new work, ends the waiters, lets `settle` run (the grace period), then loses and releases
   * every lease.
   */
  async close(settle: () => Promise<void>): Promise<void> {
    this.closed = true;
    const cancels = [...this.waiters.values()].map((waiter) => waiter.close());
    await settle();
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
    await Promise.all([...cancels, ...releases, this.takeBacks.close(), this.store.close()]);
  }

  // WakeHandlers: what the store tells the engine.

  onWake(message: WakeMessage): void {
    // The waiter after the one granted is of this service, and was told nothing: relay the hold to it.
    if (message.kind === 'grant' && message.next) {
      this.waiters.get(message.next[0].token)?.onHead(claimWindowOf(message.token));
    }
    const waiter = this.waiters.get(message.token);
    if (waiter) {
      if (message.kind === 'grant') {
        if (message.pushed !== true) this.ownGrants += 1;
        waiter.onGrant(message.fence, message.serverMs, message.next);
      } else waiter.onHead(message.holdMs);
      return;
    }
    // Granted to a ticket being taken back: pass the grant on now.
    if (message.kind === 'grant') this.takeBacks.onGrant(message.token);
  }

  onResubscribed(): void {
    for (const waiter of this.waiters.values()) waiter.onReconnect();
  }

  /** The store is gone for good: none of a waiter's grants could be confirmed, so fail them now. */
  onEnded(): void {
    for (const waiter of [...this.waiters.values()]) waiter.onConnectionEnded();
  }

  // WaiterHost: what a waiter asks of the engine.

  register(waiter: Waiter<HeldLease>): void {
    this.waiters.set(waiter.token, waiter);
  }

  unregister(waiter: Waiter<HeldLease>): void {
    this.waiters.delete(waiter.token);
  }

  /** A waiter gave up but could not tell Redis: told once it can be, for `lifetime` ms at most. */
  takeBack(ticket: LockTicket, lifetime: number): void {
    this.takeBacks.add(ticket, lifetime);
  }

  timedOut(waiter: Waiter<HeldLease>, waitedMs: number): LockTimeoutError {
    return this.admission.refusal(waiter.key, waiter.call, waitedMs, waiter.place);
  }

  joined(key: string, door: JoinDoor | undefined, pace: number | undefined): void {
    this.admission.joined(key, door, pace, now());
  }

  granted(waiter: Waiter<HeldLease>, grant: Granted): HeldLease {
    const lease = this.lease(
      waiter.ticket,
      grant.fence,
      grant.validUntil,
      waiter.call,
      grant.confirmed,
      grant,
    );
    lease.grantedFrom = waiter.place;
    return lease;
  }

  // LeaseHost: what a held lease asks of the engine.

  forget(lease: HeldLease, heldFor: number | undefined): void {
    this.leases.delete(lease);
    if (heldFor !== undefined) this.admission.held(lease.key, heldFor, now());
  }

  validateTtl(ttl: unknown): number {
    return resolveAcquireOptions(this.options.defaults, { ttl }, false).ttl;
  }

  /** The local hand-off (a store without transfer, or with replicas, never names followers). */
  handOff(handedOn: HandedOn, followers: readonly Successor[], validUntil: number): boolean {
    return !this.closed && handOnLocally(this.waiters, handedOn, followers, validUntil);
  }

  follow(next: Successor, holdMs: number): void {
    this.waiters.get(next.token)?.onHead(holdMs);
  }

  recheck(key: string): void {
    for (const waiter of this.waiters.values()) if (waiter.key === key) waiter.onReconnect();
  }

  // The machine.

  /**
   * A ticket for one key: it carries this call's claim window (how long a grant to it stays reserved,
   * handed on in its own service or pushed from another).
   */
  private ticket(key: string, call: EngineCall, member?: TicketMember): LockTicket {
    const { ttl, permits, mode } = call.options;
    const claimWindow = claimWindowFor(ttl, this.options.claimWindow);
    return this.store.ticket(key, { ttl, claimWindow, member, kind: { permits, mode } });
  }

  /** One ticket per key of a multi-key call: the first key's token, and the later keys' derived from it. */
  private tickets(keys: readonly string[], call: EngineCall): LockTicket[] {
    const first = this.ticket(keys[0], call);
    const later = keys.slice(1).map((key, i) => this.ticket(key, call, { of: first.token, index: i + 1 }));
    return [first, ...later];
  }

  /** One attempt without queueing; then, for a waiting call, subscribe to pushes and queue. */
  private async tryFirst(
    ticket: LockTicket,
    started: number,
    call: EngineCall,
    onQueued?: () => void,
  ): Promise<HeldLease | null> {
    const { key } = ticket;
    const { waitTimeout, ttl } = call.options;
    // A try never queues; a waiting call's wait is passed on all the same (a quorum store bounds its
    // wait for connections still opening by it). Replicas, whose refused grant puts a waiting call in
    // line, are only on a store whose waiters join at once (take).
    const waitFor = waitTimeout === 0 ? 0 : queueLifetime(waitTimeout, ticket.claimWindow);
    const reply: AcquireReply = await this.store.acquire(ticket, 'try', waitFor).catch((error: unknown) => {
      // Its script may have run and granted the lock, the reply lost: given back once Redis hears.
      if (mayHaveRun(error)) this.takeBack(ticket, ticket.ttl + ticket.claimWindow);
      throw error;
    });
    if (reply.granted) {
      const from = reply.from ?? started;
      return this.lease(ticket, reply.fence, from + validFor(this.store, ttl), call, true);
    }
    if (waitTimeout === 0) {
      if (call.busyIsTimeout) throw this.admission.refusal(key, call, 0, undefined);
      return null;
    }
    // A store whose waiters cannot join unheard: pushes must flow before this one queues.
    await this.subscribe(key);
    return this.wait(ticket, started, call, 'join', onQueued);
  }

  /** A later key of a multi-key call, served from its reservation (never a plain try: it is in line). */
  private async claim(
    ticket: LockTicket,
    started: number,
    call: EngineCall,
    onQueued?: () => void,
  ): Promise<HeldLease> {
    if (!this.store.wakeReady) await this.subscribe(ticket.key);
    return this.wait(ticket, started, call, 'wait', onQueued);
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
    call: EngineCall,
    first: 'join' | 'wait',
    onQueued?: () => void,
    listen = false,
  ): Promise<HeldLease> {
    const joining = first === 'join' ? this.admission.atDoor(ticket.key, call, now()) : call;
    const waiter = new Waiter(this, ticket, started, joining);
    const queued = () => {
      call.record?.queued(ticket.token);
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
    call: EngineCall,
    confirmed: boolean,
    links?: GrantLinks,
  ): HeldLease {
    const lease = new HeldLease(this, ticket, fence, validUntil, call.terms, confirmed, links);
    this.leases.add(lease);
    if (this.closed) {
      // close() ran while this grant was in flight: do not leave it held.
      lease.release().catch(() => {});
      throw new LockServiceClosedError(ticket.key);
    }
    return lease;
  }
}
