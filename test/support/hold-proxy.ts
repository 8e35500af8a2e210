// A TCP proxy in front of one redis-server that can hold back the connections it accepts (their bytes
// are kept until release(), as a slow network or a server slow to accept would) and drop one of them
// (as a connection reset does): for the moments a client opens or loses a connection of its own.
import { createConnection, type Socket } from 'node:net';
import { deferred } from './deferred';
import { TestProxy } from './test-proxy';

interface Link {
  client: Socket;
  upstream?: Socket;
  /** Bytes the client sent while the link was held. */
  pending: Buffer[];
}

export class HoldProxy extends TestProxy {
  /** Every connection accepted, in order. */
  readonly accepted: Link[] = [];
  private holding = false;
  private held: Link[] = [];
  private whenHeldNext = deferred<void>();

  /** A proxy on a free port in front of 127.0.0.1:`target`; closed after the test. */
  static async start(target: number): Promise<HoldProxy> {
    return new HoldProxy(await TestProxy.listening(), target);
  }

  /** Connections accepted from now on are held (accepted, but nothing reaches Redis) until release(). */
  hold(): void {
    this.holding = true;
  }

  /** Resolves once a connection is being held. */
  whenHeld(): Promise<void> {
    return this.held.length > 0 ? Promise.resolve() : this.whenHeldNext.promise;
  }

  /** Lets the held connections through, with what they sent meanwhile; no more are held. */
  release(): void {
    this.holding = false;
    for (const link of this.held.splice(0)) this.connect(link);
  }

  /** Resets connection number `index` (in accept order), both ways. */
  drop(index: number): void {
    const link = this.accepted[index];
    link.client.destroy();
    link.upstream?.destroy();
  }

  protected closeLinks(): void {
    for (const link of this.accepted) {
      link.client.destroy();
      link.upstream?.destroy();
    }
  }

  protected accept(client: Socket): void {
    const link: Link = { client, pending: [] };
    this.accepted.push(link);
    client.on('error', () => {});
    client.on('close', () => link.upstream?.destroy());
    if (!this.holding) {
      this.connect(link);
      return;
    }
    client.on('data', (chunk: Buffer) => {
      if (!link.upstream) link.pending.push(chunk);
    });
    this.held.push(link);
    this.whenHeldNext.resolve();
    this.whenHeldNext = deferred<void>();
  }

  private connect(link: Link): void {
    const { client } = link;
    if (client.destroyed) return;
    const upstream = createConnection(this.target, '127.0.0.1');
    link.upstream = upstream;
    upstream.on('error', () => {});
    upstream.on('close', () => client.destroy());
    for (const chunk of link.pending.splice(0)) upstream.write(chunk);
    client.removeAllListeners('data');
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
