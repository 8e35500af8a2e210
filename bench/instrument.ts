/**
 * Counts the commands a library sends, at the client: every ioredis command passes through
 * `sendCommand`, so wrapping it on the client handed to the library, and on every `duplicate()` made from
 * it (this library's subscriber connection), sees all of them. One EVALSHA counts as one command; it is
 * labelled with the script's name when the script is known. The critical section's GET/SET of its
 * counter keys go through the same connection and are counted apart.
 */
import type { Command, Redis } from 'ioredis';
import { COUNTER_PREFIX } from './ipc';

type SendCommand = (command: Command, stream?: unknown) => unknown;

export class CommandCounts {
  private counts = new Map<string, number>();
  /** Script SHA1 to a readable name, for EVALSHA labels. */
  private readonly scriptNames = new Map<string, string>();
  dataGets = 0;
  dataSets = 0;
  connections = 0;

  nameScript(sha: string, name: string): void {
    this.scriptNames.set(sha, name);
  }

  /** Picks up the scripts a library registered with ioredis `defineCommand` on this client. */
  nameDefinedScripts(client: Redis): void {
    const set = (client as unknown as { scriptsSet?: Record<string, { sha: string }> }).scriptsSet ?? {};
    for (const [name, script] of Object.entries(set)) {
      // This library names its commands redisLock_<script>_<hash>.
      this.nameScript(script.sha, name.replace(/^redisLock_/, '').replace(/_[0-9a-f]{10}$/, ''));
    }
  }

  count(command: Command): void {
    this.countArgs(command.name, command.args);
  }

  /** One command by its name and arguments (node-redis' sendCommand gives an array of strings). */
  countArgs(commandName: string, args: readonly unknown[]): void {
    const name = commandName.toLowerCase();
    const first = args[0];
    if ((name === 'get' || name === 'set') && typeof first === 'string' && first.startsWith(COUNTER_PREFIX)) {
      if (name === 'get') this.dataGets++;
      else this.dataSets++;
      return;
    }
    let label = name;
    if (name === 'evalsha' && typeof first === 'string') {
      label = `evalsha ${this.scriptNames.get(first) ?? first.slice(0, 8)}`;
    }
    this.counts.set(label, (this.counts.get(label) ?? 0) + 1);
  }

  total(): number {
    let sum = 0;
    for (const n of this.counts.values()) sum += n;
    return sum;
  }

  snapshot(): Record<string, number> {
    return Object.fromEntries(this.counts);
  }

  reset(): void {
    this.counts = new Map();
    this.dataGets = 0;
    this.dataSets = 0;
  }
}

/**
 * Wraps `client` (and, recursively, whatever it duplicates) so `counts` sees every command sent. If
 * `onMessage` is given, it also sees every Pub/Sub message the duplicates receive, before the library does.
 */
export function instrument(
  client: Redis,
  counts: CommandCounts,
  onMessage?: (channel: string, message: string) => void,
): Redis {
  counts.connections++;
  const send = client.sendCommand as SendCommand;
  (client as unknown as { sendCommand: SendCommand }).sendCommand = function (
    this: Redis,
    command: Command,
    stream?: unknown,
  ) {
    counts.count(command);
    return send.call(this, command, stream);
  };
  const duplicate = client.duplicate;
  client.duplicate = function (this: Redis, override) {
    const copy = instrument(duplicate.call(this, override), counts, onMessage);
    if (onMessage) copy.on('message', onMessage);
    return copy;
  };
  return client;
}

/** What counting needs of a node-redis client: its sendCommand, on the instance. */
interface NodeRedisSender {
  sendCommand(args: string[], options?: unknown): Promise<unknown>;
}

/**
 * Wraps a node-redis client's `sendCommand`, through which every command of its own goes (this library
 * sends all of its commands so). Its wake-up connection, a duplicate, is not counted: one SUBSCRIBE.
 */
export function instrumentNodeRedis<T extends NodeRedisSender>(client: T, counts: CommandCounts): T {
  counts.connections++;
  const send = client.sendCommand.bind(client);
  client.sendCommand = (args: string[], options?: unknown) => {
    counts.countArgs(args[0], args.slice(1));
    return send(args, options);
  };
  return client;
}
