// What the tests' TCP proxies share: a server on a free port of 127.0.0.1 in front of one redis-server,
// closed after the test that opened it.
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach } from '@jest/globals';

export abstract class TestProxy {
  protected constructor(
    private readonly server: Server,
    protected readonly target: number,
  ) {
    server.on('connection', (client) => this.accept(client));
    opened.push(this);
  }

  /** A server listening on a free port, for a subclass to take. */
  protected static async listening(): Promise<Server> {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return server;
  }

  get port(): number {
    const address = this.server.address();
    if (typeof address !== 'object' || address === null) throw new Error('proxy not listening');
    return address.port;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Ends every connection and stops accepting. */
  async close(): Promise<void> {
    this.closeLinks();
    this.server.close();
  }

  protected abstract accept(client: Socket): void;

  protected abstract closeLinks(): void;
}

const opened: TestProxy[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((proxy) => proxy.close()));
});
