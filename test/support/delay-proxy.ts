// A TCP proxy in front of one redis-server that hands every reply to the client `ms` late, as a slow
// network or a server starved of CPU does: commands go up at once, replies come back in order, late.
// Or, the other way, every command reaches the server `ms` late, its replies and messages at once.
import { createConnection, type Socket } from 'node:net';
import { TestProxy } from './test-proxy';

export class DelayProxy extends TestProxy {
  private readonly links: { client: Socket; upstream: Socket }[] = [];

  private constructor(
    server: Awaited<ReturnType<typeof TestProxy.listening>>,
    target: number,
    private readonly ms: number,
    private readonly delayed: 'replies' | 'commands',
  ) {
    super(server, target);
  }

  /**
   * A proxy on a free port in front of 127.0.0.1:`target`, its replies (or, with `delayed: 'commands'`,
   * the commands) `ms` late; closed after the test.
   */
  static async start(
    target: number,
    ms: number,
    delayed: 'replies' | 'commands' = 'replies',
  ): Promise<DelayProxy> {
    return new DelayProxy(await TestProxy.listening(), target, ms, delayed);
  }

  protected accept(client: Socket): void {
    const upstream = createConnection({ host: '127.0.0.1', port: this.target });
    this.links.push({ client, upstream });
    for (const socket of [client, upstream]) socket.on('error', () => {});
    // Timers of one delay fire in the order they were set: what is delayed keeps its order.
    const late = (to: Socket) => (chunk: Buffer) => setTimeout(() => to.writable && to.write(chunk), this.ms);
    const now = (to: Socket) => (chunk: Buffer) => to.write(chunk);
    client.on('data', this.delayed === 'commands' ? late(upstream) : now(upstream));
    upstream.on('data', this.delayed === 'replies' ? late(client) : now(client));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  }

  protected closeLinks(): void {
    for (const { client, upstream } of this.links) {
      client.destroy();
      upstream.destroy();
    }
  }
}
