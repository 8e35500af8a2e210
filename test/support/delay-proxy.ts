// A TCP proxy in front of one redis-server that hands every reply to the client `ms` late, as a slow
// network or a server starved of CPU does: commands go up at once, replies come back in order, late.
import { createConnection, type Socket } from 'node:net';
import { TestProxy } from './test-proxy';

export class DelayProxy extends TestProxy {
  private readonly links: { client: Socket; upstream: Socket }[] = [];

  private constructor(
    server: Awaited<ReturnType<typeof TestProxy.listening>>,
    target: number,
    private readonly ms: number,
  ) {
    super(server, target);
  }

  /** A proxy on a free port in front of 127.0.0.1:`target`, its replies `ms` late; closed after the test. */
  static async start(target: number, ms: number): Promise<DelayProxy> {
    return new DelayProxy(await TestProxy.listening(), target, ms);
  }

  protected accept(client: Socket): void {
    const upstream = createConnection({ host: '127.0.0.1', port: this.target });
    this.links.push({ client, upstream });
    for (const socket of [client, upstream]) socket.on('error', () => {});
    client.on('data', (chunk) => upstream.write(chunk));
    // Timers of one delay fire in the order they were set: the replies keep their order.
    upstream.on('data', (chunk) => setTimeout(() => client.writable && client.write(chunk), this.ms));
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
