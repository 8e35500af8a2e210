/**
 * The two redis-servers of the Sentinel topology (a master and its replica, which trade places on a
 * failover) and the lock server as the generic faults see it: whichever of them is the master now.
 */
import type { ChildProcess } from 'node:child_process';
import Redis from 'ioredis';
import { terminate } from '../../test/support/processes';
import { poll } from '../../test/support/redis-sentinel';
import { launch, type RedisServer, StartError } from '../../test/support/redis-server';
import { hr } from '../common';
import type { RestartTimes } from '../history';
import { ChaosProxy } from '../proxy';
import { keysWithTtl } from './server-node';
import type { LockNode } from './topology';

/** How long a replica may take to report its link to the master up. Past it, something is stuck. */
export const LINK_TIMEOUT_MS = 20_000;

/**
 * One of the two redis-servers. The harness starts it; once killed, it is started again here on the
 * same port, since it must come back as the new master's replica (`--replicaof`), which the harness'
 * restart, with the first arguments, cannot do.
 */
export class ReplicatedServer {
  private relaunched: ChildProcess | undefined;
  alive = true;
  paused = false;

  constructor(
    readonly name: string,
    /** The harness' handle: its admin connections and key reads go by port, so they follow a restart. */
    readonly handle: RedisServer,
    /** What the workers reach this server through. */
    readonly proxy: ChaosProxy,
  ) {}

  get port(): number {
    return this.handle.port;
  }

  async kill(): Promise<void> {
    this.alive = false;
    this.paused = false;
    await (this.relaunched ? terminate(this.relaunched, 'SIGKILL') : this.handle.kill());
  }

  /** Starts the killed server again, empty, as `master`'s replica; resolves once its link is up. */
  async startAsReplicaOf(master: ReplicatedServer, dir: string): Promise<void> {
    // A full sync writes the RDB it receives into --dir: the topology's own temp dir.
    const args = [
      ...['--dir', dir, '--dbfilename', `${this.name}.rdb`, '--repl-diskless-sync-delay', '0'],
      ...['--replicaof', '127.0.0.1', String(master.port)],
    ];
    // The port is normally free at once (Redis binds with SO_REUSEADDR), but a client may have taken it
    // as its local port for a moment: try again until the harness' own start deadline.
    const deadline = hr() + 10_000;
    for (;;) {
      try {
        this.relaunched = await launch(this.port, args);
        break;
      } catch (error) {
        if (!(error instanceof StartError && error.portInUse) || hr() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    this.alive = true;
    await poll(() => this.linkUp(), LINK_TIMEOUT_MS, `${this.name}'s link to ${master.name}`);
  }

  /** Whether this server is a replica whose link to its master is up (its sync done). */
  linkUp(): Promise<true | undefined> {
    return this.handle.admin(async (redis) =>
      (await redis.info('replication')).includes('master_link_status:up') ? true : undefined,
    );
  }

  pause(): void {
    if (this.relaunched) this.relaunched.kill('SIGSTOP');
    else this.handle.pause();
    this.paused = true;
  }

  resume(): void {
    if (!this.paused) return;
    if (this.relaunched) this.relaunched.kill('SIGCONT');
    else this.handle.resume();
    this.paused = false;
  }

  async dispose(): Promise<void> {
    if (this.relaunched) await terminate(this.relaunched, 'SIGKILL');
  }
}

/**
 * The lock server as the generic faults see it: whichever server is the master now. Its admin connection
 * is a Sentinel client of its own, so it follows the failovers too.
 */
export class MasterNode implements LockNode {
  readonly name = 'master';
  private stopped: ReplicatedServer | undefined;

  constructor(
    private readonly current: () => ReplicatedServer,
    readonly admin: Redis,
  ) {}

  get proxy(): ChaosProxy {
    return this.current().proxy;
  }

  restart(): Promise<RestartTimes> {
    // An in-place restart without persistence would erase the locks under the replica's nose (it then
    // resyncs from the empty master): not a fault this topology claims to survive.
    return Promise.reject(new Error('the sentinel topology restarts its master only through kill-master'));
  }

  stop(): void {
    this.stopped = this.current();
    this.stopped.pause();
  }

  cont(): void {
    this.stopped?.resume();
    this.stopped = undefined;
  }

  keys(): Promise<Array<{ key: string; ttl: number }>> {
    return keysWithTtl(this.current().handle);
  }
}
