/**
 * The lock's connection (lib/protocol/connection.ts) to a simulated server, as a client library would
 * give it: commands and replies travel through the simulated network, a connection that drops loses the
 * replies on their way and connects again after a while, and the calls it had sent either fail (as
 * node-redis fails them) or are sent again on the new connection (as ioredis resends them: a script may
 * then run twice). The wake-up subscription is a connection of its own, subscribed again after a drop.
 */
import { createHash } from 'node:crypto';
import type {
  ConnectionEvent,
  ConnectionState,
  Delivered,
  RedisConnection,
  Script,
  ScriptCall,
  Subscriber,
} from '../lib/protocol/connection';
import type { Network, Pipe } from './network';
import type { Actor } from './scheduler';
import type { PushTarget, SimServer } from './sim-server';

/** What happens to the calls a dropped connection had sent: failed, or sent again once it is back. */
export type OnDrop = 'fail' | 'resend';

interface Request {
  args: readonly (string | number)[];
  resolve: (value: Delivered) => void;
  reject: (error: Error) => void;
}

/** Settings a world gives each connection. */
export interface LinkSettings {
  onDrop: OnDrop;
  /** How long a dropped connection takes to come back, µs. */
  reconnectUs: () => number;
}

/** Script names by SHA1, for the history and the invariants. */
const scriptNames = new Map<string, string>();

/** The name of the script an EVALSHA or EVAL runs (as the lock's ScriptRunner named it), if any. */
export function scriptOf(args: readonly (string | number)[]): string | undefined {
  const command = String(args[0]).toUpperCase();
  if (command === 'EVALSHA') return scriptNames.get(String(args[1]));
  if (command === 'EVAL') return scriptNames.get(createHash('sha1').update(String(args[1])).digest('hex'));
  return undefined;
}

/** The socket a reply came on: one object per connection attempt. */
class Socket {
  constructor(readonly n: number) {}
}

export class SimConnection implements RedisConnection {
  readonly client: object = {};
  readonly library = 'simulated';
  readonly cluster = false;
  state: ConnectionState = 'ready';
  private socket = new Socket(0);
  private up: Pipe;
  private down: Pipe;
  private inflight: Request[] = [];
  private readonly listeners = new Map<ConnectionEvent, Set<() => void>>();
  readonly subscribers = new Set<SimSubscriber>();

  constructor(
    readonly server: SimServer,
    readonly actor: Actor,
    private readonly network: Network,
    private readonly settings: LinkSettings,
  ) {
    this.up = network.pipe(server.actor);
    this.down = network.pipe(actor);
  }

  get name(): string {
    return this.server.name;
  }

  get status(): string {
    return this.state;
  }

  attempt(): Promise<void> {
    if (this.state === 'ready') return Promise.resolve();
    if (this.state === 'ended') return Promise.reject(new Error('Connection is closed.'));
    return new Promise((resolve) => {
      const off = this.on('ready', () => {
        off();
        resolve();
      });
    });
  }

  on(event: ConnectionEvent, listener: () => void): () => void {
    let set = this.listeners.get(event);
    if (!set) {
      set = new Set();
      this.listeners.set(event, set);
    }
    set.add(listener);
    return () => set.delete(listener);
  }

  private emit(event: ConnectionEvent): void {
    for (const listener of [...(this.listeners.get(event) ?? [])]) listener();
  }

  script(script: Script): ScriptCall {
    const { sha, lua, keys } = script;
    scriptNames.set(sha, script.name);
    // As a client's own script call does: EVALSHA, and EVAL once the server says it lacks the script.
    return async (args) => {
      try {
        return (await this.send(['EVALSHA', sha, keys, ...args])).value;
      } catch (error) {
        if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error;
        return (await this.send(['EVAL', lua, keys, ...args])).value;
      }
    };
  }

  inOrder(_key: string, commands: readonly (readonly (string | number)[])[]): Promise<Delivered>[] {
    return commands.map((command) => this.send(command));
  }

  async command(args: readonly (string | number)[]): Promise<unknown> {
    return (await this.send(args)).value;
  }

  async masters(): Promise<RedisConnection[]> {
    return [this];
  }

  async subscriber(): Promise<Subscriber> {
    const subscriber = new SimSubscriber(this.server, this.actor, this.network, this.settings);
    this.subscribers.add(subscriber);
    return subscriber;
  }

  private send(args: readonly (string | number)[]): Promise<Delivered> {
    if (this.state !== 'ready') return Promise.reject(new Error(`Connection is ${this.state}.`));
    return new Promise((resolve, reject) => {
      const request: Request = { args, resolve, reject };
      this.inflight.push(request);
      this.transmit(request);
    });
  }

  private transmit(request: Request): void {
    const socket = this.socket;
    this.up.send(() => {
      // Sent on a connection that has dropped since (or to a server that is down): it never ran.
      if (this.socket !== socket || this.server.down) return;
      const outcome = this.server.execute(request.args);
      this.down.send(() => {
        if (this.socket !== socket) return; // lost with its connection
        const at = this.inflight.indexOf(request);
        if (at >= 0) this.inflight.splice(at, 1);
        if (outcome.ok) request.resolve({ value: outcome.value, via: socket });
        else request.reject(outcome.error);
      });
    });
  }

