import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { entries, poll, type SentinelGroup, startSentinelGroup } from '../../test/support/redis-sentinel';
import { adminOn, type RedisServer, startRedis } from '../../test/support/redis-server';
import type { KeySnapshot } from '../checks/key-hygiene';
import { hr, type Prng } from '../common';
import {
  type Failover,
  type FaultKind,
  type ReplicationControl,
  SENTINEL_FAULTS,
  sentinelQuickPlan,
} from '../faults/kinds';
import { ChaosProxy } from '../proxy';
import { LINK_TIMEOUT_MS, MasterNode, ReplicatedServer } from './replicated-server';
import { keysWithTtl } from './server-node';
import type { LockNode, SentinelConnection, Topology } from './topology';

/**
 * 100 ms: well under a third of the shortest ttl (the library's bound), and long enough for a replica
 * on loopback under load. A refused grant costs more: Redis times WAIT on its clock tick (hz 10).
 */
const REPLICAS = { count: 1, timeout: 100, unacknowledged: 'requeue' } as const;
/**
 * A failover takes ~2 s with the harness' timings (down-after 500 ms); a second one within 2 x
 * failover-timeout (4 s) of the first is held back by Sentinel itself. Past this bound plus the
 * down-after, something is stuck.
 */
const FAILOVER_TIMEOUT_MS = 20_000;

export class Sentinel implements Topology {
  readonly name = 'sentinel';
  readonly faults = SENTINEL_FAULTS;
  resource!: RedisServer;
  private group!: SentinelGroup;
  private servers: ReplicatedServer[] = [];
  /** Index in `servers` of the master, as of the last failover this topology saw. */
  private masterAt = 0;
  private dir = '';
  private node!: MasterNode;
  /** One subscriber per sentinel, following their +switch-master announcements. */
  private watchers: Redis[] = [];
  /** Changes of master the sentinels announced, and how many of them kill-master caused. */
  private switches = 0;
  private kills = 0;

  /**
   * `downAfterMs`: the sentinels' down-after-milliseconds. Short (500 ms, the default) means quick
   * failovers after kill-master, and also failovers of their own from a master that was only slow to
   * answer on a loaded machine; a few seconds leave those out, at the cost of slower kill-master faults.
   */
  constructor(readonly downAfterMs: number) {}

  /** A failover waits down-after-milliseconds before it starts. */
  private get failoverTimeoutMs(): number {
    return FAILOVER_TIMEOUT_MS + this.downAfterMs;
  }

  readonly replication: ReplicationControl = {
    killMaster: () => this.killMaster(),
    pauseReplica: () => {
      const replica = this.replica();
      replica.pause();
      return replica.name;
    },
    resumeReplica: () => {
      for (const server of this.servers) server.resume();
    },
  };

  async start(): Promise<void> {
    const [group, resource, dir] = await Promise.all([
      startSentinelGroup({ replicas: 1, downAfterMs: this.downAfterMs }),
      startRedis(),
      mkdtemp(join(tmpdir(), 'nestjs-redis-lock-chaos-sentinel-')),
    ]);
    this.group = group;
    this.resource = resource;
    this.dir = dir;
    this.servers = await Promise.all(
      [group.master, group.replicas[0]].map(async (server, i) => {
        const proxy = new ChaosProxy(server.port);
        await proxy.listen();
        return new ReplicatedServer(`s${i + 1}`, server, proxy);
      }),
    );
    const admin = group.client({ connectionName: 'chaos-admin' });
    await admin.ping();
    this.node = new MasterNode(() => this.master(), admin);
    this.watchers = await Promise.all(group.sentinels.map((sentinel) => this.followSwitches(sentinel.port)));
  }

  /**
   * The sentinels also fail over on their own: when they briefly lose sight of a live master (down-after
   * is 500 ms by default, and the machine is loaded), they promote its replica, and some seconds later
   * turn the old master into its replica. The faults must then see the new roles, or a kill-master would
   * wait for the sentinels to find a replica promotable that is in fact the master, and a pause-replica
   * would pause the master.
   */
  private async followSwitches(port: number): Promise<Redis> {
    const watcher = new Redis({ host: '127.0.0.1', port, retryStrategy: () => 100 });
    watcher.on('error', () => {});
    watcher.on('message', (_channel: string, message: string) => {
      // "<name> <old ip> <old port> <new ip> <new port>"
      const [name, , , , newPort] = message.split(' ');
      const at = this.servers.findIndex((server) => server.port === Number(newPort));
      if (name === this.group.masterName && at >= 0) this.switchTo(at);
    });
    await watcher.subscribe('+switch-master');
    return watcher;
  }

  /** The master is now `servers[at]`: counted once, whether a sentinel or kill-master said it first. */
  private switchTo(at: number): void {
    if (at === this.masterAt) return;
    this.masterAt = at;
    this.switches++;
  }

  get nodes(): readonly LockNode[] {
    return [this.node];
  }

  lockPorts(): number[] {
    return [];
  }

