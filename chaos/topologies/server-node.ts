/**
 * One lock redis-server as a fault sees it: a direct admin connection, the proxy the workers reach it
 * through, and its process (kill and start again empty, SIGSTOP, SIGCONT). Shared by the topologies.
 */
import type { RedisServer } from '../../test/support/redis-server';
import { hr, sleep } from '../common';
import type { RestartTimes } from '../history';
import type { ChaosProxy } from '../proxy';
import type { LockNode } from './topology';

/** Every key of `server` with its TTL in seconds (-1: none). */
export async function keysWithTtl(server: RedisServer): Promise<Array<{ key: string; ttl: number }>> {
  const keys: Array<{ key: string; ttl: number }> = [];
  for (const key of await server.keys()) keys.push({ key, ttl: await server.ttlOf(key) });
  return keys;
}

export class ServerNode implements LockNode {
  readonly admin;
  private stopped = false;

  constructor(
    readonly name: string,
    private readonly server: RedisServer,
    readonly proxy: ChaosProxy,
  ) {
    this.admin = server.client({ connectionName: 'chaos-admin' });
  }

  async restart(downMs = 0): Promise<RestartTimes> {
    // A stopped process still dies of SIGKILL; only the bookkeeping needs resetting.
    this.stopped = false;
    const t0 = hr();
    const wall0 = Date.now();
    await this.server.kill();
    const wall1 = Date.now();
    if (downMs > 0) await sleep(downMs);
    await this.server.restart();
    return { t0, t1: hr(), wall0, wall1 };
  }

  stop(): void {
    this.server.pause();
    this.stopped = true;
  }

  cont(): void {
    if (!this.stopped) return;
    this.server.resume();
    this.stopped = false;
  }

  keys(): Promise<Array<{ key: string; ttl: number }>> {
    return keysWithTtl(this.server);
  }

  dispose(): Promise<void> {
    return this.server.dispose();
  }
}