  /** The connection drops: what is on its way is lost; it connects again after a while. */
  drop(): void {
    if (this.state !== 'ready') return;
    this.socket = new Socket(this.socket.n + 1);
    this.up = this.network.pipe(this.server.actor);
    this.down = this.network.pipe(this.actor);
    this.state = 'down';
    const sent = this.inflight;
    if (this.settings.onDrop === 'fail') {
      this.inflight = [];
      for (const request of sent) request.reject(new Error('Socket closed unexpectedly'));
    }
    this.emit('down');
    this.reconnect();
  }

  /** Connects again after a while, and again after that while the server is down. */
  private reconnect(): void {
    this.network.scheduler.after(this.settings.reconnectUs(), this.actor, () => {
      if (this.state !== 'down') return;
      if (this.server.down) return this.reconnect();
      this.state = 'ready';
      this.emit('ready');
      for (const request of this.inflight) this.transmit(request);
    });
  }

  /** Its server restarted: this connection and its subscriptions drop, and connect again once it is up. */
  dropForRestart(): void {
    this.drop();
    for (const subscriber of this.subscribers) subscriber.lose();
  }

  /** The process is gone: the server sees its connections close. */
  crashed(): void {
    this.state = 'ended';
    this.socket = new Socket(-1);
    for (const subscriber of this.subscribers) subscriber.crashed();
  }
}

/** The wake-up subscription's connection. */
export class SimSubscriber implements Subscriber {
  ready = false;
  private socket = new Socket(0);
  /** What the server pushes to on the current socket. */
  private target: PushTarget = this.targetOn(this.socket);
  private up: Pipe;
  private down: Pipe;
  private readonly channels = new Map<string, (message: string) => void>();
  private readonly resubscribed: (() => void)[] = [];
  private readonly ended: (() => void)[] = [];
  private closed = false;

  constructor(
    private readonly server: SimServer,
    private readonly actor: Actor,
    private readonly network: Network,
    private readonly settings: LinkSettings,
  ) {
    this.up = network.pipe(server.actor);
    this.down = network.pipe(actor);
  }

  subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    this.channels.set(channel, onMessage);
    return new Promise((resolve, reject) => {
      this.request(
        channel,
        () => {
          this.ready = true;
          resolve();
        },
        reject,
      );
    });
  }

  private request(channel: string, confirmed: () => void, failed: (error: Error) => void): void {
    const socket = this.socket;
    this.up.send(() => {
      if (this.socket !== socket || this.server.down) return;
      this.server.subscribe(channel, this.target);
      this.down.send(() => {
        if (this.socket === socket) confirmed();
      });
    });
    if (this.closed) failed(new Error('subscriber closed'));
  }

  /** Where the server sends the messages of `socket`, on their way to the service. */
  private targetOn(socket: Socket): PushTarget {
    return {
      push: (channel, message) =>
        this.down.send(() => {
          if (this.socket === socket) this.channels.get(channel)?.(message);
        }),
    };
  }

  /** A new socket: the old one's messages and replies are lost, and the server learns of its close. */
  private replaceSocket(n: number): void {
    const old = this.target;
    this.socket = new Socket(n);
    this.target = this.targetOn(this.socket);
    this.up = this.network.pipe(this.server.actor);
    this.down = this.network.pipe(this.actor);
    // One latency later: until then the server still counts it, and what it sends reaches nobody.
    this.network.pipe(this.server.actor).send(() => this.server.unsubscribeAll(old));
  }

  onResubscribed(listener: () => void): void {
    this.resubscribed.push(listener);
  }

  onEnd(listener: () => void): void {
    this.ended.push(listener);
  }

  async close(): Promise<void> {
    this.drop();
  }

  drop(): void {
    if (this.closed) return;
    this.closed = true;
    this.ready = false;
    this.replaceSocket(-1);
  }

  /**
   * The connection drops (a lost push: what the server sends before it learns of the close reaches
   * nobody), and the client subscribes again after a while.
   */
  lose(): void {
    if (this.closed || !this.ready) return;
    this.ready = false;
    this.replaceSocket(this.socket.n + 1);
    this.resubscribe();
  }

  /** Subscribes again after a while, and again after that while the server is down. */
  private resubscribe(): void {
    this.network.scheduler.after(this.settings.reconnectUs(), this.actor, () => {
      if (this.closed) return;
      if (this.server.down) return this.resubscribe();
      let left = this.channels.size;
      for (const channel of this.channels.keys()) {
        this.request(
          channel,
          () => {
            if (--left > 0) return;
            this.ready = true;
            for (const listener of this.resubscribed) listener();
          },
          () => {},
        );
      }
    });
  }

  /** The process is gone: as a drop, for good. */
  crashed(): void {
    this.drop();
  }
}
