/**
 * One lock server behind one proxy, and the resource server: the setting every guarantee in
 * docs/guarantees.md is stated for.
 */
import { type RedisServer, startRedis } from '../../test/support/redis-server';
import type { KeySnapshot } from '../checks/key-hygiene';
import { SINGLE_SERVER_FAULTS } from '../faults/kinds';
import { ChaosProxy } from '../proxy';
import { keysWithTtl, ServerNode } from './server-node';
import type { LockNode, Topology } from './topology';

export class SingleServer implements Topology {
  readonly name = 'single';
  readonly faults = SINGLE_SERVER_FAULTS;
  private proxy!: ChaosProxy;
  private node!: ServerNode;
  resource!: RedisServer;

  async start(): Promise<void> {
    const [lockServer, resource] = await Promise.all([startRedis(), startRedis()]);
    this.resource = resource;
    this.proxy = new ChaosProxy(lockServer.port);
    await this.proxy.listen();
    this.node = new ServerNode('lock', lockServer, this.proxy);
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
    this.node.cont();
  }

  async stop(): Promise<void> {
    await this.proxy.close();
    await this.node.dispose();
    await this.resource.dispose();
  }
}
