/**
 * A Redis server in memory, for a deterministic simulation: it runs the lock's Lua scripts unchanged
 * (lua-vm.ts) and the commands they and the library send (commands/), one at a time, synchronously and
 * atomically, on the clock it is given. It keeps no timers and reads no time or randomness of its own;
 * what PUBLISH reaches, and how many listen on a channel, the simulation says. Replies come as ioredis
 * gives them, and error replies are thrown as ReplyError.
 */
import { type Command, type CommandTable, type Server } from './commands/command';
import { KEY_COMMANDS } from './commands/keys';
import { LIST_COMMANDS } from './commands/lists';
import { SCRIPTING_COMMANDS } from './commands/scripting';
import { SERVER_COMMANDS } from './commands/server';
import { SORTED_SET_COMMANDS } from './commands/sorted-sets';
import { STRING_COMMANDS } from './commands/strings';
import { type KeySnapshot, Keyspace } from './keyspace';
import { runScript } from './lua-vm';
import { type Reply, ReplyError, StatusReply, wrongArity } from './replies';

export type { KeySnapshot } from './keyspace';
export { ReplyError } from './replies';

export interface SimRedisOptions {
  /** This server's time, integer µs: read once per command, and once per script (Redis freezes it). */
  clock: () => number;
  /** Delivers a PUBLISH; returns how many subscribers received it. */
  publish: (channel: string, message: string) => number;
  /** PUBSUB NUMSUB's count for `channel`; 0 for every channel when not given. */
  subscribers?: (channel: string) => number;
  /** REDIS_VERSION_NUM: 0x070200 (7.2.0) unless given; 0x060200 runs the scripts' Redis 6.2 paths. */
  version?: number;
}

const COMMANDS: CommandTable = {
  ...KEY_COMMANDS,
  ...STRING_COMMANDS,
  ...LIST_COMMANDS,
  ...SORTED_SET_COMMANDS,
  ...SERVER_COMMANDS,
  ...SCRIPTING_COMMANDS,
};

/** A reply as ioredis hands it over: a status reply as its text; an error inside an array stays a value. */
function clientValue(reply: Reply): unknown {
  if (reply instanceof StatusReply) return reply.status;
  if (Array.isArray(reply)) return reply.map(clientValue);
  return reply;
}

/** Redis' refusal of a command it does not know, quoting the first arguments (128 characters at most). */
function unknownCommand(args: readonly string[]): ReplyError {
  let quoted = '';
  for (let i = 1; i < args.length && quoted.length < 128; i++) {
    quoted += `'${args[i].slice(0, 128 - quoted.length)}' `;
  }
  return new ReplyError(
    `ERR unknown command '${args[0].slice(0, 128)}', with args beginning with: ${quoted}`,
  );
}

export class SimRedis {
  /** REDIS_VERSION_NUM this server reports and behaves as. */
  readonly version: number;
  private readonly keyspace = new Keyspace();
  private readonly state: { -readonly [K in keyof Server]: Server[K] };

  constructor(private readonly options: SimRedisOptions) {
    this.version = options.version ?? 0x070200;
    const host = { version: this.version, command: (args: string[]) => this.execute(args, true) };
    this.state = {
      keyspace: this.keyspace,
      version: this.version,
      nowUs: 0,
      evictedKeys: 0,
      scripts: new Map(),
      publish: (channel, message) => options.publish(channel, message),
      subscribers: (channel) => options.subscribers?.(channel) ?? 0,
      runScript: (text, sha, keys, args) => runScript(text, sha, keys, args, host),
    };
  }

  /**
   * Runs one command, atomically: its reply as ioredis would give it (integers as numbers, bulk strings
   * as strings, nil as null, status replies as their text), or a thrown ReplyError with Redis' message.
   */
  call(args: readonly (string | number)[]): unknown {
    this.tick();
    const reply = this.execute(args.map(String), false);
    if (reply instanceof ReplyError) throw reply;
    return clientValue(reply);
  }

  /** Takes `key` out as maxmemory eviction would; false when it was not there. */
  evict(key: string): boolean {
    this.tick();
    const evicted = this.keyspace.delete(key);
    if (evicted) this.state.evictedKeys++;
    return evicted;
  }

  /** A restart without persistence: every key is gone, and every script is forgotten. */
  flushAll(): void {
    this.keyspace.flush();
    this.state.scripts.clear();
  }

  /** Every live key, sorted by name, with its type, value and expiry (ms). */
  snapshot(): KeySnapshot[] {
    this.tick();
    return this.keyspace.snapshot();
  }

  /** PTTL of `key`: ms left, -1 without expiry, -2 when missing. */
  ttlOf(key: string): number {
    this.tick();
    return this.keyspace.ttl(key);
  }

  private tick(): void {
    const nowUs = Math.floor(this.options.clock());
    this.state.nowUs = nowUs;
    this.keyspace.nowMs = Math.floor(nowUs / 1000);
  }

  /** Runs `args` (`inScript`: for a script, which Redis words some refusals for); an error is returned. */
  private execute(args: string[], inScript: boolean): Reply {
    const command: Command | undefined = args.length > 0 ? COMMANDS[args[0].toUpperCase()] : undefined;
    if (!command || (command.since ?? 0) > this.version) {
      return inScript
        ? new ReplyError('ERR Unknown Redis command called from script')
        : unknownCommand(args.length > 0 ? args : ['']);
    }
    const { arity } = command;
    if (arity > 0 ? args.length !== arity : args.length < -arity) {
      return inScript
        ? new ReplyError('ERR Wrong number of args calling Redis command from script')
        : wrongArity(args[0].toLowerCase());
    }
    if (inScript && command.noScript)
      return new ReplyError('ERR This Redis command is not allowed from script');
    try {
      return command.run(this.state, args);
    } catch (error) {
      if (error instanceof ReplyError) return error;
      throw error;
    }
  }
}
