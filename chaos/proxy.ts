/**
 * A TCP proxy between the lock clients and Redis, written with node:net, that the nemesis drives:
 * - latency: every chunk, each way, is held `ms` before it is forwarded (order is kept);
 * - freeze: nothing is forwarded until thaw (bytes are kept, as TCP would retransmit them): a partition
 *   that heals;
 * - drop: every open connection is destroyed at once (clients see a reset and reconnect);
 * - retarget: new connections go to another server, as a client's address does after a failover.
 * When Redis is down, a new client connection is closed as soon as the upstream connect fails.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

interface Direction {
  to: Socket;
  queue: { at: number; chunk: Buffer }[];
  timer: NodeJS.Timeout | undefined;
}

interface Connection {
  client: Socket;
  upstream: Socket;
  up: Direction;
  down: Direction;
}

export interface ProxyStats {
  accepted: number;
  dropped: number;
  upstreamFailures: number;
  bytes: number;
}

export class ChaosProxy {
  private readonly server: Server;
  private readonly connections = new Set<Connection>();
  private latency = 0;
  private frozen = false;
  readonly stats: ProxyStats = { accepted: 0, dropped: 0, upstreamFailures: 0, bytes: 0 };
  port = 0;

  constructor(private upstreamPort: number) {
    this.server = createServer((client) => this.accept(client));
  }

  listen(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => {
        const address = this.server.address();
        if (address === null || typeof address !== 'object') return reject(new Error('proxy: no address'));
        this.port = address.port;
        resolve(address.port);
      });
    });
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  setLatency(ms: number): void {
    this.latency = Math.max(0, ms);
  }

  freeze(): void {
    this.frozen = true;
  }

  thaw(): void {
    this.frozen = false;
    for (const c of this.connections) {
      this.flush(c.up);
      this.flush(c.down);
    }
  }

  /** Back to a transparent pipe. */
  heal(): void {
    this.setLatency(0);
    this.thaw();
  }

  /** Sends the connections made from now on to `port`; open ones stay where they are. */
  retarget(port: number): void {
    this.upstreamPort = port;
  }

  /** Destroys every open connection; returns how many. */
  dropAll(): number {
    const all = [...this.connections];
    for (const c of all) this.closeConnection(c);
    this.stats.dropped += all.length;
    return all.length;
  }

  async close(): Promise<void> {
    for (const c of [...this.connections]) this.closeConnection(c);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    this.stats.accepted++;
    const upstream = connect(this.upstreamPort, '127.0.0.1');
    const c: Connection = {
      client,
      upstream,
      up: { to: upstream, queue: [], timer: undefined },
      down: { to: client, queue: [], timer: undefined },
    };
    this.connections.add(c);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    client.on('data', (chunk) => this.forward(c.up, chunk));
    upstream.on('data', (chunk) => this.forward(c.down, chunk));
    upstream.once('error', () => {
      this.stats.upstreamFailures++;
    });
    client.on('error', () => {});
    for (const socket of [client, upstream]) socket.once('close', () => this.closeConnection(c));
  }

  private forward(d: Direction, chunk: Buffer): void {
    this.stats.bytes += chunk.length;
    if (!this.frozen && this.latency === 0 && d.queue.length === 0) {
      d.to.write(chunk);
      return;
    }
    d.queue.push({ at: performance.now() + this.latency, chunk });
    this.flush(d);
  }

  private flush(d: Direction): void {
    clearTimeout(d.timer);
    d.timer = undefined;
    if (this.frozen || d.to.destroyed) return;
    const now = performance.now();
    while (d.queue.length > 0 && d.queue[0].at <= now) d.to.write(d.queue.shift()!.chunk);
    if (d.queue.length > 0) {
      d.timer = setTimeout(() => this.flush(d), Math.max(1, d.queue[0].at - now));
    }
  }

  private closeConnection(c: Connection): void {
    if (!this.connections.delete(c)) return;
    clearTimeout(c.up.timer);
    clearTimeout(c.down.timer);
    c.client.destroy();
    c.upstream.destroy();
  }
}
