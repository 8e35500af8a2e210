/**
 * The Redis store: the lock's Lua scripts (LockScripts) and the wake-up subscription (WakeListener)
 * behind the store interface, on one client (ioredis or node-redis), single server or Cluster. It issues the tokens,
 * since their shape is part of the protocol: `<instance>:<n>~<claim window ms>`, where the instance
 * names this store's wake channel and the claim window tells whoever hands the lock on how long to
 * reserve it (docs/protocol.md).
 */

import { connectionOf, type RedisClient } from '../clients';
import { LockUsageError } from '../errors/lock-usage.error';
import type { RedisConnection } from '../protocol/connection';
import { redisKeys, wakeChannelPrefix } from '../protocol/keys';
import { scanLockKeys } from '../protocol/lock-scan';
import { FENCE_RETENTION_MS, LockScripts, type ScriptContext } from '../protocol/lock-scripts';
import type { ReplicaAck } from '../protocol/script-runner';
import { WakeListener } from '../protocol/wake-listener';
import type {
  AcquireMode,
  AcquireReply,
  ExtendOutcome,
  HandedOn,
  JoinDoor,
  KeyList,
  LockSnapshot,
  LockStore,
  LockTicket,
  TicketTerms,
  TransferReply,
  WakeHandlers,
} from './lock-store';
import { kindOf, storeInstanceId, ticketFields } from './token';

export interface RedisStoreOptions {
  /** Prefix of every key and channel. */
  prefix: string;
  /** Put before the random id in tokens (LockServiceOptions.instanceName). */
  instanceName?: string;
  /** How long a grant to a waiter stays reserved until it confirms, ms (the service's claim window). */
  claimWindow: number;
  /** Longest wait for one reply, ms. */
  commandTimeout: number;
  /** Replicas that must acknowledge each grant and renewal (the `replicas` option), if any. */
  replicas?: ReplicaAck;
}

/** A ticket carries its scripts' arguments, built once per call, and its reservation once made. */
type RedisTicket = LockTicket & ScriptContext;

export class RedisLockStore implements LockStore {
  private readonly scripts: LockScripts;
  private readonly connection: RedisConnection;
  private readonly detachEnd: () => void;
  private readonly stopFollowing: () => void;
  private readonly wake: WakeListener;
  private readonly instanceId: string;
  readonly instance: string;
  private readonly channelPrefix: string;
  /** On a Cluster, PUBLISH counts only the receivers on the node that ran the script. */
  private readonly trustReceivers: boolean;
  private sequence = 0;
  /** The local hand-off (LockStore.transfer); none with replicas. */
  readonly transfer?: (to: LockTicket, handedOn: HandedOn, follow: boolean) => Promise<TransferReply>;
  /**
   * The wake-up subscription is a connection of its own, so a waiter would go on waiting after the
   * application ended the command connection (disconnect(), quit(), or no more reconnecting): none of
   * its grants could be confirmed then, so the engine fails it at once instead of at its waitTimeout.
   * The subscription goes too, so Redis skips this store's tokens still queued (their cancel could not
   * be sent) instead of granting them for a claim window; a reconnected client subscribes again.
   */
  private readonly onClientEnd = (): void => {
    this.handlers.onEnded();
    this.wake.reset();
  };