  sentinel(): SentinelConnection {
    const { sentinels, name } = this.group.sentinelOptions();
    const natMap = Object.fromEntries(
      this.servers.map((s) => [`127.0.0.1:${s.port}`, { host: '127.0.0.1', port: s.proxy.port }]),
    );
    return { sentinels, name, natMap, replicas: { ...REPLICAS } };
  }

  quickPlan(prng: Prng): FaultKind[] {
    return sentinelQuickPlan(prng, this.faults);
  }

  private master(): ReplicatedServer {
    return this.servers[this.masterAt];
  }

  private replica(): ReplicatedServer {
    return this.servers[1 - this.masterAt];
  }

  /**
   * Whether every sentinel names `master` and sees `replica` as up (not down, linked to it): a failover
   * now would promote it. Right after the replica came back, the sentinels still have it down until
   * their next PING (every down-after-milliseconds, once a second at most: 500 ms by default).
   */
  private async promotable(master: ReplicatedServer, replica: ReplicatedServer): Promise<true | undefined> {
    for (const sentinel of this.group.sentinels) {
      const seen = await adminOn(sentinel.port, async (redis) => {
        const named = (await redis.call('SENTINEL', 'get-master-addr-by-name', this.group.masterName)) as
          | string[]
          | null;
        if (Number(named?.[1]) !== master.port) return false;
        const replicas = entries(await redis.call('SENTINEL', 'replicas', this.group.masterName));
        return replicas.some(
          (entry) =>
            Number(entry.port) === replica.port && !/s_down|o_down|disconnected/.test(entry.flags ?? ''),
        );
      });
      if (!seen) return undefined;
    }
    return true;
  }

  private async killMaster(): Promise<Failover> {
    const asked = hr();
    // The roles as of each try: a failover of the sentinels' own may swap them meanwhile.
    await poll(
      () => this.promotable(this.master(), this.replica()),
      this.failoverTimeoutMs,
      `the sentinels seeing ${this.replica().name} as promotable`,
    );
    const master = this.master();
    const replica = this.replica();
    const killedAt = hr();
    await master.kill();
    const promoted = await this.group.waitForFailover({ port: master.port }, this.failoverTimeoutMs);
    const promotedAt = hr();
    if (promoted.port !== replica.port) {
      throw new Error(`the sentinels promoted port ${promoted.port}, not ${replica.name} (${replica.port})`);
    }
    this.switchTo(this.servers.indexOf(replica));
    this.kills++;
    await master.startAsReplicaOf(replica, this.dir);
    return {
      from: master.name,
      to: replica.name,
      killedAt,
      promotedAt,
      rejoinedAt: hr(),
      waitedMs: killedAt - asked,
    };
  }

  /** The server every sentinel names as the master, once it answers ROLE master. */
  private async agreedMaster(): Promise<ReplicatedServer | undefined> {
    const ports = await Promise.all(
      this.group.sentinels.map((sentinel) =>
        adminOn(sentinel.port, async (redis) => {
          const named = (await redis.call('SENTINEL', 'get-master-addr-by-name', this.group.masterName)) as
            | string[]
            | null;
          return Number(named?.[1]);
        }),
      ),
    );
    const master = this.servers.find((server) => server.port === ports[0]);
    if (!master?.alive || ports.some((port) => port !== master.port)) return undefined;
    const [role] = (await master.handle.admin((redis) => redis.role())) as [string];
    return role === 'master' ? master : undefined;
  }

  async snapshotKeys(keptPrefixes: readonly string[]): Promise<KeySnapshot> {
    // The master's keys: the replica's are a copy, and expire with them.
    return { lock: await this.node.keys(), resource: await keysWithTtl(this.resource), keptPrefixes };
  }

  /**
   * Proxies back to pipes and every server running; then one master, named by every sentinel, with its
   * replica linked. A kill-master that failed half-way (no failover in time) may have left a server down:
   * it comes back as the master's replica here.
   */
  async heal(): Promise<void> {
    for (const server of this.servers) {
      server.proxy.heal();
      server.resume();
    }
    const master = await poll(
      () => this.agreedMaster(),
      this.failoverTimeoutMs,
      'one master named by every sentinel',
    );
    this.masterAt = this.servers.indexOf(master);
    const replica = this.replica();
    if (!replica.alive) await replica.startAsReplicaOf(master, this.dir);
    await poll(() => replica.linkUp(), LINK_TIMEOUT_MS, `${replica.name}'s link to ${master.name}`);
  }

  notes(): string[] {
    const own = this.switches - this.kills;
    return [
      `the sentinels failed over on their own ${own} time(s), besides the ${this.kills} kill-master failovers`,
    ];
  }

  async stop(): Promise<void> {
    // The harness kills the sentinels first (none reconfigures a server being stopped), then the servers
    // it started; the processes started here go after.
    for (const watcher of this.watchers) watcher.disconnect();
    await this.group.dispose();
    await Promise.all(this.servers.map((server) => server.dispose()));
    await Promise.all(this.servers.map((server) => server.proxy.close()));
    await this.resource.dispose();
    await rm(this.dir, { recursive: true, force: true });
  }
}
