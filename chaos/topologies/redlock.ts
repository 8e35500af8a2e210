/**
 * Five independent lock servers, each behind its own proxy, holding each lock on a majority of them
 * (the quorum store, Redlock), and the resource server. A fault aimed at a server hits one node, so a
 * majority always keeps running; what the checkers allow when a node loses its state is in
 * chaos/checks/validity-windows.ts.
 */
import { type RedisServer, startRedis } from '../../test/support/redis-server';
import type { KeySnapshot } from '../checks/key-hygiene';
import { QUORUM_FAULTS } from '../faults/kinds';
import { ChaosProxy } from '../proxy';
import { keysWithTtl, ServerNode } from './server-node';
import type { LockNode, Topology } from './topology';

const NODES = 5;

export class Redlock implements Topology {
  readonly name = 'redlock';
  readonly faults = QUORUM_FAULTS;
  private servers: ServerNode[] = [];
  resource!: RedisServer;

  async start(): Promise<void> {
    const started = await Promise.all(Array.from({ length: NODES + 1 }, () => startRedis()));
    this.resource = started[NODES];
    this.servers = await Promise.all(
      started.slice(0, NODES).map(async (server, i) => {
        const proxy = new ChaosProxy(server.port);
        await proxy.listen();
        return new ServerNode(`n${i + 1}`, server, proxy);
      }),
    );
  }

  get nodes(): readonly LockNode[] {
    return this.servers;
  }

  lockPorts(): number[] {
    return this.servers.map((node) => node.proxy.port);
  }

  async snapshotKeys(keptPrefixes: readonly string[]): Promise<KeySnapshot> {
    const lock: KeySnapshot['lock'][number][] = [];
    for (const node of this.servers) {
      for (const entry of await node.keys()) lock.push({ ...entry, node: node.name });
    }
    return { lock, resource: await keysWithTtl(this.resource), keptPrefixes };
  }

  heal(): void {
    for (const node of this.servers) {
      node.proxy.heal();
      node.cont();
    }
  }

  async stop(): Promise<void> {
    for (const node of this.servers) await node.proxy.close();
    await Promise.all(this.servers.map((node) => node.dispose()));
    await this.resource.dispose();
  }
}
