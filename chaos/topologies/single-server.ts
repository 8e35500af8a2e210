/**
 * One lock server behind one proxy, and the resource server: the setting every guarantee in
 * docs/guarantees.md is stated for.
 */
import { type RedisServer, startRedis } from '../../test/support/redis-server';
import type { KeySnapshot } from '../checks/key-hygiene';
import { hr } from '../common';
import type { Restart } from '../history';
import { ChaosProxy } from '../proxy';
import type { LockNode, Topology } from './topology';

/** Every key of `server` with its TTL in seconds (-1: none). */
export async function keysWithTtl(server: RedisServer): Promise<Array<{ key: string; ttl: number }>> {
  const keys: Array<{ key: string; ttl: number }> = [];
  for (const key of await server.keys()) keys.push({ key, ttl: await server.ttlOf(key) });
  return keys;
}

class ServerNode implements LockNode {
  readonly admin;

  constructor(
    readonly name: string,
    private readonly server: RedisServer,
    readonly proxy: ChaosProxy,
  ) {
    this.admin = server.client({ connectionName: 'chaos-admin' });
  }

  async restart(): Promise<Restart> {
    const t0 = hr();
    const wall0 = Date.now();
    await this.server.kill();
    const wall1 = Date.now();
    await this.server.restart();
    return { t0, t1: hr(), wall0, wall1 };
  }

  keys(): Promise<Array<{ key: string; ttl: number }>> {
    return keysWithTtl(this.server);
  }
}

export class SingleServer implements Topology {
  readonly name = 'single';
  private lockServer!: RedisServer;
  private proxy!: ChaosProxy;
  private node!: ServerNode;
  resource!: RedisServer;

  async start(): Promise<void> {
    [this.lockServer, this.resource] = await Promise.all([startRedis(), startRedis()]);
    this.proxy = new ChaosProxy(this.lockServer.port);
    await this.proxy.listen();
    this.node = new ServerNode('lock', this.lockServer, this.proxy);
  }

  get nodes(): readonly LockNode[] {
    return [this.node];
  }

  lockPorts(): number[] {
    return [this.proxy.port];
  }

  async snapshotKeys(keptPrefixes: readonly string[]): Promise<KeySnapshot> {
    return { lock: await this.node.keys(), resource: await keysWithTtl(this.resource), keptPrefixes };
  }

  heal(): void {
    this.proxy.heal();
  }

  async stop(): Promise<void> {
    await this.proxy.close();
    await this.lockServer.dispose();
    await this.resource.dispose();
  }
}
