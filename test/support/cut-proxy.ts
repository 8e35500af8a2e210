// A TCP proxy in front of one redis-server that reads the commands going up and the replies coming
// down, so it can drop a connection at a command boundary: after a script went up but before the WAIT
// pipelined behind it, or while that WAIT is the one command left unanswered. A proxy that drops at a
// byte count or a moment in time cannot tell those apart; both are what a client library must survive.
import { createConnection, type Socket } from 'node:net';
import { deferred } from './deferred';
import { TestProxy } from './test-proxy';

/** Where to drop the next connection that sends a command `command` matches (names in lower case). */
type Cut = { at: 'before' | 'pending'; command: RegExp; done: (sent: string[]) => void };
/** A command's name, or a pattern of names (`/^eval(sha)?$/`). */
type Command = string | RegExp;

interface Link {
  client: Socket;
  upstream: Socket;
  /** Names of the commands forwarded, in order. */
  sent: string[];
  /** How many of them Redis has answered (complete replies forwarded down). */
  answered: number;
  up: RespReader;
  down: RespReader;
  closed: boolean;
}

export class CutProxy extends TestProxy {
  /** Every connection accepted, in order. */
  readonly links: Link[] = [];
  private cut: Cut | undefined;

  /** A proxy on a free port in front of 127.0.0.1:`target`; closed after the test. */
  static async start(target: number): Promise<CutProxy> {
    return new CutProxy(await TestProxy.listening(), target);
  }

  /**
   * The next connection to send `command` is dropped just before it: what came before it reaches
   * Redis (which runs it, its replies lost), it and what follows do not. Resolves once dropped, with
   * the names of the commands that went up on that connection.
   */
  cutBefore(command: Command): Promise<string[]> {
    return this.arm('before', command);
  }

  /**
   * The next connection to send `command` is dropped once every command before it has been answered
   * and it has not: Redis is working on it (a WAIT blocked on its replicas). Resolves as cutBefore.
   */
  cutWhilePending(command: Command): Promise<string[]> {
    return this.arm('pending', command);
  }

  protected closeLinks(): void {
    for (const link of this.links) {
      this.drop(link);
      link.upstream.destroy();
    }
  }

  private arm(at: Cut['at'], command: Command): Promise<string[]> {
    const dropped = deferred<string[]>();
    const pattern = typeof command === 'string' ? new RegExp(`^${command.toLowerCase()}$`) : command;
    this.cut = { at, command: pattern, done: (sent) => dropped.resolve(sent) };
    return dropped.promise;
  }

  protected accept(client: Socket): void {
    const upstream = createConnection(this.target, '127.0.0.1');
    const link: Link = {
      client,
      upstream,
      sent: [],
      answered: 0,
      up: new RespReader(),
      down: new RespReader(),
      closed: false,
    };
    this.links.push(link);
    client.on('data', (chunk: Buffer) => this.fromClient(link, chunk));
    upstream.on('data', (chunk: Buffer) => this.fromRedis(link, chunk));
    for (const socket of [client, upstream]) {
      socket.on('error', () => this.drop(link));
      socket.on('close', () => this.drop(link));
    }
  }

  private fromClient(link: Link, chunk: Buffer): void {
    if (link.closed) return;
    for (const { end, value } of link.up.feed(chunk)) {
      const name = String((value as unknown[])[0] ?? '').toLowerCase();
      const cut = this.cut;
      if (cut?.at === 'before' && cut.command.test(name)) {
        this.fire(link);
        return;
      }
      link.sent.push(name);
      link.upstream.write(chunk.subarray(end.start, end.stop));
    }
    // A command split across chunks: its beginning goes up with the chunk it started in.
    const partial = link.up.partialFrom(chunk);
    if (partial) link.upstream.write(partial);
    this.checkPending(link);
  }

  private fromRedis(link: Link, chunk: Buffer): void {
    if (link.closed) return;
    link.answered += link.down.feed(chunk).length;
    link.client.write(chunk);
    this.checkPending(link);
  }

  private checkPending(link: Link): void {
    const cut = this.cut;
    if (cut?.at !== 'pending' || link.closed) return;
    if (cut.command.test(link.sent[link.answered] ?? '')) this.fire(link);
  }

  private fire(link: Link): void {
    const cut = this.cut as Cut;
    this.cut = undefined;
    link.closed = true;
    // A reset, as a failing network or a restarted proxy gives: the client learns of it at once. Redis
    // is sent the end of the stream instead, so it runs every command that went up before it closes.
    link.client.resetAndDestroy();
    link.upstream.end();
    cut.done(link.sent);
  }

  private drop(link: Link): void {
    if (link.closed) return;
    link.closed = true;
    link.client.destroy();
    link.upstream.destroy();
  }
}

/**
 * Splits a RESP stream into whole values (commands going up, replies coming down): enough of RESP2 and
 * RESP3 for what a lock and its client libraries send and receive.
 */
class RespReader {
  private buffer = Buffer.alloc(0);
  /** Bytes of `buffer` that came in earlier chunks. */
  private carried = 0;
  /** Where, in the last chunk, the value not complete yet begins (negative: in an earlier chunk). */
  private pendingStart = 0;

  /**
   * Adds `chunk`; returns the values it completed, each with its bytes' range in `chunk` (a value
   * begun in an earlier chunk starts at 0).
   */
  feed(chunk: Buffer): { value: unknown; end: { start: number; stop: number } }[] {
    this.carried = this.buffer.length;
    this.buffer = Buffer.concat([this.buffer, chunk]);
    const values: { value: unknown; end: { start: number; stop: number } }[] = [];
    let offset = 0;
    for (;;) {
      const parsed = parse(this.buffer, offset);
      if (!parsed) break;
      const start = Math.max(0, offset - this.carried);
      values.push({ value: parsed.value, end: { start, stop: parsed.next - this.carried } });
      offset = parsed.next;
    }
    this.buffer = this.buffer.subarray(offset);
    this.pendingStart = offset - this.carried;
    return values;
  }

  /** The part of `chunk` that begins a value not complete yet, if any. */
  partialFrom(chunk: Buffer): Buffer | undefined {
    if (this.buffer.length === 0) return undefined;
    return chunk.subarray(Math.max(0, this.pendingStart));
  }
}

/** One RESP value at `offset`, and where the next begins; undefined when `buffer` ends first. */
function parse(buffer: Buffer, offset: number): { value: unknown; next: number } | undefined {
  const eol = buffer.indexOf('\r\n', offset);
  if (eol < 0) return undefined;
  const type = String.fromCharCode(buffer[offset]);
  const line = buffer.toString('latin1', offset + 1, eol);
  const after = eol + 2;
  switch (type) {
    case '$':
    case '=':
    case '!': {
      const length = Number(line);
      if (length < 0) return { value: null, next: after };
      if (buffer.length < after + length + 2) return undefined;
      return { value: buffer.toString('latin1', after, after + length), next: after + length + 2 };
    }
    case '*':
    case '~':
    case '>':
    case '%':
    case '|': {
      const count = Number(line) * (type === '%' || type === '|' ? 2 : 1);
      const items: unknown[] = [];
      let next = after;
      for (let i = 0; i < count; i++) {
        const item = parse(buffer, next);
        if (!item) return undefined;
        items.push(item.value);
        next = item.next;
      }
      // An attribute (|) comes before the reply it describes: both make one reply.
      if (type === '|') return parse(buffer, next);
      return { value: count < 0 ? null : items, next };
    }
    default:
      // + - : _ , # ( and inline commands: one line.
      return { value: line, next: after };
  }
}