  /**
   * @param client an ioredis `Redis` or `Cluster`, or a node-redis client or Cluster; used for commands
   *   and duplicated once for the wake channel. The store never closes it.
   */
  constructor(
    readonly client: RedisClient,
    private readonly options: RedisStoreOptions,
    private readonly handlers: WakeHandlers,
  ) {
    this.instanceId = storeInstanceId(options.instanceName);
    this.instance = this.instanceId;
    const connection = connectionOf(client);
    this.connection = connection;
    if (options.replicas && connection.cluster) {
      // WAIT answers for the connection it is sent on; a Cluster client routes a keyless command to any
      // node, not the one that ran the script.
      throw new LockUsageError(
        'replicas is not supported on a Cluster client: use it with one Redis server or a Sentinel-managed ' +
          'master (new Redis({ sentinels, name })), or leave it unset.',
      );
    }
    this.scripts = new LockScripts(connection, options.commandTimeout, options.replicas, (grant) =>
      handlers.onWake(grant),
    );
    // With replicas every grant is acknowledged by them before work starts on it: a hand-off made
    // locally, before Redis records it, could not be.
    if (!options.replicas) {
      const scripts = this.scripts;
      this.transfer = (to, handedOn, follow) => scripts.transfer(to as RedisTicket, handedOn, follow);
    }
    this.channelPrefix = wakeChannelPrefix(options.prefix);
    this.trustReceivers = !connection.cluster;
    this.wake = new WakeListener(
      connection,
      this.channelPrefix + this.instanceId,
      (message) => handlers.onWake(message),
      () => handlers.onResubscribed(),
      options.claimWindow,
    );
    this.detachEnd = connection.on('end', this.onClientEnd);
    this.stopFollowing = connection.followFailovers?.() ?? (() => {});
  }

  ticket(key: string, terms: TicketTerms): LockTicket {
    // The fields' own object, added to: a spread into a new one cost a copy on every call.
    const fields = ticketFields(this.instanceId, ++this.sequence, key, terms);
    const ticket = fields as RedisTicket;
    ticket.keys = redisKeys(this.options.prefix, key);
    ticket.channelPrefix = this.channelPrefix;
    ticket.trustReceivers = this.trustReceivers;
    ticket.fenceRetention = FENCE_RETENTION_MS;
    // semaphore.lua's kind: the permits, or "rw"; none for a mutex.
    const shared = kindOf(fields);
    if (shared) ticket.kind = shared;
    return ticket;
  }

  acquire(ticket: LockTicket, mode: AcquireMode, queueTtl: number, door?: JoinDoor): Promise<AcquireReply> {
    if (mode !== 'join' || this.wake.ready)
      return this.scripts.acquire(ticket as RedisTicket, mode, queueTtl, undefined, door);
    // A join before the subscription is live: Redis keeps its place (WakeListener), and the subscription
    // it awaits opens as soon as it is in line, whether its caller still waits or not, so the mark that
    // keeps its place is read and removed.
    const reply = this.scripts.acquire(ticket as RedisTicket, mode, queueTtl, this.wake.listenLater(), door);
    return reply.then((joined) => {
      if (!joined.granted && joined.turnedAway === undefined) this.wake.joinedEarly();
      return joined;
    });
  }

  /** A waiter may join before the wake subscription is live: its place is kept (WakeListener). */
  readonly joinsUnheard = true;

  async reserve(ticket: LockTicket, queueTtl: number): Promise<void> {
    const redisTicket = ticket as RedisTicket;
    redisTicket.reserved = await this.scripts.reserve(redisTicket, queueTtl);
  }

  release(ticket: LockTicket, _fence?: number, handedOn?: HandedOn): Promise<boolean> {
    return this.scripts.release(ticket as RedisTicket, handedOn);
  }

  releaseLater(ticket: LockTicket, holdMs: number): Promise<boolean> {
    return this.scripts.releaseLater(ticket as RedisTicket, holdMs);
  }

  cancel(ticket: LockTicket): Promise<boolean> {
    return this.scripts.cancel(ticket as RedisTicket);
  }

  extend(ticket: LockTicket, ttl: number): Promise<ExtendOutcome> {
    return this.scripts.extend(ticket as RedisTicket, ttl);
  }

  inspect(key: string): Promise<LockSnapshot> {
    return this.scripts.inspect(redisKeys(this.options.prefix, key));
  }

  async list(limit: number, filter?: string): Promise<KeyList> {
    const masters = await this.connection.masters(this.options.commandTimeout);
    return scanLockKeys(masters, this.options.prefix, limit, filter);
  }

  get wakeReady(): boolean {
    return this.wake.ready;
  }

  subscribeWakes(): Promise<void> {
    return this.wake.ensureSubscribed();
  }

  close(): Promise<void> {
    this.detachEnd();
    this.stopFollowing();
    this.scripts.close();
    return this.wake.close();
  }
}
